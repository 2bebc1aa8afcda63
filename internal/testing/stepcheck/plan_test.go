package stepcheck

import (
	"maps"
	"strings"
	"testing"

	"github.com/addonops/addonops/internal/planner"
)

func TestPlannedChangesAndRollbacks(t *testing.T) {
	to := &planner.HistoryEntry{Version: "abc123", Kind: "Install", Result: "Succeeded", Completed: "2026-03-01T10:00:00Z"}
	rep := &planner.Report{Addons: []planner.AddonPlan{
		{Addon: "a", Placements: []planner.PlacementPlan{
			{Placement: "default/global", Change: planner.ChangeRollback, RollbackTo: to},
			{Placement: "default/canary", Change: planner.ChangeRollback},
		}},
		{Addon: "b", Placements: []planner.PlacementPlan{{Placement: "other/p", Change: planner.ChangeUpgrade}}},
	}}
	if got, want := PlannedChanges(rep), map[string]string{"default/global": "Rollback", "default/canary": "Rollback", "other/p": "Upgrade"}; !maps.Equal(got, want) {
		t.Errorf("PlannedChanges = %v, want %v", got, want)
	}
	rb := PlannedRollbacks(rep)
	if len(rb) != 2 || rb["default/global"] != to || rb["default/canary"] != nil {
		t.Errorf("PlannedRollbacks = %v, want global-placement's (back to %v) and canary-placement's (no entry named)", rb, to)
	}
	if _, ok := rb["other/p"]; ok {
		t.Error("PlannedRollbacks lists an upgrade")
	}
	if got := PlannedRollbacks(&planner.Report{}); len(got) != 0 {
		t.Errorf("an empty plan has rollbacks %v", got)
	}
}

func TestPlanCameTrue(t *testing.T) {
	injected := map[string]bool{"c1": true}
	rb := PlannedChange{Placement: "default/g", Change: planner.ChangeRollback, Seen: []string{"RollingBack", "RollbackSucceeded"}, Reason: "RollbackSucceeded"}
	up := PlannedChange{Placement: "default/c", Change: planner.ChangeUpgrade, Seen: []string{"Upgrading", "UpgradeSucceed"}, Reason: "UpgradeSucceed"}
	with := func(c PlannedChange, f func(c *PlannedChange)) []PlannedChange {
		f(&c)
		return []PlannedChange{rb, up, c}
	}
	for _, tc := range []struct {
		name     string
		changes  []PlannedChange
		injected map[string]bool
		ok       bool
		why      string
	}{
		{"as planned", []PlannedChange{rb, up}, nil, true, ""},
		{"nothing planned", nil, nil, true, ""},
		{"a rollback that upgraded", with(rb, func(c *PlannedChange) { c.Reason = "UpgradeSucceed" }), nil, false,
			"the plan called default/g's change a rollback, but it ended UpgradeSucceed, want RollbackSucceeded"},
		{"a rollback still rolling back", with(rb, func(c *PlannedChange) { c.Reason = "RollingBack" }), nil, false, "ended RollingBack, want RollbackSucceeded"},
		{"a rollback with no reason", with(rb, func(c *PlannedChange) { c.Reason = "" }), nil, false, "ended with no reason"},
		{"a rollback gated by the canary", with(rb, func(c *PlannedChange) { c.Reason = "WaitingForCanary" }), nil, false, "ended WaitingForCanary"},
		{"injected failures fail the rollback", with(rb, func(c *PlannedChange) { c.Reason = "RollbackFailed" }), injected, true, ""},
		{"injected failures stop it short", with(rb, func(c *PlannedChange) { c.Reason = "RollingBack" }), injected, true, ""},
		{"injected failures do not excuse an upgrade", with(rb, func(c *PlannedChange) { c.Reason = "UpgradeFailed" }), injected, false,
			"ended UpgradeFailed: the controller took it for another kind of change"},
		{"an upgrade that rolled back on the way", with(up, func(c *PlannedChange) { c.Seen = []string{"Upgrading", "RollingBack", "UpgradeSucceed"} }), nil, false,
			"the plan called default/c's change an upgrade, but it reported RollingBack during the step"},
		{"an install that ended a rollback", with(up, func(c *PlannedChange) {
			c.Change, c.Seen, c.Reason = planner.ChangeInstall, []string{"Installing"}, "RollbackSucceeded"
		}), nil, false, "the plan called default/c's change an install, but it ended RollbackSucceeded"},
		{"injected failures do not excuse a rollback of an upgrade", with(up, func(c *PlannedChange) { c.Seen = []string{"RollingBack"} }), injected, false,
			"reported RollingBack during the step"},
		{"an upgrade that failed", with(up, func(c *PlannedChange) { c.Seen, c.Reason = []string{"Upgrading", "UpgradeFailed"}, "UpgradeFailed" }), nil, true, ""},
		{"no change: not judged", with(up, func(c *PlannedChange) { c.Change, c.Reason = planner.ChangeNoOp, "RollbackSucceeded" }), nil, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, why := PlanCameTrue(tc.changes, tc.injected)
			if ok != tc.ok || !strings.Contains(why, tc.why) || ok && why != "" {
				t.Errorf("PlanCameTrue = %v, %q; want %v, %q", ok, why, tc.ok, tc.why)
			}
		})
	}
}
