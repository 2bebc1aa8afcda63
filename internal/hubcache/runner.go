package hubcache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Queue is a reconciler's work queue: keys are "<namespace>/<name>" or "<name>".
type Queue = workqueue.TypedRateLimitingInterface[string]

// Sync reconciles one key. A positive duration asks to look again after it.
type Sync func(ctx context.Context, key string) (time.Duration, error)

// Reconciler is one reconciler on the cache. Run makes it a controller-runtime controller: its
// queue (rate-limited, with controller-runtime's workqueue and reconcile metrics under Name), its
// workers, and its start once the cache has synced.
type Reconciler struct {
	// Name names the controller in logs and metrics; unique in the process.
	Name string
	// Workers is the number of concurrent reconciles. Default 1.
	Workers int
	// Sync reconciles one key.
	Sync Sync
	// Watch registers, on the cache's informers, the event handlers that feed the reconciler's
	// queue. It is called once, with that queue, when the reconciler starts.
	Watch func(q Queue) error
}

// Add registers a reconciler. Call it before Run.
func (c *Cache) Add(r Reconciler) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return fmt.Errorf("adding reconciler %s: the cache is already running", r.Name)
	}
	for _, o := range c.reconcilers {
		if o.Name == r.Name {
			return fmt.Errorf("adding reconciler %s: a reconciler of that name exists", r.Name)
		}
	}
	c.reconcilers = append(c.reconcilers, r)
	return nil
}

// AddLoop registers a function run once the caches have synced, until ctx is done (periodic work
// that is no reaction to an event, such as the garbage collection of config versions). Call it
// before Run.
func (c *Cache) AddLoop(f func(ctx context.Context)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return errors.New("adding a loop: the cache is already running")
	}
	c.loops = append(c.loops, f)
	return nil
}

// AddEvents sends what recorder records to the hub's Events from now until the cache stops.
func (c *Cache) AddEvents(events record.EventBroadcaster) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return errors.New("adding an event recorder: the cache is already running")
	}
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.Clients.Kube.CoreV1().Events("")})
	c.closers = append(c.closers, events.Shutdown)
	return nil
}

// Run starts the informers and every reconciler and loop, and blocks until ctx is done or a
// reconciler fails (its error is returned); then it stops them all and waits for them. It runs once.
func (c *Cache) Run(parent context.Context) error {
	logger := klog.FromContext(parent)
	c.mu.Lock()
	if c.started {
		c.mu.Unlock()
		return errors.New("the hub cache is already running")
	}
	c.started = true
	reconcilers, loops, closers := c.reconcilers, c.loops, c.closers
	c.mu.Unlock()
	defer func() {
		for _, close := range closers {
			close()
		}
	}()

	// Controllers are built here, with the caller's logger: tests run several in one process.
	var controllers []crcontroller.TypedController[string]
	for _, r := range reconcilers {
		ctrl, err := newController(r, logger, c.waitForSync)
		if err != nil {
			return err
		}
		controllers = append(controllers, ctrl)
	}

	// Everything runs on ctx, cancelled when Run returns (before it waits for them), also when a
	// reconciler failed.
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	c.logger.Store(&logger)
	var informers sync.WaitGroup
	for _, inf := range c.decodedInformers {
		informers.Go(func() { inf.RunWithContext(ctx) })
	}
	defer informers.Wait()
	c.kubeFactory.Start(ctx.Done())
	if c.historyFactory != nil {
		c.historyFactory.Start(ctx.Done())
	}
	c.Configs.start(ctx)
	defer c.shutdown()

	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // before wg.Wait: the controllers and loops stop on it
	errs := make(chan error, len(controllers))
	for _, ctrl := range controllers {
		// Each controller waits for the cache to sync (its source) before its workers start.
		wg.Go(func() { errs <- ctrl.Start(ctx) })
	}
	synced := make(chan bool, 1)
	go func() { synced <- c.waitForSync(ctx) }()
	select {
	case ok := <-synced:
		if !ok {
			// Only a stop ends the wait early: a stop before the caches synced is a clean shutdown.
			logger.Info("Stopped before the informer caches synced", "reason", context.Cause(parent))
			return nil
		}
	case err := <-errs:
		// A controller gave up waiting for the caches (controller-runtime's CacheSyncTimeout):
		// stop, so the process exits and a standby or a restart tries again.
		if parent.Err() != nil {
			return nil
		}
		return fmt.Errorf("a reconciler stopped before the caches synced: %w", err)
	}
	c.synced.Store(true)
	logger.Info("Caches synced", "addons", c.opts.Addons, "reconcilers", len(controllers))
	for _, loop := range loops {
		wg.Go(func() { loop(ctx) })
	}
	select {
	case <-parent.Done():
		logger.Info("Shutting down")
		return nil
	case err := <-errs:
		if parent.Err() != nil {
			return nil
		}
		return fmt.Errorf("a reconciler stopped: %w", err)
	}
}

func (c *Cache) shutdown() {
	c.kubeFactory.Shutdown()
}

// waitForSync waits until every informer started so far has synced, or ctx is done.
func (c *Cache) waitForSync(ctx context.Context) bool {
	var synced []cache.InformerSynced
	for _, inf := range c.decodedInformers {
		synced = append(synced, inf.HasSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) || !allSynced(c.kubeFactory.WaitForCacheSync(ctx.Done())) ||
		c.historyFactory != nil && !allSynced(c.historyFactory.WaitForCacheSync(ctx.Done())) {
		return false
	}
	return c.Configs.waitForSync(ctx)
}

func allSynced[K comparable](m map[K]bool) bool {
	for _, ok := range m {
		if !ok {
			return false
		}
	}
	return true
}

// Synced reports whether Run started the informers and all of them synced (readiness).
func (c *Cache) Synced() bool { return c.synced.Load() }

// newController makes r a controller-runtime controller, run by Run rather than by a manager: the
// whole cache runs under the manager's leader election as one runnable, so a replica that is not
// the leader holds no cache at all.
func newController(r Reconciler, logger klog.Logger, waitForSync func(context.Context) bool) (crcontroller.TypedController[string], error) {
	sync := r.Sync
	workers := max(1, r.Workers)
	ctrl, err := crcontroller.NewTypedUnmanaged(r.Name, crcontroller.TypedOptions[string]{
		MaxConcurrentReconciles: workers,
		// client-go's rate-limited workqueue, not controller-runtime's priority queue (its default
		// since v0.23): the priority queue of v0.23.3 can deadlock when it shuts down while items
		// are ready (kubernetes-sigs/controller-runtime#3538), and then the controller never stops
		// on SIGTERM. make bench-controller hit it at 1,000 clusters on every run.
		UsePriorityQueue: ptr(false),
		// Tests run several controllers in one process; names are checked in Add.
		SkipNameValidation: ptr(true),
		LogConstructor: func(key *string) logr.Logger {
			l := logger.WithValues("reconciler", r.Name)
			if key != nil {
				l = l.WithValues("key", *key)
			}
			return l
		},
		Reconciler: reconcile.TypedFunc[string](func(ctx context.Context, key string) (reconcile.Result, error) {
			after, err := sync(ctx, key)
			switch {
			case err == nil:
				return reconcile.Result{RequeueAfter: after}, nil
			case onlyConflicts(err) && ctx.Err() == nil:
				// Writes carry the resourceVersion they were computed from, so a conflict is the
				// expected outcome of a stale read, not a failure: retry with backoff, without an
				// error log.
				klog.FromContext(ctx).V(4).Info("Conflict, retrying", "err", err.Error())
				return reconcile.Result{Requeue: true}, nil //nolint:staticcheck // the rate-limited retry is what is wanted here
			}
			return reconcile.Result{}, err
		}),
	})
	if err != nil {
		return nil, fmt.Errorf("building reconciler %s: %w", r.Name, err)
	}
	if err := ctrl.Watch(&source{name: r.Name, watch: r.Watch, waitForSync: waitForSync}); err != nil {
		return nil, fmt.Errorf("watching for reconciler %s: %w", r.Name, err)
	}
	return ctrl, nil
}

// source feeds a controller from the cache's informers: Start registers the reconciler's event
// handlers with the controller's queue; WaitForSync holds its workers until the cache has synced
// (controller-runtime gives up after its CacheSyncTimeout, 2 minutes, and Run then fails).
type source struct {
	name        string
	watch       func(Queue) error
	waitForSync func(context.Context) bool
}

func (s *source) WaitForSync(ctx context.Context) error {
	if !s.waitForSync(ctx) {
		return fmt.Errorf("the hub cache did not sync: %w", context.Cause(ctx))
	}
	return nil
}

func (s *source) Start(_ context.Context, q Queue) error {
	if s.watch == nil {
		return nil
	}
	if err := s.watch(q); err != nil {
		return fmt.Errorf("registering the event handlers of %s: %w", s.name, err)
	}
	return nil
}

func (s *source) String() string { return "hubcache/" + s.name }

// Tombstone unwraps the object of a delete event.
func Tombstone[T any](obj any) (T, bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	t, ok := obj.(T)
	return t, ok
}

func ptr[T any](v T) *T { return &v }

// onlyConflicts reports whether err is a conflict, or errors joined (parallel writes) that are all
// conflicts: one other error among them must be logged.
func onlyConflicts(err error) bool {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs := j.Unwrap()
		for _, e := range errs {
			if !onlyConflicts(e) {
				return false
			}
		}
		return len(errs) > 0
	}
	if u := errors.Unwrap(err); u != nil {
		return onlyConflicts(u)
	}
	return apierrors.IsConflict(err)
}
