package main

import (
	"fmt"

	"github.com/addonops/addonops/internal/planner"
	"github.com/addonops/addonops/internal/testing/stepcheck"
)

// Rollbacks at any moment: the controller keeps a version history per add-on and placement
// (internal/history), and a change of a placement's configs back to a version that completed on
// that placement is a rollback (RollingBack, then RollbackSucceeded), however long ago it ran: it
// never waits for the canary, and moves the clusters paced by the placement's strategy. The demo
// does not work out which placements roll back: each step's plan (`addonops plan`, the
// controller's own decisions against the hub and its version history) says so, per placement
// (Change Rollback, and the history entry it returns to), and the demo checks that the step did
// what the plan said (stepcheck.PlanCameTrue, stepcheck.Rollbacks).

// rollbacksOf names, for each placement the plan rolls back, what it goes back to: the step of
// this run whose plan first rolled that version out (firstPlanned, by version id), else the
// history entry the plan names.
func rollbacksOf(rep *planner.Report, firstPlanned map[string]string) map[string]string {
	out := map[string]string{}
	for _, a := range rep.Addons {
		for _, p := range a.Placements {
			if p.Change != planner.ChangeRollback {
				continue
			}
			switch to := p.RollbackTo; {
			case firstPlanned[p.ToVersion] != "":
				out[p.Placement] = firstPlanned[p.ToVersion]
			case to != nil && to.Completed != "":
				out[p.Placement] = fmt.Sprintf("an earlier run (version %s, completed %s)", to.Version, to.Completed)
			default:
				out[p.Placement] = fmt.Sprintf("an earlier run (version %s)", p.ToVersion)
			}
		}
	}
	return out
}

// notePlanned remembers, per version id, the step whose plan first installs or upgrades a
// placement to it: the demo's name for the version when a later plan rolls back to it.
func notePlanned(rep *planner.Report, step string, firstPlanned map[string]string) {
	for _, a := range rep.Addons {
		for _, p := range a.Placements {
			if (p.Change == planner.ChangeInstall || p.Change == planner.ChangeUpgrade) && p.ToVersion != "" && firstPlanned[p.ToVersion] == "" {
				firstPlanned[p.ToVersion] = step
			}
		}
	}
}

// rollbackNote says, before a step's rollout, that placement p rolls back, as its plan said, and
// to what.
func rollbackNote(p stepcheck.PlacementPlan, since, version string) string {
	pace := "its strategy"
	if p.MaxConcurrency != nil && p.Strategy == "Progressive" {
		pace = "maxConcurrency " + p.MaxConcurrency.String()
	} else if p.Strategy != "" {
		pace = "its strategy (" + p.Strategy + ")"
	}
	gate := ""
	if p.Canary != "" {
		gate = ", not gated by the canary " + p.Canary
	}
	return fmt.Sprintf("%s goes back to %s, which the add-on ran to completion in %s (the plan: Rollback, from its version history): "+
		"RollingBack -> RollbackSucceeded%s, paced by %s", p.Key, version, since, gate, pace)
}
