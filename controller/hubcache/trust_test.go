package hubcache

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/history"
)

func specHash(ns, name, hash string) *addonv1alpha1.ConfigSpecHash {
	return &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: ns, Name: name}, SpecHash: hash}
}

func TestAuthorized(t *testing.T) {
	tmpl := addonv1alpha1.ConfigGroupResource{Group: configref.AddOnTemplates.Group, Resource: configref.AddOnTemplates.Resource}
	adc := addonv1alpha1.ConfigGroupResource{Group: configref.AddOnDeploymentConfigs.Group, Resource: configref.AddOnDeploymentConfigs.Resource}
	cma := &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: addonv1alpha1.ClusterManagementAddOnStatus{
		DefaultConfigReferences: []addonv1alpha1.DefaultConfigReference{{ConfigGroupResource: adc, DesiredConfig: specHash("ns-a", "defaults", "h-def")}},
		InstallProgressions: []addonv1alpha1.InstallProgression{{ConfigReferences: []addonv1alpha1.InstallConfigReference{
			{ConfigGroupResource: tmpl, DesiredConfig: specHash("", "a-v2", "h-v2"), LastAppliedConfig: specHash("", "a-v1", "h-v1"), LastKnownGoodConfig: specHash("", "a-v0", "h-v0")},
		}}},
	}}
	mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "a"}, Spec: addonv1alpha1.ManagedClusterAddOnSpec{
		Configs: []addonv1alpha1.AddOnConfig{{ConfigGroupResource: adc, ConfigReferent: addonv1alpha1.ConfigReferent{Name: "own"}}}}}
	other := mca.DeepCopy()
	other.Name = "b"
	for _, tc := range []struct {
		name          string
		cma           *addonv1alpha1.ClusterManagementAddOn
		mca           *addonv1alpha1.ManagedClusterAddOn
		gr            configref.GroupResource
		ns, cfg, hash string
		want          bool
	}{
		{"progression desired", cma, mca, configref.AddOnTemplates, "", "a-v2", "h-v2", true},
		{"progression last applied", cma, mca, configref.AddOnTemplates, "", "a-v1", "h-v1", true},
		{"progression last known good", cma, mca, configref.AddOnTemplates, "", "a-v0", "h-v0", true},
		{"default config", cma, mca, configref.AddOnDeploymentConfigs, "ns-a", "defaults", "h-def", true},
		{"the MCA's own spec, namespace defaulted to the cluster's", cma, mca, configref.AddOnDeploymentConfigs, "c1", "own", "any", true},
		{"the MCA's own spec names another namespace's config: no", cma, mca, configref.AddOnDeploymentConfigs, "ns-b", "own", "any", false},
		{"listed name with another hash", cma, mca, configref.AddOnTemplates, "", "a-v2", "h-forged", false},
		{"another add-on's template", cma, mca, configref.AddOnTemplates, "", "b-v1", "h-b1", false},
		{"a foreign ADC", cma, mca, configref.AddOnDeploymentConfigs, "ns-b", "b-config", "h-b", false},
		{"right name, wrong resource", cma, mca, configref.AddOnDeploymentConfigs, "", "a-v2", "h-v2", false},
		{"empty hash", cma, mca, configref.AddOnTemplates, "", "a-v2", "", false},
		{"no CMA", nil, mca, configref.AddOnTemplates, "", "a-v2", "h-v2", false},
		{"the CMA of another add-on", cma, other, configref.AddOnTemplates, "", "a-v2", "h-v2", false},
	} {
		if got := Authorized(tc.cma, tc.mca, tc.gr, tc.ns, tc.cfg, tc.hash); got != tc.want {
			t.Errorf("%s: Authorized = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRecordedIn(t *testing.T) {
	rec := &history.Record{Addon: "a", Placements: []history.Placement{{Placement: "ns/p", Versions: []history.Version{{Configs: []history.Config{
		{Group: configref.AddOnTemplates.Group, Resource: configref.AddOnTemplates.Resource, Name: "a-old", SpecHash: "h-old"}}}}}}}
	if !RecordedIn(rec, configref.AddOnTemplates, "", "a-old", "h-old") {
		t.Error("a version the history recorded is not found")
	}
	if RecordedIn(rec, configref.AddOnTemplates, "", "a-old", "h-other") || RecordedIn(nil, configref.AddOnTemplates, "", "a-old", "h-old") {
		t.Error("a version the history never recorded is found")
	}
}

func TestRefuseGraceAndOneReport(t *testing.T) {
	c := &Cache{}
	now := time.Unix(1000, 0)
	var told []string
	tell := func(msg string) { told = append(told, msg) }
	refused := Desired{Refused: "forged"}
	if r, wait := c.Refuse("c1/a", refused, now, tell); !r || wait != RefusalGrace || len(told) != 0 {
		t.Fatalf("first look: refused %v wait %v told %v; want refused, a grace, nothing told", r, wait, told)
	}
	if r, wait := c.Refuse("c1/a", refused, now.Add(RefusalGrace/2), tell); !r || wait != RefusalGrace/2 || len(told) != 0 {
		t.Fatalf("within the grace: refused %v wait %v told %v", r, wait, told)
	}
	for range 3 {
		if r, wait := c.Refuse("c1/a", refused, now.Add(RefusalGrace), tell); !r || wait != 0 {
			t.Fatalf("after the grace: refused %v wait %v", r, wait)
		}
	}
	if len(told) != 1 || told[0] != "forged" {
		t.Fatalf("told %v, want the refusal once", told)
	}
	c.Refuse("c1/a", Desired{Refused: "forged again"}, now.Add(2*RefusalGrace), tell)
	if len(told) != 2 {
		t.Fatalf("a new refusal was not told: %v", told)
	}
	if r, _ := c.Refuse("c1/a", Desired{}, now.Add(3*RefusalGrace), tell); r {
		t.Fatal("configs the controller decided are refused")
	}
	if _, wait := c.Refuse("c1/a", refused, now.Add(4*RefusalGrace), tell); wait != RefusalGrace {
		t.Fatalf("a refusal after an accepted version waits %v, want a new grace", wait)
	}
}
