package statuswrite

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
)

func mcaAt(rv string) *addonv1alpha1.ManagedClusterAddOn {
	return &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "c", ResourceVersion: rv}}
}

// The overlay across the ways a cache catches up with writes. resourceVersions here are
// deliberately not integers in order: only equality may be used.
func TestOverlay(t *testing.T) {
	type step struct {
		wrote      [2]string // from, written; empty: no write
		forget     bool
		cached     string // the informer's version at the read
		wantServed string
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"nothing written: the cache", []step{{cached: "a", wantServed: "a"}}},
		{"written, cache behind: the write", []step{{wrote: [2]string{"a", "b"}, cached: "a", wantServed: "b"}}},
		{"written, cache caught up", []step{{wrote: [2]string{"a", "b"}, cached: "b", wantServed: "b"}}},
		{"written, cache past it (someone else wrote after us)", []step{{wrote: [2]string{"a", "b"}, cached: "z", wantServed: "z"}}},
		{"once caught up, the entry is gone", []step{{wrote: [2]string{"a", "b"}, cached: "b", wantServed: "b"}, {cached: "a", wantServed: "a"}}},
		{"two writes before the cache saw the first", []step{
			{wrote: [2]string{"a", "b"}, cached: "a", wantServed: "b"},
			{wrote: [2]string{"b", "c"}, cached: "a", wantServed: "c"},
			{cached: "b", wantServed: "c"},
			{cached: "c", wantServed: "c"},
		}},
		{"forgotten (deleted)", []step{{wrote: [2]string{"a", "b"}, forget: true, cached: "a", wantServed: "a"}}},
		{"a recreated object with a new version wins", []step{{wrote: [2]string{"a", "b"}, cached: "q", wantServed: "q"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOverlay[*addonv1alpha1.ManagedClusterAddOn]()
			for i, s := range tc.steps {
				if s.wrote[1] != "" {
					o.Wrote("c/a", s.wrote[0], mcaAt(s.wrote[1]))
				}
				if s.forget {
					o.Forget("c/a")
				}
				if got := o.Get("c/a", mcaAt(s.cached)).ResourceVersion; got != s.wantServed {
					t.Fatalf("step %d: cache at %s: got version %s, want %s", i, s.cached, got, s.wantServed)
				}
			}
		})
	}
}

// What the overlay keeps of a write has no managedFields: they are most of an MCA as the API server
// returns it, and nothing reads them (a write without them leaves the API server's as they are).
func TestOverlayDropsManagedFields(t *testing.T) {
	o := NewOverlay[*addonv1alpha1.ManagedClusterAddOn]()
	written := mcaAt("b")
	written.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "addonops-controller"}}
	o.Wrote("c/a", "a", written)
	if got := o.Get("c/a", mcaAt("a")); got.ResourceVersion != "b" || got.ManagedFields != nil {
		t.Errorf("served %s with managedFields %v, want b without", got.ResourceVersion, got.ManagedFields)
	}
}

// Settle forgets a write once the cache shows it or a later version, and only then: the informer's
// event handler calls it, and what it keeps must still be served while the cache is behind.
func TestSettle(t *testing.T) {
	for _, tc := range []struct {
		name         string
		settleAt     string // the informer's version when Settle is called
		wantKept     bool
		cachedAtRead string
		wantServed   string
	}{
		{"cache still at the version the write replaced: kept", "a", true, "a", "b"},
		{"cache shows the write: dropped", "b", false, "b", "b"},
		{"cache past the write: dropped", "z", false, "z", "z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOverlay[*addonv1alpha1.ManagedClusterAddOn]()
			o.Wrote("c/a", "a", mcaAt("b"))
			o.Settle("c/a", mcaAt(tc.settleAt))
			if _, kept := o.written["c/a"]; kept != tc.wantKept {
				t.Errorf("entry kept: %v, want %v", kept, tc.wantKept)
			}
			if got := o.Peek("c/a", mcaAt(tc.cachedAtRead)).ResourceVersion; got != tc.wantServed {
				t.Errorf("cache at %s: served %s, want %s", tc.cachedAtRead, got, tc.wantServed)
			}
		})
	}
	o := NewOverlay[*addonv1alpha1.ManagedClusterAddOn]()
	o.Settle("c/a", mcaAt("a")) // nothing written: nothing to do
	if len(o.written) != 0 {
		t.Errorf("Settle without a write recorded something")
	}
}
