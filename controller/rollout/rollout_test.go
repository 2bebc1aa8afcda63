package rollout

import (
	"slices"
	"testing"
	"time"

	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/configref"
)

func TestReferencedResources(t *testing.T) {
	adc := addonv1alpha1.ConfigGroupResource{Group: configref.AddonGroup, Resource: "addondeploymentconfigs"}
	cm := addonv1alpha1.ConfigGroupResource{Resource: "configmaps"}
	tmpl := addonv1alpha1.ConfigGroupResource{Group: configref.AddonGroup, Resource: "addontemplates"}
	c := &addonv1alpha1.ClusterManagementAddOn{Spec: addonv1alpha1.ClusterManagementAddOnSpec{
		SupportedConfigs: []addonv1alpha1.ConfigMeta{
			{ConfigGroupResource: adc, DefaultConfig: &addonv1alpha1.ConfigReferent{Name: "d"}},
			{ConfigGroupResource: tmpl}, // supported, no default: nothing to watch
		},
		InstallStrategy: addonv1alpha1.InstallStrategy{Placements: []addonv1alpha1.PlacementStrategy{{Configs: []addonv1alpha1.AddOnConfig{{ConfigGroupResource: adc}}}}},
	}}
	m := &addonv1alpha1.ManagedClusterAddOn{Spec: addonv1alpha1.ManagedClusterAddOnSpec{Configs: []addonv1alpha1.AddOnConfig{{ConfigGroupResource: cm}}}}
	got := referencedResources(c, []*addonv1alpha1.ManagedClusterAddOn{m})
	want := []configref.GroupResource{{Group: configref.AddonGroup, Resource: "addondeploymentconfigs"}, {Resource: "configmaps"}}
	if !slices.Equal(got, want) {
		t.Fatalf("referencedResources = %v, want %v", got, want)
	}
}

// An add-on's decisions take at most about a tenth of the time while its MCAs change: the wait
// before the next one is nine times the last one's, never below the coalescing delay nor above
// maxSpacing.
func TestSpacing(t *testing.T) {
	for _, tc := range []struct {
		coalesce, last, want time.Duration
	}{
		{250 * time.Millisecond, 0, 250 * time.Millisecond},                      // no decision yet
		{250 * time.Millisecond, 2 * time.Millisecond, 250 * time.Millisecond},   // a small fleet
		{250 * time.Millisecond, 100 * time.Millisecond, 900 * time.Millisecond}, // thousands of clusters
		{250 * time.Millisecond, 1 * time.Second, maxSpacing},                    // bounded
		{5 * time.Second, 1 * time.Second, 5 * time.Second},                      // a longer coalescing delay stays
		{0, 10 * time.Millisecond, 90 * time.Millisecond},
	} {
		if got := Spacing(tc.coalesce, tc.last); got != tc.want {
			t.Errorf("Spacing(%s, %s) = %s, want %s", tc.coalesce, tc.last, got, tc.want)
		}
	}
}
