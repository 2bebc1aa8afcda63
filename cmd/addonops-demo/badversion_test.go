package main

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/spechash"
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

func TestBadVersionSteps(t *testing.T) {
	last := lastExample(t)
	before := make([]*unstructured.Unstructured, len(last.Objects))
	for i, o := range last.Objects {
		before[i] = o.DeepCopy()
	}
	bad, revert, badConfig, err := badVersionSteps(last, 5, "v9.9.9-bad")
	if err != nil {
		t.Fatal(err)
	}
	if bad.Name != "05-bad-version" || revert.Name != "06-revert" || bad.Kind != stepBadVersion || revert.Kind != stepRevert {
		t.Errorf("steps %s (%d), %s (%d), want 05-bad-version and 06-revert of their kinds", bad.Name, bad.Kind, revert.Name, revert.Kind)
	}
	for i := range before {
		if !equalObjects(before[i], last.Objects[i]) || !equalObjects(before[i], revert.Objects[i]) {
			t.Errorf("object %d: the last step changed or the revert is not its output again", i)
		}
	}
	var oldADC, newADC *unstructured.Unstructured
	for i, o := range bad.Objects {
		if o.GroupVersionKind().GroupKind() == adcGK {
			oldADC, newADC = last.Objects[i], o
		}
	}
	if newADC == nil {
		t.Fatal("no AddOnDeploymentConfig in the bad step")
	}
	vars, _, _ := unstructured.NestedSlice(newADC.Object, "spec", "customizedVariables")
	if v := vars[agentVersionIndex(newADC)].(map[string]any)["value"]; v != "v9.9.9-bad" {
		t.Errorf("AGENT_VERSION %v, want v9.9.9-bad", v)
	}
	hash, _ := spechash.Of(newADC.Object)
	suffix, _ := spechash.Suffix(hash)
	if want := "helloworld-config-" + suffix; newADC.GetName() != want || badConfig != "default/"+want {
		t.Errorf("bad config %s (%s), want %s: named after its content as config-hash names it", newADC.GetName(), badConfig, want)
	}
	if newADC.GetName() == oldADC.GetName() {
		t.Errorf("the bad config kept the name %s", oldADC.GetName())
	}
	var cma *unstructured.Unstructured
	for _, o := range bad.Objects {
		if o.GroupVersionKind() == cmaGVK {
			cma = o
		}
	}
	placements, _, _ := unstructured.NestedSlice(cma.Object, "spec", "installStrategy", "placements")
	if len(placements) != 2 {
		t.Fatalf("%d placements, want 2", len(placements))
	}
	for _, raw := range placements {
		p := raw.(map[string]any)
		configs, _, _ := unstructured.NestedSlice(p, "configs")
		if len(configs) != 1 || configs[0].(map[string]any)["name"] != newADC.GetName() {
			t.Errorf("placement %v configs %v, want the bad config %s", p["name"], configs, newADC.GetName())
		}
		if d, _, _ := unstructured.NestedString(p, "rolloutStrategy", "progressive", "progressDeadline"); d != badDeadline {
			t.Errorf("placement %v progressDeadline %q, want %s", p["name"], d, badDeadline)
		}
	}
	if !strings.Contains(strings.Join(bad.Notes, "\n"), "v0.10.0 -> v9.9.9-bad") {
		t.Errorf("notes %q do not say what the bad commit changed", bad.Notes)
	}
	if !hasCanary(last.Objects) {
		t.Error("04-rollback has a canary placement")
	}

	// A last step without exactly one versioned config cannot be made bad.
	var noADC []*unstructured.Unstructured
	for _, o := range last.Objects {
		if o.GroupVersionKind().GroupKind() != adcGK {
			noADC = append(noADC, o)
		}
	}
	if _, _, _, err := badVersionSteps(step{Name: "x", Objects: noADC}, 5, "v1"); err == nil || !strings.Contains(err.Error(), "--bad-version=''") {
		t.Errorf("no config: error %v, want one saying how to skip the step", err)
	}
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
