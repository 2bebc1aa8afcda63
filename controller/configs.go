package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/spechash"
)

// configSource hashes add-on configs of any group/resource. It starts one dynamic informer per
// group/resource when a reference to it is first seen, so it hashes exactly the objects the API
// server returns (CRD defaults included), which is what OCM hashes (reference §1.1); a config kind
// that nobody hashes is what leaves OCM add-ons stuck with an empty spec hash.
type configSource struct {
	dynamic  dynamic.Interface
	mapper   *restmapper.DeferredDiscoveryRESTMapper
	resync   time.Duration
	onChange func()

	mu        sync.Mutex
	informers map[configref.GroupResource]*configInformer
	// unserved remembers group/resources discovery did not know and when it was last asked.
	unserved map[configref.GroupResource]time.Time
}

type configInformer struct {
	gvr        schema.GroupVersionResource
	namespaced bool
	informer   cache.SharedIndexInformer
}

// errNotServed marks a config whose group/resource the API server does not serve.
var errNotServed = errors.New("not served")

// rediscoverAfter is how long an unserved group/resource is trusted to stay unserved before
// discovery is asked again (its CRD may be installed later).
const rediscoverAfter = 10 * time.Second

func newConfigSource(disc discovery.DiscoveryInterface, dyn dynamic.Interface, resync time.Duration, onChange func()) *configSource {
	return &configSource{
		dynamic:   dyn,
		mapper:    restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)),
		resync:    resync,
		onChange:  onChange,
		informers: map[configref.GroupResource]*configInformer{},
		unserved:  map[configref.GroupResource]time.Time{},
	}
}

// ensure starts informers for grs and reports whether every one of them has synced; an unserved
// group/resource counts as synced (lookups then say it is not served). unserved tells whether any
// was unserved, so the caller checks again later.
func (s *configSource) ensure(ctx context.Context, grs []configref.GroupResource) (synced, unserved bool) {
	synced = true
	for _, gr := range grs {
		inf, err := s.informerFor(ctx, gr)
		if errors.Is(err, errNotServed) {
			unserved = true
			continue
		}
		if err != nil {
			klog.FromContext(ctx).Error(err, "Cannot watch configs", "resource", gr.String())
			unserved = true
			continue
		}
		if !inf.informer.HasSynced() {
			synced = false
		}
	}
	return synced, unserved
}

func (s *configSource) informerFor(ctx context.Context, gr configref.GroupResource) (*configInformer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if inf, ok := s.informers[gr]; ok {
		return inf, nil
	}
	if at, ok := s.unserved[gr]; ok {
		if time.Since(at) < rediscoverAfter {
			return nil, errNotServed
		}
		s.mapper.Reset()
	}
	gvr, err := s.mapper.ResourceFor(schema.GroupVersionResource{Group: gr.Group, Resource: gr.Resource})
	if err != nil {
		if meta.IsNoMatchError(err) {
			s.unserved[gr] = time.Now()
			return nil, errNotServed
		}
		return nil, fmt.Errorf("mapping %s to a version: %w", gr, err)
	}
	gvk, err := s.mapper.KindFor(gvr)
	if err != nil {
		return nil, fmt.Errorf("finding the kind of %s: %w", gvr, err)
	}
	mapping, err := s.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("finding the scope of %s: %w", gvk, err)
	}
	delete(s.unserved, gr)

	inf := dynamicinformer.NewFilteredDynamicInformer(s.dynamic, gvr, "", s.resync, cache.Indexers{}, nil).Informer()
	// managedFields is metadata and never part of a spec hash; dropping it saves memory.
	_ = inf.SetTransform(func(obj any) (any, error) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			u.SetManagedFields(nil)
		}
		return obj, nil
	})
	notify := func(any) { s.onChange() }
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: notify, DeleteFunc: notify,
		UpdateFunc: func(old, cur any) {
			if o, ok := old.(*unstructured.Unstructured); ok {
				if c, ok := cur.(*unstructured.Unstructured); ok && o.GetResourceVersion() == c.GetResourceVersion() {
					return
				}
			}
			s.onChange()
		},
	}); err != nil {
		return nil, fmt.Errorf("watching %s: %w", gvr, err)
	}
	go inf.RunWithContext(ctx)
	ci := &configInformer{gvr: gvr, namespaced: mapping.Scope.Name() == meta.RESTScopeNameNamespace, informer: inf}
	s.informers[gr] = ci
	klog.FromContext(ctx).Info("Watching configs", "resource", gvr.String(), "namespaced", ci.namespaced)
	return ci, nil
}

// lookup returns the spec hash of the config ref points at, or an error that says why there is
// none. Call ensure first.
func (s *configSource) lookup(ref configref.Ref) (string, error) {
	s.mu.Lock()
	inf, ok := s.informers[ref.GroupResource]
	s.mu.Unlock()
	if !ok {
		return "", fmt.Errorf("config %s: resource %s is not served by the API server (is its CustomResourceDefinition installed?)", ref, ref.GroupResource)
	}
	key := ref.Name
	if inf.namespaced {
		if ref.Namespace == "" {
			return "", fmt.Errorf("config %s: %s is namespaced; set the reference's namespace", ref, ref.GroupResource)
		}
		key = ref.Namespace + "/" + ref.Name
	}
	obj, exists, err := inf.informer.GetIndexer().GetByKey(key)
	if err != nil {
		return "", fmt.Errorf("config %s: %w", ref, err)
	}
	if !exists {
		return "", fmt.Errorf("config %s not found", ref)
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return "", fmt.Errorf("config %s: unexpected object %T in the cache", ref, obj)
	}
	h, err := spechash.Of(u.Object)
	if err != nil {
		return "", fmt.Errorf("config %s: %w", ref, err)
	}
	return h, nil
}
