package main

import (
	"slices"
	"testing"

	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/testing/simagent"
	"github.com/addonops/addonops/internal/testing/ssapply"
)

// lastExample is kustomize-rollout-examples/04-rollback's committed output, as the demo renders it.
func lastExample(t *testing.T) step {
	t.Helper()
	objs, err := ssapply.DecodeFile("kustomize-rollout-examples/04-rollback/expected/hub.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return step{Name: "04-rollback", Objects: objs}
}

func TestOutcome(t *testing.T) {
	bad := []string{"default/helloworld-config-bad"}
	for _, tc := range []struct {
		name    string
		failing bool
		configs map[string]string
		want    simagent.Outcome
	}{
		{"good version", false, map[string]string{"addondeploymentconfigs.addon.open-cluster-management.io/default/helloworld-config-good": "h"}, simagent.Succeed},
		{"bad version", false, map[string]string{"addondeploymentconfigs.addon.open-cluster-management.io/default/helloworld-config-bad": "h",
			"addontemplates.addon.open-cluster-management.io//helloworld": "t"}, simagent.Unhealthy},
		{"same name, other namespace", false, map[string]string{"addondeploymentconfigs.addon.open-cluster-management.io/other/helloworld-config-bad": "h"}, simagent.Succeed},
		{"same name, other resource", false, map[string]string{"addontemplates.addon.open-cluster-management.io/default/helloworld-config-bad": "h"}, simagent.Succeed},
		{"injected failure first", true, map[string]string{"addondeploymentconfigs.addon.open-cluster-management.io/default/helloworld-config-bad": "h"}, simagent.Fail},
	} {
		if got := outcome(tc.failing, tc.configs, bad); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestToldConfig(t *testing.T) {
	snaps := []snapshot{{MCAs: []*addonv1alpha1.ManagedClusterAddOn{mca("c2", "bad", "good"), mca("c1", "bad", "good"), mca("c3", "good", "good")}}}
	if got := toldConfig(snaps, "default/bad"); !slices.Equal(got, []string{"c1", "c2"}) {
		t.Errorf("told %v, want [c1 c2]", got)
	}
	if got := toldConfig(snaps, "other/bad"); len(got) != 0 {
		t.Errorf("told %v in another namespace, want none", got)
	}
}
