package addonrollout

import (
	"fmt"
	"slices"
	"testing"

	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/configref"
)

// The config kinds a decision asks the cache to watch (and so, for a kind not seen before, to look
// up with discovery): the CMA's defaults and placement configs, and only those MCA configs whose
// type the CMA supports. An MCA's spec may name any number of made-up types; none is looked up.
func TestReferencedResources(t *testing.T) {
	adc := addonv1alpha1.ConfigGroupResource{Group: configref.AddonGroup, Resource: "addondeploymentconfigs"}
	cm := addonv1alpha1.ConfigGroupResource{Resource: "configmaps"}
	tmpl := addonv1alpha1.ConfigGroupResource{Group: configref.AddonGroup, Resource: "addontemplates"}
	secret := addonv1alpha1.ConfigGroupResource{Resource: "secrets"}
	cma := func(placementConfigs ...addonv1alpha1.ConfigGroupResource) *addonv1alpha1.ClusterManagementAddOn {
		c := &addonv1alpha1.ClusterManagementAddOn{Spec: addonv1alpha1.ClusterManagementAddOnSpec{
			SupportedConfigs: []addonv1alpha1.ConfigMeta{
				{ConfigGroupResource: adc, DefaultConfig: &addonv1alpha1.ConfigReferent{Name: "d"}},
				{ConfigGroupResource: tmpl}, // supported, no default: nothing to watch unless referenced
			},
		}}
		var cfgs []addonv1alpha1.AddOnConfig
		for _, gr := range placementConfigs {
			cfgs = append(cfgs, addonv1alpha1.AddOnConfig{ConfigGroupResource: gr})
		}
		c.Spec.InstallStrategy.Placements = []addonv1alpha1.PlacementStrategy{{Configs: cfgs}}
		return c
	}
	mca := func(grs ...addonv1alpha1.ConfigGroupResource) *addonv1alpha1.ManagedClusterAddOn {
		m := &addonv1alpha1.ManagedClusterAddOn{}
		for _, gr := range grs {
			m.Spec.Configs = append(m.Spec.Configs, addonv1alpha1.AddOnConfig{ConfigGroupResource: gr})
		}
		return m
	}
	var madeUp []addonv1alpha1.ConfigGroupResource
	for i := range 500 {
		madeUp = append(madeUp, addonv1alpha1.ConfigGroupResource{Group: fmt.Sprintf("g%d.example.com", i), Resource: "kinds"})
	}
	gr := func(c addonv1alpha1.ConfigGroupResource) configref.GroupResource {
		return configref.GroupResource{Group: c.Group, Resource: c.Resource}
	}
	for _, tc := range []struct {
		name string
		cma  *addonv1alpha1.ClusterManagementAddOn
		mcas []*addonv1alpha1.ManagedClusterAddOn
		want []configref.GroupResource
	}{
		{name: "defaults and placement configs", cma: cma(adc, cm), want: []configref.GroupResource{gr(adc), gr(cm)}},
		{name: "MCA config of a supported type", cma: cma(), mcas: []*addonv1alpha1.ManagedClusterAddOn{mca(tmpl)},
			want: []configref.GroupResource{gr(adc), gr(tmpl)}},
		{name: "MCA config of an unsupported type is not looked up", cma: cma(), mcas: []*addonv1alpha1.ManagedClusterAddOn{mca(secret, tmpl)},
			want: []configref.GroupResource{gr(adc), gr(tmpl)}},
		{name: "500 made-up types in an MCA's spec", cma: cma(adc), mcas: []*addonv1alpha1.ManagedClusterAddOn{mca(madeUp...), mca(madeUp[:7]...)},
			want: []configref.GroupResource{gr(adc)}},
		// A placement's config type is the administrator's choice (OCM configures add-ons through
		// placements alone): it is watched whether supported or not.
		{name: "placement config of a type not in supportedConfigs", cma: cma(cm), mcas: []*addonv1alpha1.ManagedClusterAddOn{mca(cm)},
			want: []configref.GroupResource{gr(adc), gr(cm)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := referencedResources(tc.cma, tc.mcas); !slices.Equal(got, tc.want) {
				t.Fatalf("referencedResources = %d kinds %v, want %v", len(got), got[:min(len(got), 5)], tc.want)
			}
		})
	}
}
