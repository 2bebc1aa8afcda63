package mcawrite

import (
	"context"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"

	"github.com/addonops/addonops/controller/overlay"
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
type Writer struct {
	client addonclient.Interface
	// Written are the MCAs this process wrote that the cache may not show yet, by
	// "<namespace>/<name>".
	Written *overlay.Overlay[*addonv1alpha1.ManagedClusterAddOn]

	// Compact, when set, makes a written MCA share its strings and maps with the cached ones
	// before Written keeps it (hubcache sets the cache's interner). Under load the cache can be
	// thousands of writes behind, and Written then holds an MCA as the API server returned it for
	// each: at 5,000 clusters some 10 MB at the controller's peak.
	Compact func(*addonv1alpha1.ManagedClusterAddOn)

	mu    sync.Mutex
	locks map[string]*keyLock
}

type keyLock struct {
	sync.Mutex
	users int
}

// NewWriter returns a writer with client.
func NewWriter(client addonclient.Interface) *Writer {
	return &Writer{client: client, Written: overlay.New[*addonv1alpha1.ManagedClusterAddOn](), locks: map[string]*keyLock{}}
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

// fresh returns what this process last wrote of mca when mca (a cached version) is older, else mca.
func (w *Writer) fresh(mca *addonv1alpha1.ManagedClusterAddOn) *addonv1alpha1.ManagedClusterAddOn {
	return w.Written.Peek(Key(mca), mca)
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
	res, err := w.client.AddonV1alpha1().ManagedClusterAddOns(from.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		return nil, false, err
	}
	w.keep(res, from.ResourceVersion)
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

// Status is the package's Status, under the MCA's lock, from its freshest version, recorded.
func (w *Writer) Status(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn,
	change func(*addonv1alpha1.ManagedClusterAddOn)) (*addonv1alpha1.ManagedClusterAddOn, error) {
	defer w.lock(Key(mca))()
	return w.record(status(ctx, w.client, w.fresh(mca), change))
}

// Finalizers is the package's Finalizers, under the MCA's lock, from its freshest version,
// recorded.
func (w *Writer) Finalizers(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn,
	add []string, remove []string) (*addonv1alpha1.ManagedClusterAddOn, error) {
	defer w.lock(Key(mca))()
	return w.record(finalizers(ctx, w.client, w.fresh(mca), add, remove))
}
