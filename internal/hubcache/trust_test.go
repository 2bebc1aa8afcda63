package hubcache

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonfake "open-cluster-management.io/api/client/addon/clientset/versioned/fake"

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

func TestRefuseConfirmsWithTheAPIServerAndReportsOnce(t *testing.T) {
	ctx := context.Background()
	tmpl := addonv1alpha1.ConfigGroupResource{Group: configref.AddOnTemplates.Group, Resource: configref.AddOnTemplates.Resource}
	cma := &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	client := addonfake.NewSimpleClientset(cma)
	c := &Cache{Clients: Clients{Addon: client}}
	mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "a"}}
	forged := Desired{Template: &Config{Ref: configref.Ref{GroupResource: configref.AddOnTemplates, Name: "b-v1"}, DesiredHash: "h-b"}}
	forged.Refused = c.refusalFor(cma, mca, forged)
	if forged.Refused == "" {
		t.Fatal("another add-on's template is not refused")
	}
	var told []string
	tell := func(msg string) { told = append(told, msg) }
	for range 3 {
		refused, wait, err := c.Refuse(ctx, "c1/a", mca, forged, tell)
		if !refused || wait != 0 || err != nil {
			t.Fatalf("refused %v wait %v err %v; want refused at once", refused, wait, err)
		}
	}
	if len(told) != 1 || !strings.Contains(told[0], "addontemplates.addon.open-cluster-management.io b-v1 (spec hash") {
		t.Fatalf("told %q, want the refusal once, naming the template", told)
	}
	if refused, _, _ := c.Refuse(ctx, "c1/a", mca, Desired{}, tell); refused {
		t.Fatal("configs the controller decided are refused")
	}

	// The cache's CMA lags: the API server's lists the template, so it is looked at again soon,
	// and nothing is told.
	live := cma.DeepCopy()
	live.Status.DefaultConfigReferences = []addonv1alpha1.DefaultConfigReference{{ConfigGroupResource: tmpl,
		DesiredConfig: specHash("", "b-v1", "h-b")}}
	if _, err := client.AddonV1alpha1().ClusterManagementAddOns().UpdateStatus(ctx, live, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	told = nil
	if refused, wait, err := c.Refuse(ctx, "c1/b", mca, forged, tell); !refused || wait != cacheLagRetry || err != nil || len(told) != 0 {
		t.Fatalf("refused %v wait %v err %v told %v; want a retry and nothing told", refused, wait, err, told)
	}
}
