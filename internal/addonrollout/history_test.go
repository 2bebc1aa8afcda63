package addonrollout

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/hubcache"
	"github.com/addonops/addonops/internal/statuswrite"
)

// The progress tracker reads the version history the rollout reconciler wrote before the cache
// shows it (View.History): a run's verdict is recorded before the MCAs it fails are written, and a
// tracker that read an older history would take those MCAs back (rolloutplan.Track). It never
// reads a record that is not the add-on's.
func TestHistoryReadsWhatWasWritten(t *testing.T) {
	const ns = "addonops-system"
	cma := &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: "hello", UID: "uid-1"}}
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	v := &View{Hub: &hubcache.Cache{Histories: corelisters.NewConfigMapLister(idx).ConfigMaps(ns)}, WrittenHistories: statuswrite.NewOverlay[*corev1.ConfigMap]()}
	record := func(phase string) (*history.Record, string) {
		rec := &history.Record{Addon: "hello", Placements: []history.Placement{{Placement: "default/p", Versions: []history.Version{{ID: "v1", Result: history.InProgress,
			Verifications: []history.Verification{{Batch: 1, Clusters: 1, Sample: []string{"c1"}, Phase: phase}}}}}}}
		data, err := rec.Encode()
		if err != nil {
			t.Fatal(err)
		}
		return rec, data
	}
	expect := func(what string, want *history.Record) {
		t.Helper()
		if got := v.History(cma); !equality.Semantic.DeepEqual(got, want) {
			t.Fatalf("%s: History = %+v, want %+v", what, got, want)
		}
	}
	expect("no history yet", nil)

	first, data := record("Successful")
	created := newHistoryConfigMap(ns, cma, data)
	created.ResourceVersion = "5"
	v.WrittenHistories.Wrote(created.Name, "", created.DeepCopy())
	expect("created, not cached yet", first)

	if err := idx.Add(created.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	second, data := record("Failed")
	updated := historyUpdate(created, data)
	updated.ResourceVersion = "6"
	v.WrittenHistories.Wrote(created.Name, "5", updated.DeepCopy())
	expect("updated, the cache still holds the version before", second)

	forged := updated.DeepCopy()
	forged.ResourceVersion = "7"
	forged.OwnerReferences[0].UID = "another-add-on"
	if err := idx.Update(forged); err != nil {
		t.Fatal(err)
	}
	expect("not the add-on's record", nil)
}
