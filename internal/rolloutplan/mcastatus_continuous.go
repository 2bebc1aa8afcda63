package rolloutplan

// A failed continuous verification on the MCA
// (docs/spec/verification.md#continuous-verification-runs-while-a-placement-rolls-out), with the
// rules of the batch case (mcastatus_verify.go): a failed continuous run fails every
// cluster told the version in the decision, and the MCA of each one the run judged says so
// (UpgradeFailed, InstallFailed for an install, a message naming the run). The decision writes it
// (continuousState.failMCA, FailContinuous); the progress tracker keeps it while the version
// history has the failed run, not retried (Track, continuousJudged).
//
// Which MCAs the run judged: those that finished the version by the run's end (its Covers, which is
// its end), as a batch's run judges what it covers: finishedAt (every desired config applied, the
// health soak passed) counts from when the soak began, so a cluster soaking when the run ended is
// failed once its soak passes. A cluster told the version that was still in flight then (its soak
// began after the run's end, or it never finished) counts as failed in the decision --
// the progression names it, sdk-go counts it toward maxFailures -- but its MCA is not rewritten:
// it goes on saying what its agent does (Upgrading, then UpgradeSucceed or a failure of its own).
// Both writers judge by the same two things the history and the MCA's own finish time hold, so
// neither rewrites what the other wrote: the history records a run's sample, not every cluster
// told, and a rule on "told at the run's end" could not be checked by the tracker. The verdict is
// always the history's, never the MCA's.

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/verification"
)

// standingFailure returns the continuous run of a version (entries, in run order) that fails it:
// the last failed run not retried; nil when none does. No run starts after a failed one until a
// retry marks it retried, so there is at most one.
func standingFailure(entries []history.Verification) *history.Verification {
	var out *history.Verification
	for i := range entries {
		if e := &entries[i]; !e.Retried && e.Phase == string(verification.Failed) {
			out = e
		}
	}
	return out
}

// continuousJudged returns the failed continuous run of entries (a version's continuous runs) that
// judged mca: the standing failure, when mca finished the version by its end; else nil.
func continuousJudged(mca *addonv1alpha1.ManagedClusterAddOn, entries []history.Verification) *history.Verification {
	e := standingFailure(entries)
	if e == nil {
		return nil
	}
	at, ok := finishedAt(mca)
	if !ok || e.Covers.Time.Before(at) {
		return nil
	}
	return e
}

// continuousFailure is the Progressing condition of an MCA of kind k that the failed continuous
// run e of placement judged.
func continuousFailure(k addonstatus.Kind, placement string, e *history.Verification) metav1.Condition {
	return failure(k, fmt.Sprintf("continuous verification %s of placement %s with %s failed: %s; the add-on runs the version, the version failed its continuous verification",
		numbered("run", "runs", e), placement, e.Template, e.Message))
}

// FailContinuous returns the status of mca once the failed continuous run e of placement judged
// it, as FailVerified does for a batch's run: Progressing=False with the failed reason of its
// change and a message naming the run, its template and its message, its transition time the
// run's end; configs, lastAppliedConfig and HealthSoak stay. changed is false when the status
// already says so.
func FailContinuous(mca *addonv1alpha1.ManagedClusterAddOn, placement string, e *history.Verification) (addonv1alpha1.ManagedClusterAddOnStatus, bool) {
	return failedByRun(mca, e, func(k addonstatus.Kind) metav1.Condition { return continuousFailure(k, placement, e) })
}

// failMCA returns the status to write for cluster c, whose MCA is mca, when this placement's
// (key) failed continuous run judged it and its MCA does not say so yet (it still reads
// succeeded): c was told the version and finished it by the run's end (continuousJudged). Only for
// a version the history records (known): the progress tracker keeps the failure only while the
// history has the run (Track), so one written without it would flap.
func (s *continuousState) failMCA(c string, mca *addonv1alpha1.ManagedClusterAddOn, key PlacementKey) (addonv1alpha1.ManagedClusterAddOnStatus, bool) {
	if s == nil || !s.known || s.failed == nil || !addonstatus.Applied(mca) {
		return addonv1alpha1.ManagedClusterAddOnStatus{}, false
	}
	if _, ok := slices.BinarySearch(s.told, c); !ok {
		return addonv1alpha1.ManagedClusterAddOnStatus{}, false
	}
	e := continuousJudged(mca, s.entries)
	if e == nil {
		return addonv1alpha1.ManagedClusterAddOnStatus{}, false
	}
	return FailContinuous(mca, key.String(), e)
}
