package rolloutplan

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/operations"
	"github.com/addonops/addonops/internal/verification"
)

// Verification gates (verify.go). The world's runner is a map of verdicts by batch ("c1,c2"): a
// batch without one is still running.

type verdicts map[string]verification.Phase

func (w *world) verifyWith(v verdicts) {
	w.cma.Annotations[verification.Annotation] = `[{"placement": "*", "template": "error-rate"}]`
	w.verifications = func(b verification.Batch) (verification.Result, bool) {
		p, ok := v[strings.Join(b.Clusters, ",")]
		if !ok {
			return verification.Result{}, false
		}
		return verification.Result{Phase: p, Message: "metric error-rate " + string(p), Started: w.now, Finished: w.now}, true
	}
}

// requested lists the batches the last decision asked to verify: "default/p#1:c1".
func (w *world) requested() string {
	var out []string
	for _, r := range w.lastPlan.Verify {
		if r.Batch.Continuous > 0 { // continuous_test.go lists those
			continue
		}
		out = append(out, r.Batch.Placement+"#"+itoa(r.Batch.Index)+":"+strings.Join(r.Batch.Clusters, ","))
	}
	return strings.Join(out, " ")
}

func itoa(i int) string { return strconv.Itoa(i) }

func (w *world) expectRequested(want string) {
	w.t.Helper()
	if got := w.requested(); got != want {
		w.t.Fatalf("verifications asked for: %q, want %q", got, want)
	}
}

// verificationsOf sums up the history's verification runs of p's last version: "1:Successful 2:Failed".
func (w *world) verificationsOf(k PlacementKey) string {
	last := w.history.Placement(k.String()).Last()
	var out []string
	for _, v := range last.Verifications {
		s := itoa(v.Batch) + ":" + v.Phase
		if v.Promoted {
			s += ":promoted"
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// Every batch waits for its verification before the next starts; the last batch's verification
// completes the version; each run is in the history, once.
func TestVerificationGatesEachBatch(t *testing.T) {
	v := verdicts{}
	w := newWorld(t)
	w.config("a")
	w.config("b")
	p := w.placement("p", "a", progressive(intstr.FromInt32(2), clusterv1alpha1.RolloutConfig{}), []string{"c1", "c2", "c3", "c4"})
	w.installAll()
	w.verifyWith(v)
	w.setConfig(p, "b")
	w.step()
	w.expectStates("c1=b/a/T c2=b/a/T c3=a/a/F c4=a/a/F")
	w.expectRequested("")
	w.agent("c1", succeed)
	w.step()
	// c1 finished, c2 is in flight: the batch has not finished, nothing is verified yet and c3
	// does not take c1's slot.
	w.expectRequested("")
	w.expectStates("c1=b/b/T c2=b/a/T c3=a/a/F c4=a/a/F")
	w.agent("c2", succeed)
	w.step()
	w.expectRequested("default/p#1:c1,c2")
	w.expectStates("c1=b/b/T c2=b/b/T c3=a/a/F c4=a/a/F")
	w.expectProgression(p, addonstatus.ReasonVerifying, "verifying batch 1 of version "+versionID([]Config{cfgOf("b")})+" (2 clusters: c1, c2) with AnalysisTemplate default/error-rate; no new cluster starts until it passes; 2/4 clusters done", "b", "a", "a")
	w.expectEvent("VerificationStarted", "placement default/p: verifying batch 1")
	for range 3 { // the run takes its time; asked again, no new event
		w.advance(time.Minute)
		w.step()
		w.expectRequested("default/p#1:c1,c2")
		if n := w.eventCount("VerificationStarted"); n != 0 {
			t.Fatalf("%d more VerificationStarted events", n)
		}
	}
	v["c1,c2"] = verification.Successful
	w.step()
	w.expectEvent("VerificationPassed", "batch 1 of version")
	w.expectStates("c1=b/b/T c2=b/b/T c3=b/a/T c4=b/a/T")
	w.expectProgression(p, addonstatus.ReasonUpgrading, "2/4 clusters done, 2 in progress", "b", "a", "a")
	if got := w.verificationsOf(p); got != "1:Successful" {
		t.Fatalf("history: %s", got)
	}
	w.agents(succeed, "c3", "c4")
	w.step()
	// The last batch too: the version completes only once it passes.
	w.expectRequested("default/p#2:c3,c4")
	w.expectProgression(p, addonstatus.ReasonVerifying, "verifying batch 2", "b", "a", "a")
	if w.history.Placement(p.String()).Last().Completed != nil {
		t.Fatalf("completed before its last batch's verification")
	}
	v["c3,c4"] = verification.Successful
	w.step()
	w.expectProgression(p, addonstatus.ReasonUpgradeSucceed, "4/4 upgrade completed", "b", "b", "b")
	w.expectRequested("")
	if got := w.verificationsOf(p); got != "1:Successful 2:Successful" {
		t.Fatalf("history: %s", got)
	}
	e := w.history.Placement(p.String()).Last().Verifications[1]
	if e.Clusters != 2 || strings.Join(e.Sample, ",") != "c3,c4" || e.Template != "AnalysisTemplate default/error-rate" {
		t.Fatalf("history entry %+v", e)
	}
	// Nothing is verified again once the version completed.
	w.step()
	w.expectRequested("")
}

// A failed verification fails the batch's clusters: they count toward maxFailures (0 here), the
// rollout stops, and auto-abort returns them to the last known good version.
func TestVerificationFailureFailsTheBatch(t *testing.T) {
	for _, autoAbort := range []bool{false, true} {
		t.Run(map[bool]string{false: "stops", true: "auto-abort"}[autoAbort], func(t *testing.T) {
			v := verdicts{}
			w := newWorld(t)
			w.config("a")
			w.config("b")
			p := w.placement("p", "a", progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{}), []string{"c1", "c2", "c3"})
			w.installAll()
			w.verifyWith(v)
			if autoAbort {
				w.cma.Annotations[operations.AutoAbortAnnotation] = "true"
			}
			w.setConfig(p, "b")
			w.step()
			w.agent("c1", succeed)
			w.step()
			w.expectRequested("default/p#1:c1")
			v["c1"] = verification.Failed
			w.step()
			w.expectEvent("VerificationFailed", "placement default/p: the verification of batch 1")
			if !autoAbort {
				w.expectProgression(p, addonstatus.ReasonUpgradeFailed, "upgrade stopped: more clusters failed than maxFailures allows; 0/3 clusters done, 0 in progress, 1 failed, 0 timed out; failed: c1 (verification failed: metric error-rate Failed)", "b", "a", "a")
				w.expectStates("c1=b/b/T c2=a/a/F c3=a/a/F")
				w.expectVersions(p, "a:Superseded:c b:Failed")
				// Its MCA says it failed, naming the run, and stays so.
				w.expectMCA("c1", addonstatus.ReasonUpgradeFailed, "upgrade failed: the verification of batch 1 of placement default/p with AnalysisTemplate default/error-rate failed: metric error-rate Failed")
				w.expectSteady("c1")
				return
			}
			w.expectProgression(p, addonstatus.ReasonAborting, "aborted automatically: more clusters failed than maxFailures allows", "b", "a", "a")
			w.expectStates("c1=a/b/T c2=a/a/T c3=a/a/T")
			w.settle()
			w.expectProgression(p, addonstatus.ReasonAborted, "3/3 clusters are back on", "b", "a", "a")
			w.expectVersions(p, "a:Superseded:c b:Aborted")
			// Its MCA followed the way back.
			w.expectMCA("c1", addonstatus.ReasonRollbackSucceeded, "")
			if got := w.verificationsOf(p); got != "1:Failed" {
				t.Fatalf("history: %s", got)
			}
		})
	}
}

// Within maxFailures, a failed batch counts and, as any failed cluster, keeps its place in the
// batch until its progressDeadline passes; then the rollout goes on.
func TestVerificationFailureWithinMaxFailures(t *testing.T) {
	v := verdicts{}
	w := newWorld(t)
	w.config("a")
	w.config("b")
	p := w.placement("p", "a", progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{MaxFailures: intstr.FromInt32(1), ProgressDeadline: "10m"}), []string{"c1", "c2"})
	w.installAll()
	w.verifyWith(v)
	w.setConfig(p, "b")
	w.step()
	w.agent("c1", succeed)
	w.step()
	v["c1"] = verification.Failed
	w.step()
	w.expectStates("c1=b/b/T c2=a/a/F")
	w.expectProgression(p, addonstatus.ReasonUpgrading, "0/2 clusters done, 0 in progress, 1 failed, 0 timed out; failed: c1 (verification failed: metric error-rate Failed); the next clusters start when the progressDeadline (10m) of the failed clusters holding their places in the batch passes", "b", "a", "a")
	w.advance(11 * time.Minute)
	w.step()
	w.expectStates("c1=b/b/T c2=b/a/T")
	w.agent("c2", succeed)
	w.step()
	// c1 was judged: only c2 is verified now.
	w.expectRequested("default/p#2:c2")
	v["c2"] = verification.Successful
	w.step()
	w.expectProgression(p, addonstatus.ReasonUpgradeFailed, "upgrade failed: 1/2 clusters done, 0 in progress, 0 failed, 1 timed out; timed out: c1", "b", "a", "a")
}

// An inconclusive verification (Prometheus unreachable) holds the placement for a person: a
// promote passes it, an abort reverts the version.
func TestVerificationInconclusive(t *testing.T) {
	for _, act := range []string{"promote", "abort"} {
		t.Run(act, func(t *testing.T) {
			v := verdicts{}
			w := newWorld(t)
			w.config("a")
			w.config("b")
			p := w.placement("p", "a", progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{}), []string{"c1", "c2"})
			w.installAll()
			w.verifyWith(v)
			w.setConfig(p, "b")
			w.step()
			w.agent("c1", succeed)
			w.step()
			v["c1"] = verification.Inconclusive
			w.step()
			w.expectEvent("VerificationInconclusive", "was inconclusive: metric error-rate Inconclusive")
			w.expectProgression(p, addonstatus.ReasonVerificationInconclusive, "the verification of batch 1 (1 clusters: c1) with AnalysisTemplate default/error-rate was inconclusive", "b", "a", "a")
			if c := ProgressingOf(w.progression(p)); c.Status != metav1.ConditionFalse || addonstatus.ClassOf(c.Status, c.Reason) != addonstatus.ClassSuspended {
				t.Fatalf("condition %+v: want Progressing=False, Suspended as a pause (a person acts)", c)
			}
			for range 3 {
				w.advance(time.Hour)
				w.step()
				w.expectStates("c1=b/b/T c2=a/a/F")
				w.expectRequested("")
			}
			id := versionID([]Config{cfgOf("b")})
			switch act {
			case "promote":
				w.annotateAs("addonops-cli", operations.PromoteAnnotation, operations.FormatMap(map[canary.PlacementKey]string{canary.PlacementKey(p): id}))
				w.step()
				w.expectEvent("VerificationPromoted", "a person passed the inconclusive verification of batch(es) [1]")
				w.expectStates("c1=b/b/T c2=b/a/T")
				w.agent("c2", succeed)
				w.step()
				w.expectRequested("default/p#2:c2")
				v["c2"] = verification.Successful
				w.step()
				w.expectProgression(p, addonstatus.ReasonUpgradeSucceed, "2/2 upgrade completed", "b", "b", "b")
				if got := w.verificationsOf(p); got != "1:Inconclusive:promoted 2:Successful" {
					t.Fatalf("history: %s", got)
				}
			case "abort":
				w.annotateAs("addonops-cli", operations.AbortAnnotation, operations.FormatMap(map[canary.PlacementKey]string{canary.PlacementKey(p): id}))
				w.step()
				w.expectStates("c1=a/b/T c2=a/a/T")
				w.settle()
				w.expectProgression(p, addonstatus.ReasonAborted, "2/2 clusters are back on", "b", "a", "a")
			}
		})
	}
}

// A canary placement's last batch must pass its verification before the placements it gates
// adopt the version.
func TestVerificationGatesTheCanary(t *testing.T) {
	v := verdicts{}
	w, aws, canaryKey := canaryWorld(t)
	w.installAll()
	w.verifyWith(v)
	w.cma.Annotations[verification.Annotation] = `[{"placement": "default/canary", "template": "error-rate"}]`
	w.setConfig(aws, "b")
	w.setConfig(canaryKey, "b")
	w.step()
	w.agents(succeed, "k1", "k2")
	w.step()
	w.expectRequested("default/canary#1:k1,k2")
	w.expectProgression(aws, addonstatus.ReasonWaitingForCanary, "waiting for the verification of canary placement default/canary", "b", "a", "a")
	w.expectStates("c1=a/a/T c2=a/a/T c3=a/a/T c4=a/a/T k1=b/b/T k2=b/b/T")
	v["k1,k2"] = verification.Successful
	w.step()
	w.expectProgression(canaryKey, addonstatus.ReasonUpgradeSucceed, "2/2 upgrade completed", "b", "b", "b")
	w.expectStates("c1=b/a/T c2=a/a/F c3=a/a/F c4=a/a/F k1=b/b/T k2=b/b/T")
	// aws has no verification of its own: it rolls on as usual.
	w.settle()
	w.expectProgression(aws, addonstatus.ReasonUpgradeSucceed, "4/4 upgrade completed", "b", "b", "b")
	w.expectRequested("")
}

// A rollback is never held by a verification.
func TestVerificationSkipsRollbacks(t *testing.T) {
	v := verdicts{}
	w := newWorld(t)
	w.config("a")
	w.config("b")
	p := w.placement("p", "a", progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{}), []string{"c1", "c2"})
	w.installAll()
	w.verifyWith(v)
	w.setConfig(p, "b")
	w.step()
	w.agent("c1", succeed)
	w.step()
	w.expectRequested("default/p#1:c1")
	w.setConfig(p, "a") // back to the known good version
	w.step()
	w.expectRequested("")
	w.expectProgression(p, addonstatus.ReasonRollingBack, "", "a", "a", "a")
	w.settle()
	w.expectProgression(p, addonstatus.ReasonRollbackSucceeded, "", "a", "a", "a")
}

// A verification annotation that does not parse, or names a placement the add-on does not
// install, holds every placement (fail closed).
func TestInvalidVerification(t *testing.T) {
	for value, want := range map[string]string{
		`[{"placement": "default/p", "template": ""}]`:       "template is empty",
		`[{"placement": "default/other", "template": "t"}]`:  "placement default/other is not an install placement",
		`{"placement": "default/p", "template": "t"}`:        "want a JSON list",
		`[{"placement": "*", "template": "t", "kind": "X"}]`: `kind "X"`,
	} {
		t.Run(want, func(t *testing.T) {
			w := newWorld(t)
			w.config("a")
			w.config("b")
			p := w.placement("p", "a", progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{}), []string{"c1", "c2"})
			w.installAll()
			w.cma.Annotations[verification.Annotation] = value
			w.setConfig(p, "b")
			w.step()
			w.expectStates("c1=a/a/T c2=a/a/T")
			w.expectProgression(p, addonstatus.ReasonInvalidVerification, want, "b", "a", "a")
			w.expectEvent(addonstatus.ReasonInvalidVerification, want)
		})
	}
}

// Times are whole seconds: a verdict in the second the batch finished lets the next batch start
// only once that second has passed, so no cluster of it can finish in the second the run covers.
func TestVerificationNextBatchAfterTheCoveredSecond(t *testing.T) {
	v := verdicts{}
	w := newWorld(t)
	w.config("a")
	w.config("b")
	p := w.placement("p", "a", progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{}), []string{"c1", "c2"})
	w.installAll()
	w.verifyWith(v)
	w.setConfig(p, "b")
	w.step()
	w.agent("c1", succeed)
	v["c1"] = verification.Successful // the run ends in the second c1 finished
	w.step()
	if got := w.verificationsOf(p); got != "1:Successful" {
		t.Fatalf("history: %s", got)
	}
	w.expectStates("c1=b/b/T c2=a/a/F")
	if got := w.lastPlan.RecheckAfter; got <= 0 || got > time.Second {
		t.Fatalf("RecheckAfter = %s, want within a second", got)
	}
	w.advance(time.Second)
	w.step()
	w.expectStates("c1=b/b/T c2=b/a/T")
	// c2 finishes; its batch is its own, not c1's.
	w.agent("c2", succeed)
	w.step()
	w.expectRequested("default/p#2:c2")
}

// A canary whose verification failed never opens the gate, though its clusters still run the
// version, healthy (no auto-abort here).
func TestVerificationFailedCanaryKeepsTheGateShut(t *testing.T) {
	v := verdicts{}
	w, aws, canaryKey := canaryWorld(t)
	w.installAll()
	w.verifyWith(v)
	w.cma.Annotations[verification.Annotation] = `[{"placement": "default/canary", "template": "error-rate"}]`
	w.setConfig(aws, "b")
	w.setConfig(canaryKey, "b")
	w.step()
	w.agents(succeed, "k1", "k2")
	v["k1,k2"] = verification.Failed
	w.advance(time.Second)
	w.step()
	w.expectProgression(canaryKey, addonstatus.ReasonUpgradeFailed, "failed: k1 (verification failed: metric error-rate Failed), k2 (verification failed", "b", "a", "a")
	for range 3 {
		w.advance(time.Minute)
		w.step()
		w.expectStates("c1=a/a/T c2=a/a/T c3=a/a/T c4=a/a/T k1=b/b/T k2=b/b/T")
		w.expectProgression(aws, addonstatus.ReasonWaitingForCanary, "the verification of canary placement default/canary failed on k1, k2", "b", "a", "a")
	}
	if c := ProgressingOf(w.progression(aws)); c.Status != metav1.ConditionFalse {
		t.Fatalf("gated placement %+v: want Progressing=False (a person must act)", c)
	}
}

// `addonops retry` after an inconclusive run verifies the batch again, as a new batch number.
func TestVerificationRetry(t *testing.T) {
	v := verdicts{}
	w := newWorld(t)
	w.config("a")
	w.config("b")
	p := w.placement("p", "a", progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{}), []string{"c1", "c2"})
	w.installAll()
	w.verifyWith(v)
	w.setConfig(p, "b")
	w.step()
	w.agent("c1", succeed)
	w.step()
	v["c1"] = verification.Inconclusive
	w.advance(time.Second)
	w.step()
	w.expectProgression(p, addonstatus.ReasonVerificationInconclusive, "", "b", "a", "a")
	// The template is fixed; a person retries.
	w.verifications = func(b verification.Batch) (verification.Result, bool) {
		if b.Index == 2 {
			return verification.Result{Phase: verification.Successful, Message: "ok", Started: w.now, Finished: w.now}, true
		}
		return verification.Result{Phase: verification.Inconclusive, Message: "still the old run", Started: w.now, Finished: w.now}, true
	}
	w.advance(time.Minute)
	w.annotateAs("addonops-cli", operations.RetryAnnotation, operations.FormatMap(map[canary.PlacementKey]string{canary.PlacementKey(p): "r1"}))
	w.advance(time.Second)
	w.step()
	if got := w.verificationsOf(p); got != "1:Inconclusive 2:Successful" {
		t.Fatalf("history: %s", got)
	}
	if !w.history.Placement(p.String()).Last().Verifications[0].Retried {
		t.Fatalf("the first run is not marked retried")
	}
	w.advance(time.Second)
	w.step()
	w.expectStates("c1=b/b/T c2=b/a/T")
}

// A rollout of many one-cluster batches keeps a bounded record: runs that ended alike merge.
func TestVerificationRecordStaysBounded(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	w.config("b")
	var clusters []string
	for i := range 45 {
		clusters = append(clusters, fmt.Sprintf("c%02d", i))
	}
	p := w.placement("p", "a", all(), clusters)
	w.installAll()
	w.cma.Spec.InstallStrategy.Placements[0].RolloutStrategy = progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{})
	w.verifyWith(verdicts{})
	runs := 0
	w.verifications = func(b verification.Batch) (verification.Result, bool) {
		runs++
		if b.Index != runs {
			t.Fatalf("batch %d asked for as run %d: batch numbers must go on after merged runs", b.Index, runs)
		}
		return verification.Result{Phase: verification.Successful, Message: "ok", Started: w.now, Finished: w.now}, true
	}
	w.setConfig(p, "b")
	for range 200 {
		for _, c := range clusters {
			if m := w.mcas[c]; len(Desired(m)) > 0 && !addonstatus.Applied(m) && isConfigured(m) {
				w.agent(c, succeed)
			}
		}
		w.step()
		w.advance(time.Second)
		if c := ProgressingOf(w.progression(p)); c.Reason == addonstatus.ReasonUpgradeSucceed {
			break
		}
	}
	w.expectProgression(p, addonstatus.ReasonUpgradeSucceed, "45/45 upgrade completed", "b", "b", "b")
	vs := w.history.Placement(p.String()).Last().Verifications
	total := 0
	for _, v := range vs {
		total += v.Clusters
	}
	if runs != 45 || len(vs) > history.MaxVerifications || total != 45 || vs[len(vs)-1].Batch != 45 {
		t.Fatalf("%d runs, %d entries (bound %d) covering %d clusters, last batch %d", runs, len(vs), history.MaxVerifications, total, vs[len(vs)-1].Batch)
	}
}

// A verified install stays an install: Verifying tells no kind of change, the history does.
func TestVerifiedInstallSucceedsAsAnInstall(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	p := w.placement("p", "a", progressive(intstr.FromInt32(2), clusterv1alpha1.RolloutConfig{}), []string{"c1", "c2", "c3", "c4"})
	w.verifyWith(verdicts{})
	asked := map[string]int{}
	w.verifications = func(b verification.Batch) (verification.Result, bool) {
		asked[b.Key()]++ // each run ends after the decision that asked for it
		return verification.Result{Phase: verification.Successful, Started: w.now, Finished: w.now}, asked[b.Key()] > 1
	}
	var reasons []string
	for range 8 {
		for _, c := range []string{"c1", "c2", "c3", "c4"} {
			if m := w.mcas[c]; len(Desired(m)) > 0 && !addonstatus.Applied(m) && isConfigured(m) {
				w.agent(c, succeed)
			}
		}
		w.step()
		if r := ProgressingOf(w.progression(p)).Reason; len(reasons) == 0 || reasons[len(reasons)-1] != r {
			reasons = append(reasons, r)
		}
		w.advance(time.Second)
	}
	if got, want := strings.Join(reasons, " "), "Installing Verifying Installing Verifying InstallSucceed"; got != want {
		t.Fatalf("reasons %s, want %s", got, want)
	}
	w.expectVersions(p, "a:Succeeded:c")
}

// expectMCA checks a cluster's Progressing condition: reason, and a message containing msg.
func (w *world) expectMCA(cluster, reason, msg string) {
	w.t.Helper()
	c := meta.FindStatusCondition(w.mcas[cluster].Status.Conditions, addonstatus.ConditionProgressing)
	if c == nil || c.Reason != reason || !strings.Contains(c.Message, msg) {
		w.t.Fatalf("%s: Progressing %+v, want reason %s with message containing %q", cluster, c, reason, msg)
	}
}

// expectSteady checks that neither writer changes a cluster's MCA any more: the progress tracker
// looks at it again (Track) and decisions are taken, as time passes.
func (w *world) expectSteady(cluster string) {
	w.t.Helper()
	before := w.mcas[cluster].Status.DeepCopy()
	for range 3 {
		w.advance(time.Second)
		for _, writer := range []struct {
			who   string
			write func()
		}{{"the progress tracker", func() { w.recheck(cluster) }}, {"a decision", func() { w.step() }}} {
			who := writer.who
			writer.write()
			if !equality.Semantic.DeepEqual(*before, w.mcas[cluster].Status) {
				w.t.Fatalf("%s changed %s:\n got %+v\nwant %+v", who, cluster, w.mcas[cluster].Status, *before)
			}
		}
	}
}

// A failed run's clusters are failed in their MCAs too (UpgradeFailed, naming the run, at the run's
// end), the passed batch's stay UpgradeSucceed, and neither writer takes it back; a retry verifies
// them again as a new batch (they run the version already: no cluster is done unverified), and
// their MCAs follow the rollout to its end.
func TestVerificationFailureOnTheMCA(t *testing.T) {
	v := verdicts{}
	w := newWorld(t)
	w.config("a")
	w.config("b")
	p := w.placement("p", "a", progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{}), []string{"c1", "c2"})
	w.installAll()
	w.verifyWith(v)
	w.setConfig(p, "b")
	w.step()
	w.agent("c1", succeed)
	v["c1"] = verification.Successful
	w.step()
	w.advance(time.Second)
	w.step()
	w.agent("c2", succeed)
	w.advance(time.Second)
	w.step()
	w.expectRequested("default/p#2:c2")
	w.advance(time.Second)
	v["c2"] = verification.Failed
	failedAt := Now(w.now)
	w.step()
	w.expectProgression(p, addonstatus.ReasonUpgradeFailed, "failed: c2 (verification failed: metric error-rate Failed)", "b", "a", "a")
	w.expectMCA("c2", addonstatus.ReasonUpgradeFailed, "upgrade failed: the verification of batch 2 of placement default/p with AnalysisTemplate default/error-rate failed: metric error-rate Failed")
	if c := meta.FindStatusCondition(w.mcas["c2"].Status.Conditions, addonstatus.ConditionProgressing); !c.LastTransitionTime.Equal(&failedAt) {
		t.Fatalf("c2 failed at %s, want the run's end %s", c.LastTransitionTime, failedAt)
	}
	w.expectMCA("c1", addonstatus.ReasonUpgradeSucceed, "")
	w.expectStates("c1=b/b/T c2=b/b/T")
	w.expectSteady("c2")
	w.expectSteady("c1")
	w.expectProgression(p, addonstatus.ReasonUpgradeFailed, "failed: c2 (verification failed: metric error-rate Failed)", "b", "a", "a")

	// The cause is fixed; a person retries.
	v["c2"] = verification.Successful
	w.advance(time.Minute)
	w.annotateAs("addonops-cli", operations.RetryAnnotation, operations.FormatMap(map[canary.PlacementKey]string{canary.PlacementKey(p): "r1"}))
	w.step()
	w.expectMCA("c2", addonstatus.ReasonUpgradeSucceed, "")
	w.expectRequested("")
	if c := ProgressingOf(w.progression(p)); c.Reason == addonstatus.ReasonUpgradeSucceed {
		t.Fatalf("the version completed with c2 not verified again: %+v", c)
	}
	w.advance(time.Second)
	w.step()
	// Verified again, as batch 3 (this world's runs end at once); the failed run is retried.
	if got := w.verificationsOf(p); got != "1:Successful 2:Failed 3:Successful" || !w.history.Placement(p.String()).Last().Verifications[1].Retried {
		t.Fatalf("history: %s, %+v", got, w.history.Placement(p.String()).Last().Verifications)
	}
	w.expectProgression(p, addonstatus.ReasonUpgradeSucceed, "2/2 upgrade completed", "b", "b", "b")
	for _, c := range []string{"c1", "c2"} {
		w.expectMCA(c, addonstatus.ReasonUpgradeSucceed, "")
	}
}

// A failed verification of an install fails its clusters' installs: InstallFailed, as OCM says.
func TestVerificationFailureFailsAnInstall(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	p := w.placement("p", "a", progressive(intstr.FromInt32(2), clusterv1alpha1.RolloutConfig{}), []string{"c1", "c2", "c3"})
	w.verifyWith(verdicts{"c1,c2": verification.Failed})
	w.step()
	w.agents(succeed, "c1", "c2")
	w.step()
	w.expectProgression(p, addonstatus.ReasonInstallFailed, "failed: c1 (verification failed: metric error-rate Failed)", "a", "", "")
	for _, c := range []string{"c1", "c2"} {
		w.expectMCA(c, addonstatus.ReasonInstallFailed, "install failed: the verification of batch 1 of placement default/p with AnalysisTemplate default/error-rate failed: metric error-rate Failed")
		w.expectSteady(c)
	}
}
