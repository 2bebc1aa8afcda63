package hubcache

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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
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

// Configs caches add-on configs of any group/resource: one dynamic informer per group/resource,
// started when a reference to it is first seen (Ensure), so it hashes exactly the objects the API
// server returns (CRD defaults included), which is what OCM hashes; a config kind that nobody
// hashes is what leaves OCM add-ons stuck with an empty spec hash. The rollout controller (hashes)
// and the template reconcilers (AddOnTemplates and AddOnDeploymentConfigs to render) share it, so
// every config kind is watched once per process.
type Configs struct {
	dynamic  dynamic.Interface
	mapper   *restmapper.DeferredDiscoveryRESTMapper
	resync   time.Duration
	onChange func()
	// onAccess is called with the error every time listing or watching a config kind is refused
	// (the informer retries with a backoff of up to about 30 s), and with nil once it is allowed
	// again.
	onAccess func(configref.GroupResource, *ForbiddenError)

	mu sync.Mutex
	// runCtx runs the informers; nil until the cache starts (informers created before wait).
	runCtx    context.Context
	informers map[configref.GroupResource]*configInformer
	// initial are the informers created before the cache started.
	initial []*configInformer
	// unserved remembers group/resources discovery did not know, and as of when (the time of the
	// discovery answer that did not know them).
	unserved map[configref.GroupResource]time.Time
	// discovered is when discovery was last asked (zero: never), and discoveryErr its error, if it
	// failed: the mapper is not asked again until RediscoverAfter has passed (a failed discovery
	// would otherwise be retried by every mapping call).
	discovered   time.Time
	discoveryErr error
	// now is the clock (time.Now; tests set their own).
	now func() time.Time

	hashMu sync.Mutex
	hashes map[string]memo // by config UID
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

// errDiscoveryWait marks a config whose group/resource is not mapped yet because discovery failed
// less than RediscoverAfter ago (that failure was logged).
var errDiscoveryWait = errors.New("waiting to ask discovery again")

// RediscoverAfter is how long an unserved group/resource is trusted to stay unserved before
// discovery is asked again (its CRD may be installed later), and the least time between two
// discovery requests of the cache, whatever asks: all unserved kinds due for another look share
// one request, so no number of unserved kinds costs more than one discovery per RediscoverAfter.
const RediscoverAfter = 10 * time.Second

func newConfigs(disc discovery.DiscoveryInterface, dyn dynamic.Interface, resync time.Duration) *Configs {
	return &Configs{
		dynamic:   dyn,
		mapper:    restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)),
		resync:    resync,
		onChange:  func() {},
		onAccess:  func(configref.GroupResource, *ForbiddenError) {},
		informers: map[configref.GroupResource]*configInformer{},
		unserved:  map[configref.GroupResource]time.Time{},
		hashes:    map[string]memo{},
		now:       time.Now,
	}
}

// OnChange sets what is called on every change of a cached config (and when a config kind becomes
// readable or unreadable). Set it before the cache starts.
func (s *Configs) OnChange(f func()) { s.onChange = f }

// OnAccess sets what is called with the error every time listing or watching a config kind is
// refused (the informer retries with a backoff of up to about 30 s), and with nil once it is
// allowed again. Set it before the cache starts.
func (s *Configs) OnAccess(f func(configref.GroupResource, *ForbiddenError)) { s.onAccess = f }

// known are the config kinds whose version and scope are fixed by OCM's API: watching them needs
// no discovery, so the template reconcilers can register their handlers before the cache starts.
var known = map[configref.GroupResource]struct {
	gvr        schema.GroupVersionResource
	namespaced bool
}{
	configref.AddOnTemplates:         {AddOnTemplatesGVR, false},
	configref.AddOnDeploymentConfigs: {AddOnDeploymentConfigsGVR, true},
}

// Watch returns the informer of a config kind OCM's API defines (AddOnTemplates,
// AddOnDeploymentConfigs), creating it if needed; it runs once the cache starts.
func (s *Configs) Watch(gr configref.GroupResource) (cache.SharedIndexInformer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ci, ok := s.informers[gr]; ok {
		return ci.informer, nil
	}
	k, ok := known[gr]
	if !ok {
		return nil, fmt.Errorf("watching %s: not a config kind of OCM's API; use Ensure", gr)
	}
	ci, err := s.addLocked(gr, k.gvr, k.namespaced)
	if err != nil {
		return nil, err
	}
	return ci.informer, nil
}

// start runs the informers created so far, and makes later ones run at once, until ctx is done.
func (s *Configs) start(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runCtx = ctx
	for _, ci := range s.informers {
		s.initial = append(s.initial, ci)
		go ci.informer.RunWithContext(ctx)
	}
}

// waitForSync waits until every informer created before the cache started (the ones reconcilers
// registered event handlers on; later ones are waited for by Ensure's callers) has synced or is
// refused: a refused informer never syncs, and lookups say why.
func (s *Configs) waitForSync(ctx context.Context) bool {
	s.mu.Lock()
	initial := s.initial
	s.mu.Unlock()
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		for _, ci := range initial {
			if !ci.informer.HasSynced() && ci.forbiddenErr() == nil {
				return false, nil
			}
		}
		return true, nil
	})
	return err == nil
}

// Ensure starts informers for grs and reports whether every one of them has synced; an unserved
// group/resource counts as synced (lookups then say it is not served). unserved tells whether any
// was unserved, so the caller checks again later.
func (s *Configs) Ensure(ctx context.Context, grs []configref.GroupResource) (synced, unserved bool) {
	synced = true
	for _, gr := range grs {
		inf, err := s.informerFor(ctx, gr)
		if errors.Is(err, errNotServed) || errors.Is(err, errDiscoveryWait) {
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

func (s *Configs) informerFor(ctx context.Context, gr configref.GroupResource) (*configInformer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if inf, ok := s.informers[gr]; ok {
		return inf, nil
	}
	now := s.now()
	at, wasUnserved := s.unserved[gr]
	if wasUnserved && now.Sub(at) < RediscoverAfter {
		return nil, errNotServed
	}
	// gr is new, or unserved and due for another look. Discovery's answer is refreshed at most once
	// per RediscoverAfter: every kind due within that time is mapped with the same answer.
	switch {
	case s.discovered.IsZero():
		s.discovered = now // the mapper's first call asks discovery
	case now.Sub(s.discovered) >= RediscoverAfter:
		s.mapper.Reset()
		s.discovered, s.discoveryErr = now, nil
	case s.discoveryErr != nil:
		return nil, errDiscoveryWait
	}
	gvr, err := s.mapper.ResourceFor(schema.GroupVersionResource{Group: gr.Group, Resource: gr.Resource})
	if err != nil {
		if meta.IsNoMatchError(err) {
			if !wasUnserved {
				klog.FromContext(ctx).Info("Config kind not served by the API server (is its CustomResourceDefinition installed?); "+
					"add-ons referencing it wait, and discovery is asked again at most once per interval for all such kinds",
					"resource", gr.String(), "interval", RediscoverAfter)
			} else {
				klog.FromContext(ctx).V(4).Info("Config kind still not served", "resource", gr.String())
			}
			// As of the answer's time: the next look shares the next refresh with every other kind.
			s.unserved[gr] = s.discovered
			return nil, errNotServed
		}
		if !meta.IsAmbiguousError(err) {
			// Discovery itself failed (the mapper has no answer at all): keep the mapper from
			// asking again for every kind until RediscoverAfter has passed.
			s.discoveryErr = err
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

	ci, err := s.addLocked(gr, gvr, mapping.Scope.Name() == meta.RESTScopeNameNamespace)
	if err != nil {
		return nil, err
	}
	klog.FromContext(ctx).Info("Watching configs", "resource", gvr.String(), "namespaced", ci.namespaced)
	return ci, nil
}

// addLocked creates the informer of a config kind; it runs at once if the cache has started.
func (s *Configs) addLocked(gr configref.GroupResource, gvr schema.GroupVersionResource, namespaced bool) (*configInformer, error) {
	ci := &configInformer{gvr: gvr, namespaced: namespaced}
	inf := s.newInformer(gr, ci)
	// managedFields is metadata and never part of a spec hash; dropping it saves memory.
	_ = inf.SetTransform(func(obj any) (any, error) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			u.SetManagedFields(nil)
		}
		return obj, nil
	})
	notify := func(any) { s.onChange() }
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: notify,
		UpdateFunc: func(old, cur any) {
			if o, ok := old.(*unstructured.Unstructured); ok {
				if c, ok := cur.(*unstructured.Unstructured); ok && o.GetResourceVersion() == c.GetResourceVersion() {
					return
				}
			}
			s.onChange()
		},
		DeleteFunc: func(obj any) {
			if m, ok := Tombstone[metav1.Object](obj); ok {
				s.forgetHash(m.GetUID())
			}
			s.onChange()
		},
	}); err != nil {
		return nil, fmt.Errorf("watching %s: %w", gvr, err)
	}
	ci.informer = inf
	if s.runCtx != nil {
		go inf.RunWithContext(s.runCtx)
	}
	s.informers[gr] = ci
	return ci, nil
}

// Lookup returns the spec hash of the config ref points at, or an error that says why there is
// none. Call Ensure first.
func (s *Configs) Lookup(ref configref.Ref) (string, error) {
	u, err := s.get(ref)
	if err != nil {
		return "", err
	}
	h, err := s.HashOf(u)
	if err != nil {
		return "", fmt.Errorf("config %s: %w", ref, err)
	}
	return h, nil
}

// Generation returns the metadata.generation of the cached config ref points at; ok is false when
// it is not in the cache (not found, its kind not watched, served or readable).
func (s *Configs) Generation(ref configref.Ref) (int64, bool) {
	u, err := s.get(ref)
	if err != nil {
		return 0, false
	}
	return u.GetGeneration(), true
}

// get returns the cached config ref points at, or an error that says why there is none.
func (s *Configs) get(ref configref.Ref) (*unstructured.Unstructured, error) {
	s.mu.Lock()
	inf, ok := s.informers[ref.GroupResource]
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("config %s: resource %s is not served by the API server (is its CustomResourceDefinition installed?)", ref, ref.GroupResource)
	}
	if ferr := inf.forbiddenErr(); ferr != nil {
		return nil, fmt.Errorf("config %s: %w", ref, ferr)
	}
	key := ref.Name
	if inf.namespaced {
		if ref.Namespace == "" {
			return nil, fmt.Errorf("config %s: %s is namespaced; set the reference's namespace", ref, ref.GroupResource)
		}
		key = ref.Namespace + "/" + ref.Name
	}
	obj, exists, err := inf.informer.GetIndexer().GetByKey(key)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", ref, err)
	}
	if !exists {
		return nil, fmt.Errorf("config %s not found", ref)
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("config %s: unexpected object %T in the cache", ref, obj)
	}
	return u, nil
}

// HashOf is the spec hash of a cached config, computed once per resourceVersion: templates can be
// hundreds of kilobytes, and every rollout decision and every reconcile of an MCA looks theirs up.
func (s *Configs) HashOf(u *unstructured.Unstructured) (string, error) {
	key := string(u.GetUID())
	s.hashMu.Lock()
	m, ok := s.hashes[key]
	s.hashMu.Unlock()
	if ok && key != "" && m.resourceVersion == u.GetResourceVersion() {
		return m.hash, nil
	}
	h, err := spechash.Of(u.Object)
	if err != nil {
		return "", err
	}
	if key != "" {
		s.hashMu.Lock()
		s.hashes[key] = memo{resourceVersion: u.GetResourceVersion(), hash: h}
		s.hashMu.Unlock()
	}
	return h, nil
}

func (s *Configs) forgetHash(uid types.UID) {
	s.hashMu.Lock()
	delete(s.hashes, string(uid))
	s.hashMu.Unlock()
}

type memo struct{ resourceVersion, hash string }

// newInformer is dynamicinformer.NewFilteredDynamicInformer with list and watch calls that record
// whether the API server refuses them (ci.forbidden): a refused informer never syncs, and the
// reflector only logs its retries.
func (s *Configs) newInformer(gr configref.GroupResource, ci *configInformer) cache.SharedIndexInformer {
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
func (s *Configs) observeAccess(ctx context.Context, gr configref.GroupResource, ci *configInformer, verb string, err error) {
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

// Kind is a config kind the cache watches and, while the API server refuses the controller to
// list or watch it, why.
type Kind struct {
	configref.GroupResource
	Forbidden *ForbiddenError
}

// Kinds lists the watched config kinds (for the metrics), in no particular order.
func (s *Configs) Kinds() []Kind {
	s.mu.Lock()
	infs := make(map[configref.GroupResource]*configInformer, len(s.informers))
	for gr, inf := range s.informers {
		infs[gr] = inf
	}
	s.mu.Unlock()
	out := make([]Kind, 0, len(infs))
	for gr, inf := range infs {
		out = append(out, Kind{GroupResource: gr, Forbidden: inf.forbiddenErr()})
	}
	return out
}

// Cached returns the cached objects of every watched config kind whose informer has synced (an
// unsynced cache could miss the newest version of a config: whoever decides on it decides later).
func (s *Configs) Cached() map[configref.GroupResource][]*unstructured.Unstructured {
	s.mu.Lock()
	infs := make(map[configref.GroupResource]*configInformer, len(s.informers))
	for gr, inf := range s.informers {
		infs[gr] = inf
	}
	s.mu.Unlock()
	out := map[configref.GroupResource][]*unstructured.Unstructured{}
	for gr, inf := range infs {
		if !inf.informer.HasSynced() {
			continue
		}
		for _, o := range inf.informer.GetStore().List() {
			if u, ok := o.(*unstructured.Unstructured); ok {
				out[gr] = append(out[gr], u)
			}
		}
	}
	return out
}

// Delete deletes one config object of a watched kind.
func (s *Configs) Delete(ctx context.Context, ref configref.Ref, opts metav1.DeleteOptions) error {
	s.mu.Lock()
	inf, ok := s.informers[ref.GroupResource]
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("%s is not watched", ref.GroupResource)
	}
	if inf.namespaced {
		return s.dynamic.Resource(inf.gvr).Namespace(ref.Namespace).Delete(ctx, ref.Name, opts)
	}
	return s.dynamic.Resource(inf.gvr).Delete(ctx, ref.Name, opts)
}
