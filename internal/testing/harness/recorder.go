package harness

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	watchtools "k8s.io/client-go/tools/watch"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
)

// Keyed is what a Recorder records: a snapshot of one object (or of a part of one), identified by
// Key (for an MCA, its cluster). Snapshots equal to the key's previous one are not recorded, so a
// snapshot that keeps only some fields records only the changes of those.
type Keyed interface {
	comparable
	Key() string
}

// Recorder keeps every snapshot of the objects one watch reports, in the order the API server
// committed them, so that "the canary finished before the others were told to move" is a fact
// about the server's history, not about when a test happened to poll.
type Recorder[T Keyed] struct {
	what   string
	mu     sync.Mutex
	events []T
	latest map[string]T
	listed int   // the events from the listing: the state when the recording began
	err    error // the watch ended unexpectedly
	stop   func()
	// changed gets a value (without blocking) after each recorded change, so that code waiting
	// for one wakes at once instead of at its next poll.
	changed chan struct{}
}

// ListWatch lists the objects to record (returning the list's resourceVersion) and watches them.
type ListWatch[O runtime.Object] struct {
	List  func(context.Context, metav1.ListOptions) ([]O, string, error)
	Watch func(context.Context, metav1.ListOptions) (watch.Interface, error)
}

// Record lists and then watches from the list's resourceVersion (a RetryWatcher resumes after a
// dropped connection without missing events), turning each object into snapshots with snap (the
// listed ones with type watch.Added). A Deleted event's snapshots are recorded and their keys
// leave Latest. It records until ctx is done or Stop.
func Record[T Keyed, O runtime.Object](ctx context.Context, what string, lw ListWatch[O], snap func(watch.EventType, O) []T) (*Recorder[T], error) {
	ctx, cancel := context.WithCancel(ctx)
	r := &Recorder[T]{what: what, latest: map[string]T{}, stop: cancel, changed: make(chan struct{}, 1)}
	items, rv, err := lw.List(ctx, metav1.ListOptions{})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("recording %s: listing: %w", what, err)
	}
	for _, o := range items {
		r.add(watch.Added, snap(watch.Added, o))
	}
	r.listed = len(r.events)
	w, err := watchtools.NewRetryWatcherWithContext(ctx, rv, watcherFunc(lw.Watch))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("recording %s: watching: %w", what, err)
	}
	go func() {
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					if ctx.Err() == nil {
						r.fail(fmt.Errorf("the watch of %s ended", what))
					}
					return
				}
				switch ev.Type {
				case watch.Added, watch.Modified, watch.Deleted:
					if o, ok := ev.Object.(O); ok {
						r.add(ev.Type, snap(ev.Type, o))
					} else {
						r.fail(fmt.Errorf("the watch of %s sent a %T", what, ev.Object))
					}
				case watch.Error:
					if ctx.Err() == nil {
						r.fail(fmt.Errorf("the watch of %s reported %v", what, ev.Object))
					}
					return
				}
			}
		}
	}()
	return r, nil
}

type watcherFunc func(context.Context, metav1.ListOptions) (watch.Interface, error)

func (f watcherFunc) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return f(ctx, o)
}

func (r *Recorder[T]) add(typ watch.EventType, snaps []T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range snaps {
		prev, ok := r.latest[s.Key()]
		if typ == watch.Deleted {
			delete(r.latest, s.Key())
		} else {
			if ok && prev == s {
				continue
			}
			r.latest[s.Key()] = s
		}
		r.events = append(r.events, s)
		select {
		case r.changed <- struct{}{}:
		default:
		}
	}
}

func (r *Recorder[T]) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
}

// Stop ends the recording.
func (r *Recorder[T]) Stop() { r.stop() }

// Err is why the recording ended early (nil while it runs).
func (r *Recorder[T]) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Mark returns the position of the next event: a step's events are those after its mark.
func (r *Recorder[T]) Mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// Listed is the mark after the listed objects' snapshots: Since(Listed()) is the state when the
// recording began and every change the watch reported since.
func (r *Recorder[T]) Listed() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.listed
}

// Changed gets a value after a change was recorded (one value for any number of changes since the
// last receive): a loop that polls can also wake at once when something changed.
func (r *Recorder[T]) Changed() <-chan struct{} { return r.changed }

// Events returns every recorded snapshot.
func (r *Recorder[T]) Events() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// Since returns the state of every key at mark and the events after it.
func (r *Recorder[T]) Since(mark int) (map[string]T, []T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	start := map[string]T{}
	for _, e := range r.events[:mark] {
		start[e.Key()] = e
	}
	return start, slices.Clone(r.events[mark:])
}

// Latest returns the latest snapshot of every key (deleted ones apart).
func (r *Recorder[T]) Latest() map[string]T {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]T, len(r.latest))
	for k, v := range r.latest {
		out[k] = v
	}
	return out
}

// Get returns the latest snapshot of key.
func (r *Recorder[T]) Get(key string) (T, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.latest[key]
	return v, ok
}

// WaitFor waits until check, given the latest snapshot of every key, returns ""; a recording that
// ended early fails the wait.
func (r *Recorder[T]) WaitFor(t testing.TB, timeout time.Duration, what string, check func(map[string]T) string, opts ...Option) time.Duration {
	t.Helper()
	return Eventually(t, timeout, what, func() string {
		if err := r.Err(); err != nil {
			return err.Error()
		}
		return check(r.Latest())
	}, opts...)
}

// MCAEvent is one recorded change of a ManagedClusterAddOn: the whole object as the watch
// delivered it, and when the recorder saw it.
type MCAEvent struct {
	At      time.Time
	Type    watch.EventType
	Cluster string
	MCA     *addonv1alpha1.ManagedClusterAddOn
}

// Key is the MCA's cluster.
func (e MCAEvent) Key() string { return e.Cluster }

// CMAEvent is one recorded change of a ClusterManagementAddOn.
type CMAEvent struct {
	At   time.Time
	Type watch.EventType
	CMA  *addonv1alpha1.ClusterManagementAddOn
}

// Key is the CMA's name.
func (e CMAEvent) Key() string { return e.CMA.Name }

// RecordMCAs records every change of the ManagedClusterAddOns named addon, in every cluster
// namespace, as MCAEvents (each event is a new object: nothing is merged).
func RecordMCAs(ctx context.Context, c addonclient.Interface, addon string) (*Recorder[MCAEvent], error) {
	return RecordMCASnapshots(ctx, c, addon, func(typ watch.EventType, m *addonv1alpha1.ManagedClusterAddOn) []MCAEvent {
		return []MCAEvent{{At: time.Now(), Type: typ, Cluster: m.Namespace, MCA: m}}
	})
}

// RecordMCASnapshots records the ManagedClusterAddOns named addon ("": of every add-on, as the
// demo does), in every cluster namespace, as the snapshots snap makes of them.
func RecordMCASnapshots[T Keyed](ctx context.Context, c addonclient.Interface, addon string, snap func(watch.EventType, *addonv1alpha1.ManagedClusterAddOn) []T) (*Recorder[T], error) {
	api := c.AddonV1alpha1().ManagedClusterAddOns(metav1.NamespaceAll)
	sel, what := fields.OneTermEqualSelector("metadata.name", addon).String(), "ManagedClusterAddOns "+addon
	if addon == "" {
		sel, what = "", "ManagedClusterAddOns"
	}
	return Record(ctx, what, ListWatch[*addonv1alpha1.ManagedClusterAddOn]{
		List: func(ctx context.Context, o metav1.ListOptions) ([]*addonv1alpha1.ManagedClusterAddOn, string, error) {
			o.FieldSelector = sel
			l, err := api.List(ctx, o)
			if err != nil {
				return nil, "", err
			}
			out := make([]*addonv1alpha1.ManagedClusterAddOn, 0, len(l.Items))
			for i := range l.Items {
				out = append(out, &l.Items[i])
			}
			return out, l.ResourceVersion, nil
		},
		Watch: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return api.Watch(ctx, o)
		},
	}, snap)
}

// RecordCMA records every change of the ClusterManagementAddOn addon as CMAEvents.
func RecordCMA(ctx context.Context, c addonclient.Interface, addon string) (*Recorder[CMAEvent], error) {
	return RecordCMASnapshots(ctx, c, addon, func(typ watch.EventType, m *addonv1alpha1.ClusterManagementAddOn) []CMAEvent {
		return []CMAEvent{{At: time.Now(), Type: typ, CMA: m}}
	})
}

// RecordCMASnapshots records the ClusterManagementAddOn addon as the snapshots snap makes of it.
func RecordCMASnapshots[T Keyed](ctx context.Context, c addonclient.Interface, addon string, snap func(watch.EventType, *addonv1alpha1.ClusterManagementAddOn) []T) (*Recorder[T], error) {
	api := c.AddonV1alpha1().ClusterManagementAddOns()
	sel := fields.OneTermEqualSelector("metadata.name", addon).String()
	return Record(ctx, "ClusterManagementAddOn "+addon, ListWatch[*addonv1alpha1.ClusterManagementAddOn]{
		List: func(ctx context.Context, o metav1.ListOptions) ([]*addonv1alpha1.ClusterManagementAddOn, string, error) {
			o.FieldSelector = sel
			l, err := api.List(ctx, o)
			if err != nil {
				return nil, "", err
			}
			out := make([]*addonv1alpha1.ClusterManagementAddOn, 0, len(l.Items))
			for i := range l.Items {
				out = append(out, &l.Items[i])
			}
			return out, l.ResourceVersion, nil
		},
		Watch: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return api.Watch(ctx, o)
		},
	}, snap)
}

// ForTest ends the recording when t ends and fails t with the reason if it ended early.
func ForTest[T Keyed](t testing.TB, r *Recorder[T], err error) *Recorder[T] {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Err(); err != nil {
			t.Errorf("recorder: %v", err)
		}
		r.Stop()
	})
	return r
}
