package rolloutplan

// The version history (package history) and the day-2 requests (package operations): what a
// decision reads from them and records in them.

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/operations"
)

func toHistory(cfgs []Config) []history.Config {
	out := make([]history.Config, len(cfgs))
	for i, c := range cfgs {
		out[i] = history.Config{Group: c.Group, Resource: c.Resource, Namespace: c.Namespace, Name: c.Name, SpecHash: c.SpecHash}
	}
	return out
}

func fromHistory(cfgs []history.Config) []Config {
	out := make([]Config, len(cfgs))
	for i, c := range cfgs {
		out[i] = Config{SpecHash: c.SpecHash}
		out[i].Group, out[i].Resource, out[i].Namespace, out[i].Name = c.Group, c.Resource, c.Namespace, c.Name
	}
	return out
}

// versionID names configs as `addonops history` and the day-2 annotations do.
func versionID(cfgs []Config) string { return history.VersionID(toHistory(cfgs)) }

// placementHistory returns the recorded history of placement p, or nil.
func (d *decider) placementHistory(p *placementState) *history.Placement {
	if d.in.History == nil {
		return nil
	}
	return d.in.History.Placement(p.key.String())
}

// completedHere reports whether the history makes configs v a rollback target for placement p:
// a version that completed on p, however long ago; or one that completed on another placement of
// the add-on and that placement has left since (a canary placement added later rolls back with
// the others to a version the add-on ran everywhere before). A version another placement completed
// and still runs, such as a canary's new version, is not: moving p to it is p's upgrade.
func (d *decider) completedHere(p *placementState, v []Config) bool {
	if d.in.History == nil {
		return false
	}
	want := toHistory(v)
	for i := range d.in.History.Placements {
		hp := &d.in.History.Placements[i]
		switch {
		case hp.Placement == p.key.String():
			if hp.Completed(want) {
				return true
			}
		case hp.Completed(want) && !history.SameConfigs(hp.Last().Configs, want):
			return true
		}
	}
	return false
}

// historyKind is the kind (Install, Upgrade, Rollback) the version history recorded for placement
// p's move to v, when v is its latest version; "" when there is none.
func (d *decider) historyKind(p *placementState, v []Config) string {
	if d.in.History == nil {
		return ""
	}
	hp := d.in.History.Placement(p.key.String())
	if hp == nil || len(hp.Versions) == 0 || !history.SameConfigs(hp.Last().Configs, toHistory(v)) {
		return ""
	}
	return hp.Last().Kind
}

// dayTwo reads the day-2 requests that concern placement p before it is evaluated: pause, and a
// new retry request (acted on once per token; failures older than the retry no longer count).
func (d *decider) dayTwo(p *placementState) {
	hp := d.placementHistory(p)
	p.paused = d.requests.IsPaused(canary.PlacementKey(p.key))
	if tok := d.requests.Retry[canary.PlacementKey(p.key)]; tok != "" && (hp == nil || hp.RetryToken != tok) {
		now := d.in.Now
		p.retryToken, p.retriedAt = tok, &now
		d.events = append(d.events, Event{Reason: "RetryStarted", Message: fmt.Sprintf(
			"placement %s: retrying the rollout of %s (annotation %s, %s): failed clusters go again, paced by the rollout strategy",
			p.key, describe(p.desired), operations.RetryAnnotation, d.setBy(operations.RetryAnnotation))})
	} else if hp != nil && hp.RetriedAt != nil {
		p.retriedAt = hp.RetriedAt
	}
}

// setBy says which field manager set day-2 annotation key on the CMA (operations.SetBy: "set by
// addonops-cli"), for the events and messages of the requests: a person asks who paused or
// promoted a rollout. The hub cache keeps those managedFields entries of CMAs only.
func (d *decider) setBy(key string) string {
	return operations.SetBy(d.in.CMA.ManagedFields, key)
}

// abortRequested reports whether the rollout of p's desired version is aborted: the history says
// so for this version, or a new abort request names it.
func (d *decider) abortRequested(p *placementState) bool {
	id := versionID(p.desired)
	hp := d.placementHistory(p)
	if last := hp.Last(); last != nil && last.ID == id && last.Result == history.Aborted {
		p.abortMsg = last.Message
		return true
	}
	if d.requests.Abort[canary.PlacementKey(p.key)] == id && (hp == nil || hp.AbortToken != id) {
		p.abortToken = id
		// Who asked goes into the condition and the version history, not only the event: the history
		// keeps it after the annotation changes hands or goes.
		p.abortMsg = fmt.Sprintf("aborted by a person (annotation %s, %s)", operations.AbortAnnotation, d.setBy(operations.AbortAnnotation))
		return true
	}
	return false
}

// abort returns the clusters of p that moved to its aborted desired version to the last known good
// version, paced by the strategy like a rollback (their MCAs say RollingBack). The placement reports
// Aborting, then Aborted (Degraded) until its desired configs change. With no earlier version that
// completed, nothing moves: the clusters stay where they are.
func (d *decider) abort(p *placementState, why string) {
	p.aborted = true
	if p.abortMsg == "" {
		p.abortMsg = why
	}
	var target []Config
	if lkg := d.placementHistory(p).LastKnownGood(); lkg != nil {
		target = fromHistory(lkg.Configs)
	}
	for _, v := range [][]Config{p.lkg, p.applied} {
		if len(target) == 0 && len(v) > 0 && !Equal(v, p.desired) {
			target = v
		}
	}
	what := fmt.Sprintf("the rollout of %s was %s", versionID(p.desired), p.abortMsg)
	if len(target) == 0 {
		d.holdAll(p)
		p.cond = metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionFalse, Reason: addonstatus.ReasonAborted,
			Message: what + "; no earlier version of this placement completed, so its clusters stay where they are; change the placement's configs to continue"}
		return
	}
	r, ok := d.roll(p, target)
	if !ok {
		return
	}
	p.target, p.lkg = target, target
	if r.complete {
		p.applied = target
	}
	back := fmt.Sprintf("returning its clusters to %s: %s", describe(target), r.counts())
	switch {
	case r.complete:
		p.cond = metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionFalse, Reason: addonstatus.ReasonAborted,
			Message: fmt.Sprintf("%s; %d/%d clusters are back on %s; change the placement's configs (a fix or a revert) to continue", what, r.done, r.total, describe(target))}
	case r.stopped():
		p.cond = metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionFalse, Reason: addonstatus.ReasonAborted,
			Message: fmt.Sprintf("%s; %s stopped on failures", what, back)}
	default:
		p.cond = metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionTrue, Reason: addonstatus.ReasonAborting,
			Message: fmt.Sprintf("%s; %s", what, back)}
	}
}

// autoAbort aborts p's forward rollout by itself when the add-on asks for it (annotation
// addonops.io/auto-abort) and the rollout stopped on maxFailures. It reports whether it did.
func (d *decider) autoAbort(p *placementState, r rollResult) bool {
	if !d.requests.AutoAbort || !r.breach || p.rollback {
		return false
	}
	d.abort(p, fmt.Sprintf("aborted automatically: more clusters failed than maxFailures allows (annotation %s); %s", operations.AutoAbortAnnotation, r.counts()))
	return true
}

// pausedCondition is the progression condition of a paused placement that has not completed.
func (d *decider) pausedCondition(p *placementState, r rollResult) metav1.Condition {
	return metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionFalse, Reason: addonstatus.ReasonPaused,
		Message: fmt.Sprintf("paused (annotation %s): no new cluster starts, clusters in flight finish; %s; resume with `addonops resume %s --placement %s`",
			operations.PauseAnnotation, r.counts(), d.in.CMA.Name, p.key)}
}

// recordHistory advances the version history with what this decision observed of every placement
// it could evaluate (a placement waiting for a missing config or placement records nothing).
func (d *decider) recordHistory(states []*placementState) {
	rec := &history.Record{Addon: d.in.CMA.Name}
	if d.in.History != nil {
		rec.Placements = append(rec.Placements, d.in.History.Placements...)
	}
	for _, p := range states {
		if len(p.desired) == 0 || len(p.problems) > 0 || (p.blocked && !p.aborted) {
			continue
		}
		obs := history.Observation{Desired: toHistory(p.desired), Kind: kindName(d.placementKind(p, p.desired))}
		switch {
		case p.aborted:
			obs.State, obs.Message = history.AbortedState, p.abortMsg
		case p.complete && Equal(p.target, p.desired):
			obs.State = history.Complete
		case p.stopped:
			obs.State, obs.Message = history.Stopped, p.stopMsg
		}
		var prev history.Placement
		idx := -1
		for i := range rec.Placements {
			if rec.Placements[i].Placement == p.key.String() {
				prev, idx = rec.Placements[i], i
			}
		}
		if idx < 0 {
			prev = history.Placement{Placement: p.key.String()}
		}
		next := history.Advance(prev, obs, d.in.Now, d.in.HistoryLimit)
		if p.retryToken != "" {
			next.RetryToken, next.RetriedAt = p.retryToken, p.retriedAt
			if last := next.Last(); last != nil {
				last.Retries++
			}
		}
		if p.abortToken != "" {
			next.AbortToken = p.abortToken
		}
		if last := next.Last(); last != nil {
			if p.cond.Reason == addonstatus.ReasonWaitingForWindow && (p.oldCond == nil || p.oldCond.Reason != addonstatus.ReasonWaitingForWindow) {
				last.WindowWaits++
			}
			if p.windowOverride != "" && next.WindowOverride != p.windowOverride {
				last.WindowOverridden = true
			}
		}
		if p.windowOverride != "" {
			next.WindowOverride = p.windowOverride
		}
		if v := p.verify; v != nil && v.changed {
			if last := next.Last(); last != nil && last.ID == v.id {
				last.Verifications = v.entries
			}
		}
		if c := p.continuous; c != nil && c.changed {
			if last := next.Last(); last != nil && last.ID == c.id {
				last.Continuous = c.entries
			}
		}
		if idx < 0 {
			rec.Placements = append(rec.Placements, next)
		} else {
			rec.Placements[idx] = next
		}
	}
	if len(rec.Placements) > 0 {
		d.history = rec
	}
}

func kindName(k addonstatus.Kind) string {
	return map[addonstatus.Kind]string{addonstatus.Install: "Install", addonstatus.Upgrade: "Upgrade", addonstatus.Rollback: "Rollback"}[k]
}
