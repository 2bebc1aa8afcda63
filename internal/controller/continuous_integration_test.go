//go:build integration

package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/operations"
	"github.com/addonops/addonops/internal/verification"
)

// Continuous verification (docs/spec/verification.md) on the real API server, with a webhook
// receiver as the gate: the same template verifies each batch and, continuously, every cluster
// told the version; the body tells the runs apart ("continuous": the run's number).

// continuousHistory reads the history's continuous runs of placement's last version.
func (e *env) continuousHistory(placement string) []history.Verification {
	rec := e.historyRecord()
	if rec == nil {
		return nil
	}
	last := rec.Placement(e.name + "/" + placement).Last()
	if last == nil {
		return nil
	}
	return last.Continuous
}

// A continuous run that fails mid-rollout (batch 1 told the version and being verified, batch 2 not
// started) stops the rollout: every cluster told the version counts as failed, maxFailures 0 is
// exceeded and auto-abort returns them to the last known good version; batch 2 never gets it.
func TestVerificationContinuousFailsMidRollout(t *testing.T) {
	t.Parallel()
	rc := gateReceiver(t)
	ann := `[{"placement": "*", "template": "webhook", "continuous": {"template": "webhook", "interval": "1s"}}]`
	e, _ := verificationEnv(t, webhookTemplate(rc.URL, 600), map[string]string{verification.Annotation: ann, operations.AutoAbortAnnotation: "true"})
	// Batch runs wait for the test from now on (their timeout is far longer than the test): batch 1
	// stays in verification while the continuous runs go on.
	rc.Hold()
	t.Cleanup(rc.Release)
	e.setConfig("p", "cfg-b")
	first := e.clusters("c1", "c2")
	e.waitProgression(60*time.Second, "p", addonstatus.ReasonVerifying, "verifying batch 1 of version ")
	version := e.desiredVersion("p")
	// Continuous runs over c1 and c2 passed, each recorded, while batch 1 is verified.
	e.waitFor(60*time.Second, "two continuous runs over c1 and c2 passed", func() bool {
		n := 0
		for _, v := range e.continuousHistory("p") {
			if v.Phase == string(verification.Successful) && v.Clusters == 2 {
				n++
				if v.FirstBatch != 0 { // merged runs (history.CompactVerifications)
					n += v.Batch - v.FirstBatch
				}
			}
		}
		return n >= 2
	})
	runs := rc.ContinuousRuns(version)
	if len(runs) == 0 || strings.Join(runs[len(runs)-1].Clusters, ",") != strings.Join(first, ",") || runs[len(runs)-1].Placement != e.name+"/p" || runs[len(runs)-1].Addon != e.name {
		t.Fatalf("continuous runs POSTed: %+v; want runs over %v", runs, first)
	}
	rc.SetContinuous("fail")
	failedAt := time.Now()
	e.waitProgression(90*time.Second, "p", addonstatus.ReasonAborted, "aborted automatically: more clusters failed than maxFailures allows")
	e.waitCMAEvent(10*time.Second, "Warning VerificationFailed", "placement "+e.name+"/p: continuous verification run")
	e.waitCluster(30*time.Second, "c1", "cfg-a/cfg-a/True/RollbackSucceeded")
	e.waitCluster(30*time.Second, "c2", "cfg-a/cfg-a/True/RollbackSucceeded")
	if i := e.rec.firstDesireIndex("cfg-b", e.clusters("c3", "c4")); i >= 0 {
		t.Fatalf("c3 or c4 got cfg-b (event %d) after the continuous verification failed", i)
	}
	e.waitVersions(10*time.Second, "p", "cfg-a:Superseded:c cfg-b:Aborted")
	cs := e.continuousHistory("p")
	if n := len(cs); n == 0 || cs[n-1].Phase != string(verification.Failed) || cs[n-1].Clusters != 2 || !strings.Contains(cs[n-1].Template, "webhook") {
		t.Fatalf("continuous runs in the history: %+v; want the last one Failed over c1 and c2", cs)
	}
	// The runs stopped with the abort: none after the one that failed.
	n := len(rc.ContinuousRuns(version))
	e.quiet(3 * time.Second)
	if m := len(rc.ContinuousRuns(version)); m != n {
		t.Fatalf("%d continuous runs after the version was aborted", m-n)
	}
	t.Logf("continuous gate: the run that failed took %s; aborted %s after the receiver started failing",
		cs[len(cs)-1].Finished.Sub(cs[len(cs)-1].Started.Time), time.Since(failedAt).Round(100*time.Millisecond))
}

// A continuous run that is inconclusive (an unknown verdict) holds the placement for a person, even
// once batch 1 passed: batch 2 does not start and no further run starts; a promote passes it, the
// runs go on and the rollout completes.
func TestVerificationContinuousInconclusiveHolds(t *testing.T) {
	t.Parallel()
	rc := gateReceiver(t)
	ann := `[{"placement": "*", "template": "webhook", "continuous": {"template": "webhook", "interval": "1s"}}]`
	e, all := verificationEnv(t, webhookTemplate(rc.URL, 600), map[string]string{verification.Annotation: ann})
	rc.Hold()
	rc.SetContinuous("maybe")
	e.setConfig("p", "cfg-b")
	e.waitProgression(60*time.Second, "p", addonstatus.ReasonVerificationInconclusive, "continuous verification run 1 of version ")
	e.waitCMAEvent(10*time.Second, "Warning VerificationInconclusive", "continuous verification run 1")
	// Batch 1's run passes now: the placement still waits for a person.
	rc.Release()
	version := e.desiredVersion("p")
	e.waitVerifications(30*time.Second, "p", "1:Successful")
	n := len(rc.ContinuousRuns(version))
	e.quiet(3 * time.Second)
	if i := e.rec.firstDesireIndex("cfg-b", e.clusters("c3", "c4")); i >= 0 {
		t.Fatalf("c3 or c4 got cfg-b (event %d) while an inconclusive continuous run held the placement", i)
	}
	if m := len(rc.ContinuousRuns(version)); m != n {
		t.Fatalf("%d continuous runs started while the placement waited for a person", m-n)
	}
	e.waitProgression(time.Second, "p", addonstatus.ReasonVerificationInconclusive, "continuous verification run 1 of version "+version)
	rc.SetContinuous("pass")
	e.annotateAs(cliFieldManager, operations.PromoteAnnotation, operations.FormatMap(map[canary.PlacementKey]string{e.placementKey("p"): version}))
	e.waitCMAEvent(30*time.Second, "VerificationPromoted", "a person passed the inconclusive continuous verification run(s) [1]")
	e.waitUpgraded(60*time.Second, "cfg-b", all...)
	e.waitProgression(30*time.Second, "p", addonstatus.ReasonUpgradeSucceed, "4/4 upgrade completed")
	cs := e.continuousHistory("p")
	if len(cs) < 2 || cs[0].Phase != string(verification.Inconclusive) || !cs[0].Promoted || cs[1].Phase != string(verification.Successful) {
		t.Fatalf("continuous runs in the history: %+v; want 1 Inconclusive (promoted), then Successful ones", cs)
	}
}

// A continuous run that fails mid-rollout without auto-abort: the clusters told the version that
// finished it (batch 1, being verified) are failed in their MCAs too (UpgradeFailed, naming the
// run, at its end), written once, and neither writer takes it back; the rollout stops and batch 2
// never gets the version. A retry recomputes them: the runs and the rollout go on to the end.
func TestVerificationContinuousFailsTheMCAs(t *testing.T) {
	t.Parallel()
	rc := gateReceiver(t)
	ann := `[{"placement": "*", "template": "webhook", "continuous": {"template": "webhook", "interval": "1s"}}]`
	e, all := verificationEnv(t, webhookTemplate(rc.URL, 600), map[string]string{verification.Annotation: ann})
	// Batch runs wait for the test: batch 1 stays in verification while the continuous runs go on.
	rc.Hold()
	t.Cleanup(rc.Release)
	from := e.rec.count()
	e.setConfig("p", "cfg-b")
	e.waitProgression(60*time.Second, "p", addonstatus.ReasonVerifying, "verifying batch 1 of version ")
	e.waitFor(60*time.Second, "a continuous run over c1 and c2 passed", func() bool {
		for _, v := range e.continuousHistory("p") {
			if v.Phase == string(verification.Successful) && v.Clusters == 2 {
				return true
			}
		}
		return false
	})
	rc.SetContinuous("fail")
	e.waitProgression(90*time.Second, "p", addonstatus.ReasonUpgradeFailed, "more clusters failed than maxFailures allows")
	cs := e.continuousHistory("p")
	n := len(cs)
	if n == 0 || cs[n-1].Phase != string(verification.Failed) || cs[n-1].Clusters != 2 {
		t.Fatalf("continuous runs in the history: %+v; want the last one Failed over c1 and c2", cs)
	}
	failed := cs[n-1]
	want := fmt.Sprintf("upgrade failed: continuous verification run %d of placement %s/p with AnalysisTemplate %s/webhook failed: %s", failed.Batch, e.name, e.name, failed.Message)
	for _, c := range []string{"c1", "c2"} {
		e.waitCluster(30*time.Second, c, "cfg-b/cfg-b/True/UpgradeFailed")
		cond := meta.FindStatusCondition(e.rec.mca(e.cluster(c)).Status.Conditions, addonstatus.ConditionProgressing)
		if cond.Status != metav1.ConditionFalse || !strings.HasPrefix(cond.Message, want) || !cond.LastTransitionTime.Equal(&failed.Finished) {
			t.Fatalf("%s: Progressing %+v, want False with a message starting %q, transition time the run's end %s", c, cond, want, failed.Finished)
		}
	}
	// Written once, and neither writer takes it back: a flap would show as a controller write after
	// the verdict settled, or as UpgradeFailed more than once in a cluster's sequence of reasons.
	mark := e.rec.count()
	e.quiet(3 * time.Second)
	for _, c := range all {
		if n := e.rec.writes(e.cluster(c), mark); n != 0 {
			t.Fatalf("%s: %d controller writes of its MCA after the verdict settled:\n%s", c, n, e.rec.eventsOf(e.cluster(c)))
		}
	}
	for _, c := range []string{"c1", "c2"} {
		if got := progressingReasons(e.rec.events()[from:], e.cluster(c)); !strings.HasSuffix(got, "UpgradeSucceed UpgradeFailed") || strings.Count(got, "UpgradeFailed") != 1 {
			t.Fatalf("%s: Progressing reasons %q, want ... UpgradeSucceed UpgradeFailed, failed once", c, got)
		}
	}
	if i := e.rec.firstDesireIndex("cfg-b", e.clusters("c3", "c4")); i >= 0 {
		t.Fatalf("c3 or c4 got cfg-b (event %d) after the continuous verification failed", i)
	}
	// The cause is fixed; a person retries: the failed run no longer counts, the MCAs are
	// recomputed and the rollout completes.
	rc.SetContinuous("pass")
	rc.Release()
	e.annotateAs(cliFieldManager, operations.RetryAnnotation, operations.FormatMap(map[canary.PlacementKey]string{e.placementKey("p"): "r1"}))
	e.waitProgression(90*time.Second, "p", addonstatus.ReasonUpgradeSucceed, "4/4 upgrade completed")
	for _, c := range all {
		e.waitCluster(30*time.Second, c, "cfg-b/cfg-b/True/UpgradeSucceed")
	}
	retried := false
	for _, v := range e.continuousHistory("p") {
		retried = retried || v.Batch == failed.Batch && v.Phase == string(verification.Failed) && v.Retried
	}
	if !retried {
		t.Fatalf("continuous runs in the history: %+v; want run %d retried", e.continuousHistory("p"), failed.Batch)
	}
}
