package statuswrite

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
)

// Writer is the one place this process's reconcilers write ManagedClusterAddOns through.
//
// Five reconcilers write a new MCA's status within a second of its creation (registration's
// supportedConfigs, the rollout's desired configs, the deployer's ManifestApplied, registration's
// registrations, health and progress). Each computed its change from the informer cache, which
// shows the others' writes only after their watch events arrive: at thousands of clusters, with
// the API server busy, that is long enough for most of them to send an update that the API server
// refuses with a conflict, followed by a read and a second update. The conflicts were a sixth of
// all requests of an install.
//
// So writes of one MCA by this process are serialised (lock), each is computed from the freshest
// version this process knows (the cache, or what it wrote since: Written), and each write is
// recorded there for the next writer. Conflicts are then left to writers in other processes;
// every write still carries the resourceVersion it was computed from.
//
// And a change that can wait is deferred (Defer) to the MCA's next write, whoever makes it: a new
// MCA's registration declaration goes with its desired configs, the deployer's first
// ManifestApplied with the done write, two status writes fewer per cluster at install.
type Writer struct {
	client addonclient.Interface
	// Written are the MCAs this process wrote that the cache may not show yet, by
	// "<namespace>/<name>".
	Written *Overlay[*addonv1alpha1.ManagedClusterAddOn]

	// Compact, when set, makes a written MCA share its strings and maps with the cached ones
	// before Written keeps it (hubcache sets the cache's interner). Under load the cache can be
	// thousands of writes behind, and Written then holds an MCA as the API server returned it for
	// each: at 5,000 clusters some 10 MB at the controller's peak.
	Compact func(*addonv1alpha1.ManagedClusterAddOn)

	// Cached, when set, returns the informer's version of the MCA of key now, nil when it has
	// none (hubcache sets it). A writer handed an older version, read before a long call (a
	// RoleBinding write, under load a second), then writes from the cache's: the version it was
	// handed may have been replaced since by a write the cache already shows, which the API server
	// would refuse as a conflict and cost a read and a second write.
	Cached func(key string) *addonv1alpha1.ManagedClusterAddOn

	// Hold is how long a deferred change (Defer) may wait for another write of its MCA to go with;
	// 0 (or less): none waits, its owner writes it at once.
	Hold time.Duration

	mu    sync.Mutex
	locks map[string]*keyLock
	// deferred are the changes waiting to go with the next status write of their MCA, by key
	// and owner (Defer).
	deferred map[string]map[string]*deferredChange
	seq      uint64
	notify   []func(key string)
}

// deferredChange is one owner's change waiting for a write of its MCA.
type deferredChange struct {
	change func(*addonv1alpha1.ManagedClusterAddOn)
	since  time.Time // when the owner first deferred a change of this MCA, unwritten since
	seq    uint64    // which version of the change: a write clears only the ones it carried
}

type keyLock struct {
	sync.Mutex
	users int
}

// NewWriter returns a writer with client.
func NewWriter(client addonclient.Interface) *Writer {
	return &Writer{client: client, Written: NewOverlay[*addonv1alpha1.ManagedClusterAddOn](), locks: map[string]*keyLock{},
		deferred: map[string]map[string]*deferredChange{}}
}

// Key is the Written key of mca.
func Key(mca *addonv1alpha1.ManagedClusterAddOn) string { return mca.Namespace + "/" + mca.Name }

// lock takes the write lock of the MCA of key and returns its unlock. Between the two a writer
// reads the freshest version (fresh), computes and writes, and records what it wrote.
func (w *Writer) lock(key string) (unlock func()) {
	w.mu.Lock()
	l := w.locks[key]
	if l == nil {
		l = &keyLock{}
		w.locks[key] = l
	}
	l.users++
	w.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		w.mu.Lock()
		if l.users--; l.users == 0 {
			delete(w.locks, key)
		}
		w.mu.Unlock()
	}
}

// fresh returns the freshest version of mca this process knows: what it last wrote when the
// cache's version (or mca, when the cache has none) is older, else the cache's.
func (w *Writer) fresh(mca *addonv1alpha1.ManagedClusterAddOn) *addonv1alpha1.ManagedClusterAddOn {
	base := mca
	if w.Cached != nil {
		if cur := w.Cached(Key(mca)); cur != nil && cur.UID == mca.UID {
			base = cur
		}
	}
	return w.Written.Peek(Key(mca), base)
}

// StatusFrom writes status, which a decision computed from the version from, unless the MCA
// changed since: cached is the informer's version now (nil when it has none), and this process may
// have written a newer one. A changed MCA is not written (stale): the API server would refuse the
// write, and the change's own event brings the MCA to a new decision.
func (w *Writer) StatusFrom(ctx context.Context, cached, from *addonv1alpha1.ManagedClusterAddOn,
	status addonv1alpha1.ManagedClusterAddOnStatus) (written *addonv1alpha1.ManagedClusterAddOn, stale bool, err error) {
	defer w.lock(Key(from))()
	if cached != nil && w.fresh(cached).ResourceVersion != from.ResourceVersion {
		return nil, true, nil
	}
	updated := from.DeepCopy()
	updated.Status = status
	carried := w.applyDeferred(Key(from), updated)
	res, err := w.client.AddonV1alpha1().ManagedClusterAddOns(from.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		return nil, false, err
	}
	w.keep(res, from.ResourceVersion)
	w.written(Key(from), carried)
	return res, false, nil
}

// keep records written, which replaced the versions from, in Written. written is changed: it loses
// its managedFields and, with Compact, shares the cache's strings and maps (callers change only
// copies of what they are handed, as with cached objects).
func (w *Writer) keep(written *addonv1alpha1.ManagedClusterAddOn, from ...string) {
	written.SetManagedFields(nil)
	if w.Compact != nil {
		w.Compact(written)
	}
	for _, f := range from {
		w.Written.Wrote(Key(written), f, written)
	}
}

// record records what status or finalizers wrote.
func (w *Writer) record(out *addonv1alpha1.ManagedClusterAddOn, replaced []string, err error) (*addonv1alpha1.ManagedClusterAddOn, error) {
	if out != nil && len(replaced) > 0 { // else out may be the cached object itself: nothing written
		w.keep(out, replaced...)
	}
	return out, err
}

// Status is the package's Status, under the MCA's lock, from its freshest version, recorded. The
// deferred changes of the MCA (Defer) go with the write, if change makes one: a change that the
// MCA shows with them applied writes nothing.
func (w *Writer) Status(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn,
	change func(*addonv1alpha1.ManagedClusterAddOn)) (*addonv1alpha1.ManagedClusterAddOn, error) {
	key := Key(mca)
	defer w.lock(key)()
	cur := w.fresh(mca)
	if w.hasDeferred(key) {
		view := cur.DeepCopy()
		w.applyDeferred(key, view)
		next := view.DeepCopy()
		change(next)
		if equality.Semantic.DeepEqual(view.Status, next.Status) {
			return cur, nil // nothing of the caller's to write; the deferred changes wait on
		}
	}
	var carried map[string]uint64
	out, replaced, err := status(ctx, w.client, cur, func(m *addonv1alpha1.ManagedClusterAddOn) {
		change(m)
		carried = w.applyDeferred(key, m)
	})
	if err == nil && len(replaced) > 0 {
		w.written(key, carried)
	}
	return w.record(out, replaced, err)
}

// Defer asks for change, owner's change of the status of the MCA of key, to go with the next
// status write of that MCA by this process, whoever makes it, rather than cost a write of its
// own: at fleet scale, one write per cluster. Every write of the MCA through the writer (Status,
// StatusFrom) applies the deferred changes on top of its own, so change must be a pure function
// of the MCA, that sets only owner's fields and can be applied again; decisions see it applied
// (View). An owner's change replaces the one it deferred before (the same change computed again),
// but not the time it has waited since. Defer returns how much longer it may wait: the owner
// looks again then and writes it by itself (Flush) when no other write took it. With Hold 0,
// Defer returns 0: the owner writes it at once.
func (w *Writer) Defer(key, owner string, change func(*addonv1alpha1.ManagedClusterAddOn)) time.Duration {
	now := time.Now()
	w.mu.Lock()
	byOwner := w.deferred[key]
	if byOwner == nil {
		byOwner = map[string]*deferredChange{}
		w.deferred[key] = byOwner
	}
	d := byOwner[owner]
	var notify []func(string)
	if d == nil {
		d = &deferredChange{since: now}
		byOwner[owner] = d
		notify = w.notify
	}
	w.seq++
	d.change, d.seq = change, w.seq
	left := w.Hold - now.Sub(d.since)
	w.mu.Unlock()
	for _, n := range notify {
		n(key)
	}
	return max(left, 0)
}

// Flush writes the deferred changes of mca now (an owner's has waited long enough), unless the MCA
// already shows them. It returns the MCA as written, the freshest known version when nothing was written,
// or nil when the MCA is gone.
func (w *Writer) Flush(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn) (*addonv1alpha1.ManagedClusterAddOn, error) {
	key := Key(mca)
	defer w.lock(key)()
	cur := w.fresh(mca)
	var carried map[string]uint64
	out, replaced, err := status(ctx, w.client, cur, func(m *addonv1alpha1.ManagedClusterAddOn) {
		carried = w.applyDeferred(key, m)
	})
	if err == nil {
		// Written now, or shown already (by another write): either way, no longer waiting.
		w.written(key, carried)
	}
	if err == nil && out == nil {
		w.Drop(key, "") // the MCA is gone
	}
	return w.record(out, replaced, err)
}

// Drop forgets owner's deferred change of the MCA of key (every owner's with owner ""): the
// owner no longer wants it, or the MCA is gone.
func (w *Writer) Drop(key, owner string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if owner == "" {
		delete(w.deferred, key)
		return
	}
	delete(w.deferred[key], owner)
	if len(w.deferred[key]) == 0 {
		delete(w.deferred, key)
	}
}

// OnDefer calls notify with the key of each MCA an owner defers a change of (the first time until
// it is written): a reconciler that decides on the view (View) looks at it again.
func (w *Writer) OnDefer(notify func(key string)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.notify = append(w.notify, notify)
}

// View returns cached (the informer's version of the MCA of key) at the freshest version this
// process knows (Written), with the changes deferred for it applied: the MCA as decisions must
// see it. It returns what Written has when nothing is deferred; a copy otherwise.
func (w *Writer) View(key string, cached *addonv1alpha1.ManagedClusterAddOn) *addonv1alpha1.ManagedClusterAddOn {
	cur := w.Written.Get(key, cached)
	if !w.hasDeferred(key) {
		return cur
	}
	view := cur.DeepCopy()
	w.applyDeferred(key, view)
	return view
}

func (w *Writer) hasDeferred(key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.deferred[key]) > 0
}

// applyDeferred applies the changes deferred for the MCA of key to m and returns which versions
// of them it applied, by owner.
func (w *Writer) applyDeferred(key string, m *addonv1alpha1.ManagedClusterAddOn) map[string]uint64 {
	w.mu.Lock()
	byOwner := w.deferred[key]
	if len(byOwner) == 0 {
		w.mu.Unlock()
		return nil
	}
	carried := make(map[string]uint64, len(byOwner))
	changes := make([]func(*addonv1alpha1.ManagedClusterAddOn), 0, len(byOwner))
	for owner, d := range byOwner {
		carried[owner] = d.seq
		changes = append(changes, d.change)
	}
	w.mu.Unlock()
	for _, c := range changes {
		c(m)
	}
	return carried
}

// written forgets the deferred changes a write carried, unless they were deferred again since.
func (w *Writer) written(key string, carried map[string]uint64) {
	if len(carried) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for owner, seq := range carried {
		if d := w.deferred[key][owner]; d != nil && d.seq == seq {
			delete(w.deferred[key], owner)
		}
	}
	if len(w.deferred[key]) == 0 {
		delete(w.deferred, key)
	}
}

// Deferred reports whether owner has a change of the MCA of key waiting (Defer), and how much
// longer it may wait: 0 when it is time to write it (Flush).
func (w *Writer) Deferred(key, owner string) (left time.Duration, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	d := w.deferred[key][owner]
	if d == nil {
		return 0, false
	}
	return max(w.Hold-time.Since(d.since), 0), true
}

// Finalizers is the package's Finalizers, under the MCA's lock, from its freshest version,
// recorded.
func (w *Writer) Finalizers(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn,
	add []string, remove []string) (*addonv1alpha1.ManagedClusterAddOn, error) {
	defer w.lock(Key(mca))()
	return w.record(finalizers(ctx, w.client, w.fresh(mca), add, remove))
}
