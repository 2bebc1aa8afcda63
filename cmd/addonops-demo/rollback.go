package main

import (
	"fmt"

	"github.com/addonops/addonops/internal/testing/stepcheck"
)

// Rollbacks at any moment: the controller keeps a version history per add-on and placement
// (internal/history), and a change of a placement's configs back to a version that completed on
// that placement is a rollback (RollingBack, then RollbackSucceeded), however long ago it ran: it
// never waits for the canary, and moves the clusters paced by the placement's strategy. The demo
// keeps its own account of which step completed which version on which placement, so it knows
// beforehand which placements of a step must roll back (04-rollback's placements: v0.10.0
// completed in 01; the revert after the bad version: every placement) and checks that they do.

// rollbackNote says, before a step's rollout, which placements roll back and why, and which of its
// other placements only upgrade.
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
	return fmt.Sprintf("%s goes back to %s, which the add-on ran to completion in %s (its version history): a rollback, "+
		"RollingBack -> RollbackSucceeded%s, paced by %s", p.Key, version, since, gate, pace)
}
