package simagent

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/internal/addonwork"
)

// The simulated work agent reports the rollout feedback values a work asks for, and only those.
func TestFeedbackRolloutValues(t *testing.T) {
	dep := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "agent", "namespace": "ns"}, "spec": map[string]any{"replicas": int64(2)}}}
	raw, err := dep.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Generation: 4}}
	w.Spec.Workload.Manifests = []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}
	values := func(unhealthy bool) map[string]int64 {
		out := map[string]int64{}
		for _, m := range feedback(w, unhealthy) {
			for _, v := range m.StatusFeedbacks.Values {
				out[v.Name] = *v.Value.Integer
			}
		}
		return out
	}
	if got := values(false); len(got) != 3 || got["ReadyReplicas"] != 2 {
		t.Fatalf("WellKnownStatus only: %v", got)
	}
	w.Spec.ManifestConfigs = addonwork.ManifestConfigs([]*unstructured.Unstructured{dep}, nil)
	got := values(true)
	want := map[string]int64{"Replicas": 2, "ReadyReplicas": 0, "AvailableReplicas": 0, "Generation": 4, "ObservedGeneration": 4, "UpdatedReplicas": 2}
	keys := func(m map[string]int64) []string {
		var k []string
		for n := range m {
			k = append(k, n)
		}
		slices.Sort(k)
		return k
	}
	if !slices.Equal(keys(got), keys(want)) {
		t.Fatalf("values %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("values %v, want %v", got, want)
		}
	}
}
