package rolloutplan

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/operations"
	"github.com/addonops/addonops/internal/verification"
)

// Continuous verification (continuous.go).

var cnow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func crun(n int, phase verification.Phase, finished time.Time) history.Verification {
	return history.Verification{Batch: n, Phase: string(phase), Finished: metav1.NewTime(finished), Started: metav1.NewTime(finished.Add(-10 * time.Second))}
}

// describeContinuous sums up a decision: "request 2 | record 1:Successful | failed 1 |
// inconclusive 1 | promoted [1] | wait 1m0s | entries 1:Successful".
func describeContinuous(s *continuousState) string {
	if s == nil {
		return "inactive"
	}
	var parts []string
	if s.request != nil {
		parts = append(parts, fmt.Sprintf("request %d:%s", s.request.Continuous, strings.Join(s.request.Clusters, ",")))
	}
	if s.recorded != nil {
		parts = append(parts, fmt.Sprintf("record %d:%s", s.recorded.Batch, s.recorded.Phase))
	}
	if s.failed != nil {
		parts = append(parts, fmt.Sprintf("failed %d", s.failed.Batch))
	}
	if s.inconclusive != nil {
		parts = append(parts, fmt.Sprintf("inconclusive %d", s.inconclusive.Batch))
	}
	if len(s.promoted) > 0 {
		parts = append(parts, fmt.Sprintf("promoted %v", s.promoted))
	}
	if s.wait > 0 {
		parts = append(parts, "wait "+s.wait.String())
	}
	var es []string
	for _, e := range s.entries {
		x := fmt.Sprintf("%d:%s", e.Batch, e.Phase)
		if e.Promoted {
			x += ":promoted"
		}
		if e.Retried {
			x += ":retried"
		}
		es = append(es, x)
	}
	if len(es) > 0 {
		parts = append(parts, "entries "+strings.Join(es, " "))
	}
	if s.changed {
		parts = append(parts, "changed")
	}
	return strings.Join(parts, " | ")
}

// The decision for every state of a placement's continuous verification: not started, running,
// passed (waiting for the interval, then due), failed, inconclusive, promoted, retried, paused,
// completed and aborted (inactive: the caller gives active=false for a version that completed, is
// aborted or rolled back).
func TestDecideContinuous(t *testing.T) {
	told := []string{"c1", "c2"}
	ended := map[int]verification.Result{}
	lookup := func(b verification.Batch) (verification.Result, bool) {
		r, ok := ended[b.Continuous]
		return r, ok
	}
	result := func(p verification.Phase) verification.Result {
		return verification.Result{Phase: p, Message: "metric bg " + string(p), Started: cnow.Add(-time.Minute), Finished: cnow.Add(-time.Second)}
	}
	retried := metav1.NewTime(cnow.Add(-time.Minute))
	for _, tc := range []struct {
		name     string
		inactive bool
		paused   bool
		told     []string
		entries  []history.Verification
		ended    map[int]verification.Result
		promote  bool
		retried  *metav1.Time
		want     string
	}{
		{name: "not started: no cluster told the version", want: ""},
		{name: "not started, a run of an earlier decision stands", entries: []history.Verification{crun(1, verification.Successful, cnow.Add(-time.Hour))}, want: "entries 1:Successful"},
		{name: "first run asked for", told: told, want: "request 1:c1,c2"},
		{name: "running: asked for again, with the clusters told since", told: []string{"c1", "c2", "c3"}, want: "request 1:c1,c2,c3"},
		{name: "running while paused: no new run", told: told, paused: true, want: ""},
		{name: "passed: recorded, the next waits for the interval", told: told, ended: map[int]verification.Result{1: result(verification.Successful)}, want: "record 1:Successful | wait 1m0s | entries 1:Successful | changed"},
		{name: "passed, within the interval", told: told, entries: []history.Verification{crun(1, verification.Successful, cnow.Add(-20*time.Second))}, want: "wait 40s | entries 1:Successful"},
		{name: "passed, interval over: the next run", told: told, entries: []history.Verification{crun(1, verification.Successful, cnow.Add(-time.Minute))}, want: "request 2:c1,c2 | entries 1:Successful"},
		{name: "passed, interval over, paused: no new run", told: told, paused: true, entries: []history.Verification{crun(1, verification.Successful, cnow.Add(-time.Minute))}, want: "entries 1:Successful"},
		{name: "passed while paused: still recorded", told: told, paused: true, entries: []history.Verification{crun(1, verification.Successful, cnow.Add(-2*time.Minute))}, ended: map[int]verification.Result{2: result(verification.Successful)}, want: "record 2:Successful | wait 1m0s | entries 1:Successful 2:Successful | changed"},
		{name: "failed: recorded, stands", told: told, entries: []history.Verification{crun(1, verification.Successful, cnow.Add(-2*time.Minute))}, ended: map[int]verification.Result{2: result(verification.Failed)}, want: "record 2:Failed | failed 2 | entries 1:Successful 2:Failed | changed"},
		{name: "failed earlier: no further run", told: told, entries: []history.Verification{crun(1, verification.Failed, cnow.Add(-time.Hour))}, want: "failed 1 | entries 1:Failed"},
		{name: "failed, promote does not pass it", told: told, promote: true, entries: []history.Verification{crun(1, verification.Failed, cnow.Add(-time.Hour))}, want: "failed 1 | entries 1:Failed"},
		{name: "failed, then retried: runs again", told: told, retried: &retried, entries: []history.Verification{crun(1, verification.Failed, cnow.Add(-time.Hour))}, want: "request 2:c1,c2 | entries 1:Failed:retried | changed"},
		{name: "inconclusive: recorded, holds", told: told, ended: map[int]verification.Result{1: result(verification.Inconclusive)}, want: "record 1:Inconclusive | inconclusive 1 | entries 1:Inconclusive | changed"},
		{name: "inconclusive earlier: holds, no further run", told: told, entries: []history.Verification{crun(1, verification.Inconclusive, cnow.Add(-time.Hour))}, want: "inconclusive 1 | entries 1:Inconclusive"},
		{name: "inconclusive, promoted: the next run", told: told, promote: true, entries: []history.Verification{crun(1, verification.Inconclusive, cnow.Add(-time.Hour))}, want: "request 2:c1,c2 | promoted [1] | entries 1:Inconclusive:promoted | changed"},
		{name: "inconclusive as a promote stands: passed at once", told: told, promote: true, entries: []history.Verification{crun(1, verification.Inconclusive, cnow.Add(-time.Hour)), crun(2, verification.Successful, cnow.Add(-time.Hour))}, ended: map[int]verification.Result{3: result(verification.Inconclusive)}, want: "record 3:Inconclusive | promoted [1] | wait 1m0s | entries 1:Inconclusive:promoted 2:Successful 3:Inconclusive:promoted | changed"},
		{name: "inconclusive, retried: runs again", told: told, retried: &retried, entries: []history.Verification{crun(1, verification.Inconclusive, cnow.Add(-time.Hour))}, want: "request 2:c1,c2 | entries 1:Inconclusive:retried | changed"},
		{name: "a retry before the run ended leaves it standing", told: told, retried: &retried, entries: []history.Verification{crun(1, verification.Failed, cnow)}, want: "failed 1 | entries 1:Failed"},
		{name: "completed or aborted: inactive", inactive: true, told: told, entries: []history.Verification{crun(1, verification.Failed, cnow)}, ended: map[int]verification.Result{2: result(verification.Successful)}, want: "inactive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ended = tc.ended
			s := decideContinuous(continuousInput{
				now: cnow, active: !tc.inactive, paused: tc.paused, every: time.Minute, told: tc.told, entries: tc.entries,
				promote: tc.promote, retriedAt: tc.retried, lookup: lookup, template: "AnalysisTemplate default/bg",
				batch: func(n int, told []string) verification.Batch {
					return verification.NewContinuousBatch("addon", "default/p", "v1", n, told)
				},
			})
			if got := describeContinuous(s); got != tc.want {
				t.Fatalf("\n got %s\nwant %s", got, tc.want)
			}
			if tc.inactive {
				return
			}
			if s.holds() != (s.inconclusive != nil) {
				t.Fatalf("holds %v with inconclusive %v", s.holds(), s.inconclusive)
			}
			for _, c := range tc.told {
				if _, ok := s.failedBy(c); ok != (s.failed != nil) {
					t.Fatalf("failedBy(%s) = %v with failed %v", c, ok, s.failed)
				}
			}
			if _, ok := s.failedBy("not-told"); ok {
				t.Fatalf("a cluster not told the version fails")
			}
		})
	}
}

// continuousVerdicts are the world's runner for continuous runs: a verdict by run number; a run
// without one is still running.
type continuousVerdicts map[int]verification.Phase

// verifyContinuously verifies every placement's batches with error-rate (verdicts in v) and
// continuously with background every minute (verdicts in cv).
func (w *world) verifyContinuously(v verdicts, cv continuousVerdicts) {
	w.verifyWith(v)
	w.cma.Annotations[verification.Annotation] = `[{"placement": "*", "template": "error-rate", "continuous": {"template": "background", "interval": "1m"}}]`
	batches := w.verifications
	w.verifications = func(b verification.Batch) (verification.Result, bool) {
		if b.Continuous == 0 {
			return batches(b)
		}
		p, ok := cv[b.Continuous]
		if !ok {
			return verification.Result{}, false
		}
		return verification.Result{Phase: p, Message: "metric background " + string(p), Started: w.now.Add(-time.Second), Finished: w.now}, true
	}
}

// continuousRequested lists the continuous runs the last decision asked for: "default/p~1:c1,c2".
func (w *world) continuousRequested() string {
	var out []string
	for _, r := range w.lastPlan.Verify {
		if r.Batch.Continuous > 0 {
			out = append(out, fmt.Sprintf("%s~%d:%s (%s)", r.Batch.Placement, r.Batch.Continuous, strings.Join(r.Batch.Clusters, ","), r.Template))
		}
	}
	return strings.Join(out, " ")
}

func (w *world) expectContinuous(want string) {
	w.t.Helper()
	if got := w.continuousRequested(); got != want {
		w.t.Fatalf("continuous runs asked for: %q, want %q", got, want)
	}
}

// continuousOf sums up the history's continuous runs of p's last version: "1:Successful 2:Failed".
func (w *world) continuousOf(k PlacementKey) string {
	var out []string
	for _, v := range w.history.Placement(k.String()).Last().Continuous {
		s := itoa(v.Batch) + ":" + v.Phase
		if v.Promoted {
			s += ":promoted"
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

const bg = " (AnalysisTemplate default/background)"

// continuousWorld: p (c1..c3, one cluster at a time, maxFailures 0) at a, verified batch by batch
// and continuously; moved to b, c1 told it.
func continuousWorld(t *testing.T, v verdicts, cv continuousVerdicts) (*world, PlacementKey) {
	w := newWorld(t)
	w.config("a")
	w.config("b")
	p := w.placement("p", "a", progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{}), []string{"c1", "c2", "c3"})
	w.installAll()
	w.verifyContinuously(v, cv)
	w.setConfig(p, "b")
	w.step()
	w.expectStates("c1=b/a/T c2=a/a/F c3=a/a/F")
	return w, p
}

// While a placement rolls out a version, the continuous template runs over the clusters told it
// so far, one run at a time, a minute after the previous ended; the runs stop when the version
// completes.
func TestContinuousVerificationRunsWhileRollingOut(t *testing.T) {
	v, cv := verdicts{}, continuousVerdicts{}
	w, p := continuousWorld(t, v, cv)
	// c1 was told the version in the last decision; the run starts from the next one.
	w.step()
	w.expectContinuous("default/p~1:c1" + bg)
	w.agent("c1", succeed)
	w.step()
	w.expectRequested("default/p#1:c1")
	w.expectContinuous("default/p~1:c1" + bg)
	cv[1] = verification.Successful
	v["c1"] = verification.Successful
	w.step()
	if n := w.eventCount("VerificationPassed"); n != 1 { // the batch's; a continuous run that passes has none
		t.Fatalf("%d VerificationPassed events", n)
	}
	w.advance(time.Second) // the batch's run settles (verify.go)
	w.step()
	w.expectStates("c1=b/b/T c2=b/a/T c3=a/a/F")
	w.expectContinuous("")
	if got := w.continuousOf(p); got != "1:Successful" {
		t.Fatalf("history: %s", got)
	}
	w.advance(29 * time.Second)
	w.step()
	w.expectContinuous("")
	w.advance(30 * time.Second)
	w.step()
	// Run 2 over every cluster told the version: c1 done, c2 in flight.
	w.expectContinuous("default/p~2:c1,c2" + bg)
	w.agent("c2", succeed)
	w.step()
	w.expectContinuous("default/p~2:c1,c2" + bg)
	cv[2] = verification.Successful
	v["c2"] = verification.Successful
	w.step()
	w.advance(time.Minute)
	w.step()
	// c3 is told the version in this decision: run 3 starts over c1 and c2; the decision asks for
	// the same run with c3 once it was told, which starts no second run (verification.Batch.Key).
	w.expectContinuous("default/p~3:c1,c2" + bg)
	w.expectStates("c1=b/b/T c2=b/b/T c3=b/a/T")
	w.agent("c3", succeed)
	w.step()
	w.expectContinuous("default/p~3:c1,c2,c3" + bg)
	v["c3"] = verification.Successful
	w.step()
	w.expectProgression(p, addonstatus.ReasonUpgradeSucceed, "3/3 upgrade completed", "b", "b", "b")
	// Run 3 still runs; the version completed: nothing is asked for again, its end changes nothing.
	cv[3] = verification.Failed
	w.advance(time.Hour)
	w.step()
	w.expectContinuous("")
	w.expectProgression(p, addonstatus.ReasonUpgradeSucceed, "3/3 upgrade completed", "b", "b", "b")
	if got := w.continuousOf(p); got != "1:Successful 2:Successful" {
		t.Fatalf("history: %s", got)
	}
}

// A failed continuous run mid-rollout fails every cluster told the version: past maxFailures the
// rollout stops, and auto-abort returns them to the last known good version; the clusters not
// told never get it.
func TestContinuousVerificationFailureStopsTheRollout(t *testing.T) {
	for _, autoAbort := range []bool{false, true} {
		t.Run(map[bool]string{false: "stops", true: "auto-abort"}[autoAbort], func(t *testing.T) {
			v, cv := verdicts{"c1": verification.Successful}, continuousVerdicts{1: verification.Successful}
			w, p := continuousWorld(t, v, cv)
			if autoAbort {
				w.cma.Annotations[operations.AutoAbortAnnotation] = "true"
			}
			w.agent("c1", succeed)
			w.step()
			w.advance(time.Second)
			w.step()
			w.expectStates("c1=b/b/T c2=b/a/T c3=a/a/F")
			w.advance(time.Minute)
			w.step()
			w.expectContinuous("default/p~2:c1,c2" + bg)
			cv[2] = verification.Failed
			w.step()
			w.expectEvent("VerificationFailed", "placement default/p: continuous verification run 2 of version "+versionID([]Config{cfgOf("b")})+" (2 clusters told it: c1, c2) with AnalysisTemplate default/background failed: metric background Failed; every cluster told the version counts as failed")
			if got := w.continuousOf(p); got != "1:Successful 2:Failed" {
				t.Fatalf("history: %s", got)
			}
			if !autoAbort {
				w.expectProgression(p, addonstatus.ReasonUpgradeFailed, "upgrade stopped: more clusters failed than maxFailures allows; 0/3 clusters done, 0 in progress, 2 failed, 0 timed out; failed: c1 (continuous verification failed: run 2 of AnalysisTemplate default/background: metric background Failed), c2 (continuous verification failed: run 2", "b", "a", "a")
				for range 3 {
					w.agent("c2", succeed)
					w.advance(time.Hour)
					w.step()
					w.expectContinuous("")
				}
				w.expectStates("c1=b/b/T c2=b/b/T c3=a/a/F")
				w.expectVersions(p, "a:Superseded:c b:Failed")
				return
			}
			w.expectProgression(p, addonstatus.ReasonAborting, "aborted automatically: more clusters failed than maxFailures allows", "b", "a", "a")
			w.settle()
			w.expectProgression(p, addonstatus.ReasonAborted, "3/3 clusters are back on", "b", "a", "a")
			w.expectStates("c1=a/a/T c2=a/a/T c3=a/a/T")
			w.expectVersions(p, "a:Superseded:c b:Aborted")
			w.expectContinuous("")
		})
	}
}

// An inconclusive continuous run holds the placement for a person: no new cluster starts, no new
// run; promote lets the rollout and the runs go on, retry runs again, abort reverts the version.
func TestContinuousVerificationInconclusive(t *testing.T) {
	for _, act := range []string{"promote", "retry", "abort"} {
		t.Run(act, func(t *testing.T) {
			v, cv := verdicts{"c1": verification.Successful, "c2": verification.Successful, "c3": verification.Successful}, continuousVerdicts{}
			w, p := continuousWorld(t, v, cv)
			w.agent("c1", succeed)
			w.step()
			w.expectContinuous("default/p~1:c1" + bg)
			cv[1] = verification.Inconclusive
			w.step()
			w.expectEvent("VerificationInconclusive", "continuous verification run 1 of version")
			w.expectProgression(p, addonstatus.ReasonVerificationInconclusive, "continuous verification run 1 of version "+versionID([]Config{cfgOf("b")})+" (1 clusters told it: c1) with AnalysisTemplate default/background was inconclusive: metric background Inconclusive; no new cluster starts", "b", "a", "a")
			if c := ProgressingOf(w.progression(p)); c.Status != metav1.ConditionFalse || addonstatus.ClassOf(c.Status, c.Reason) != addonstatus.ClassSuspended {
				t.Fatalf("condition %+v: want Progressing=False, Suspended", c)
			}
			for range 3 {
				w.advance(time.Hour)
				w.step()
				w.expectStates("c1=b/b/T c2=a/a/F c3=a/a/F")
				w.expectContinuous("")
			}
			id := versionID([]Config{cfgOf("b")})
			switch act {
			case "promote":
				w.annotateAs("addonops-cli", operations.PromoteAnnotation, operations.FormatMap(map[canary.PlacementKey]string{canary.PlacementKey(p): id}))
				w.step()
				w.expectEvent("VerificationPromoted", "a person passed the inconclusive continuous verification run(s) [1]")
				w.expectStates("c1=b/b/T c2=b/a/T c3=a/a/F")
				w.expectContinuous("default/p~2:c1" + bg)
				cv[2] = verification.Successful
				w.step()
				if got := w.continuousOf(p); got != "1:Inconclusive:promoted 2:Successful" {
					t.Fatalf("history: %s", got)
				}
				w.settle()
				w.expectProgression(p, addonstatus.ReasonUpgradeSucceed, "3/3 upgrade completed", "b", "b", "b")
			case "retry":
				w.annotateAs("addonops-cli", operations.RetryAnnotation, operations.FormatMap(map[canary.PlacementKey]string{canary.PlacementKey(p): "1"}))
				w.step()
				w.expectContinuous("default/p~2:c1" + bg)
				w.expectStates("c1=b/b/T c2=b/a/T c3=a/a/F")
			case "abort":
				w.annotateAs("addonops-cli", operations.AbortAnnotation, operations.FormatMap(map[canary.PlacementKey]string{canary.PlacementKey(p): id}))
				w.step()
				w.expectContinuous("")
				w.settle()
				w.expectProgression(p, addonstatus.ReasonAborted, "3/3 clusters are back on", "b", "a", "a")
			}
		})
	}
}

// No new continuous run starts while the placement is paused; it runs again when resumed.
func TestContinuousVerificationPaused(t *testing.T) {
	v, cv := verdicts{}, continuousVerdicts{1: verification.Successful}
	w, p := continuousWorld(t, v, cv)
	w.step()
	if got := w.continuousOf(p); got != "1:Successful" {
		t.Fatalf("history: %s", got)
	}
	w.annotateAs("addonops-cli", operations.PauseAnnotation, p.String())
	for range 3 {
		w.advance(time.Hour)
		w.step()
		w.expectContinuous("")
	}
	delete(w.cma.Annotations, operations.PauseAnnotation)
	w.step()
	w.expectContinuous("default/p~2:c1" + bg)
}

// A canary placement's continuous run that fails while its batch is being verified fails the
// canary: the placements it gates never adopt the version.
func TestContinuousVerificationFailsTheCanary(t *testing.T) {
	v, cv := verdicts{}, continuousVerdicts{}
	w, aws, canaryKey := canaryWorld(t)
	w.installAll()
	w.verifyContinuously(v, cv)
	w.cma.Annotations[verification.Annotation] = `[{"placement": "default/canary", "template": "error-rate", "continuous": {"template": "background"}}]`
	w.setConfig(aws, "b")
	w.setConfig(canaryKey, "b")
	w.step()
	w.step()
	w.expectContinuous("default/canary~1:k1,k2" + bg)
	w.agents(succeed, "k1", "k2")
	w.step()
	w.expectRequested("default/canary#1:k1,k2")
	cv[1] = verification.Failed
	w.step()
	w.expectProgression(canaryKey, addonstatus.ReasonUpgradeFailed, "failed: k1 (continuous verification failed: run 1 of AnalysisTemplate default/background: metric background Failed)", "b", "a", "a")
	// The batch's run ends after the continuous one failed its clusters: they are no batch to
	// verify any more, its result changes nothing.
	v["k1,k2"] = verification.Successful
	for range 3 {
		w.advance(time.Hour)
		w.step()
	}
	w.expectProgression(canaryKey, addonstatus.ReasonUpgradeFailed, "", "b", "a", "a")
	w.expectStates("c1=a/a/T c2=a/a/T c3=a/a/T c4=a/a/T k1=b/b/T k2=b/b/T")
	w.expectProgression(aws, addonstatus.ReasonWaitingForCanary, "", "b", "a", "a")
	w.expectRequested("")
}
