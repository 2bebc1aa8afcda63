package main

// Running one step: deliver it (the demo's server-side apply, or the engine), follow its rollout
// in the view until it ends, then judge it (stepcheck) and print how it ended.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/planner"
	"github.com/addonops/addonops/internal/rolloutview"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/stepcheck"
)

// stepWatch is what a step watches while it runs, beyond the snapshots: the placements it plans to
// roll back, the reasons each placement reported, when each first reported success, and the pause.
type stepWatch struct {
	start time.Time
	// With an engine: the step's commit, when it was handed to the engine, what the engine did and
	// what it said last.
	sha        string
	handed     time.Time
	engine     *EngineResult
	lastEngine engineState
	// addsPlacement: the step has a Placement the step before did not have.
	addsPlacement bool

	// plans are what the step's objects ask of each install placement (strategy, canary, config);
	// planned the kind of change the step's plan (`addonops plan`) gives each, rollbacks what those
	// it rolls back go back to (rollbacksOf).
	plans     map[string]stepcheck.PlacementPlan
	planned   map[string]string
	rollbacks map[string]string
	reasons   map[string][]string // placement -> distinct reasons seen, in order (fresh progressions only)
	doneAt    map[string]time.Duration
	pause     *pauser
	gates     *gater
	// rec records the MCAs' changes while the step runs.
	rec *harness.Recorder[harness.MCAStateEvent]
}

// observe notes the placements' reasons in the snapshots.
func (w *stepWatch) observe(snaps []snapshot, now time.Time) {
	for _, s := range snaps {
		for _, p := range s.View.Placements {
			key := p.Key()
			if p.Behind != "" || p.Reason == "" {
				continue
			}
			if rs := w.reasons[key]; len(rs) == 0 || rs[len(rs)-1] != p.Reason {
				w.reasons[key] = append(rs, p.Reason)
			}
			if _, ok := w.doneAt[key]; !ok && addonstatus.IsDoneReason(p.Reason) {
				w.doneAt[key] = now.Sub(w.start)
			}
		}
	}
}

// plannedChanges pairs what the step's plan said of each placement with the reasons it reported
// during the step and the one it ended with (placements), for stepcheck.PlanCameTrue.
func (w *stepWatch) plannedChanges(placements []PlacementResult) []stepcheck.PlannedChange {
	var out []stepcheck.PlannedChange
	for _, key := range slices.Sorted(maps.Keys(w.planned)) {
		c := stepcheck.PlannedChange{Placement: key, Change: w.planned[key], Seen: w.reasons[key]}
		for _, p := range placements {
			if p.Key == key {
				c.Reason = p.Reason
			}
		}
		out = append(out, c)
	}
	return out
}

// versionOf names a placement's version for people: its agent version, else its config.
func (r *demoRun) versionOf(p stepcheck.PlacementPlan) string {
	if v, ok := r.versions[p.Config]; ok {
		return v
	}
	return p.Config
}

// deliver starts the step's recording of MCA changes, sets up the gates' CRDs and notification
// configuration when the step first needs them, plans the step and has it applied (by the demo or
// the engine); it prints what the plan says the step rolls back. It returns the generations of the
// step's ClusterManagementAddOns on the hub and their names.
func (r *demoRun) deliver(ctx context.Context, st step, w *stepWatch) (map[string]int64, []string, error) {
	var err error
	if w.rec, err = harness.RecordMCAStates(ctx, r.clients.Addon); err != nil {
		return nil, nil, err
	}
	if r.gates != nil && !r.gates.setUp && slices.ContainsFunc(st.Objects, func(o *unstructured.Unstructured) bool { return o.GroupVersionKind() == analysisTemplateGVK }) {
		if err := r.setupGates(ctx); err != nil {
			return nil, nil, err
		}
		r.gates.setUp = true
	}
	var gens map[string]int64
	var addons []string
	var plan *planner.Report
	if r.engine == nil {
		gens, addons, plan, err = r.applyStep(ctx, st)
	} else {
		// The engine applies the whole step at once: the plan comes first, and a Placement the
		// step adds has no decisions in it yet (the plan says so).
		if plan, err = r.planStep(ctx, st); err != nil {
			return nil, nil, err
		}
		gens, addons, err = r.deliverByEngine(ctx, st, w)
	}
	if err != nil {
		return nil, nil, err
	}
	r.view.noteBaseNames(st)
	// What the plan says the step does to each placement, the controller's own decisions: which
	// of them roll back, and to what.
	w.plans = map[string]stepcheck.PlacementPlan{}
	for _, p := range stepcheck.PlacementPlans(st.Objects) {
		w.plans[p.Key] = p
	}
	w.planned, w.rollbacks = stepcheck.PlannedChanges(plan), rollbacksOf(plan, r.firstPlanned)
	notePlanned(plan, st.Name, r.firstPlanned)
	for _, key := range slices.Sorted(maps.Keys(w.rollbacks)) {
		r.disp.printf("   %s\n", rollbackNote(w.plans[key], w.rollbacks[key], r.versionOf(w.plans[key])))
	}
	if len(w.rollbacks) > 0 {
		for _, key := range slices.Sorted(maps.Keys(w.planned)) {
			if c := w.planned[key]; c == planner.ChangeInstall || c == planner.ChangeUpgrade {
				r.disp.printf("   %s: the plan says %s, not Rollback: its version history has no completed %s\n", key, c, r.versionOf(w.plans[key]))
			}
		}
	}
	return gens, addons, nil
}

// runStep applies one step and follows its rollout until it ends, fails, times out or ctx ends.
func (r *demoRun) runStep(ctx context.Context, st step) StepResult {
	res := StepResult{Step: st.Name, Notes: st.Notes, kind: st.Kind}
	start := time.Now()
	w := &stepWatch{start: start, reasons: map[string][]string{}, doneAt: map[string]time.Duration{}}
	if r.engine == nil {
		r.disp.printf("\n== %s: server-side apply of %d objects (field manager %s)\n", st.Name, len(st.Objects), FieldManager)
	} else {
		r.disp.printf("\n== %s: %d objects delivered by %s\n", st.Name, len(st.Objects), r.engine.Name())
	}
	fail := func(err error) StepResult {
		if w.rec != nil {
			w.rec.Stop()
		}
		res.Duration = time.Since(start)
		if ctx.Err() != nil {
			res.Result = Interrupted
		} else {
			res.Result = Error
			res.Why = err.Error()
			r.disp.printf("   ERROR: %v\n", err)
		}
		res.Expected, _ = stepcheck.Expect(res.Result, nil, r.fleet.failing)
		res.Engine = w.engine
		return res
	}

	gens, addons, err := r.deliver(ctx, st, w)
	if err != nil {
		return fail(err)
	}
	if st.Pause != nil {
		w.pause = r.newPauser(*st.Pause, start, w.rec)
	}
	if st.Gates != nil {
		w.gates = r.newGater(*st.Gates, start)
	}

	// --step-timeout bounds the whole step, the engine's delivery included.
	timeout := time.NewTimer(r.o.StepTimeout - time.Since(start))
	defer timeout.Stop()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var failingSince, endedSince, engineRead time.Time
	var snaps []snapshot
	for {
		now := time.Now()
		if err := w.rec.Err(); err != nil {
			return fail(err)
		}
		if r.engine != nil && now.Sub(engineRead) >= 500*time.Millisecond {
			r.noteEngine(w, r.engine.State(ctx, w.sha))
			engineRead = now
			if w.lastEngine.Fatal {
				return fail(fmt.Errorf("%s: %s", r.engine.Name(), w.lastEngine.Problem))
			}
		}
		r.gates.flush(r.disp)
		ss, ok, err := r.snapshots(addons, gens, now)
		if err != nil {
			return fail(err)
		}
		if ok {
			snaps = ss
			w.observe(snaps, now)
			if w.pause != nil {
				w.pause.advance(ctx, snaps, now)
			}
			if w.gates != nil {
				w.gates.advance(ctx, snaps, harness.LatestStates(w.rec, st.Gates.Addon), now)
			}
			v := judge(viewsOf(snaps))
			if r.engine != nil && v.Ended && uncounted(snaps) {
				// The controller has not counted the clusters the demo just decided for a
				// placement the engine created (see uncounted): the rollout has not started.
				v.Ended = false
			}
			f := frame{Views: viewsOf(snaps)}
			if r.engine != nil {
				f.Extra = []string{w.lastEngine.Line}
			}
			r.disp.update(st.Name, now.Sub(start), f, now)
			// The pause holds the step open until it resumed; the gates until the notifications
			// the rollout sends arrived (or notifyWait passed).
			pausing := w.pause != nil && w.pause.phase != pauseWaiting && w.pause.phase != pauseDone ||
				w.gates.holds(v.Ended && !v.Failed, now)
			var ended Result
			switch {
			case pausing:
				failingSince = time.Time{}
			case v.Ended && !v.Failed:
				ended = Succeeded
			case v.Ended && failingSince.IsZero():
				failingSince = now
			case v.Ended && now.Sub(failingSince) >= r.o.Settle:
				ended = Failed
			case !v.Ended:
				failingSince = time.Time{}
			}
			switch {
			case ended == "":
				endedSince = time.Time{}
			case r.engine == nil:
				return r.finishStep(res, ended, w, snaps, v)
			case engineAgrees(ended, w.lastEngine, failingSince):
				// time.Since, not now: noteEngine timed the engine's "applied" after now was taken,
				// and the verdict cannot come before it.
				w.engine.VerdictAfter = time.Since(w.handed)
				return r.finishStep(res, ended, w, snaps, v)
			case endedSince.IsZero():
				endedSince = now
			case now.Sub(endedSince) >= engineVerdictWait:
				w.engine.Problem = fmt.Sprintf("the demo's view says %s, but %s did not say so within %s: %s",
					ended, r.engine.Name(), engineVerdictWait, w.lastEngine.Line)
				return r.finishStep(res, ended, w, snaps, v)
			}
		}
		for waiting := true; waiting; {
			select {
			case <-ctx.Done():
				return r.finishStep(res, Interrupted, w, snaps, verdict{})
			case <-timeout.C:
				return r.finishStep(res, TimedOut, w, snaps, judge(viewsOf(snaps)))
			case <-tick.C:
				waiting = false
			case <-w.pause.waiting(w.rec.Changed()):
				// An MCA changed while the pause waits for the first batch: pause at once.
				waiting = !w.pause.trigger(ctx, time.Now())
			}
		}
	}
}

// snapshots reads the step's add-ons; ok is false until the caches hold what the demo applied.
func (r *demoRun) snapshots(addons []string, gens map[string]int64, now time.Time) ([]snapshot, bool, error) {
	var out []snapshot
	for _, a := range addons {
		s, ok, err := r.view.snapshot(a, gens[a], now)
		if err != nil || !ok {
			return nil, false, err
		}
		out = append(out, s)
	}
	return out, len(out) > 0, nil
}

func viewsOf(snaps []snapshot) []rolloutview.View {
	out := make([]rolloutview.View, len(snaps))
	for i, s := range snaps {
		out[i] = s.View
	}
	return out
}

// finishStep fills in the step's result from the last snapshots and the recorded MCA changes, and
// prints how it ended.
func (r *demoRun) finishStep(res StepResult, result Result, w *stepWatch, snaps []snapshot, v verdict) StepResult {
	w.rec.Stop()
	recStart, events := harness.RecordedStates(w.rec)
	views := viewsOf(snaps)
	res.Duration = time.Since(w.start)
	res.Result = result
	res.Failed = failedClusters(views)
	res.Reasons = failureReasons(views, 5)
	res.Notes = append(slices.Clone(res.Notes), v.Notes...)
	var configs, versions []string
	for _, view := range views {
		for _, p := range view.Placements {
			pr := PlacementResult{Key: p.Key(), Reason: p.Reason, Total: p.Progress.Total, Done: p.Progress.Done,
				InProgress: p.Progress.InProgress, Failed: p.Progress.Failed + p.Progress.TimedOut}
			for _, c := range p.Configs {
				if strings.HasPrefix(c.Resource, "addondeploymentconfigs.") && c.Desired != nil {
					pr.Desired, pr.DesiredVersion = c.Desired.Name, r.versions[c.Desired.Namespace+"/"+c.Desired.Name]
				}
			}
			if p.Canary != nil {
				pr.Canary = p.Canary.State
			}
			res.Placements = append(res.Placements, pr)
			configs = append(configs, pr.Desired)
			versions = append(versions, pr.DesiredVersion)
		}
	}
	res.Clusters, res.Done = stepClusters(snaps, configs, res.Failed)
	res.Config, res.Version = joinNonEmpty(configs), joinNonEmpty(versions)

	// The placements it rolled back: how they ended, whether they waited for the canary, how many
	// clusters moved at once (from the recorded MCA changes).
	for _, key := range slices.Sorted(maps.Keys(w.rollbacks)) {
		plan := w.plans[key]
		c := RollbackCheck{Placement: key, Version: r.versionOf(plan), Since: w.rollbacks[key], Canary: plan.Canary,
			WaitedForCanary: slices.Contains(w.reasons[key], addonstatus.ReasonWaitingForCanary), CanaryDone: -1, FirstMoved: -1}
		for _, p := range res.Placements {
			if p.Key == key {
				c.Reason = p.Reason
			}
		}
		if at, ok := w.doneAt[plan.Canary]; ok && plan.Canary != "" {
			c.CanaryDone = at
		}
		for _, s := range snaps {
			if s.View.Addon != plan.Addon {
				continue
			}
			owned := s.owned(key)
			c.Clusters, c.Limit = len(owned), plan.Limit(len(s.Clusters[key]))
			c.MaxInFlight, _ = harness.MovingInFlight(recStart, events, plan.Addon, plan.Config, owned)
			for _, at := range harness.FirstTold(events, plan.Addon, plan.Config, owned) {
				if d := at.Sub(w.start); c.FirstMoved < 0 || d < c.FirstMoved {
					c.FirstMoved = d
				}
			}
		}
		res.Rollbacks = append(res.Rollbacks, c)
		res.Notes = append(res.Notes, "rollback: "+c.Describe())
	}
	if w.pause != nil {
		res.Pause = w.pause.finish(events)
		res.Notes = append(res.Notes, stepcheck.DescribePause(res.Pause))
	}
	r.gates.flush(r.disp)
	if w.gates != nil {
		res.Gates = w.gates.finish(events)
		res.Notes = append(res.Notes, stepcheck.DescribeGates(res.Gates))
	}

	r.judgeStep(&res, w, snaps)

	if len(snaps) > 0 {
		r.disp.finish(res.Step, res.Duration, frame{Views: views})
	}
	r.printEnd(res, v, w)
	return res
}

// printEnd prints how the step ended, what the engine said of it, and whether that was expected.
func (r *demoRun) printEnd(res StepResult, v verdict, w *stepWatch) {
	result := res.Result
	switch result {
	case Succeeded:
		r.disp.printf("== %s: Succeeded in %s: %d/%d clusters run %s\n", res.Step, seconds(res.Duration), res.Done, res.Clusters, configLabel(res))
	case Interrupted:
		r.disp.printf("== %s: interrupted after %s\n", res.Step, seconds(res.Duration))
	default:
		r.disp.printf("== %s: %s after %s: %d/%d clusters run %s, %d failed\n", res.Step, result, seconds(res.Duration),
			res.Done, res.Clusters, configLabel(res), len(res.Failed))
		for _, n := range v.Notes {
			r.disp.printf("   %s\n", n)
		}
	}
	if e := res.Engine; e != nil && e.VerdictAfter >= 0 {
		r.disp.printf("   %s, %s after %s (applied %s after it): the demo's view agrees\n", e.Last, seconds(e.VerdictAfter), e.HandOver, seconds(e.AppliedAfter))
		if failed := e.failedOnTheWay(); failed != "" {
			why := ""
			if nf := r.view.placementNotFoundSince(w.start); len(nf) > 0 && w.addsPlacement {
				why = fmt.Sprintf(" when the controller reported PlacementNotFound (%s)%s", strings.Join(nf, ", "), r.engine.WhyFailedOnTheWay())
			}
			r.disp.printf("   on the way %s said %s%s\n", e.Engine, failed, why)
		}
	}
	switch {
	case result == Interrupted:
	case !res.Expected:
		r.disp.printf("   NOT AS EXPECTED: %s\n", res.Why)
	case res.kind == stepBadVersion:
		r.disp.printf("   as expected: the bad version stopped at the canary, named above; no cluster outside the canary was told to run it\n")
	case res.kind == stepRevert && result == Succeeded:
		r.disp.printf("   as expected: the revert is a rollback: %s\n", placementReasons(res.Placements))
	case res.kind == stepPauseResume && result == Succeeded:
		r.disp.printf("   as expected: %s\n", stepcheck.DescribePause(res.Pause))
	case res.kind == stepGates && result == Succeeded:
		r.disp.printf("   as expected: %s\n", stepcheck.DescribeGates(res.Gates))
	case result == Failed:
		r.disp.printf("   as expected: only clusters whose failure was injected (--fail-rate) failed\n")
	}
	if res.Expected && result == Succeeded {
		for _, c := range res.Rollbacks {
			r.disp.printf("   as expected, a rollback: %s\n", c.Describe())
		}
	}
}

// judgeStep says whether the step ended as expected (stepcheck's judges, by the step's kind; then
// its rollbacks, its plan and the engine's agreement), and why not.
func (r *demoRun) judgeStep(res *StepResult, w *stepWatch, snaps []snapshot) {
	result := res.Result
	var why string
	switch res.kind {
	case stepBadVersion:
		var told []string
		for _, c := range r.badConfigs {
			told = append(told, toldConfig(snaps, c)...)
		}
		res.Expected, why = stepcheck.BadVersion(result, res.Failed, told, r.fleet.canary, r.fleet.failing)
	case stepRevert:
		var reasons []string
		for _, p := range res.Placements {
			reasons = append(reasons, p.Reason)
		}
		res.Expected, why = stepcheck.Revert(result, res.Failed, r.fleet.failing, reasons)
	case stepPauseResume:
		res.Expected, why = stepcheck.PauseResume(result, res.Failed, r.fleet.failing, res.Pause)
	case stepGates:
		res.Expected, why = stepcheck.Gates(result, res.Failed, r.fleet.failing, res.Gates)
	default:
		res.Expected, why = stepcheck.Expect(result, res.Failed, r.fleet.failing)
	}
	if res.Expected && result != Interrupted {
		res.Expected, why = stepcheck.Rollbacks(res.Rollbacks, r.fleet.failing)
	}
	if res.Expected && result != Interrupted {
		res.Expected, why = stepcheck.PlanCameTrue(w.plannedChanges(res.Placements), r.fleet.failing)
	}
	if res.Engine = w.engine; res.Expected && res.Engine != nil && res.Engine.Problem != "" {
		res.Expected, why = false, res.Engine.Problem
	}
	if !res.Expected {
		res.Why = why
	}
}

// plural counts things as the step checks do (stepcheck.Count): "1 cluster", "3 clusters".
