package main

// The plan of each step, printed before the step's add-ons are applied: `addonops plan` (package
// planner) on the step's rendered objects against the live hub, as a reviewer would see it on the
// step's pull request.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/addonops/addonops/internal/planner"
	"github.com/addonops/addonops/internal/testing/stepcheck"
)

// planTool is the CLI the demo plans with. It runs as its own process: the plan sets sdk-go's
// package-level rollout clock to its simulated time, which the controller running in the demo's
// process reads too.
const planTool = "addonops"

// maxPlanLines bounds the plan the demo prints for a step: the diffs are cut to their size first,
// then the rest beyond this many lines.
const maxPlanLines = 40

// planStep runs `addonops plan -f - -o json` on the step's rendered objects against the hub and
// prints the plan as `--diffs size` shows it, condensed (condensePlan). It returns the plan: the controller's own
// decisions say which placements the step rolls back (stepcheck.PlannedRollbacks), and the step is
// judged against them (stepcheck.PlanCameTrue). An error (the plan refuses the objects, the hub
// cannot be read) stops the step: a plan the demo cannot take is a defect to see.
func (r *demoRun) planStep(ctx context.Context, st step) (*planner.Report, error) {
	start := time.Now()
	items := make([]any, 0, len(st.Objects))
	for _, o := range st.Objects {
		items = append(items, o.Object)
	}
	in, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		return nil, fmt.Errorf("planning step %s: encoding its objects: %w", st.Name, err)
	}
	rep, err := stepcheck.RunPlan(ctx, r.planBin, r.hub.Kubeconfig, historyNamespace, in)
	if err != nil {
		return nil, fmt.Errorf("planning step %s: %w", st.Name, err)
	}
	took := time.Since(start)
	text, err := condensePlan(rep, maxPlanLines)
	if err != nil {
		return nil, fmt.Errorf("planning step %s: %w", st.Name, err)
	}
	r.disp.printf("   Plan: %s plan -f - --diffs size --kubeconfig %s, the step's rendered objects against the hub before its add-ons are applied (%s):\n",
		planTool, r.hub.Kubeconfig, seconds(took))
	for _, l := range text {
		r.disp.printf("   | %s\n", l)
	}
	return rep, nil
}

// condensePlan is the plan as `addonops plan --diffs size` prints it (each diff as its size), cut
// after max lines with a line saying how many more there are.
func condensePlan(rep *planner.Report, max int) ([]string, error) {
	var b strings.Builder
	if err := rep.WithDiffSizes().Write(&b, planner.FormatText); err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) > max {
		more := len(lines) - max
		lines = append(lines[:max], fmt.Sprintf("... %d more line(s): `addonops plan` prints them all", more))
	}
	return lines, nil
}
