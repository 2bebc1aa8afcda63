package hubcache

// Per-object decoding.
//
// The API server accepts objects that OCM's Go types cannot hold: a CRD's schema checks strings
// against patterns but not the range of an integer (maxConcurrency: 9223372036854775807 in an
// int32), and a Go type may parse what the schema leaves a plain string (minSuccessTime: forever
// in a metav1.Duration). A typed client decodes a whole list at once, so one such object made every
// list of its kind fail, the informer never synced, and the controller did nothing at all, without
// naming the object.
//
// So the kinds the controller watches with OCM's Go types (ClusterManagementAddOns,
// ManagedClusterAddOns, ManagedClusters, Placements, PlacementDecisions, ManifestWorks) are listed
// and watched as unstructured objects, with client-go's dynamic informer (resourceVersions,
// bookmarks and watch-list streaming unchanged), and the informer's transform converts each object
// to its Go type as it arrives: the indexers hold typed objects, so listers and every consumer work
// as before, and no unstructured copy is kept. (Watch events of all but CMAs now skip the
// unstructured form: watchdecode.go decodes them straight into the Go type, and only an object
// that does not decode that way takes this path.) An object that does not convert is not dropped: the
// indexer holds a placeholder, its Go type with its metadata only (name, labels, annotations,
// resourceVersion: so it exists, is selected, indexed and triggers events as before), and the
// decode error is recorded, by kind, namespace/name and resourceVersion, with the object as the API
// server returned it (DecodeError). Consumers ask DecodeError before they trust a cached object:
// a placeholder must never be acted on or written back. The error is logged once per object, spec
// generation and problem (a status change does not repeat it) and reported by OnUndecodable; the
// entry goes when the version leaves the cache (a later version replaced it, or the object was
// deleted).
//
// Config kinds (configs.go) are unstructured throughout and decoded per object where used.

import (
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterlistersv1beta1 "open-cluster-management.io/api/client/cluster/listers/cluster/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	sigsjson "sigs.k8s.io/json"

	"github.com/addonops/addonops/internal/operations"
)

// The kinds the cache decodes per object, for Undecodable.
const (
	KindClusterManagementAddOn = "ClusterManagementAddOn"
	KindManagedClusterAddOn    = "ManagedClusterAddOn"
	KindManagedCluster         = "ManagedCluster"
	KindPlacement              = "Placement"
	KindPlacementDecision      = "PlacementDecision"
	KindManifestWork           = "ManifestWork"
)

// decodedKind is a kind the cache reads per object into its Go type.
type decodedKind struct {
	gvk    schema.GroupVersionKind
	gvr    schema.GroupVersionResource
	newObj func() runtime.Object
}

var (
	kindCMA       = decodedKind{addonv1alpha1.SchemeGroupVersion.WithKind(KindClusterManagementAddOn), addonv1alpha1.SchemeGroupVersion.WithResource("clustermanagementaddons"), func() runtime.Object { return &addonv1alpha1.ClusterManagementAddOn{} }}
	kindMCA       = decodedKind{addonv1alpha1.SchemeGroupVersion.WithKind(KindManagedClusterAddOn), addonv1alpha1.SchemeGroupVersion.WithResource("managedclusteraddons"), func() runtime.Object { return &addonv1alpha1.ManagedClusterAddOn{} }}
	kindCluster   = decodedKind{clusterv1.SchemeGroupVersion.WithKind(KindManagedCluster), clusterv1.SchemeGroupVersion.WithResource("managedclusters"), func() runtime.Object { return &clusterv1.ManagedCluster{} }}
	kindPlacement = decodedKind{clusterv1beta1.SchemeGroupVersion.WithKind(KindPlacement), clusterv1beta1.SchemeGroupVersion.WithResource("placements"), func() runtime.Object { return &clusterv1beta1.Placement{} }}
	kindDecision  = decodedKind{clusterv1beta1.SchemeGroupVersion.WithKind(KindPlacementDecision), clusterv1beta1.SchemeGroupVersion.WithResource("placementdecisions"), func() runtime.Object { return &clusterv1beta1.PlacementDecision{} }}
	kindWork      = decodedKind{workv1.SchemeGroupVersion.WithKind(KindManifestWork), workv1.SchemeGroupVersion.WithResource("manifestworks"), func() runtime.Object { return &workv1.ManifestWork{} }}
)

// kindOf is the decoded kind of a typed object, by its Go type.
func kindOf(obj any) (decodedKind, bool) {
	switch obj.(type) {
	case *addonv1alpha1.ClusterManagementAddOn:
		return kindCMA, true
	case *addonv1alpha1.ManagedClusterAddOn:
		return kindMCA, true
	case *clusterv1.ManagedCluster:
		return kindCluster, true
	case *clusterv1beta1.Placement:
		return kindPlacement, true
	case *clusterv1beta1.PlacementDecision:
		return kindDecision, true
	case *workv1.ManifestWork:
		return kindWork, true
	}
	return decodedKind{}, false
}

// DecodeError is an object the API server returned that does not decode into its Go type. The
// cache holds a placeholder for it: the Go type with the object's metadata only.
type DecodeError struct {
	// GVK is the object's group, version and kind.
	GVK schema.GroupVersionKind
	// Namespace ("" for a cluster-scoped kind), Name, UID, ResourceVersion and Generation identify
	// the version that does not decode.
	Namespace, Name, ResourceVersion string
	UID                              types.UID
	Generation                       int64
	// Err is the converter's error.
	Err error
	// Object is the object as the API server returned it, without managedFields (a ManifestWork
	// also without what the cache drops of every work).
	Object *unstructured.Unstructured
}

// Key is "<namespace>/<name>", or "<name>" for a cluster-scoped object.
func (e *DecodeError) Key() string {
	if e.Namespace == "" {
		return e.Name
	}
	return e.Namespace + "/" + e.Name
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("%s %s cannot be decoded: %v", e.GVK.Kind, e.Key(), e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// Reference refers to the object, for events.
func (e *DecodeError) Reference() *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: e.GVK.GroupVersion().String(), Kind: e.GVK.Kind, Namespace: e.Namespace, Name: e.Name,
		UID: e.UID, ResourceVersion: e.ResourceVersion}
}

// undecodable records the decode errors of the object versions the cache holds placeholders for.
type undecodable struct {
	mu sync.Mutex
	// byKey: "<kind>/<namespace>/<name>" → resourceVersion → error. An object has more than one
	// entry only while a later version is on its way into the cache.
	byKey map[string]map[string]*DecodeError
	// told: per key, what was last logged and reported (UID, generation and error), so a problem is
	// told once, not at every relist or status change.
	told map[string]string
}

func undecodableKey(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

// record adds e and reports whether its problem is new for its object.
func (u *undecodable) record(e *DecodeError) bool {
	key := undecodableKey(e.GVK.Kind, e.Namespace, e.Name)
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.byKey[key] == nil {
		u.byKey[key] = map[string]*DecodeError{}
	}
	u.byKey[key][e.ResourceVersion] = e
	told := fmt.Sprintf("%s/%d/%v", e.UID, e.Generation, e.Err)
	if u.told[key] == told {
		return false
	}
	u.told[key] = told
	return true
}

func (u *undecodable) get(kind string, m metav1.Object) *DecodeError {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.byKey) == 0 {
		// The usual case, asked for every MCA and work of every decision: no key to build (at 5,000
		// clusters the keys were some 3% of all the controller allocated).
		return nil
	}
	return u.byKey[undecodableKey(kind, m.GetNamespace(), m.GetName())][m.GetResourceVersion()]
}

// left drops what is known about version m of an object, which left the cache: replaced by a later
// version, or deleted (all its versions then: the deleted object's last one may carry a newer
// resourceVersion than the one cached).
func (u *undecodable) left(kind string, m metav1.Object, deleted bool) {
	key := undecodableKey(kind, m.GetNamespace(), m.GetName())
	u.mu.Lock()
	defer u.mu.Unlock()
	versions := u.byKey[key]
	for rv, e := range versions {
		if rv == m.GetResourceVersion() || deleted && e.UID == m.GetUID() {
			delete(versions, rv)
		}
	}
	if len(versions) == 0 {
		delete(u.byKey, key)
		if deleted {
			delete(u.told, key)
		}
	}
}

// all lists every recorded error of kind.
func (u *undecodable) all(kind string) []*DecodeError {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []*DecodeError
	for key, versions := range u.byKey {
		if !strings.HasPrefix(key, kind+"/") {
			continue
		}
		for _, e := range versions {
			out = append(out, e)
		}
	}
	return out
}

// DecodeError returns the decode error of a cached object of a decoded kind (a
// ClusterManagementAddOn, ManagedClusterAddOn, ManagedCluster, Placement, PlacementDecision or
// ManifestWork), nil when it decoded. A non-nil answer means obj is a placeholder with its metadata
// only: never act on its spec or status, never write it back.
func (c *Cache) DecodeError(obj any) *DecodeError {
	k, ok := kindOf(obj)
	if !ok {
		return nil
	}
	m, ok := obj.(metav1.Object)
	if !ok || m == nil {
		return nil
	}
	return c.undecodable.get(k.gvk.Kind, m)
}

// Undecodable lists the objects of a decoded kind ("ClusterManagementAddOn", "ManagedClusterAddOn",
// ...) the cache holds only placeholders for now.
func (c *Cache) Undecodable(kind string) []*DecodeError {
	inf := c.decodedInformers[kind]
	if inf == nil {
		return nil
	}
	var out []*DecodeError
	for _, e := range c.undecodable.all(kind) {
		obj, ok, _ := inf.GetIndexer().GetByKey(e.Key())
		if m, isMeta := obj.(metav1.Object); ok && isMeta && m.GetResourceVersion() == e.ResourceVersion {
			out = append(out, e)
		}
	}
	return out
}

// OnUndecodable sets what is called, besides the error log, with every newly seen decode error (once
// per object, UID, generation and error). It is called while the informer queues the object, before
// the cache shows it: it must not block. Set it before the cache starts.
func (c *Cache) OnUndecodable(f func(*DecodeError)) { c.onUndecodable = f }

// decodedInformer is a shared informer of kind k that keeps its objects as their Go type (see the
// top of this file): it lists unstructured objects and converts them, and watches them decoded
// straight into the Go type (watchdecode.go) unless after is set. strip drops what the cache does
// not need; after sees every object that converted.
func (c *Cache) decodedInformer(k decodedKind, tweak func(*metav1.ListOptions), strip stripper,
	after func(*unstructured.Unstructured, runtime.Object), byNamespace bool) (cache.SharedIndexInformer, error) {
	transform := c.decode(k, strip.unstructured, after)
	client := c.Clients.Dynamic.Resource(k.gvr)
	list := func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		if tweak != nil {
			tweak(&o)
		}
		return decodedList(ctx, client, o, transform)
	}
	// Events arrive as Go types (watchdecode.go), except for kinds whose transform also reads the
	// unstructured object (after): those few (CMAs) come as unstructured objects, as lists do.
	var example runtime.Object = &unstructured.Unstructured{}
	watchObjects := client.Watch
	if after == nil {
		typedWatch, err := c.typedWatch(k, strip.typed, transform)
		if err != nil {
			return nil, err
		}
		watchObjects, example = typedWatch, k.newObj()
	}
	watchFunc := func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		if tweak != nil {
			tweak(&o)
		}
		return watchObjects(ctx, o)
	}
	indexers := cache.Indexers{}
	if byNamespace {
		indexers[cache.NamespaceIndex] = cache.MetaNamespaceIndexFunc
	}
	inf := cache.NewSharedIndexInformerWithOptions(
		// The client supports watch-list streaming (the wrapper tells the reflector so), as
		// dynamicinformer's informer does.
		cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
			ListWithContextFunc:  list,
			WatchFuncWithContext: watchFunc,
			ListFunc:             func(o metav1.ListOptions) (runtime.Object, error) { return list(context.Background(), o) },
			WatchFunc:            func(o metav1.ListOptions) (watch.Interface, error) { return watchFunc(context.Background(), o) },
		}, c.Clients.Dynamic),
		example,
		cache.SharedIndexInformerOptions{ResyncPeriod: c.opts.Resync, Indexers: indexers,
			ObjectDescription: k.gvr.String()})
	if err := inf.SetTransform(transform); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", k.gvr, err)
	}
	kind := k.gvk.Kind
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(metav1.Object)
			n, ok2 := cur.(metav1.Object)
			if ok1 && ok2 && o.GetResourceVersion() != n.GetResourceVersion() {
				c.undecodable.left(kind, o, false)
			}
		},
		DeleteFunc: func(obj any) {
			if m, ok := Tombstone[metav1.Object](obj); ok {
				c.undecodable.left(kind, m, true)
				c.trimmed.forget(kind, m)
			}
		},
	}); err != nil {
		return nil, fmt.Errorf("watching %s: %w", k.gvr, err)
	}
	if c.decodedInformers == nil {
		c.decodedInformers = map[string]cache.SharedIndexInformer{}
	}
	c.decodedInformers[kind] = inf
	return inf, nil
}

// decodedList is a decoded kind's list call: the list as the reflector asks for it, its objects
// already through transform (Go types or placeholders), which the informer's transform then passes
// through.
//
// Memory: a list of thousands of objects as the API server returns it, its JSON and its
// unstructured objects (maps, several times the JSON) are far larger than the Go types the cache
// keeps, and they were held all at once while the typed objects were built: at 5,000 clusters the
// first list of ManagedClusters alone held some 30 MB, the controller's peak live heap at start. So
// the API server is only ever asked for pages (of listPageSize objects), each decoded as it
// arrives, and only the typed objects are kept:
//   - The reflector's first list asks for resourceVersion "0" (any version, which the API server
//     serves from its watch cache in one piece, ignoring the page size); it asks for the latest
//     version instead, which the API server serves page by page.
//   - A relist after a watch failed (the reflector asks for the resourceVersion it last saw,
//     without a page size, when its first list came in one page, which on a hub the controller
//     started on before the fleet grew is always) is paged here: with the latest version, page by
//     page, the pages joined. Unpaged, one relist of 5,000 MCAs was a 21 MB response and some
//     100 MB of unstructured objects at once, the controller's peak under --deploy-templates.
//
// Either list is as fresh or fresher than the one asked for: the reflector watches from the
// resourceVersion it returns. Where the reflector streams the initial state instead (watch-list,
// on API servers whose etcd supports it), none of this is used: each object then arrives and is
// decoded on its own.
func decodedList(ctx context.Context, client dynamic.NamespaceableResourceInterface, o metav1.ListOptions, transform cache.TransformFunc) (runtime.Object, error) {
	if o.ResourceVersion == "0" && o.Limit > 0 && o.Continue == "" {
		o.ResourceVersion = ""
	}
	joinPages := o.Limit == 0 && o.Continue == ""
	if joinPages {
		o.Limit, o.ResourceVersion, o.ResourceVersionMatch = listPageSize, "", ""
	}
	out := &metainternalversion.List{}
	for first := true; ; first = false {
		page, err := client.List(ctx, o)
		if err != nil {
			return nil, err
		}
		if first {
			// Every page of a list carries the resourceVersion of its first.
			out.ListMeta = metav1.ListMeta{ResourceVersion: page.GetResourceVersion(), Continue: page.GetContinue(),
				RemainingItemCount: page.GetRemainingItemCount()}
		}
		for i := range page.Items {
			// A copy: a DecodeError keeps the object, which must not pin the page.
			u := page.Items[i]
			page.Items[i] = unstructured.Unstructured{} // garbage as soon as it is decoded
			obj, err := transform(&u)
			if err != nil {
				return nil, err
			}
			out.Items = append(out.Items, obj.(runtime.Object))
		}
		if !joinPages || page.GetContinue() == "" {
			if joinPages {
				out.Continue, out.RemainingItemCount = "", nil
			}
			return out, nil
		}
		o.Continue = page.GetContinue()
	}
}

// keptManagedFields is what the cache keeps of an object's managedFields: of a CMA, the entries
// that own a day-2 annotation, reduced to those annotations (operations.RequestFields), so the
// rollout's events can name who paused, promoted, retried or aborted; of any other kind, nothing.
// (The controller writes CMAs through the status subresource only, where the API server ignores
// the managedFields a request carries.)
func keptManagedFields(k decodedKind, fields []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	if k.gvk != kindCMA.gvk {
		return nil
	}
	return operations.RequestFields(fields)
}

// listPageSize is the page size of the lists decodedList joins: the reflector's own.
var listPageSize int64 = 500

// decode is the transform of a decoded kind's informer: an unstructured object in, its Go type (or
// a placeholder) out. Objects already typed (a watch-list's temporary store hands its transformed
// objects to the cache's store again) and tombstones pass through.
func (c *Cache) decode(k decodedKind, strip func(*unstructured.Unstructured), after func(*unstructured.Unstructured, runtime.Object)) cache.TransformFunc {
	return func(obj any) (any, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return obj, nil
		}
		if k.gvk == kindCMA.gvk {
			u.SetManagedFields(keptManagedFields(k, u.GetManagedFields()))
		} else {
			u.SetManagedFields(nil)
		}
		if strip != nil {
			strip(u)
		}
		typed := k.newObj()
		err := Decode(u, typed)
		if err == nil {
			c.boundDecoded(k, typed)
			c.interned.object(typed)
			if after != nil {
				after(u, typed)
			}
			return typed, nil
		}
		e := &DecodeError{GVK: k.gvk, Namespace: u.GetNamespace(), Name: u.GetName(), ResourceVersion: u.GetResourceVersion(),
			UID: u.GetUID(), Generation: u.GetGeneration(), Err: err, Object: u}
		if c.undecodable.record(e) {
			c.tellUndecodable(e)
		}
		return placeholder(k, u), nil
	}
}

// Decode decodes u into typed exactly as a typed client decodes the API server's JSON (the
// same JSON decoder, case-sensitive, integers checked against their Go type's range).
// runtime.DefaultUnstructuredConverter is not used: it converts an int64 into an int32 field
// silently wrapping it, where a typed client fails (a ManagedCluster's leaseDurationSeconds of 2^40,
// a decision group index).
func Decode(u *unstructured.Unstructured, typed runtime.Object) error {
	b, err := u.MarshalJSON()
	if err != nil {
		return err
	}
	return sigsjson.UnmarshalCaseSensitivePreserveInts(b, typed)
}

// placeholder is the Go type of k with u's metadata only.
func placeholder(k decodedKind, u *unstructured.Unstructured) runtime.Object {
	obj := k.newObj()
	meta := &unstructured.Unstructured{Object: map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "metadata": u.Object["metadata"]}}
	if err := Decode(meta, obj); err != nil {
		// The API server validates metadata, so this does not happen; keep the identity anyway.
		obj = k.newObj()
		m := obj.(metav1.Object)
		m.SetNamespace(u.GetNamespace())
		m.SetName(u.GetName())
		m.SetUID(u.GetUID())
		m.SetResourceVersion(u.GetResourceVersion())
		m.SetGeneration(u.GetGeneration())
		m.SetLabels(u.GetLabels())
		m.SetAnnotations(u.GetAnnotations())
	}
	return obj
}

func (c *Cache) tellUndecodable(e *DecodeError) {
	logger := klog.Background()
	if l := c.logger.Load(); l != nil {
		logger = *l
	}
	logger.Error(e.Err, "Cannot decode an object the API server returned: the cache holds its metadata only, and what depends on it waits until a version that decodes is applied",
		"kind", e.GVK.Kind, "object", klog.KRef(e.Namespace, e.Name), "resourceVersion", e.ResourceVersion, "generation", e.Generation)
	if c.onUndecodable != nil {
		c.onUndecodable(e)
	}
}

// rolloutStrategies are the install placements' rollout strategies of a ClusterManagementAddOn as
// the API server returned them, by index in spec.installStrategy.placements (nil where there is
// none): the Go types lose what only they show (an explicit maxConcurrency of 0 is unset there).
type rolloutStrategies struct {
	uid        types.UID
	generation int64
	strategies []map[string]any
}

// noteRolloutStrategies is the after hook of the CMA informer.
func (c *Cache) noteRolloutStrategies(u *unstructured.Unstructured, _ runtime.Object) {
	ps, _, _ := unstructured.NestedSlice(u.Object, "spec", "installStrategy", "placements")
	list := make([]map[string]any, len(ps))
	for i, p := range ps {
		if m, ok := p.(map[string]any); ok {
			list[i], _ = m["rolloutStrategy"].(map[string]any)
		}
	}
	c.strategiesMu.Lock()
	defer c.strategiesMu.Unlock()
	c.strategies[u.GetName()] = rolloutStrategies{uid: u.GetUID(), generation: u.GetGeneration(), strategies: list}
}

func (c *Cache) forgetRolloutStrategies(obj any) {
	m, ok := Tombstone[metav1.Object](obj)
	if !ok {
		return
	}
	c.strategiesMu.Lock()
	defer c.strategiesMu.Unlock()
	if s, ok := c.strategies[m.GetName()]; ok && s.uid == m.GetUID() {
		delete(c.strategies, m.GetName())
	}
}

// RolloutStrategies returns the rollout strategy of every install placement of cma (by index in
// spec.installStrategy.placements, nil where none is set) as the API server returned the same spec
// generation; ok is false when the cache has seen another generation (it is about to show it:
// decide again shortly).
func (c *Cache) RolloutStrategies(cma *addonv1alpha1.ClusterManagementAddOn) (strategies []map[string]any, ok bool) {
	c.strategiesMu.Lock()
	defer c.strategiesMu.Unlock()
	s, found := c.strategies[cma.Name]
	if !found || s.uid != cma.UID || s.generation != cma.Generation || len(s.strategies) != len(cma.Spec.InstallStrategy.Placements) {
		return nil, false
	}
	return s.strategies, true
}

// decisionLister is the PlacementDecision lister the cache hands out: it never returns a
// placeholder, but an error naming the decision that does not decode (its clusters are unknown, so
// whoever lists a placement's decisions must wait rather than take them as gone).
type decisionLister struct {
	clusterlistersv1beta1.PlacementDecisionLister
	c *Cache
}

func (l decisionLister) List(selector labels.Selector) ([]*clusterv1beta1.PlacementDecision, error) {
	ds, err := l.PlacementDecisionLister.List(selector)
	return l.c.checkDecisions(ds, err)
}

func (l decisionLister) PlacementDecisions(namespace string) clusterlistersv1beta1.PlacementDecisionNamespaceLister {
	return decisionNamespaceLister{l.PlacementDecisionLister.PlacementDecisions(namespace), l.c}
}

type decisionNamespaceLister struct {
	clusterlistersv1beta1.PlacementDecisionNamespaceLister
	c *Cache
}

func (l decisionNamespaceLister) List(selector labels.Selector) ([]*clusterv1beta1.PlacementDecision, error) {
	ds, err := l.PlacementDecisionNamespaceLister.List(selector)
	return l.c.checkDecisions(ds, err)
}

func (l decisionNamespaceLister) Get(name string) (*clusterv1beta1.PlacementDecision, error) {
	d, err := l.PlacementDecisionNamespaceLister.Get(name)
	if err != nil {
		return nil, err
	}
	if e := l.c.DecodeError(d); e != nil {
		return nil, e
	}
	return d, nil
}

func (c *Cache) checkDecisions(ds []*clusterv1beta1.PlacementDecision, err error) ([]*clusterv1beta1.PlacementDecision, error) {
	if err != nil {
		return nil, err
	}
	for _, d := range ds {
		if e := c.DecodeError(d); e != nil {
			return nil, e
		}
	}
	return ds, nil
}
