package registration

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
)

// status.supportedConfigs of a template add-on's MCAs is what OCM's template manager writes: the
// built-in config types of every template agent, whatever the CMA lists.
func TestSupportedConfigs(t *testing.T) {
	gr := func(group, resource string) addonv1alpha1.ConfigGroupResource {
		return addonv1alpha1.ConfigGroupResource{Group: group, Resource: resource}
	}
	meta := func(g addonv1alpha1.ConfigGroupResource, def *addonv1alpha1.ConfigReferent) addonv1alpha1.ConfigMeta {
		return addonv1alpha1.ConfigMeta{ConfigGroupResource: g, DefaultConfig: def}
	}
	tmpl := gr("addon.open-cluster-management.io", "addontemplates")
	adc := gr("addon.open-cluster-management.io", "addondeploymentconfigs")
	widgets := gr("example.io", "widgets")
	builtIn := []addonv1alpha1.ConfigGroupResource{adc, tmpl}
	cases := []struct {
		name      string
		cma       *addonv1alpha1.ClusterManagementAddOn
		want      []addonv1alpha1.ConfigGroupResource
		writesAny bool
	}{
		{"no CMA", nil, nil, false},
		{"not a template add-on: no manager of ours, nothing written", &addonv1alpha1.ClusterManagementAddOn{Spec: addonv1alpha1.ClusterManagementAddOnSpec{
			SupportedConfigs: []addonv1alpha1.ConfigMeta{meta(adc, nil), meta(widgets, nil)}}}, nil, false},
		{"template with a default", &addonv1alpha1.ClusterManagementAddOn{Spec: addonv1alpha1.ClusterManagementAddOnSpec{
			SupportedConfigs: []addonv1alpha1.ConfigMeta{meta(tmpl, &addonv1alpha1.ConfigReferent{Name: "t"}), meta(adc, nil)}}}, builtIn, true},
		{"template type without a default (MCAs name their own)", &addonv1alpha1.ClusterManagementAddOn{Spec: addonv1alpha1.ClusterManagementAddOnSpec{
			SupportedConfigs: []addonv1alpha1.ConfigMeta{meta(tmpl, nil)}}}, builtIn, true},
		{"other types the CMA lists are not the agent's", &addonv1alpha1.ClusterManagementAddOn{Spec: addonv1alpha1.ClusterManagementAddOnSpec{
			SupportedConfigs: []addonv1alpha1.ConfigMeta{meta(widgets, nil), meta(tmpl, nil)}}}, builtIn, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := SupportedConfigs(tc.cma)
			if ok != tc.writesAny || !cmp.Equal(got, tc.want) {
				t.Fatalf("SupportedConfigs = %v %v, want %v %v", got, ok, tc.want, tc.writesAny)
			}
		})
	}
	// Callers may keep what they get: it is not the package's list.
	got, _ := SupportedConfigs(&addonv1alpha1.ClusterManagementAddOn{Spec: addonv1alpha1.ClusterManagementAddOnSpec{SupportedConfigs: []addonv1alpha1.ConfigMeta{meta(tmpl, nil)}}})
	got[0].Resource = "changed"
	if again, _ := SupportedConfigs(&addonv1alpha1.ClusterManagementAddOn{Spec: addonv1alpha1.ClusterManagementAddOnSpec{SupportedConfigs: []addonv1alpha1.ConfigMeta{meta(tmpl, nil)}}}); again[0] != adc {
		t.Fatalf("SupportedConfigs shares its list: %v", again)
	}
}
