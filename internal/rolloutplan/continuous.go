package rolloutplan

// Continuous verification (verification.Continuous; Argo Rollouts' background analysis, for a
// placement): while a placement rolls out its desired version, from its first cluster told the
// version until the version completes, the placement's continuous template runs over and over over
// every cluster told the version so far, one run at a time, the entry's interval after the previous
// run ended. decideContinuous is the pure decision; continuousVerify applies it to a roll:
// Successful is recorded and the next run waits for the interval; Failed fails every cluster told
// the version (they count toward maxFailures, auto-abort reverts them) and no further run starts;
// Inconclusive holds the placement (VerificationInconclusive) until `addonops promote` passes it,
// `addonops retry` runs again or `addonops abort` reverts the version. The runs stop when the
// version completes, is aborted or rolled back, and no new run starts while the placement is
// paused. docs/spec/verification.md states the rules.

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rollout "open-cluster-management.io/sdk-go/pkg/apis/cluster/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/operations"
	"github.com/addonops/addonops/internal/verification"
)

// continuousInput is what one decision knows of a placement's continuous verification.
type continuousInput struct {
	now time.Time
	// active: the placement rolls out its desired version, which has not completed (not a way
	// back, not aborted).
	active bool
	// paused: no new run starts (`addonops pause`); a run that ends is still recorded.
	paused bool
	// every is the time from a run's end to the next run's start.
	every time.Duration
	// told are the clusters told the version so far, sorted.
	told []string
	// entries are the version's continuous runs so far (the version history), Batch numbering them.
	entries []history.Verification
	// promote: a person passed the version's inconclusive runs (`addonops promote`).
	promote bool
	// retriedAt: runs that failed or were inconclusive before it no longer count (`addonops retry`).
	retriedAt *metav1.Time
	// batch returns run number run over told.
	batch func(run int, told []string) verification.Batch
	// lookup returns a run's result once it ended.
	lookup VerificationLookup
	// template names the template, for the history.
	template string
}

// continuousState is what the decision makes of a placement's continuous verification.
type continuousState struct {
	ref      verification.Ref
	template verification.TemplateKey
	id       string
	every    time.Duration
	told     []string
	// known says the history records the version (failMCA).
	known bool
	// entries are the runs as this decision leaves them; changed says it changed them.
	entries []history.Verification
	changed bool
	// request is the run to ask the runner for (it starts it unless it runs already).
	request *verification.Batch
	// recorded is the run whose result this decision recorded; promoted the runs a promote passed.
	recorded *history.Verification
	promoted []int
	// failed is the failed run that fails every cluster told the version; inconclusive the run
	// that holds the placement for a person.
	failed       *history.Verification
	inconclusive *history.Verification
	// wait is how long until the next run may start (0: none waits).
	wait time.Duration
}

// decideContinuous decides one placement's continuous verification; nil when none is active.
func decideContinuous(in continuousInput) *continuousState {
	if !in.active {
		return nil
	}
	s := &continuousState{entries: slices.Clone(in.entries), every: in.every, told: in.told}
	for i := range s.entries {
		if e := &s.entries[i]; in.retriedAt != nil && !e.Retried && e.Phase != string(verification.Successful) && !e.Promoted && e.Finished.Before(in.retriedAt) {
			e.Retried, s.changed = true, true
		}
	}
	for i := range s.entries {
		if e := &s.entries[i]; in.promote && e.Phase == string(verification.Inconclusive) && !e.Promoted && !e.Retried {
			e.Promoted, s.changed = true, true
			s.promoted = append(s.promoted, e.Batch)
		}
	}
	s.standing()
	if len(in.told) == 0 || s.failed != nil || s.inconclusive != nil {
		// Not started yet; or the version failed (no run can undo it: retry or abort); or a
		// person decides.
		return s
	}
	next := 1
	var last *history.Verification
	if n := len(s.entries); n > 0 {
		last = &s.entries[n-1]
		next = last.Batch + 1
	}
	b := in.batch(next, in.told)
	var res verification.Result
	ok := false
	if in.lookup != nil {
		res, ok = in.lookup(b)
	}
	if ok {
		at := metav1.NewTime(res.Finished.UTC().Truncate(time.Second))
		e := history.Verification{Batch: next, Clusters: len(in.told), Sample: in.told[:min(len(in.told), history.MaxSample)], Covers: at,
			Template: in.template, Phase: string(res.Phase), Message: res.Message,
			Started: metav1.NewTime(res.Started.UTC().Truncate(time.Second)), Finished: at}
		if e.Phase == string(verification.Inconclusive) && in.promote {
			e.Promoted = true
		}
		s.entries = history.CompactVerifications(append(s.entries, e), history.MaxVerifications)
		s.changed = true
		s.recorded = &e
		switch {
		case e.Phase == string(verification.Failed):
			s.failed = &e
		case e.Phase == string(verification.Inconclusive) && !e.Promoted:
			s.inconclusive = &e
		default:
			s.wait = in.every
		}
		return s
	}
	if last != nil {
		if due := last.Finished.Add(in.every); due.After(in.now) {
			s.wait = due.Sub(in.now)
			return s
		}
	}
	if in.paused {
		return s
	}
	s.request = &b
	return s
}

// standing finds the run that judges the version now: the last failed run not retried, else the
// last inconclusive run neither promoted nor retried.
func (s *continuousState) standing() {
	for i := range s.entries {
		e := &s.entries[i]
		switch {
		case e.Retried:
		case e.Phase == string(verification.Failed):
			s.failed = e
		case e.Phase == string(verification.Inconclusive) && !e.Promoted:
			s.inconclusive = e
		}
	}
}

// holds reports whether no new cluster may start: an inconclusive run waits for a person.
func (s *continuousState) holds() bool {
	return s != nil && s.inconclusive != nil
}

// failedBy returns the message of the failed run that fails cluster c: every cluster told the
// version.
func (s *continuousState) failedBy(c string) (string, bool) {
	if s == nil || s.failed == nil {
		return "", false
	}
	if _, ok := slices.BinarySearch(s.told, c); !ok {
		return "", false
	}
	return fmt.Sprintf("run %d of %s: %s", s.failed.Batch, s.template, s.failed.Message), true
}

// told reports whether a cluster of this status was told the version: it runs, applies, soaks,
// failed or timed out on it.
func told(st rollout.RolloutStatus) bool {
	switch st {
	case rollout.Progressing, rollout.Succeeded, rollout.Failed, rollout.TimeOut:
		return true
	}
	return false
}

// continuousVerify applies placement p's continuous verification to its roll toward target: a
// failed run turns every cluster told the version Failed in statuses (sdk-go counts them toward
// maxFailures); the run due is asked for. Nil when none applies: no continuous template for p, p
// rolls back or aborts, target is not p's desired version, or the version completed.
func (d *decider) continuousVerify(p *placementState, target []Config, statuses []rollout.ClusterRolloutStatus) *continuousState {
	if len(d.verifs) == 0 || p.rollback || p.aborted || len(target) == 0 || !Equal(target, p.desired) {
		return nil
	}
	pk := canary.PlacementKey(p.key)
	ref := d.verifs.For(pk)
	if ref == nil || ref.Continuous == nil {
		return nil
	}
	id := versionID(target)
	var entries []history.Verification
	known := false
	if last := d.placementHistory(p).Last(); last != nil && last.ID == id {
		if last.Completed != nil {
			return nil
		}
		entries = last.Continuous
		known = true
	}
	var toldNames []string
	var toldIdx []int
	for i, st := range statuses {
		if told(st.Status) {
			toldNames = append(toldNames, st.ClusterName)
			toldIdx = append(toldIdx, i)
		}
	}
	slices.Sort(toldNames)
	cref := ref.Continuous.Ref(*ref)
	tk := cref.TemplateKey(pk)
	s := decideContinuous(continuousInput{
		now: d.in.Now.Time, active: true, paused: p.paused, every: ref.Continuous.Every(), told: toldNames, entries: entries,
		promote: d.requests.Promote[pk] == id, retriedAt: p.retriedAt,
		batch: func(run int, told []string) verification.Batch {
			return verification.NewContinuousBatch(d.in.CMA.Name, p.key.String(), id, run, told)
		},
		lookup: func(b verification.Batch) (verification.Result, bool) {
			if d.in.Verifications == nil {
				return verification.Result{}, false
			}
			return d.in.Verifications(b)
		},
		template: tk.String(),
	})
	s.ref, s.template, s.id, s.known = cref, tk, id, known
	if s.request != nil {
		d.verify = append(d.verify, VerifyRequest{Batch: *s.request, Ref: cref, Template: tk})
	}
	d.noteRecheck(&s.wait)
	if e := s.failed; e != nil {
		at := e.Finished
		for _, i := range toldIdx {
			statuses[i].Status = rollout.Failed
			statuses[i].LastTransitionTime = &at
		}
	}
	return s
}

// continuousCondition holds placement p for a person while a continuous run is inconclusive:
// VerificationInconclusive (Progressing=False), as a batch's inconclusive run does. A condition that
// says the rollout stopped, ended or waits for something else stays.
func (d *decider) continuousCondition(p *placementState) {
	s := p.continuous
	if s == nil || s.inconclusive == nil || p.blocked || p.aborted || p.cond.Status != metav1.ConditionTrue || p.windowWait != nil {
		return
	}
	counts := p.cond.Message
	if _, rest, ok := strings.Cut(counts, "... "); ok {
		counts = rest
	}
	e := s.inconclusive
	p.cond = metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionFalse, Reason: addonstatus.ReasonVerificationInconclusive,
		Message: fmt.Sprintf("continuous verification run %d of version %s (%d clusters told it: %s) with %s was inconclusive: %s; no new cluster starts, clusters in flight finish; %s; to pass it: `addonops promote %s --placement %s`; to verify again once its cause is fixed: `addonops retry %s --placement %s`; to revert the version: `addonops abort %s --placement %s`",
			e.Batch, s.id, e.Clusters, listed(e.Sample), s.template, e.Message, counts, d.in.CMA.Name, p.key, d.in.CMA.Name, p.key, d.in.CMA.Name, p.key)}
	p.problem = true
}

// continuousEvents records a continuous run that failed or was inconclusive (once: the history
// remembers it) with the batch gate's reasons, and a promote that passed inconclusive runs. A
// passing run has no event: one every interval would bury the others; the history counts them.
func (d *decider) continuousEvents(p *placementState) {
	s := p.continuous
	if s == nil {
		return
	}
	if e := s.recorded; e != nil {
		what := fmt.Sprintf("placement %s: continuous verification run %d of version %s (%d clusters told it: %s) with %s", p.key, e.Batch, s.id, e.Clusters, listed(e.Sample), s.template)
		switch e.Phase {
		case string(verification.Failed):
			d.events = append(d.events, Event{Warning: true, Reason: "VerificationFailed", Message: fmt.Sprintf("%s failed: %s; every cluster told the version counts as failed", what, e.Message)})
		case string(verification.Inconclusive):
			d.events = append(d.events, Event{Warning: true, Reason: "VerificationInconclusive", Message: fmt.Sprintf("%s was inconclusive: %s", what, e.Message)})
		}
	}
	if len(s.promoted) > 0 {
		d.events = append(d.events, Event{Reason: "VerificationPromoted", Message: fmt.Sprintf("placement %s: a person passed the inconclusive continuous verification run(s) %v of version %s (annotation %s, %s)",
			p.key, s.promoted, s.id, operations.PromoteAnnotation, d.setBy(operations.PromoteAnnotation))})
	}
}
