//go:build integration

package statuswrite

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonv1alpha1client "open-cluster-management.io/api/client/addon/clientset/versioned/typed/addon/v1alpha1"

	"github.com/addonops/addonops/internal/testing/localhub"
)

func TestMain(m *testing.M) { os.Exit(localhub.RunTests(m)) }

// mcas returns a real API server's MCA client for namespace ns (made for the test) and a function
// that creates an MCA there, deleted when the test ends.
func mcas(t *testing.T, ns string) (*localhub.Hub, addonv1alpha1client.ManagedClusterAddOnInterface, func(name string) *addonv1alpha1.ManagedClusterAddOn) {
	t.Helper()
	hub := localhub.ForTest(t)
	if err := localhub.EnsureNamespace(context.Background(), hub.Clients.Kube, ns); err != nil {
		t.Fatal(err)
	}
	api := hub.Clients.Addon.AddonV1alpha1().ManagedClusterAddOns(ns)
	return hub, api, func(name string) *addonv1alpha1.ManagedClusterAddOn {
		t.Helper()
		m, err := api.Create(context.Background(), &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = api.Delete(context.Background(), name, metav1.DeleteOptions{}) })
		return m
	}
}

// On a real API server: writers of one MCA in this process never refuse each other, however stale
// the version they were handed (the informer cache lags behind writes), and each sees the others'
// fields; a writer of another process still makes a write conflict, which is retried on the live
// object as before.
func TestWriterSerialisesWritesOfOneMCA(t *testing.T) {
	ctx := context.Background()
	hub, api, create := mcas(t, "mcawrite-writer")
	v1 := create("hello")

	w := NewWriter(hub.Clients.Addon)
	// counted returns a change and the number of times it was applied: twice or more means a write
	// was refused and retried.
	counted := func(change func(*addonv1alpha1.ManagedClusterAddOn)) (func(*addonv1alpha1.ManagedClusterAddOn), *atomic.Int32) {
		var n atomic.Int32
		return func(m *addonv1alpha1.ManagedClusterAddOn) { n.Add(1); change(m) }, &n
	}
	condition := func(typ string) func(*addonv1alpha1.ManagedClusterAddOn) {
		return func(m *addonv1alpha1.ManagedClusterAddOn) {
			meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: "Test", Message: typ})
		}
	}

	// Two writers, one after the other, both handed the created version.
	first, n1 := counted(func(m *addonv1alpha1.ManagedClusterAddOn) {
		m.Status.SupportedConfigs = []addonv1alpha1.ConfigGroupResource{{Group: "g", Resource: "r"}}
	})
	if _, err := w.Status(ctx, v1, first); err != nil {
		t.Fatal(err)
	}
	second, n2 := counted(func(m *addonv1alpha1.ManagedClusterAddOn) { m.Status.Namespace = "agent" })
	got, err := w.Status(ctx, v1, second)
	if err != nil {
		t.Fatal(err)
	}
	if n1.Load() != 1 || n2.Load() != 1 {
		t.Errorf("changes applied %d and %d times, want once each: a write from the stale version was refused", n1.Load(), n2.Load())
	}
	if len(got.Status.SupportedConfigs) != 1 || got.Status.Namespace != "agent" {
		t.Errorf("the second write lost the first's field: %+v", got.Status)
	}

	// Eight writers at once, each handed the created version, each with its own condition.
	var wg sync.WaitGroup
	var applied atomic.Int32
	for i := range 8 {
		change, n := counted(condition(fmt.Sprintf("Type%d", i)))
		wg.Go(func() {
			if _, err := w.Status(ctx, v1, change); err != nil {
				t.Error(err)
			}
			applied.Add(n.Load())
		})
	}
	wg.Wait()
	if applied.Load() != 8 {
		t.Errorf("8 concurrent changes applied %d times, want 8: writes of one MCA were not serialised", applied.Load())
	}

	// A writer of another process: the next write conflicts once, and is retried on the live object.
	live, err := api.Get(ctx, "hello", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	live.Status.Namespace = "foreign"
	if _, err := api.UpdateStatus(ctx, live, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	foreign, n3 := counted(condition("AfterForeign"))
	got, err = w.Status(ctx, v1, foreign)
	if err != nil {
		t.Fatal(err)
	}
	if n3.Load() != 2 {
		t.Errorf("after another process's write, the change was applied %d times, want 2 (refused, then retried on the live object)", n3.Load())
	}
	if got.Status.Namespace != "foreign" || len(got.Status.Conditions) != 9 || len(got.Status.SupportedConfigs) != 1 {
		t.Errorf("the retried write lost fields: %+v", got.Status)
	}

	// A decision's whole status, computed from the created version, is not sent: the MCA changed
	// since (the cache may still show the created version). From the freshest version it is.
	decided := *got.Status.DeepCopy()
	decided.Namespace = "decided"
	if res, stale, err := w.StatusFrom(ctx, v1, v1, decided); err != nil || !stale || res != nil {
		t.Errorf("a status decided on the created version: written %v, stale %v, err %v; want a stale decision, not written", res != nil, stale, err)
	}
	res, stale, err := w.StatusFrom(ctx, v1, got, decided)
	if err != nil || stale || res == nil || res.Status.Namespace != "decided" {
		t.Fatalf("a status decided on the freshest version: stale %v, err %v; want it written", stale, err)
	}
	got = res

	// Without the writer, a write from the created version is refused (what every reconciler did).
	plain, n4 := counted(condition("Plain"))
	if _, err := Status(ctx, hub.Clients.Addon, v1, plain); err != nil {
		t.Fatal(err)
	}
	if n4.Load() != 2 {
		t.Errorf("a plain write from a stale version applied its change %d times, want 2", n4.Load())
	}
}

// On a real API server: a deferred change goes with the MCA's next write by another owner (one
// write for both), is seen by decisions before (View), is not written by a write that has nothing
// of its own, and is written by itself when flushed; a deferral is replaced, not repeated.
func TestWriterDefer(t *testing.T) {
	ctx := context.Background()
	hub, api, create := mcas(t, "mcawrite-defer")
	condition := func(typ string) func(*addonv1alpha1.ManagedClusterAddOn) {
		return func(m *addonv1alpha1.ManagedClusterAddOn) {
			meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: "Test", Message: typ})
		}
	}
	has := func(m *addonv1alpha1.ManagedClusterAddOn, typ string) bool {
		return meta.IsStatusConditionTrue(m.Status.Conditions, typ)
	}

	w := NewWriter(hub.Clients.Addon)
	w.Hold = time.Hour
	var notified []string
	w.OnDefer(func(key string) { notified = append(notified, key) })

	v1 := create("joined")
	key := Key(v1)
	if left := w.Defer(key, "deployer", condition("Deferred")); left <= 0 || left > time.Hour {
		t.Fatalf("Defer: %v left, want up to the hold", left)
	}
	if left := w.Defer(key, "deployer", condition("Deferred")); left <= 0 {
		t.Fatalf("Defer again: %v left", left)
	}
	if len(notified) != 1 || notified[0] != key {
		t.Errorf("notified %v, want %s once", notified, key)
	}
	if !has(w.View(key, v1), "Deferred") {
		t.Errorf("View does not show the deferred change")
	}
	if has(v1, "Deferred") {
		t.Errorf("View changed the cached object")
	}
	// A write with nothing of its own to write sends nothing.
	got, err := w.Status(ctx, v1, condition("Deferred"))
	if err != nil || got.ResourceVersion != v1.ResourceVersion {
		t.Fatalf("a write with nothing new was sent (rv %s, was %s, err %v)", got.ResourceVersion, v1.ResourceVersion, err)
	}
	// Another owner's write takes it along: one write.
	got, err = w.Status(ctx, v1, condition("Own"))
	if err != nil {
		t.Fatal(err)
	}
	live, err := api.Get(ctx, v1.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !has(live, "Own") || !has(live, "Deferred") || live.ResourceVersion != got.ResourceVersion {
		t.Errorf("after the other owner's write the MCA has %+v, want both conditions in that one write", live.Status.Conditions)
	}
	if _, ok := w.Deferred(key, "deployer"); ok {
		t.Errorf("the change is still deferred after a write took it")
	}

	// A decision's whole status (StatusFrom) takes it along too.
	v2 := create("decided")
	w.Defer(Key(v2), "registration", condition("Declared"))
	st := *v2.Status.DeepCopy()
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: "Decided", Status: metav1.ConditionTrue, Reason: "Test", Message: "x"})
	res, stale, err := w.StatusFrom(ctx, v2, v2, st)
	if err != nil || stale || !has(res, "Decided") || !has(res, "Declared") {
		t.Fatalf("StatusFrom: stale %v, err %v, conditions %+v; want the decision and the deferred change", stale, err, res)
	}

	// Flushed: written by itself, and no longer deferred.
	v3 := create("flushed")
	w.Defer(Key(v3), "deployer", condition("Deferred"))
	res, err = w.Flush(ctx, v3)
	if err != nil || !has(res, "Deferred") || res.ResourceVersion == v3.ResourceVersion {
		t.Fatalf("Flush: err %v, wrote %v", err, res != nil && res.ResourceVersion != v3.ResourceVersion)
	}
	if _, ok := w.Deferred(Key(v3), "deployer"); ok {
		t.Errorf("still deferred after Flush")
	}
	// With no hold, nothing waits: the owner is told to write at once, and its Flush does.
	w.Hold = 0
	if left := w.Defer(Key(v3), "deployer", condition("Other")); left != 0 {
		t.Errorf("Defer with no hold: %v left, want 0", left)
	}
	if left, ok := w.Deferred(Key(v3), "deployer"); !ok || left != 0 {
		t.Errorf("Deferred with no hold: %v, %v; want it due now", left, ok)
	}
	if res, err = w.Flush(ctx, res); err != nil || !has(res, "Other") {
		t.Fatalf("Flush with no hold: err %v, the change written %v", err, err == nil && has(res, "Other"))
	}
}

// On a real API server: a writer handed a version that the cache has since replaced writes from
// the cache's (Cached), not from the one it was handed: no conflict, no second write.
func TestWriterWritesFromTheCache(t *testing.T) {
	ctx := context.Background()
	hub, api, create := mcas(t, "mcawrite-cached")
	v1 := create("hello")
	var err error
	// Another writer's version, which "the cache" shows.
	v2 := v1.DeepCopy()
	v2.Status.Namespace = "other"
	if v2, err = api.UpdateStatus(ctx, v2, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	w := NewWriter(hub.Clients.Addon)
	var applied atomic.Int32
	change := func(m *addonv1alpha1.ManagedClusterAddOn) {
		applied.Add(1)
		m.Status.SupportedConfigs = []addonv1alpha1.ConfigGroupResource{{Group: "g", Resource: "r"}}
	}
	// Without the cache's version: refused, read, written again.
	if _, err := w.Status(ctx, v1, change); err != nil {
		t.Fatal(err)
	}
	if applied.Load() != 2 {
		t.Fatalf("without Cached: change applied %d times, want 2 (a conflict)", applied.Load())
	}
	live, err := api.Get(ctx, "hello", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// With it: written at once.
	w = NewWriter(hub.Clients.Addon)
	w.Cached = func(key string) *addonv1alpha1.ManagedClusterAddOn {
		if key == Key(live) {
			return live
		}
		return nil
	}
	applied.Store(0)
	change = func(m *addonv1alpha1.ManagedClusterAddOn) { applied.Add(1); m.Status.Namespace = "mine" }
	got, err := w.Status(ctx, v1, change)
	if err != nil {
		t.Fatal(err)
	}
	if applied.Load() != 1 || got.Status.Namespace != "mine" || len(got.Status.SupportedConfigs) != 1 {
		t.Errorf("with Cached: change applied %d times (want 1), status %+v", applied.Load(), got.Status)
	}
}
