package stepcheck

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/planner"
)

// Before a step, `addonops plan` (package planner) runs the controller's own decisions on the
// step's rendered objects against the hub and its version history: per install placement the kind
// of change (Install, Upgrade, Rollback, ...) and, for a rollback, the history entry it returns
// to. The demo and the end-to-end suite take a step's rollbacks from that plan instead of working
// them out themselves, and PlanCameTrue judges that the step did what the plan said.

// RunPlan runs `addonops plan -f - -o json` (bin: the addonops binary) on the rendered objects
// of a step (YAML or JSON) against the hub of kubeconfig and the version histories in
// historyNamespace, as a reviewer of the step's commit would before it is applied, and decodes the
// report.
func RunPlan(ctx context.Context, bin, kubeconfig, historyNamespace string, rendered []byte) (*planner.Report, error) {
	args := []string{"plan", "-f", "-", "-o", "json", "--kubeconfig", kubeconfig, "--history-namespace", historyNamespace}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin = bytes.NewReader(rendered)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s", bin, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	var rep planner.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		return nil, fmt.Errorf("reading the plan of %s %s: %w", bin, strings.Join(args, " "), err)
	}
	return &rep, nil
}

// PlannedChange is what the plan said of one install placement and what the step then saw of it.
type PlannedChange struct {
	Placement string
	// Change is the plan's kind of change (planner.ChangeInstall, ChangeUpgrade, ChangeRollback, ...).
	Change string
	// Seen are the Progressing reasons the placement reported during the step (its progression for
	// the step's change, not the one it started from); Reason is the one it ended with.
	Seen   []string
	Reason string
}

// PlannedChanges lists the install placements of every add-on of the plan ("<namespace>/<name>")
// with the kind of change the plan gives each.
func PlannedChanges(rep *planner.Report) map[string]string {
	out := map[string]string{}
	for _, a := range rep.Addons {
		for _, p := range a.Placements {
			out[p.Placement] = p.Change
		}
	}
	return out
}

// PlannedRollbacks lists the install placements the plan calls a rollback, with the version
// history entry each returns to (nil when the plan names none).
func PlannedRollbacks(rep *planner.Report) map[string]*planner.HistoryEntry {
	out := map[string]*planner.HistoryEntry{}
	for _, a := range rep.Addons {
		for _, p := range a.Placements {
			if p.Change == planner.ChangeRollback {
				out[p.Placement] = p.RollbackTo
			}
		}
	}
	return out
}

// PlanCameTrue decides whether the step did what its plan said: every placement the plan called a
// rollback ends RollbackSucceeded, and no placement the plan called an install or upgrade reports
// a rollback's reason (RollingBack, RollbackSucceeded, RollbackFailed) during the step or at its
// end. With injected failures a rollback may fail or stop short (as Rollbacks allows), but it may
// not end as an install or upgrade.
func PlanCameTrue(changes []PlannedChange, injected map[string]bool) (bool, string) {
	rollback := func(reason string) bool {
		k, ok := addonstatus.KindOfReason(reason)
		return ok && k == addonstatus.Rollback
	}
	for _, c := range changes {
		switch c.Change {
		case planner.ChangeRollback:
			k, ok := addonstatus.KindOfReason(c.Reason)
			switch {
			case len(injected) == 0 && c.Reason != addonstatus.ReasonRollbackSucceeded:
				return false, fmt.Sprintf("the plan called %s's change a rollback, but it ended %s, want RollbackSucceeded", c.Placement, orNone(c.Reason))
			case ok && k != addonstatus.Rollback:
				return false, fmt.Sprintf("the plan called %s's change a rollback, but it ended %s: the controller took it for another kind of change",
					c.Placement, c.Reason)
			}
		case planner.ChangeInstall, planner.ChangeUpgrade:
			if i := slices.IndexFunc(c.Seen, rollback); i >= 0 {
				return false, fmt.Sprintf("the plan called %s's change an %s, but it reported %s during the step", c.Placement, lower(c.Change), c.Seen[i])
			}
			if rollback(c.Reason) {
				return false, fmt.Sprintf("the plan called %s's change an %s, but it ended %s", c.Placement, lower(c.Change), c.Reason)
			}
		}
	}
	return true, ""
}

func orNone(reason string) string {
	if reason == "" {
		return "with no reason"
	}
	return reason
}

// lower names a change kind in a sentence: "install", "upgrade".
func lower(change string) string {
	switch change {
	case planner.ChangeInstall:
		return "install"
	case planner.ChangeUpgrade:
		return "upgrade"
	}
	return change
}
