package rolloutview

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/configref"
)

// Behind says when the controller's report on a placement is about an earlier spec; the view's
// Placement.Behind (what `addonops status -o json` and the demo read) and PlacementHealth (the
// verdict of `addonops status`, Argo CD and Flux) say it alike.
func TestBehind(t *testing.T) {
	tmpl := configref.GroupResource{Group: addonv1alpha1.GroupName, Resource: "addontemplates"}
	ref := func(gr configref.GroupResource, ns, name string) addonv1alpha1.InstallConfigReference {
		return addonv1alpha1.InstallConfigReference{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: gr.Group, Resource: gr.Resource},
			DesiredConfig: &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: ns, Name: name}, SpecHash: "h"}}
	}
	for _, tc := range []struct {
		name     string
		own      string // the placement's AddOnDeploymentConfig, "" for none
		def      string // the add-on's default AddOnTemplate, "" for none
		reported []addonv1alpha1.InstallConfigReference
		noIP     bool
		why      string // "" when not behind
	}{
		{name: "no progression yet", own: "cfg-2", noIP: true, why: "waiting for the controller to report this placement's rollout"},
		{name: "caught up", own: "cfg-2", def: "tmpl-1", reported: []addonv1alpha1.InstallConfigReference{ref(adc, "default", "cfg-2"), ref(tmpl, "", "tmpl-1")}},
		{name: "a new config of the placement", own: "cfg-2", reported: []addonv1alpha1.InstallConfigReference{ref(adc, "default", "cfg-1")},
			why: "waiting for the controller to pick up addondeploymentconfigs"},
		{name: "a new default config", def: "tmpl-2", reported: []addonv1alpha1.InstallConfigReference{ref(tmpl, "", "tmpl-1")},
			why: "waiting for the controller to pick up addontemplates"},
		{name: "a default the placement overrides", own: "cfg-2", def: "tmpl-2",
			reported: []addonv1alpha1.InstallConfigReference{ref(adc, "default", "cfg-2"), ref(tmpl, "", "tmpl-2")}},
		{name: "OCM's reserved name is no config", def: configref.ReservedNoDefault},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cma := &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: "hello"}}
			p := addonv1alpha1.PlacementStrategy{PlacementRef: addonv1alpha1.PlacementRef{Namespace: "default", Name: "prod"}}
			if tc.own != "" {
				p.Configs = []addonv1alpha1.AddOnConfig{{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: adc.Group, Resource: adc.Resource},
					ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "default", Name: tc.own}}}
			}
			if tc.def != "" {
				cma.Spec.SupportedConfigs = []addonv1alpha1.ConfigMeta{{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: tmpl.Group, Resource: tmpl.Resource},
					DefaultConfig: &addonv1alpha1.ConfigReferent{Name: tc.def}}}
			}
			cma.Spec.InstallStrategy = addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyPlacements, Placements: []addonv1alpha1.PlacementStrategy{p}}
			if !tc.noIP {
				cma.Status.InstallProgressions = []addonv1alpha1.InstallProgression{{PlacementRef: p.PlacementRef, ConfigReferences: tc.reported}}
			}
			why, behind := Behind(cma, &p, DefaultConfigs(cma))
			if behind != (tc.why != "") || !strings.Contains(why, tc.why) || !behind && why != "" {
				t.Errorf("Behind = %q, %v; want …%q…", why, behind, tc.why)
			}
			if h := PlacementHealth(cma, &p, DefaultConfigs(cma)); behind && h.Message != "default/prod: "+why {
				t.Errorf("PlacementHealth says %q, want Behind's reason %q", h.Message, why)
			}
			if v := Build(Input{CMA: cma}); len(v.Placements) != 1 || v.Placements[0].Behind != why {
				t.Errorf("the view's placements %+v, want one Behind %q", v.Placements, why)
			}
		})
	}
}
