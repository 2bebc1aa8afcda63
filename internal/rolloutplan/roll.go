package rolloutplan

// One placement's rollout with sdk-go's RolloutHandler, and its result.

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/addonops/addonops/internal/addonstatus"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	rollout "open-cluster-management.io/sdk-go/pkg/apis/cluster/v1alpha1"
)

// rollResult sums up one placement's rollout.
type rollResult struct {
	total, done, inProgress, failed, timedOut int
	held                                      int // clusters whose turn came while paused
	windowHeld                                int // clusters whose turn came while a maintenance window is closed
	verifyHeld                                int // clusters whose turn came while a batch's verification holds the placement
	// verifying: a finished batch waits for its verification (or an inconclusive one for a
	// person), so the rollout is neither complete nor stopped.
	verifying bool
	// waiting counts the clusters whose turn has not come (sdk-go left them out of the batch).
	waiting int
	// holding counts the failed clusters sdk-go keeps in the batch: a failed cluster keeps its place
	// (a slot of maxConcurrency) until it recovers or its progressDeadline passes. deadline is that
	// progressDeadline as written, "" for None: a failed cluster then never frees its place by itself.
	holding  int
	deadline string
	// breach: sdk-go found more failed or timed-out clusters than maxFailures allows.
	breach   bool
	complete bool
	// failures, timeouts and blocked name the clusters that failed, timed out or cannot be
	// configured, with the cause: "cluster7 (upgrade failed: ...)".
	failures, timeouts, blocked []string
	moved                       []string // clusters moved to the target in this decision
}

// stopped reports whether the rollout stopped on failures: sdk-go found more failures (failed and
// timed-out clusters) than maxFailures allows, or, within maxFailures, some cluster failed or timed
// out and nothing else will happen by itself: no cluster in progress, none whose turn came while
// paused (a resume moves it) or while a maintenance window is closed (its opening does), and none waiting for a failed cluster's place that its
// progressDeadline will free (awaitsDeadline). A failure within maxFailures alone never stops it.
func (r rollResult) stopped() bool {
	return !r.complete && (r.breach || r.failed+r.timedOut > 0 && r.inProgress == 0 && r.held == 0 && r.windowHeld == 0 && !r.verifying && !r.awaitsDeadline())
}

// awaitsDeadline reports whether clusters wait for their turn behind failed clusters that keep their
// places in the batch until their progressDeadline passes: the rollout goes on then.
func (r rollResult) awaitsDeadline() bool {
	return r.waiting > 0 && r.holding > 0 && r.deadline != ""
}

// stalled reports whether clusters wait for their turn behind failed clusters that keep their
// places for ever (no progressDeadline): sdk-go never starts them, whatever maxFailures says.
func (r rollResult) stalled() bool {
	return r.waiting > 0 && r.holding > 0 && r.deadline == ""
}

// notConfigurable reports whether the rollout cannot go on by itself because the only clusters
// left cannot be configured: none in progress, failed or timed out, and every cluster not done has
// an MCA that cannot be configured (clusters still without MCA will get one, so they keep it busy).
// Its reason, ClustersNotConfigurable, names no kind of change (addonstatus.KindOfReason): a
// decision that reads the kind from the previous reason (isRollback, placementKind) sees none.
func (r rollResult) notConfigurable() bool {
	return !r.complete && len(r.blocked) > 0 && r.inProgress == 0 && r.failed+r.timedOut == 0 && r.done+len(r.blocked) == r.total
}

// maxListed bounds the clusters a progression message names per list.
const maxListed = 5

func listed(items []string) string {
	if len(items) <= maxListed {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:maxListed], ", ") + fmt.Sprintf(" and %d more", len(items)-maxListed)
}

// counts is the progress line of a progression message, with the clusters that failed, timed out
// or cannot be configured named with their causes.
func (r rollResult) counts() string {
	out := fmt.Sprintf("%d/%d clusters done, %d in progress, %d failed, %d timed out", r.done, r.total, r.inProgress, r.failed, r.timedOut)
	if len(r.blocked) > 0 {
		out += fmt.Sprintf(", %d cannot be configured", len(r.blocked))
	}
	if len(r.failures) > 0 {
		out += "; failed: " + listed(r.failures)
	}
	if len(r.timeouts) > 0 {
		out += "; timed out: " + listed(r.timeouts)
	}
	if len(r.blocked) > 0 {
		out += "; cannot be configured: " + listed(r.blocked)
	}
	return out
}

// condition is the progression's Progressing condition for r; note is appended to progress
// messages.
func (r rollResult) condition(k addonstatus.Kind, note string) metav1.Condition {
	noun := k.Noun()
	verb := map[addonstatus.Kind]string{addonstatus.Install: "installing", addonstatus.Upgrade: "upgrading", addonstatus.Rollback: "rolling back"}[k]
	switch {
	case r.complete:
		return metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionFalse, Reason: k.DoneReason(),
			Message: fmt.Sprintf("%d/%d %s completed with no errors.", r.done, r.total, noun)}
	case r.breach:
		return metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionFalse, Reason: k.FailedReason(),
			Message: fmt.Sprintf("%s stopped: more clusters failed than maxFailures allows; %s%s", noun, r.counts(), note)}
	case r.stopped() && r.stalled():
		return metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionFalse, Reason: k.FailedReason(),
			Message: fmt.Sprintf("%s stopped: the failed clusters keep their places in the batch (progressDeadline None), so no other cluster starts; %s%s", noun, r.counts(), note)}
	case r.stopped():
		// Within maxFailures, but every cluster left has finished: the version does not run
		// everywhere, and nothing will change that by itself.
		return metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionFalse, Reason: k.FailedReason(),
			Message: fmt.Sprintf("%s failed: %s%s", noun, r.counts(), note)}
	case r.notConfigurable():
		return metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionFalse, Reason: addonstatus.ReasonClustersNotConfigurable,
			Message: fmt.Sprintf("%s cannot complete: the clusters left cannot be configured; %s%s", noun, r.counts(), note)}
	case r.total == 0:
		return metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionTrue, Reason: k.BusyReason(),
			Message: fmt.Sprintf("%s... no cluster selected yet%s", verb, note)}
	}
	if r.inProgress == 0 && r.awaitsDeadline() {
		note = fmt.Sprintf("; the next clusters start when the progressDeadline (%s) of the failed clusters holding their places in the batch passes%s", r.deadline, note)
	}
	return metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionTrue, Reason: k.BusyReason(),
		Message: fmt.Sprintf("%s... %s%s", verb, r.counts(), note)}
}

// DefaultMaxPushes is the default of Input.MaxPushes, the bound on how many clusters one decision
// moves to a new version; the clusters of the batch past it are moved by the next decision, taken
// at once (PushRecheck). A decision's moves are written before the add-on's next decision is taken, at the API server's pace: with strategy
// All at 5,000 clusters that was tens of seconds in which a pause or an abort (a person's, or the
// automatic one) could not stop the rest of the batch. Bounded, the next decision comes within a
// few seconds and stops what it must. Writes per cluster stay as they are (a deferred cluster is
// not written until it moves), and so does the pace (the API server takes the writes no faster).
// The deferred clusters count as in progress: they are in the batch.
const DefaultMaxPushes = 500

// PushRecheck is how soon the next decision moves the clusters deferred by Input.MaxPushes.
const PushRecheck = 10 * time.Millisecond

// clusterTarget is the workload sdk-go's RolloutHandler is instantiated with: an MCA and the
// configs it should run.
type clusterTarget struct {
	mca    *addonv1alpha1.ManagedClusterAddOn
	target []Config
}

// clusterRolloutStatus is the ClusterRolloutStatusFunc built from MCA status (RolloutStatus).
var clusterRolloutStatus rollout.ClusterRolloutStatusFunc[clusterTarget] = func(cluster string, w clusterTarget) (rollout.ClusterRolloutStatus, error) {
	return RolloutStatus(cluster, w.mca, w.target), nil
}

// cause is what an MCA's Progressing condition says went wrong, for progression messages.
func cause(st addonv1alpha1.ManagedClusterAddOnStatus) string {
	c := meta.FindStatusCondition(st.Conditions, addonstatus.ConditionProgressing)
	if c == nil {
		return "no Progressing condition"
	}
	msg := c.Message
	if len(msg) > 160 {
		// At a word boundary: a cut word reads as a different word.
		cut := strings.LastIndex(msg[:157], " ")
		if cut < 100 {
			cut = 157
		}
		msg = msg[:cut] + " ..."
	}
	return msg
}

// roll runs sdk-go's rollout for placement p towards target and records the MCA updates. ok is false
// when the rollout strategy is invalid (the placement then waits, with a condition saying why).
func (d *decider) roll(p *placementState, target []Config) (rollResult, bool) {
	// Nothing moves on a Placement or a rollout strategy the controller cannot trust (raw.go).
	if why := d.undecodable(p.placement); why != "" {
		p.wait(addonstatus.ReasonUndecodable, fmt.Sprintf("placement %s: %s; its clusters keep their configs until it is fixed", p.key, why))
		return rollResult{}, false
	}
	if msg := d.invalidStrategy(p); msg != "" {
		p.wait(addonstatus.ReasonInvalidRolloutStrategy, msg)
		return rollResult{}, false
	}
	handler, err := rollout.NewRolloutHandler(p.tracker, clusterRolloutStatus)
	if err != nil {
		p.wait(addonstatus.ReasonPlacementDecisionInvalid, err.Error())
		return rollResult{}, false
	}
	clusters := sets.List(p.tracker.ExistingClusterGroupsBesides().GetClusters())
	// Sized once: a decision runs over every cluster, back to back while events arrive, and growing
	// these by doubling was a tenth of all the controller allocated at 5,000 clusters.
	targets := make(map[string]clusterTarget, len(p.owned))
	statuses := make([]rollout.ClusterRolloutStatus, 0, len(clusters))
	r := rollResult{total: len(p.owned)}
	for _, c := range clusters {
		mca := d.mcas[c]
		if d.ownerOf(c) != p || mca == nil {
			// Not this placement's to move (owned by another placement) or no MCA yet: Skip keeps
			// it out of the batch, so it never takes a slot of maxConcurrency.
			statuses = append(statuses, rollout.ClusterRolloutStatus{ClusterName: c, Status: rollout.Skip})
			continue
		}
		t, b := d.mcaTarget(target, mca)
		if b != nil {
			d.block(c, mca, b)
			r.blocked = append(r.blocked, fmt.Sprintf("%s (%s)", c, b.message))
			statuses = append(statuses, rollout.ClusterRolloutStatus{ClusterName: c, Status: rollout.Skip})
			continue
		}
		w := clusterTarget{mca: mca, target: t}
		st, err := clusterRolloutStatus(c, w)
		if err != nil {
			statuses = append(statuses, rollout.ClusterRolloutStatus{ClusterName: c, Status: rollout.Skip})
			continue
		}
		targets[c] = w
		statuses = append(statuses, st)
	}
	strategy := effectiveStrategy(p.spec.RolloutStrategy, p.placement)
	soak := minSuccessTime(strategy)
	deadline := unhealthyDeadline(strategy)
	retryFailures(statuses, p.retriedAt, deadline)
	// Continuous verification first: the clusters a failed run fails are no batch to verify.
	cv := d.continuousVerify(p, target, statuses)
	if cv != nil {
		p.continuous = cv
	}
	vs := d.verifyBatches(p, target, statuses, soak)
	if vs != nil {
		p.verify = vs
	}
	_, result, err := handler.GetRolloutCluster(strategy, statuses)
	if err != nil {
		p.wait(addonstatus.ReasonInvalidRolloutStrategy, fmt.Sprintf("rollout strategy of placement %s: %v", p.key, err))
		return rollResult{}, false
	}
	d.noteRecheck(result.RecheckAfter)
	result, recheck := pastTheCut(strategy, len(clusters), result, statuses, soak)
	d.noteRecheck(recheck)
	r.breach = result.MaxFailureBreach

	inRollout := make(map[string]rollout.RolloutStatus, len(result.ClustersToRollout))
	for _, s := range result.ClustersToRollout {
		inRollout[s.ClusterName] = s.Status
	}
	r.deadline = progressDeadline(strategy)
	closed, wait, override := d.windowClosed(p)
	timedOut := sets.New[string]()
	for _, s := range result.ClustersTimeOut {
		timedOut.Insert(s.ClusterName)
	}
	for _, st := range statuses {
		w, ok := targets[st.ClusterName]
		if !ok {
			continue
		}
		c := st.ClusterName
		_, rolling := inRollout[c]
		switch {
		case st.Status == rollout.ToApply && rolling && p.paused && !p.aborted:
			// Paused: its turn came, but no new cluster starts.
			r.held++
			if !IsConfigured(w.mca, false) {
				d.updates[c] = Hold(w.mca, d.in.Now)
			}
		case st.Status == rollout.ToApply && rolling && closed:
			// A maintenance window is closed: its turn came, but no new cluster starts.
			r.windowHeld++
			if !IsConfigured(w.mca, false) {
				d.updates[c] = Hold(w.mca, d.in.Now)
			}
		case st.Status == rollout.ToApply && rolling && (vs.holdsPushes() || cv.holds()):
			// A finished batch waits for its verification: its turn came, but no new cluster starts.
			r.verifyHeld++
			if !IsConfigured(w.mca, false) {
				d.updates[c] = Hold(w.mca, d.in.Now)
			}
		case st.Status == rollout.ToApply && rolling && d.pushed >= cmp.Or(d.in.MaxPushes, DefaultMaxPushes):
			// Its turn came, but this decision already moves MaxPushes clusters: the next one moves it.
			r.inProgress++
			recheck := PushRecheck
			d.noteRecheck(&recheck)
		case st.Status == rollout.ToApply && rolling:
			d.pushed++
			pushed := Push(w.mca, w.target, AddonWorks(w.mca.Name, d.works(c)), d.mcaKind(p, w.mca), d.health, d.in.Now)
			d.updates[c] = pushed
			r.moved = append(r.moved, c)
			// A cluster that already runs target (a rollback to the version it kept) is done now, unless it must soak,
			// or a verification must judge it first (a retried cluster that a failed run judged runs the version
			// already): the next decision finds it finished and no run judged, a batch to verify.
			if soak == 0 && vs == nil && addonstatus.Applied(&addonv1alpha1.ManagedClusterAddOn{Status: pushed}) {
				r.done++
			} else {
				r.inProgress++
			}
		case st.Status == rollout.ToApply:
			r.waiting++
			if !IsConfigured(w.mca, false) {
				d.updates[c] = Hold(w.mca, d.in.Now)
			}
		default:
			cur := w.mca
			if !IsConfigured(w.mca, true) {
				d.updates[c] = Keep(w.mca, d.in.Now)
				cur = &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: w.mca.ObjectMeta, Spec: w.mca.Spec, Status: d.updates[c]}
			}
			status, failedNow := st.Status, false
			if status == rollout.Progressing && (rolling || timedOut.Has(c)) {
				// A cluster whose works are applied but whose add-on stays unhealthy fails.
				failedSt, failed, after := FailUnhealthy(cur, AddonWorks(cur.Name, d.works(c)), d.health.Checked, deadline, d.in.Now)
				d.noteRecheck(&after)
				if failed {
					d.updates[c] = failedSt
					cur = &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: w.mca.ObjectMeta, Spec: w.mca.Spec, Status: failedSt}
					status, failedNow = rollout.Failed, true
				}
			}
			if status == rollout.Failed {
				// Failed by its batch's verification: its MCA says so too, as a failed cluster's
				// does (mcastatus_verify.go).
				if failedSt, ok := vs.failMCA(c, cur, p.key); ok {
					d.updates[c] = failedSt
				} else if failedSt, ok := cv.failMCA(c, cur, p.key); ok {
					// Failed by the placement's continuous verification: its MCA says so once the run
					// judged it (mcastatus_continuous.go).
					d.updates[c] = failedSt
				}
			}
			switch {
			case timedOut.Has(c) && !failedNow:
				r.timedOut++
				why := cause(cur.Status)
				if msg, ok := vs.failedBy(c); ok {
					why = "verification failed: " + msg
				}
				r.timeouts = append(r.timeouts, fmt.Sprintf("%s (%s)", c, why))
			case status == rollout.Failed:
				r.failed++
				why := cause(cur.Status)
				if msg, ok := vs.failedBy(c); ok {
					why = "verification failed: " + msg
				} else if msg, ok := cv.failedBy(c); ok {
					why = "continuous verification failed: " + msg
				}
				r.failures = append(r.failures, fmt.Sprintf("%s (%s)", c, why))
				if rolling {
					r.holding++
				}
			case status == rollout.Succeeded && !rolling:
				r.done++
			case rolling:
				r.inProgress++
			}
		}
	}
	r.verifying = vs.holds() || vs != nil && vs.running != nil || cv.holds()
	r.complete = r.total > 0 && r.done == r.total && !r.verifying
	p.windowWait, p.windowOverride = nil, ""
	if r.windowHeld > 0 {
		p.windowWait = wait
	}
	if override != "" && len(r.moved) > 0 {
		p.windowOverride = override
	}
	if len(r.moved) > 0 {
		d.events = append(d.events, Event{Reason: "BatchStarted", Message: fmt.Sprintf("placement %s: moving %d cluster(s) to %s: %s", p.key, len(r.moved), describe(target), listed(r.moved))})
	}
	return r, true
}

// retryFailures turns the clusters that failed before a retry (addonops retry at retriedAt) back
// into clusters to apply, so sdk-go schedules them again in batches, paced by the strategy, and
// their old failures no longer count toward maxFailures. Clusters still in progress that had
// already timed out then are retried too. A failure after the retry counts as usual.
func retryFailures(statuses []rollout.ClusterRolloutStatus, retriedAt *metav1.Time, deadline time.Duration) {
	if retriedAt == nil {
		return
	}
	for i, s := range statuses {
		if s.LastTransitionTime == nil || !s.LastTransitionTime.Before(retriedAt) {
			continue
		}
		timedOut := s.Status == rollout.Progressing && s.LastTransitionTime.Add(deadline).Before(retriedAt.Time)
		if s.Status == rollout.Failed || timedOut {
			statuses[i].Status, statuses[i].LastTransitionTime = rollout.ToApply, nil
		}
	}
}
