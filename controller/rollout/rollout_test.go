package rollout

import (
	"slices"
	"testing"

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
