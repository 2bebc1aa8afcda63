package rolloutwatch

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"

	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/rolloutview"
)

// NewHub connects to the hub cfg names, for `addonops status` and the demo. baseName looks up the
// addonops.io/base-name of the configs the add-on names (Hub.BaseName); nil reads each config's
// annotation from the hub (see BaseNamesFromHub).
func NewHub(cfg *rest.Config, baseName func(ctx context.Context, r configref.Ref) (string, bool)) (Hub, error) {
	h := Hub{Host: cfg.Host, BaseName: baseName}
	var err error
	if h.Addon, err = addonclient.NewForConfig(cfg); err != nil {
		return Hub{}, fmt.Errorf("building the add-on client: %w", err)
	}
	if h.Cluster, err = clusterclient.NewForConfig(cfg); err != nil {
		return Hub{}, fmt.Errorf("building the cluster client: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return Hub{}, fmt.Errorf("building the discovery client: %w", err)
	}
	h.Discovery = disc
	if h.BaseName == nil {
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return Hub{}, fmt.Errorf("building the dynamic client: %w", err)
		}
		h.BaseName = BaseNamesFromHub(dyn, restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)))
	}
	return h, nil
}

// BaseNamesFromHub returns a Hub.BaseName that reads the addonops.io/base-name annotation of the
// config a reference points at (its resource found through mapper). Results, found or not, are
// kept for the life of the function: a hashed config's name changes with its content, so its
// annotation never does.
func BaseNamesFromHub(dyn dynamic.Interface, mapper meta.RESTMapper) func(ctx context.Context, r configref.Ref) (string, bool) {
	var mu sync.Mutex
	names := map[configref.Ref]string{} // "" when the config has none or cannot be read
	return func(ctx context.Context, ref configref.Ref) (string, bool) {
		mu.Lock()
		defer mu.Unlock()
		if b, ok := names[ref]; ok {
			return b, b != ""
		}
		b := ""
		if gvr, err := mapper.ResourceFor(schema.GroupVersionResource{Group: ref.Group, Resource: ref.Resource}); err == nil {
			if obj, err := dyn.Resource(gvr).Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{}); err == nil {
				b = obj.GetAnnotations()[rolloutview.BaseNameAnnotation]
			}
		}
		names[ref] = b
		return b, b != ""
	}
}
