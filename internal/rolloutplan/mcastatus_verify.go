package rolloutplan

// A failed verification on the MCA (docs/spec/verification.md#failed-fails-the-batchs-clusters): a
// cluster whose batch a failed run judged is failed, and its MCA says so, as any failed cluster's
// does: Progressing=False with the failed reason of its change (UpgradeFailed, InstallFailed for an
// install) and a message naming the run. The rollout's decision writes it when the run's verdict
// is recorded (FailVerified); the progress tracker, which takes no decision, keeps it as long as
// the version history says a failed run judged the cluster (Track), and otherwise recomputes the
// MCA from its works as usual. The verdict is always the history's (what the controller recorded),
// never the MCA's own word: a cluster that rewrites its MCA status cannot make itself judged or
// passed.

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/verification"
)

// finishedAt returns when mca finished its desired configs, as the verification runs judge it: the
// start of its health soak once it passed it (the HealthSoak condition Soaked, which is what
// RolloutStatus counts minSuccessTime from), with every desired config applied. A failed
// verification leaves both as they were, so the time survives the MCA's failure. ok is false for
// an MCA that did not finish its configs through a soak this controller watched.
func finishedAt(mca *addonv1alpha1.ManagedClusterAddOn) (time.Time, bool) {
	refs := mca.Status.ConfigReferences
	if len(refs) == 0 {
		return time.Time{}, false // a version without configs is never verified
	}
	for _, r := range refs {
		if r.DesiredConfig == nil || r.LastAppliedConfig == nil || *r.DesiredConfig != *r.LastAppliedConfig {
			return time.Time{}, false
		}
	}
	hs := meta.FindStatusCondition(mca.Status.Conditions, addonstatus.ConditionHealthSoak)
	if hs == nil || hs.Status != metav1.ConditionTrue || hs.Reason != addonstatus.ReasonSoaked {
		return time.Time{}, false
	}
	return hs.LastTransitionTime.Time, true
}

// coveringRun returns the run of a version (entries, in batch order) that judged a cluster that
// finished at at: the first not retried whose Covers is not before it; nil when none did yet.
func coveringRun(entries []history.Verification, at time.Time) *history.Verification {
	for i := range entries {
		if e := &entries[i]; !e.Retried && !e.Covers.Time.Before(at) {
			return e
		}
	}
	return nil
}

// failedRun returns the failed run of entries (a version's runs) that judged mca, or nil.
func failedRun(mca *addonv1alpha1.ManagedClusterAddOn, entries []history.Verification) *history.Verification {
	at, ok := finishedAt(mca)
	if !ok {
		return nil
	}
	if e := coveringRun(entries, at); e != nil && e.Phase == string(verification.Failed) {
		return e
	}
	return nil
}

// verificationFailure is the Progressing condition of an MCA of kind k that the failed run e of
// placement judged.
func verificationFailure(k addonstatus.Kind, placement string, e *history.Verification) metav1.Condition {
	return failure(k, fmt.Sprintf("the verification of %s of placement %s with %s failed: %s; the add-on runs the version, the version failed its verification",
		numbered("batch", "batches", e), placement, e.Template, e.Message))
}

// numbered names the run or runs a history entry stands for: "batch 3", or "batches 2-3" for
// neighbours merged into it.
func numbered(one, many string, e *history.Verification) string {
	if e.FirstBatch != 0 && e.FirstBatch != e.Batch {
		return fmt.Sprintf("%s %d-%d", many, e.FirstBatch, e.Batch)
	}
	return fmt.Sprintf("%s %d", one, e.Batch)
}

// FailVerified returns the status of mca once the failed verification run e of placement judged
// it: Progressing=False with the failed reason of its change (UpgradeFailed; InstallFailed for an
// install) and a message naming the batch, the template and the run's message, its transition time
// the run's end (when the cluster failed: progressDeadline and `addonops retry` count from there,
// as for the decision's own view of the cluster). Its configs, lastAppliedConfig and HealthSoak
// stay: the agent runs the version, and when it finished is what the run judged (finishedAt).
// changed is false when the status already says so.
func FailVerified(mca *addonv1alpha1.ManagedClusterAddOn, placement string, e *history.Verification) (addonv1alpha1.ManagedClusterAddOnStatus, bool) {
	return failedByRun(mca, e, func(k addonstatus.Kind) metav1.Condition { return verificationFailure(k, placement, e) })
}

// failedByRun returns mca's status with the Progressing condition cond gives for its kind of
// change, set at the end of the failed run e; changed is false when the status already says so.
func failedByRun(mca *addonv1alpha1.ManagedClusterAddOn, e *history.Verification, cond func(addonstatus.Kind) metav1.Condition) (addonv1alpha1.ManagedClusterAddOnStatus, bool) {
	st := *mca.Status.DeepCopy()
	changed := SetCondition(&st.Conditions, cond(kindOf(st.ConfigReferences, st.Conditions)), Now(e.Finished.Time), true)
	return st, changed
}

// verificationJudged reports whether the version history rec says a failed verification run
// judged mca: mca is failed (a failed Progressing reason), finished its desired configs
// (finishedAt), and a placement's newest version with those configs has a failed run, not
// retried, that covers it: a batch's run (failedRun) or a continuous run that ended after mca
// finished (continuousJudged, mcastatus_continuous.go). Any placement's: the MCA does not say which placement moves its
// cluster, and the decision that failed it looked at its own placement's runs, which are among
// them. rec is read (hist) only for an MCA that can be such (failed, with its configs applied and
// soaked): no other MCA pays for decoding the history.
func verificationJudged(mca *addonv1alpha1.ManagedClusterAddOn, hist func() *history.Record) bool {
	c := meta.FindStatusCondition(mca.Status.Conditions, addonstatus.ConditionProgressing)
	if c == nil || !addonstatus.IsFailedReason(c.Reason) {
		return false
	}
	if _, ok := finishedAt(mca); !ok || hist == nil {
		return false
	}
	rec := hist()
	if rec == nil {
		return false
	}
	cfgs := toHistory(Desired(mca))
	for i := range rec.Placements {
		if v := rec.Placements[i].Find(cfgs); v != nil && (failedRun(mca, v.Verifications) != nil || continuousJudged(mca, v.Continuous) != nil) {
			return true
		}
	}
	return false
}

// Track is the progress tracker's rule for one MCA: Progress, except that an MCA a failed
// verification (a batch's or a continuous run) judged (verificationJudged, from the version history hist) keeps its status: its
// works are ready and its add-on healthy, and Progress would take it for a failure that
// recovered. Once the run is retried (`addonops retry`), or the MCA is given other configs (an
// abort, a revert), it is recomputed as usual.
func Track(mca *addonv1alpha1.ManagedClusterAddOn, works []*workv1.ManifestWork, gate Gate, hist func() *history.Record, now metav1.Time) (addonv1alpha1.ManagedClusterAddOnStatus, time.Duration) {
	if verificationJudged(mca, hist) {
		return *mca.Status.DeepCopy(), 0
	}
	return Progress(mca, works, gate, now)
}

// failMCA returns the status to write for cluster c, whose MCA is mca, when a failed run of this
// placement (key) judged it and its MCA does not say so yet (it still reads succeeded). Only for a
// version the history records (known): the progress tracker keeps the failure only as long as the
// history confirms it (Track), so one written without it would flap.
func (v *verifyState) failMCA(c string, mca *addonv1alpha1.ManagedClusterAddOn, key PlacementKey) (addonv1alpha1.ManagedClusterAddOnStatus, bool) {
	if v == nil || !v.known {
		return addonv1alpha1.ManagedClusterAddOnStatus{}, false
	}
	e, ok := v.failed[c]
	if !ok || !addonstatus.Applied(mca) {
		return addonv1alpha1.ManagedClusterAddOnStatus{}, false
	}
	if _, ok := finishedAt(mca); !ok {
		return addonv1alpha1.ManagedClusterAddOnStatus{}, false
	}
	return FailVerified(mca, key.String(), e)
}
