//go:build integration

package cachebench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/hubcache"
)

// A cache under test, as the child process sees it: started, synced, and the informers whose
// objects it counts and watches.
type benchCache struct {
	// informers are the stores of the kinds both caches hold, by kind name, but for
	// controller-runtime's ConfigMaps (a multi-namespace informer: others counts them).
	informers map[string]toolscache.SharedIndexInformer
	others    map[string]func() (int, error)

	mu sync.Mutex
	// syncedAfter is how long each informer took to sync from timeSync's call.
	syncedAfter map[string]time.Duration
	// timing ends when every informer synced (or the context ended).
	timing sync.WaitGroup
}

// timeSync notes when each informer syncs, from now: where the sync time goes.
func (b *benchCache) timeSync(ctx context.Context) {
	start := time.Now()
	b.syncedAfter = map[string]time.Duration{}
	for name, inf := range b.informers {
		b.timing.Go(func() {
			if toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
				b.mu.Lock()
				b.syncedAfter[name] = time.Since(start)
				b.mu.Unlock()
			}
		})
	}
}

// syncSeconds returns timeSync's figures in seconds, once the cache has synced (its informers'
// WaitForCacheSync polls every 100 ms: they may note their sync after the cache's own wait ended).
func (b *benchCache) syncSeconds() map[string]float64 {
	b.timing.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string]float64{}
	for name, d := range b.syncedAfter {
		out[name] = d.Seconds()
	}
	return out
}

// samples returns, per kind with a client-go store, the first cached object (by key) as JSON
// without its apiVersion and kind (a typed client's decoder drops them, a per-object decoder keeps
// them): the caches must hold the same objects.
func (b *benchCache) samples() (map[string]string, error) {
	out := map[string]string{}
	for name, inf := range b.informers {
		keys := inf.GetStore().ListKeys()
		if len(keys) == 0 {
			continue
		}
		slices.Sort(keys)
		obj, _, err := inf.GetStore().GetByKey(keys[0])
		if err != nil {
			return nil, err
		}
		ro, ok := obj.(runtime.Object)
		if !ok {
			return nil, fmt.Errorf("cached %s %s is a %T", name, keys[0], obj)
		}
		ro = ro.DeepCopyObject()
		if _, isU := ro.(*unstructured.Unstructured); !isU {
			ro.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		}
		j, err := json.Marshal(ro)
		if err != nil {
			return nil, err
		}
		out[name] = string(j)
	}
	return out, nil
}

// counts returns the number of cached objects of every kind.
func (b *benchCache) counts() (map[string]int, error) {
	out := map[string]int{}
	for name, inf := range b.informers {
		out[name] = len(inf.GetStore().ListKeys())
	}
	for name, count := range b.others {
		n, err := count()
		if err != nil {
			return nil, fmt.Errorf("counting %ss: %w", name, err)
		}
		out[name] = n
	}
	return out, nil
}

// The kinds both caches hold, by name, for the counts the parent checks.
const (
	kCMA       = "ClusterManagementAddOn"
	kMCA       = "ManagedClusterAddOn"
	kCluster   = "ManagedCluster"
	kPlacement = "Placement"
	kDecision  = "PlacementDecision"
	kWork      = "ManifestWork"
	kADC       = "AddOnDeploymentConfig"
	kHistory   = "ConfigMap"
)

// The caches the benchmark compares (-caches).
const (
	// cacheHubcache is internal/hubcache as the controller starts it without --deploy-templates:
	// hubcache.New with --addons=self and a history namespace, the ADC informer the rollout
	// controller starts on its first CMA (Configs.Ensure; Configs.Watch here, before the start), and
	// Run with the reconcilers left out (they read the cache; they hold none of it).
	cacheHubcache = "hubcache"
	// cacheHubcacheNoIntern is cacheHubcache with interning off (hubcache.Options.DisableInterning):
	// what interning saves.
	cacheHubcacheNoIntern = "hubcache-nointern"
	// cacheCRTyped is controller-runtime's cache with OCM's Go types, the selectors and transforms
	// below: what a controller engineer writes first. One object that does not decode fails its
	// kind's whole list (hubcache/decode.go says why the controller does not do this).
	cacheCRTyped = "cr-typed"
	// cacheCRDecoded is cacheCRTyped with per-object decoding as an informer wrapper: the OCM kinds
	// are listed and watched as unstructured objects and the informer's transform decodes each into
	// its Go type (hubcache.Decode), or into a placeholder with its metadata when it does not decode,
	// so the store holds Go types as hubcache's does.
	cacheCRDecoded = "cr-decoded"
	// cacheCRPaged is cacheCRDecoded whose lists decode page by page (Options.NewInformer wraps the
	// informers' list calls as hubcache's decodedList does): only the decoded objects of a list are
	// held at once, never the whole list as unstructured objects.
	cacheCRPaged = "cr-paged"
	// cacheCRPagedNoNSIndex is cacheCRPaged without the namespace index controller-runtime gives
	// every informer, on the kinds hubcache does not index by namespace (all but Placements and
	// PlacementDecisions): what that index costs.
	cacheCRPagedNoNSIndex = "cr-paged-nonsindex"
)

var allCaches = []string{cacheHubcache, cacheHubcacheNoIntern, cacheCRTyped, cacheCRDecoded, cacheCRPaged, cacheCRPagedNoNSIndex}

// startCache builds and starts cache kind against cfg and waits until it has synced.
func startCache(ctx context.Context, kind string, cfg *rest.Config) (*benchCache, error) {
	switch kind {
	case cacheHubcache:
		return startHubcache(ctx, cfg, false)
	case cacheHubcacheNoIntern:
		return startHubcache(ctx, cfg, true)
	case cacheCRTyped:
		return startCR(ctx, cfg, false, false, false)
	case cacheCRDecoded:
		return startCR(ctx, cfg, true, false, false)
	case cacheCRPaged:
		return startCR(ctx, cfg, true, true, false)
	case cacheCRPagedNoNSIndex:
		return startCR(ctx, cfg, true, true, true)
	}
	return nil, fmt.Errorf("unknown cache %q (want one of %v)", kind, allCaches)
}

func startHubcache(ctx context.Context, cfg *rest.Config, noIntern bool) (*benchCache, error) {
	hc, err := hubcache.New(cfg, hubcache.Options{Addons: hubcache.AddonsSelf, HistoryNamespace: historyNamespace, DisableInterning: noIntern})
	if err != nil {
		return nil, fmt.Errorf("building the hub cache: %w", err)
	}
	adcs, err := hc.Configs.Watch(configref.AddOnDeploymentConfigs)
	if err != nil {
		return nil, fmt.Errorf("watching AddOnDeploymentConfigs: %w", err)
	}
	bc := &benchCache{informers: map[string]toolscache.SharedIndexInformer{
		kCMA: hc.CMAInformer, kMCA: hc.MCAInformer, kCluster: hc.ClusterInformer, kPlacement: hc.PlacementInformer,
		kDecision: hc.DecisionInformer, kWork: hc.WorkInformer, kADC: adcs, kHistory: hc.HistoryInformer,
	}}
	bc.timeSync(ctx)
	errs := make(chan error, 1)
	go func() { errs <- hc.Run(ctx) }()
	for !hc.Synced() {
		select {
		case err := <-errs:
			return nil, fmt.Errorf("the hub cache stopped before it synced: %v", err)
		case <-ctx.Done():
			return nil, fmt.Errorf("the hub cache did not sync: %w", ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	return bc, nil
}

// startCR is controller-runtime's cache: label selectors where hubcache has them (add-on works;
// history ConfigMaps by namespace), managedFields stripped from everything
// (TransformStripManagedFields), and of ManagedClusters and works what hubcache drops without
// --deploy-templates (a cluster's client configs, taints and status; a work's spec and resource
// status). decoded: per-object decoding (cacheCRDecoded); paged: lists decoded page by page
// (cacheCRPaged); noNSIndex: no namespace index but on Placements and PlacementDecisions
// (cacheCRPagedNoNSIndex).
func startCR(ctx context.Context, cfg *rest.Config, decoded, paged, noNSIndex bool) (*benchCache, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{addonv1alpha1.Install, clusterv1.Install, clusterv1beta1.Install, workv1.Install, corev1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	addonLabel, err := labels.NewRequirement(addonv1alpha1.AddonLabelKey, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	historyLabel, err := labels.NewRequirement(history.AddonLabel, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	stripMF := crcache.TransformStripManagedFields()

	// The OCM kinds: typed objects, or unstructured ones decoded per object; the transforms strip
	// the typed object (the same fields either way).
	type ocmKind struct {
		name   string
		typed  client.Object
		strip  func(runtime.Object)
		label  labels.Selector
		newObj func() runtime.Object
	}
	kinds := []ocmKind{
		{kCMA, &addonv1alpha1.ClusterManagementAddOn{}, nil, nil, func() runtime.Object { return &addonv1alpha1.ClusterManagementAddOn{} }},
		{kMCA, &addonv1alpha1.ManagedClusterAddOn{}, nil, nil, func() runtime.Object { return &addonv1alpha1.ManagedClusterAddOn{} }},
		{kCluster, &clusterv1.ManagedCluster{}, func(o runtime.Object) {
			mc := o.(*clusterv1.ManagedCluster)
			mc.Spec.ManagedClusterClientConfigs, mc.Spec.Taints, mc.Status = nil, nil, clusterv1.ManagedClusterStatus{}
		}, nil, func() runtime.Object { return &clusterv1.ManagedCluster{} }},
		{kPlacement, &clusterv1beta1.Placement{}, nil, nil, func() runtime.Object { return &clusterv1beta1.Placement{} }},
		{kDecision, &clusterv1beta1.PlacementDecision{}, nil, nil, func() runtime.Object { return &clusterv1beta1.PlacementDecision{} }},
		{kWork, &workv1.ManifestWork{}, func(o runtime.Object) {
			w := o.(*workv1.ManifestWork)
			w.Spec, w.Status.ResourceStatus = workv1.ManifestWorkSpec{}, workv1.ManifestResourceStatus{}
		}, labels.NewSelector().Add(*addonLabel), func() runtime.Object { return &workv1.ManifestWork{} }},
	}
	byObject := map[client.Object]crcache.ByObject{
		&corev1.ConfigMap{}: {Namespaces: map[string]crcache.Config{historyNamespace: {}}, Label: labels.NewSelector().Add(*historyLabel)},
	}
	informed := map[string]client.Object{}
	var decodeErrs decodeErrors
	// The decoding transform of each OCM kind's unstructured informer, for paged lists.
	transforms := map[schema.GroupVersionKind]toolscache.TransformFunc{}
	for _, k := range kinds {
		obj := k.typed
		var transform toolscache.TransformFunc
		if decoded {
			gvk, err := gvkOf(scheme, k.typed)
			if err != nil {
				return nil, err
			}
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			obj = u
			transform = decodeTransform(gvk, k.newObj, k.strip, &decodeErrs)
			transforms[gvk] = transform
		} else if k.strip != nil {
			strip := k.strip
			transform = func(in any) (any, error) {
				out, err := stripMF(in)
				if o, ok := out.(runtime.Object); ok && err == nil {
					strip(o)
				}
				return out, err
			}
		}
		// A kind without its own transform gets DefaultTransform.
		byObject[obj] = crcache.ByObject{Label: k.label, Transform: transform}
		informed[k.name] = obj
	}
	adc := &unstructured.Unstructured{}
	adc.SetGroupVersionKind(addonv1alpha1.SchemeGroupVersion.WithKind("AddOnDeploymentConfig"))
	informed[kADC] = adc

	resync := 10 * time.Minute // hubcache's default
	opts := crcache.Options{Scheme: scheme, SyncPeriod: &resync, DefaultTransform: stripMF, ByObject: byObject}
	if paged {
		opts.NewInformer = func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				if kind := u.GetKind(); noNSIndex && kind != kPlacement && kind != kDecision {
					indexers = toolscache.Indexers{}
				}
				if transform, ok := transforms[u.GroupVersionKind()]; ok {
					lwc := toolscache.ToListerWatcherWithContext(lw)
					lw = &toolscache.ListWatch{
						ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
							return pagedList(ctx, lwc, o, transform)
						},
						WatchFuncWithContext: lwc.WatchWithContext,
					}
				}
			}
			return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
		}
	}
	c, err := crcache.New(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("building controller-runtime's cache: %w", err)
	}
	// The history ConfigMaps' informer is controller-runtime's multi-namespace one (it has no
	// client-go store to count): they are counted through the cache's reader.
	if _, err := c.GetInformer(ctx, &corev1.ConfigMap{}, crcache.BlockUntilSynced(false)); err != nil {
		return nil, fmt.Errorf("informer of ConfigMaps: %w", err)
	}
	bc := &benchCache{informers: map[string]toolscache.SharedIndexInformer{}, others: map[string]func() (int, error){
		kHistory: func() (int, error) {
			var l corev1.ConfigMapList
			err := c.List(ctx, &l, client.InNamespace(historyNamespace))
			return len(l.Items), err
		},
	}}
	for name, obj := range informed {
		inf, err := c.GetInformer(ctx, obj, crcache.BlockUntilSynced(false))
		if err != nil {
			return nil, fmt.Errorf("informer of %s: %w", name, err)
		}
		sii, ok := inf.(toolscache.SharedIndexInformer)
		if !ok {
			return nil, fmt.Errorf("informer of %s: %T is no client-go SharedIndexInformer", name, inf)
		}
		bc.informers[name] = sii
	}
	// The indexes the controller reads (hubcache.New): MCAs by add-on and by desired config, works
	// by cluster and add-on (each work indexed: controller-runtime has no sparse index).
	if err := bc.informers[kMCA].AddIndexers(toolscache.Indexers{
		hubcache.IndexMCAsByAddon: func(obj any) ([]string, error) {
			if m, ok := obj.(metav1.Object); ok {
				return []string{m.GetName()}, nil
			}
			return nil, nil
		},
		hubcache.IndexMCAsByConfig: func(obj any) ([]string, error) {
			m, ok := obj.(*addonv1alpha1.ManagedClusterAddOn)
			if !ok {
				return nil, nil
			}
			var keys []string
			for _, r := range m.Status.ConfigReferences {
				if r.DesiredConfig != nil {
					keys = append(keys, hubcache.ConfigKey(configref.GroupResource{Group: r.Group, Resource: r.Resource}, r.DesiredConfig.Namespace, r.DesiredConfig.Name))
				}
			}
			return keys, nil
		},
	}); err != nil {
		return nil, fmt.Errorf("indexing ManagedClusterAddOns: %w", err)
	}
	if err := bc.informers[kWork].AddIndexers(toolscache.Indexers{hubcache.IndexWorksByAddon: func(obj any) ([]string, error) {
		if m, ok := obj.(metav1.Object); ok {
			return []string{m.GetNamespace() + "/" + m.GetLabels()[addonv1alpha1.AddonLabelKey]}, nil
		}
		return nil, nil
	}}); err != nil {
		return nil, fmt.Errorf("indexing ManifestWorks: %w", err)
	}
	bc.timeSync(ctx)
	errs := make(chan error, 1)
	go func() { errs <- c.Start(ctx) }()
	synced := make(chan bool, 1)
	go func() { synced <- c.WaitForCacheSync(ctx) }()
	select {
	case err := <-errs:
		return nil, fmt.Errorf("controller-runtime's cache stopped before it synced: %v", err)
	case ok := <-synced:
		if !ok {
			return nil, fmt.Errorf("controller-runtime's cache did not sync: %v", ctx.Err())
		}
	}
	return bc, nil
}

// pageSize is the size of pagedList's pages: the reflector's own.
const pageSize = 500

// pagedList is the list call of cacheCRPaged's OCM kinds: hubcache's decodedList over
// controller-runtime's list call. The reflector's first list asks for resourceVersion "0", which the
// API server answers in one piece from its watch cache whatever the page size; this asks for the
// latest version instead, page by page, and decodes each page as it arrives, so the unstructured
// form of one page at most is alive at a time.
func pagedList(ctx context.Context, lw toolscache.ListerWatcherWithContext, o metav1.ListOptions, transform toolscache.TransformFunc) (runtime.Object, error) {
	if o.ResourceVersion == "0" && o.Limit > 0 && o.Continue == "" {
		o.ResourceVersion = ""
	}
	join := o.Limit == 0 && o.Continue == ""
	if join {
		o.Limit, o.ResourceVersion, o.ResourceVersionMatch = pageSize, "", ""
	}
	out := &metainternalversion.List{}
	for first := true; ; first = false {
		obj, err := lw.ListWithContext(ctx, o)
		if err != nil {
			return nil, err
		}
		page, ok := obj.(*unstructured.UnstructuredList)
		if !ok {
			return nil, fmt.Errorf("listing: got a %T, want an unstructured list", obj)
		}
		if first {
			out.ListMeta = metav1.ListMeta{ResourceVersion: page.GetResourceVersion(), Continue: page.GetContinue(), RemainingItemCount: page.GetRemainingItemCount()}
		}
		for i := range page.Items {
			u := page.Items[i]
			page.Items[i] = unstructured.Unstructured{}
			decoded, err := transform(&u)
			if err != nil {
				return nil, err
			}
			out.Items = append(out.Items, decoded.(runtime.Object))
		}
		if !join || page.GetContinue() == "" {
			if join {
				out.Continue, out.RemainingItemCount = "", nil
			}
			return out, nil
		}
		o.Continue = page.GetContinue()
	}
}

func gvkOf(scheme *runtime.Scheme, obj runtime.Object) (schema.GroupVersionKind, error) {
	gvks, _, err := scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return schema.GroupVersionKind{}, fmt.Errorf("kind of %T: %v", obj, err)
	}
	return gvks[0], nil
}

// decodeErrors records the objects the decoding transform kept placeholders for, by
// kind/namespace/name and resourceVersion (what hubcache.Cache.DecodeError answers).
type decodeErrors struct {
	mu   sync.Mutex
	errs map[string]error
}

func (d *decodeErrors) record(gvk schema.GroupVersionKind, u *unstructured.Unstructured, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.errs == nil {
		d.errs = map[string]error{}
	}
	d.errs[gvk.Kind+"/"+u.GetNamespace()+"/"+u.GetName()+"@"+u.GetResourceVersion()] = err
}

// decodeTransform is the per-object decoding informer wrapper: an unstructured object in, without
// managedFields, its Go type out, stripped; an object that does not decode becomes a placeholder
// (its Go type with its metadata) and its error is recorded, so it cannot fail the list.
func decodeTransform(gvk schema.GroupVersionKind, newObj func() runtime.Object, strip func(runtime.Object), errs *decodeErrors) toolscache.TransformFunc {
	return func(in any) (any, error) {
		u, ok := in.(*unstructured.Unstructured)
		if !ok {
			return in, nil // already decoded (a re-added object), or a tombstone
		}
		u.SetManagedFields(nil)
		obj := newObj()
		if err := hubcache.Decode(u, obj); err != nil {
			errs.record(gvk, u, err)
			ph := newObj()
			m := ph.(metav1.Object)
			m.SetNamespace(u.GetNamespace())
			m.SetName(u.GetName())
			m.SetUID(u.GetUID())
			m.SetResourceVersion(u.GetResourceVersion())
			m.SetGeneration(u.GetGeneration())
			m.SetLabels(u.GetLabels())
			m.SetAnnotations(u.GetAnnotations())
			return ph, nil
		}
		if strip != nil {
			strip(obj)
		}
		return obj, nil
	}
}
