package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
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
	// onAccess is called with the error every time listing or watching a config kind is refused
	// (the informer retries with a backoff of up to about 30 s), and with nil once it is allowed
	// again.
	onAccess func(configref.GroupResource, *ForbiddenError)

	mu        sync.Mutex
	informers map[configref.GroupResource]*configInformer
	// unserved remembers group/resources discovery did not know and when it was last asked.
	unserved map[configref.GroupResource]time.Time
}

type configInformer struct {
	gvr        schema.GroupVersionResource
	namespaced bool
	informer   cache.SharedIndexInformer

	mu sync.Mutex
	// forbidden is set while the API server refuses the controller to list or watch the kind: the
	// informer then never syncs, so nobody may wait for it (lookups fail with it instead). The
	// informer keeps retrying, so granting the permission later is picked up by itself.
	forbidden *ForbiddenError
}

func (ci *configInformer) forbiddenErr() *ForbiddenError {
	ci.mu.Lock()
	defer ci.mu.Unlock()
	return ci.forbidden
}

// ForbiddenError says the controller may not read a config kind: its identity lacks the RBAC
// permission to list or watch it. Find it with errors.As.
type ForbiddenError struct {
	// Verb is the refused verb: "list" or "watch".
	Verb string
	// Group and Resource name the config kind.
	Group, Resource string
	// Err is the API server's answer.
	Err error
}

// AggregateToControllerLabel is the label that aggregates a ClusterRole's rules into the
// controller's ClusterRole in the deployment manifests.
const AggregateToControllerLabel = "addonops.io/aggregate-to-controller"

func (e *ForbiddenError) Error() string {
	gr := schema.GroupResource{Group: e.Group, Resource: e.Resource}
	return fmt.Sprintf("forbidden: the controller may not %s %s (group %q, resource %q); grant list and watch on it, e.g. by labelling a ClusterRole %s: \"true\"",
		e.Verb, gr, e.Group, e.Resource, AggregateToControllerLabel)
}

func (e *ForbiddenError) Unwrap() error { return e.Err }

// errNotServed marks a config whose group/resource the API server does not serve.
var errNotServed = errors.New("not served")

// rediscoverAfter is how long an unserved group/resource is trusted to stay unserved before
// discovery is asked again (its CRD may be installed later).
const rediscoverAfter = 10 * time.Second

func newConfigSource(disc discovery.DiscoveryInterface, dyn dynamic.Interface, resync time.Duration, onChange func(),
	onAccess func(configref.GroupResource, *ForbiddenError)) *configSource {
	return &configSource{
		dynamic:   dyn,
		mapper:    restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)),
		resync:    resync,
		onChange:  onChange,
		onAccess:  onAccess,
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
		if inf.forbiddenErr() != nil {
			// It will not sync until someone grants the permission; lookups say so, and the caller
			// looks again later.
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

	ci := &configInformer{gvr: gvr, namespaced: mapping.Scope.Name() == meta.RESTScopeNameNamespace}
	inf := s.newInformer(ctx, gr, ci)
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
	ci.informer = inf
	go inf.RunWithContext(ctx)
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
	if ferr := inf.forbiddenErr(); ferr != nil {
		return "", fmt.Errorf("config %s: %w", ref, ferr)
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

// newInformer is dynamicinformer.NewFilteredDynamicInformer with list and watch calls that record
// whether the API server refuses them (ci.forbidden): a refused informer never syncs, and the
// reflector only logs its retries.
func (s *configSource) newInformer(ctx context.Context, gr configref.GroupResource, ci *configInformer) cache.SharedIndexInformer {
	api := s.dynamic.Resource(ci.gvr)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			list, err := api.List(ctx, o)
			s.observeAccess(ctx, gr, ci, "list", err)
			return list, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			w, err := api.Watch(ctx, o)
			// A refused watch-list request (the reflector's first try, streaming the initial list)
			// is followed at once by a plain list, which says the same as "list": recording both
			// would make the problem flip between the two verbs at every retry.
			// A watch-list request that succeeds fills the cache by itself, so whatever was refused
			// before no longer matters.
			switch watchList := o.SendInitialEvents != nil && *o.SendInitialEvents; {
			case watchList && err == nil:
				s.observeAccess(ctx, gr, ci, "", nil)
			case !watchList:
				s.observeAccess(ctx, gr, ci, "watch", err)
			}
			return w, err
		},
	}
	return cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, s.dynamic),
		&unstructured.Unstructured{}, cache.SharedIndexInformerOptions{ResyncPeriod: s.resync, ObjectDescription: ci.gvr.String()})
}

// observeAccess records the outcome of a list or watch call: a refusal sets ci.forbidden (logged
// at error level when it starts), a success of the refused verb (verb "": of a watch-list request)
// clears it. The problem keeps its first verb until then, so its message, the add-on's status and
// the event stay the same across retries.
func (s *configSource) observeAccess(ctx context.Context, gr configref.GroupResource, ci *configInformer, verb string, err error) {
	switch {
	case err == nil:
		ci.mu.Lock()
		was := ci.forbidden
		cleared := was != nil && (verb == "" || was.Verb == verb)
		if cleared {
			ci.forbidden = nil
		}
		ci.mu.Unlock()
		if cleared {
			klog.FromContext(ctx).Info("Allowed to read configs again", "resource", ci.gvr.String(), "verb", verb)
			s.onAccess(gr, nil)
			s.onChange()
		}
	case apierrors.IsForbidden(err):
		ci.mu.Lock()
		ferr := ci.forbidden
		first := ferr == nil
		if first {
			ferr = &ForbiddenError{Verb: verb, Group: ci.gvr.Group, Resource: ci.gvr.Resource, Err: err}
			ci.forbidden = ferr
		}
		ci.mu.Unlock()
		if first {
			klog.FromContext(ctx).Error(err, "Forbidden to read configs; add-ons referencing them wait", "resource", ci.gvr.String(), "verb", verb, "fix", ferr.Error())
			// Decisions waiting for this informer to sync may go on now, with the error.
			s.onChange()
		}
		s.onAccess(gr, ferr)
	}
}
