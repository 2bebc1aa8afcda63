package rolloutplan

// Verification gates (package verification): after each batch of a placement's rollout, before the
// next batch starts, the batch's clusters are verified with the placement's AnalysisTemplate. The
// runs are I/O (internal/verifyrun); this file decides when a batch needs one (Plan.Verify), and
// what a run's result (Input.Verifications, then the version history) means for the rollout:
// Successful lets the next batch start; Failed fails the batch's clusters (they count toward
// maxFailures, and auto-abort reverts them); Inconclusive holds the placement for a person.
// docs/spec/verification.md states the rules.

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

// VerificationLookup returns the result of a batch's verification run once the run ended (the
// runner keeps them, internal/verifyrun); false while none ended.
type VerificationLookup func(verification.Batch) (verification.Result, bool)

// VerifyRequest asks for a batch's verification run: the runner starts it unless it runs already,
// and takes the decision again when it ends.
type VerifyRequest struct {
	Batch verification.Batch
	Ref   verification.Ref
	// Template is the template the reference resolves to for the batch's placement.
	Template verification.TemplateKey
}

// verifyState is what verification means for one placement's roll toward its desired version.
type verifyState struct {
	ref *verification.Ref
	id  string
	// entries are the version's verification runs as this decision leaves them; changed says this
	// decision changed them (the history records them).
	entries []history.Verification
	changed bool
	// failed maps the clusters a failed run judged to that run; known says the history records the
	// version (failMCA).
	failed map[string]*history.Verification
	known  bool
	// pending are the clusters that finished the version (soak included) and no run judged yet;
	// inFlight says some cluster of the placement has not finished.
	pending  []string
	inFlight bool
	// running is the batch whose run was asked for and has not ended; inconclusive the run
	// that holds the placement until a person acts.
	running      *verification.Batch
	inconclusive *history.Verification
	// recorded is the run this decision recorded; promoted the runs a promote passed in it.
	recorded *history.Verification
	promoted []int
	// settling: the last run covers clusters that finished in the decision's second. Times are
	// whole seconds, so a cluster that starts in that second and finishes in it would read as
	// judged by that run: no cluster starts until the second has passed.
	settling bool
}

// holds reports whether no new cluster may start: a batch waits for its verification, or an
// inconclusive one waits for a person.
func (v *verifyState) holds() bool {
	return v != nil && (len(v.pending) > 0 || v.inconclusive != nil)
}

// holdsPushes reports whether no new cluster may start now: holds, or the last run's second has not
// passed (settling).
func (v *verifyState) holdsPushes() bool {
	return v.holds() || v != nil && v.settling
}

// covering returns the run that judged a cluster that finished at at: the first whose Covers is
// not before it.
func (v *verifyState) covering(at time.Time) *history.Verification {
	return coveringRun(v.entries, at)
}

// parseVerifications reads the add-on's verification references and checks that every placement
// one names is an install placement: a gate meant for a placement that a typo or a rename left
// unnamed must not let its rollout through.
func parseVerifications(annotations map[string]string, install []PlacementKey) (verification.Refs, error) {
	refs, err := verification.Parse(annotations)
	if err != nil {
		return nil, err
	}
	known := map[canary.PlacementKey]bool{}
	for _, k := range install {
		known[canary.PlacementKey(k)] = true
	}
	for _, k := range refs.Placements() {
		if !known[k] {
			return nil, fmt.Errorf("annotation %s: placement %s is not an install placement of the add-on (spec.installStrategy.placements); name one of them, or \"*\" for every placement",
				verification.Annotation, k)
		}
	}
	return refs, nil
}

// invalidVerification is the condition message of every placement while the references do not
// parse.
func invalidVerification(addon string, err error) string {
	return fmt.Sprintf("%v; no batch starts on any placement until it is fixed (fix or remove annotation %s of ClusterManagementAddOn %s; a valid value: %s)",
		err, verification.Annotation, addon, verification.Example)
}

// verifyBatches judges placement p's clusters on their way to target by the version's
// verification runs, before sdk-go picks the next batch: a cluster a failed run judged is Failed in
// statuses (sdk-go counts it toward maxFailures); the clusters that finished and no run judged are
// the batch to verify, once no cluster of the placement is in flight. Nil when no verification
// applies: none is configured for p, p rolls back or aborts (a way back is never held), target is
// not p's desired version (a gated placement's last known good), or the version completed.
func (d *decider) verifyBatches(p *placementState, target []Config, statuses []rollout.ClusterRolloutStatus, soak time.Duration) *verifyState {
	if len(d.verifs) == 0 || p.rollback || p.aborted || len(target) == 0 || !Equal(target, p.desired) {
		return nil
	}
	ref := d.verifs.For(canary.PlacementKey(p.key))
	if ref == nil {
		return nil
	}
	id := versionID(target)
	v := &verifyState{ref: ref, id: id, failed: map[string]*history.Verification{}}
	if last := d.placementHistory(p).Last(); last != nil && last.ID == id {
		if last.Completed != nil {
			return nil
		}
		v.entries = slices.Clone(last.Verifications)
		v.known = true
	}
	// `addonops retry` after a run failed or was inconclusive verifies its clusters again: a
	// template fixed since, or a flaky Prometheus, gets another run (a new batch number).
	for i := range v.entries {
		if e := &v.entries[i]; p.retriedAt != nil && !e.Retried && e.Phase != string(verification.Successful) && !e.Promoted && e.Finished.Before(p.retriedAt) {
			e.Retried, v.changed = true, true
		}
	}
	promote := d.requests.Promote[canary.PlacementKey(p.key)] == id
	for i := range v.entries {
		if e := &v.entries[i]; e.Phase == string(verification.Inconclusive) && !e.Promoted && !e.Retried && promote {
			e.Promoted, v.changed = true, true
			v.promoted = append(v.promoted, e.Batch)
		}
	}
	now := d.in.Now.Time
	var latest time.Time
	fail := func(i int, e *history.Verification) {
		statuses[i].Status = rollout.Failed
		at := e.Finished
		statuses[i].LastTransitionTime = &at
		v.failed[statuses[i].ClusterName] = e
	}
	var judged []int // indexes into statuses of the pending clusters
	for i, st := range statuses {
		switch st.Status {
		case rollout.Progressing:
			v.inFlight = true
		case rollout.Failed:
			// Failed by a run already: its MCA says so (FailVerified); the progression names the run.
			if mca := d.mcas[st.ClusterName]; mca != nil {
				if e := failedRun(mca, v.entries); e != nil {
					v.failed[st.ClusterName] = e
				}
			}
		case rollout.Succeeded:
			at := longAgo.Time
			if st.LastTransitionTime != nil {
				at = st.LastTransitionTime.Time
			}
			if at.Add(soak).After(now) {
				v.inFlight = true // still soaking: its batch has not finished
				continue
			}
			e := v.covering(at)
			switch {
			case e == nil:
				v.pending = append(v.pending, st.ClusterName)
				judged = append(judged, i)
				latest = maxTime(latest, at)
			case e.Phase == string(verification.Failed):
				fail(i, e)
			case e.Phase == string(verification.Inconclusive) && !e.Promoted:
				v.inconclusive = e
			}
		}
	}
	defer func() {
		if n := len(v.entries); n > 0 && !v.entries[n-1].Covers.Time.Before(now) && len(v.pending) == 0 && v.inconclusive == nil {
			v.settling = true
			next := v.entries[n-1].Covers.Add(time.Second).Sub(now)
			d.noteRecheck(&next)
		}
	}()
	if len(v.pending) == 0 || v.inFlight || v.inconclusive != nil {
		return v
	}
	next := 1
	if n := len(v.entries); n > 0 {
		next = v.entries[n-1].Batch + 1
	}
	b := verification.NewBatch(d.in.CMA.Name, p.key.String(), id, next, v.pending)
	var res verification.Result
	ok := false
	if d.in.Verifications != nil {
		res, ok = d.in.Verifications(b)
	}
	if !ok {
		v.running = &b
		d.verify = append(d.verify, VerifyRequest{Batch: b, Ref: *ref, Template: ref.TemplateKey(canary.PlacementKey(p.key))})
		return v
	}
	e := history.Verification{Batch: b.Index, Clusters: len(b.Clusters), Sample: b.Clusters[:min(len(b.Clusters), history.MaxSample)],
		Covers: metav1.NewTime(latest), Template: ref.TemplateKey(canary.PlacementKey(p.key)).String(), Phase: string(res.Phase), Message: res.Message,
		Started: metav1.NewTime(res.Started.UTC().Truncate(time.Second)), Finished: metav1.NewTime(res.Finished.UTC().Truncate(time.Second))}
	if e.Phase == string(verification.Inconclusive) && promote {
		e.Promoted = true
	}
	v.entries = history.CompactVerifications(append(v.entries, e), history.MaxVerifications)
	v.changed = true
	last := &e // the run itself, for the events and the condition, whatever compaction merged it with
	v.recorded = last
	v.pending = nil
	switch {
	case e.Phase == string(verification.Failed):
		for _, i := range judged {
			fail(i, last)
		}
	case e.Phase == string(verification.Inconclusive) && !e.Promoted:
		v.inconclusive = last
	}
	return v
}

// failedBy returns the message of the failed run that judged cluster c.
func (v *verifyState) failedBy(c string) (string, bool) {
	if v == nil {
		return "", false
	}
	e, ok := v.failed[c]
	if !ok {
		return "", false
	}
	return e.Message, true
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// verifyCondition turns the condition of a placement whose next batch waits for a verification
// into Verifying (Progressing=True: the run's end decides again), or VerificationInconclusive
// (Progressing=False: a person promotes or aborts). A condition that says the rollout stopped,
// ended or waits for something else stays.
func (d *decider) verifyCondition(p *placementState) {
	v := p.verify
	if v == nil || p.blocked || p.aborted || p.cond.Status != metav1.ConditionTrue || p.windowWait != nil {
		return
	}
	counts := p.cond.Message
	if _, rest, ok := strings.Cut(counts, "... "); ok {
		counts = rest
	}
	tmpl := v.ref.TemplateKey(canary.PlacementKey(p.key)).String()
	switch {
	case v.inconclusive != nil:
		e := v.inconclusive
		p.cond = metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionFalse, Reason: addonstatus.ReasonVerificationInconclusive,
			Message: fmt.Sprintf("the verification of batch %d (%d clusters: %s) with %s was inconclusive: %s; no new cluster starts, clusters in flight finish; %s; to pass it: `addonops promote %s --placement %s`; to verify it again once its cause is fixed: `addonops retry %s --placement %s`; to revert the version: `addonops abort %s --placement %s`",
				e.Batch, e.Clusters, listed(e.Sample), tmpl, e.Message, counts, d.in.CMA.Name, p.key, d.in.CMA.Name, p.key, d.in.CMA.Name, p.key)}
		p.problem = true
	case v.running != nil:
		p.cond = metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionTrue, Reason: addonstatus.ReasonVerifying,
			Message: fmt.Sprintf("verifying batch %d of version %s (%d clusters: %s) with %s; no new cluster starts until it passes; %s",
				v.running.Index, v.id, len(v.running.Clusters), listed(v.running.Clusters), tmpl, counts)}
	}
}

// verifyEvents records what this decision learned of placement p's verification: a run asked for
// (once: when the placement starts verifying), a run's result (once: the history remembers it), a
// promote that passed inconclusive runs.
func (d *decider) verifyEvents(p *placementState) {
	v := p.verify
	if v == nil {
		return
	}
	tmpl := v.ref.TemplateKey(canary.PlacementKey(p.key)).String()
	if v.running != nil && (p.oldCond == nil || p.oldCond.Reason != addonstatus.ReasonVerifying) {
		d.events = append(d.events, Event{Reason: "VerificationStarted", Message: fmt.Sprintf("placement %s: verifying batch %d of version %s (%d clusters: %s) with %s",
			p.key, v.running.Index, v.id, len(v.running.Clusters), listed(v.running.Clusters), tmpl)})
	}
	if e := v.recorded; e != nil {
		what := fmt.Sprintf("placement %s: the verification of batch %d of version %s (%d clusters: %s) with %s", p.key, e.Batch, v.id, e.Clusters, listed(e.Sample), tmpl)
		switch e.Phase {
		case string(verification.Successful):
			d.events = append(d.events, Event{Reason: "VerificationPassed", Message: fmt.Sprintf("%s passed: %s", what, e.Message)})
		case string(verification.Failed):
			d.events = append(d.events, Event{Warning: true, Reason: "VerificationFailed", Message: fmt.Sprintf("%s failed: %s; its clusters count as failed", what, e.Message)})
		default:
			d.events = append(d.events, Event{Warning: true, Reason: "VerificationInconclusive", Message: fmt.Sprintf("%s was inconclusive: %s", what, e.Message)})
		}
	}
	if len(v.promoted) > 0 {
		d.events = append(d.events, Event{Reason: "VerificationPromoted", Message: fmt.Sprintf("placement %s: a person passed the inconclusive verification of batch(es) %v of version %s (annotation %s, %s)",
			p.key, v.promoted, v.id, operations.PromoteAnnotation, d.setBy(operations.PromoteAnnotation))})
	}
}
