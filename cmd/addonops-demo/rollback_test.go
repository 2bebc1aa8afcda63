package main

import (
	"maps"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/planner"
	"github.com/addonops/addonops/internal/rolloutview"
	"github.com/addonops/addonops/internal/testing/stepcheck"
)

// TestRollbacksOf follows the rollout examples' plans: 01 installs v1 on global-placement, 03
// upgrades both placements to v3 (canary-placement installed over running clusters), 04 rolls
// both back to v1, which the demo names by the step that first rolled it out.
func TestRollbacksOf(t *testing.T) {
	plan := func(placements ...planner.PlacementPlan) *planner.Report {
		return &planner.Report{Addons: []planner.AddonPlan{{Addon: "helloworld", Placements: placements}}}
	}
	const g, c = "default/global-placement", "default/canary-placement"
	first := map[string]string{}
	steps := []struct {
		name string
		rep  *planner.Report
		want map[string]string
	}{
		{"01-fresh-install", plan(planner.PlacementPlan{Placement: g, Change: planner.ChangeInstall, ToVersion: "v1"}), map[string]string{}},
		{"02-rolling-update", plan(planner.PlacementPlan{Placement: g, Change: planner.ChangeUpgrade, FromVersion: "v1", ToVersion: "v2"}), map[string]string{}},
		{"03-rolling-update-with-canary", plan(planner.PlacementPlan{Placement: g, Change: planner.ChangeUpgrade, FromVersion: "v2", ToVersion: "v3"},
			planner.PlacementPlan{Placement: c, Change: planner.ChangeInstall, ToVersion: "v3"}), map[string]string{}},
		{"04-rollback", plan(planner.PlacementPlan{Placement: g, Change: planner.ChangeRollback, FromVersion: "v3", ToVersion: "v1",
			RollbackTo: &planner.HistoryEntry{Version: "v1", Completed: "2026-03-01T10:00:00Z"}},
			planner.PlacementPlan{Placement: c, Change: planner.ChangeRollback, FromVersion: "v3", ToVersion: "v1"}),
			map[string]string{g: "01-fresh-install", c: "01-fresh-install"}},
		// A version no plan of this run rolled out: named by the history entry, or its id.
		{"05-other", plan(planner.PlacementPlan{Placement: g, Change: planner.ChangeRollback, ToVersion: "v0",
			RollbackTo: &planner.HistoryEntry{Version: "v0", Completed: "2026-02-01T10:00:00Z"}},
			planner.PlacementPlan{Placement: c, Change: planner.ChangeRollback, ToVersion: "v0"}),
			map[string]string{g: "an earlier run (version v0, completed 2026-02-01T10:00:00Z)", c: "an earlier run (version v0)"}},
	}
	for _, st := range steps {
		if got := rollbacksOf(st.rep, first); !maps.Equal(got, st.want) {
			t.Errorf("%s: rollbacks %v, want %v", st.name, got, st.want)
		}
		notePlanned(st.rep, st.name, first)
	}
	if want := map[string]string{"v1": "01-fresh-install", "v2": "02-rolling-update", "v3": "03-rolling-update-with-canary"}; !maps.Equal(first, want) {
		t.Errorf("first planned %v, want %v (rollbacks roll nothing out)", first, want)
	}
}

func TestPlannedChanges(t *testing.T) {
	w := &stepWatch{planned: map[string]string{"ns/g": planner.ChangeRollback, "ns/c": planner.ChangeUpgrade},
		reasons: map[string][]string{"ns/g": {"RollingBack", "RollbackSucceeded"}, "ns/c": {"Upgrading"}}}
	got := w.plannedChanges([]PlacementResult{{Key: "ns/g", Reason: "RollbackSucceeded"}, {Key: "ns/c", Reason: "UpgradeSucceed"}})
	if len(got) != 2 || got[0].Placement != "ns/c" || got[0].Change != "Upgrade" || got[0].Reason != "UpgradeSucceed" || !slices.Equal(got[0].Seen, []string{"Upgrading"}) ||
		got[1].Placement != "ns/g" || got[1].Reason != "RollbackSucceeded" || len(got[1].Seen) != 2 {
		t.Errorf("plannedChanges = %+v", got)
	}
	if ok, why := stepcheck.PlanCameTrue(got, nil); !ok {
		t.Errorf("PlanCameTrue: %s", why)
	}
}

func TestRollbackNote(t *testing.T) {
	note := rollbackNote(stepcheck.PlacementPlans(lastExample(t).Objects)[0], "01-fresh-install", "v0.10.0")
	if !strings.Contains(note, "default/global-placement goes back to v0.10.0, which the add-on ran to completion in 01-fresh-install") ||
		!strings.Contains(note, "not gated by the canary default/canary-placement, paced by maxConcurrency 25%") {
		t.Errorf("rollbackNote: %s", note)
	}
}

func TestSnapshotOwned(t *testing.T) {
	global := addonv1alpha1.PlacementStrategy{PlacementRef: addonv1alpha1.PlacementRef{Namespace: "ns", Name: "global"}}
	canaryP := addonv1alpha1.PlacementStrategy{PlacementRef: addonv1alpha1.PlacementRef{Namespace: "ns", Name: "canary"}}
	// The canary listed last owns c1; listed first, it keeps c1 too: the gated placement never
	// takes a cluster from its canary.
	for _, order := range [][]addonv1alpha1.PlacementStrategy{{global, canaryP}, {canaryP, global}} {
		cma := &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: "hello",
			Annotations: map[string]string{canary.Annotation: `{"ns/global": "ns/canary"}`}}}
		cma.Spec.InstallStrategy = addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyPlacements, Placements: order}
		s := snapshot{View: rolloutview.Build(rolloutview.Input{CMA: cma, Clusters: map[string][]string{"ns/global": {"c3", "c1", "c2"}, "ns/canary": {"c1"}}})}
		if got := s.owned("ns/global"); !slices.Equal(got, []string{"c2", "c3"}) {
			t.Errorf("owned(global) = %v, want [c2 c3]: its canary owns c1", got)
		}
		if got := s.owned("ns/canary"); !slices.Equal(got, []string{"c1"}) {
			t.Errorf("owned(canary) = %v, want [c1]", got)
		}
	}
}
