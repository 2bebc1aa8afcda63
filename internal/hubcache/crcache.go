package hubcache

// The cache's informers are controller-runtime's (sigs.k8s.io/controller-runtime/pkg/cache):
// it creates, starts and stops them. What docs/benchmarks/cache.md showed controller-runtime's
// cache does not do by itself comes in through its options:
//   - ByObject: label selectors (add-on ManifestWorks, RoleBindings and CSRs) and each kind's
//     transform (per-object decoding of OCM's kinds, stripping and interning of the others);
//     DefaultTransform strips managedFields from everything else (config kinds, history
//     ConfigMaps).
//   - NewInformer builds each informer: OCM's kinds on the cache's own list and watch (decode.go:
//     pages decoded as they arrive, placeholders for objects that do not decode; watchdecode.go:
//     events decoded straight into Go types), config kinds on list and watch calls of every object
//     of the kind that record a refusal (configs.go), history ConfigMaps in their namespace only,
//     and no namespace index where nothing looks up by namespace.
//   - Mapper: OCM's kinds and the built-in ones the cache reads map without discovery (the cache
//     is built before OCM's CRDs need to be served); config kinds map through discovery.

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	kubescheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/addonops/addonops/internal/history"
)

// newCRCache builds the controller-runtime cache that holds every object of the hub cache.
// byAddonLabel selects the add-on ManifestWorks, RoleBindings and CSRs.
func (c *Cache) newCRCache(cfg *rest.Config, httpClient *http.Client, byAddonLabel labels.Selector) (crcache.Cache, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{kubescheme.AddToScheme, addonv1alpha1.Install, clusterv1.Install, clusterv1beta1.Install, workv1.Install} {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("building the cache's scheme: %w", err)
		}
	}
	mapper, err := c.restMapper(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	byObject := map[client.Object]crcache.ByObject{
		// Only RoleBindings and CSRs labelled with an add-on name are add-on business. They share
		// strings and maps as the decoded kinds do (a RoleBinding per cluster and add-on, its labels,
		// role and owner the same on every cluster).
		&rbacv1.RoleBinding{}:                       {Label: byAddonLabel, Transform: c.stripAndIntern},
		&certificatesv1.CertificateSigningRequest{}: {Label: byAddonLabel, Transform: c.stripAndIntern},
	}
	for _, d := range c.decoded {
		obj, ok := d.kind.newObj().(client.Object)
		if !ok {
			return nil, fmt.Errorf("%s is no client.Object", d.kind.gvk)
		}
		byObject[obj] = crcache.ByObject{Label: d.label, Transform: d.transform}
	}
	resync := c.opts.Resync
	cr, err := crcache.New(cfg, crcache.Options{
		HTTPClient: httpClient, Scheme: scheme, Mapper: mapper, SyncPeriod: &resync,
		// managedFields is metadata and never part of a config's spec hash; dropping it saves memory.
		DefaultTransform: crcache.TransformStripManagedFields(),
		ByObject:         byObject,
		NewInformer:      c.newInformer,
	})
	if err != nil {
		return nil, fmt.Errorf("building the hub cache: %w", err)
	}
	return cr, nil
}

// newInformer is the cache's Options.NewInformer (see the top of this file).
func (c *Cache) newInformer(lw cache.ListerWatcher, obj runtime.Object, resync time.Duration, _ cache.Indexers) cache.SharedIndexInformer {
	if k, ok := kindOf(obj); ok {
		return c.decodedInformer(c.decoded[k.gvk], resync)
	}
	// Nothing looks these kinds up by namespace: no namespace index (controller-runtime gives every
	// informer one, an index entry per namespace).
	indexers := cache.Indexers{}
	description := fmt.Sprintf("%T", obj)
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		lw = c.historyListWatch()
		indexers[cache.NamespaceIndex] = cache.MetaNamespaceIndexFunc // the lister is by namespace
	case *unstructured.Unstructured:
		gvk := o.GroupVersionKind()
		description = gvk.String()
		lw = c.Configs.observed(gvk, lw)
	}
	return cache.NewSharedIndexInformerWithOptions(lw, obj, cache.SharedIndexInformerOptions{ResyncPeriod: resync, Indexers: indexers, ObjectDescription: description})
}

// historyListWatch lists and watches the version history ConfigMaps: in Options.HistoryNamespace,
// only those labelled as an add-on's history (so the controller's namespace may hold anything
// else), as protobuf; DefaultTransform strips them. Not ByObject's namespace and label: a ByObject
// namespace makes a multi-namespace informer, which has no client-go store for the rollout's
// collector to read, and a ByObject label would apply to a ConfigMap config kind's informer too.
func (c *Cache) historyListWatch() cache.ListerWatcher {
	cms := c.Clients.Kube.CoreV1().ConfigMaps(c.opts.HistoryNamespace)
	labelOf := func(o *metav1.ListOptions) { o.LabelSelector = history.AddonLabel }
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			labelOf(&o)
			return cms.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			labelOf(&o)
			o.Watch = true
			return cms.Watch(ctx, o)
		},
	}
}

// informer returns the informer of obj's kind, created if needed; it runs once Run has started the
// cache (or at once, after). It never waits for the informer to sync: Run waits for all of them.
func (c *Cache) informer(obj client.Object) (cache.SharedIndexInformer, error) {
	inf, err := c.cr.GetInformer(context.Background(), obj, crcache.BlockUntilSynced(false))
	if err != nil {
		return nil, fmt.Errorf("informer of %T: %w", obj, err)
	}
	sii, ok := inf.(cache.SharedIndexInformer)
	if !ok {
		return nil, fmt.Errorf("informer of %T: %T is no client-go SharedIndexInformer", obj, inf)
	}
	c.mu.Lock()
	c.informers = append(c.informers, sii)
	c.mu.Unlock()
	return sii, nil
}

// configInformer is the informer of a config kind (unstructured), for Configs.
func (c *Cache) configInformer(gvk schema.GroupVersionKind) (cache.SharedIndexInformer, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	inf, err := c.cr.GetInformer(context.Background(), u, crcache.BlockUntilSynced(false))
	if err != nil {
		return nil, fmt.Errorf("informer of %s: %w", gvk, err)
	}
	sii, ok := inf.(cache.SharedIndexInformer)
	if !ok {
		return nil, fmt.Errorf("informer of %s: %T is no client-go SharedIndexInformer", gvk, inf)
	}
	return sii, nil
}

// restMapper maps the kinds the cache always reads without discovery, and any other (config
// kinds) with controller-runtime's discovery-backed mapper.
func (c *Cache) restMapper(cfg *rest.Config, httpClient *http.Client) (meta.RESTMapper, error) {
	dynamicMapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("building the REST mapper: %w", err)
	}
	known := meta.NewDefaultRESTMapper(nil)
	for _, d := range c.decoded {
		scope := meta.RESTScopeRoot
		if d.kind.namespaced {
			scope = meta.RESTScopeNamespace
		}
		known.AddSpecific(d.kind.gvk, d.kind.gvr, d.kind.gvr.GroupVersion().WithResource(strings.ToLower(d.kind.gvk.Kind)), scope)
	}
	for _, k := range []struct {
		gvk   schema.GroupVersionKind
		scope meta.RESTScope
	}{
		{corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace},
		{rbacv1.SchemeGroupVersion.WithKind("RoleBinding"), meta.RESTScopeNamespace},
		{certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"), meta.RESTScopeRoot},
		{addonv1alpha1.SchemeGroupVersion.WithKind("AddOnTemplate"), meta.RESTScopeRoot},
		{addonv1alpha1.SchemeGroupVersion.WithKind("AddOnDeploymentConfig"), meta.RESTScopeNamespace},
	} {
		known.Add(k.gvk, k.scope)
	}
	return knownFirst{RESTMapper: dynamicMapper, known: known}, nil
}

// knownFirst maps the known kinds itself and asks discovery (RESTMapper) for the others.
type knownFirst struct {
	meta.RESTMapper
	known meta.RESTMapper
}

func (m knownFirst) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if mapping, err := m.known.RESTMapping(gk, versions...); err == nil {
		return mapping, nil
	}
	return m.RESTMapper.RESTMapping(gk, versions...)
}
