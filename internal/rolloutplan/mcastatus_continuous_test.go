package rolloutplan

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	rollout "open-cluster-management.io/sdk-go/pkg/apis/cluster/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/operations"
	"github.com/addonops/addonops/internal/verification"
)

// The MCA of a cluster a failed continuous verification run judged (mcastatus_continuous.go): an
// MCA that finished b at t1 (finishedB), and continuous run 3 of b, which ended at runEnd.

// crunOf is continuous run n of b that ended at end (its Covers).
func crunOf(n int, phase verification.Phase, end metav1.Time) history.Verification {
	return history.Verification{Batch: n, Clusters: 2, Sample: []string{"c1", "c2"}, Covers: end, Template: "AnalysisTemplate default/background",
		Phase: string(phase), Message: "metric background assessed Failed: last value [0.4]", Started: t1, Finished: end}
}

// continuousOf is b's version record with continuous runs.
func continuousOf(c Config, runs ...history.Verification) history.Version {
	v := versionOf(c)
	v.Continuous = runs
	return v
}

// FailContinuous: the failed reason of the change, a message naming the continuous run and the
// placement, the run's end as the transition time; configs and HealthSoak as they were; once.
func TestFailContinuous(t *testing.T) {
	merged := crunOf(4, verification.Failed, runEnd)
	merged.FirstBatch = 2
	cases := []struct {
		name, done, wantReason, wantMessage string
		run                                 history.Verification
	}{
		{"upgrade", addonstatus.ReasonUpgradeSucceed, addonstatus.ReasonUpgradeFailed,
			"upgrade failed: continuous verification run 3 of placement default/p with AnalysisTemplate default/background failed: metric background assessed Failed: last value [0.4]; the add-on runs the version, the version failed its continuous verification",
			crunOf(3, verification.Failed, runEnd)},
		{"install", addonstatus.ReasonInstallSucceed, addonstatus.ReasonInstallFailed,
			"install failed: continuous verification run 3 of placement default/p with AnalysisTemplate default/background failed: metric background assessed Failed: last value [0.4]; the add-on runs the version, the version failed its continuous verification",
			crunOf(3, verification.Failed, runEnd)},
		{"merged runs", addonstatus.ReasonUpgradeSucceed, addonstatus.ReasonUpgradeFailed,
			"upgrade failed: continuous verification runs 2-4 of placement default/p with AnalysisTemplate default/background failed: metric background assessed Failed: last value [0.4]; the add-on runs the version, the version failed its continuous verification",
			merged},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := finishedB(tc.done)
			st, changed := FailContinuous(m, "default/p", &tc.run)
			c := progressingOf(st)
			if !changed || c.Status != metav1.ConditionFalse || c.Reason != tc.wantReason || c.Message != tc.wantMessage || !c.LastTransitionTime.Equal(&runEnd) {
				t.Fatalf("changed %v, Progressing %+v\nwant %s %q at %s", changed, c, tc.wantReason, tc.wantMessage, runEnd)
			}
			if !equality.Semantic.DeepEqual(st.ConfigReferences, m.Status.ConfigReferences) ||
				!equality.Semantic.DeepEqual(meta.FindStatusCondition(st.Conditions, addonstatus.ConditionHealthSoak), meta.FindStatusCondition(m.Status.Conditions, addonstatus.ConditionHealthSoak)) {
				t.Fatalf("configs or HealthSoak changed: %+v", st)
			}
			if r := RolloutStatus("c1", &addonv1alpha1.ManagedClusterAddOn{Status: st}, []Config{b1}); r.Status != rollout.Failed || !r.LastTransitionTime.Equal(&runEnd) {
				t.Fatalf("rollout status %+v, want Failed at the run's end", r)
			}
			again, changed := FailContinuous(&addonv1alpha1.ManagedClusterAddOn{Status: st}, "default/p", &tc.run)
			if changed || !equality.Semantic.DeepEqual(again, st) {
				t.Fatalf("failed twice: changed %v", changed)
			}
		})
	}
}

// The progress tracker's rule (Track) for continuous runs: an MCA a failed continuous run judged
// (it finished the version by the run's end) keeps its status while the history has the run, not
// retried; anything else is Progress's.
func TestTrackContinuousVerdict(t *testing.T) {
	failed := func() *addonv1alpha1.ManagedClusterAddOn {
		e := crunOf(3, verification.Failed, runEnd)
		st, _ := FailContinuous(finishedB(addonstatus.ReasonUpgradeSucceed), "default/p", &e)
		return &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "c1"}, Status: st}
	}
	retried := crunOf(3, verification.Failed, runEnd)
	retried.Retried = true
	aborted := continuousOf(b1, crunOf(3, verification.Failed, runEnd))
	aborted.Result = history.Aborted
	cases := []struct {
		name string
		mca  *addonv1alpha1.ManagedClusterAddOn
		rec  *history.Record
		kept bool
	}{
		{"a failed run judged it: kept", failed(), recordOf("default/p", continuousOf(b1, crunOf(2, verification.Successful, t1), crunOf(3, verification.Failed, runEnd))), true},
		{"it finished at the run's end (the same second): kept", failed(), recordOf("default/p", continuousOf(b1, crunOf(3, verification.Failed, t1))), true},
		{"the run was retried: recomputed", failed(), recordOf("default/p", continuousOf(b1, retried)), false},
		{"retried, then a run passed: recomputed", failed(), recordOf("default/p", continuousOf(b1, retried, crunOf(4, verification.Successful, runEnd))), false},
		{"the failed run ended before it finished (it was in flight): recomputed", failed(),
			recordOf("default/p", continuousOf(b1, crunOf(3, verification.Failed, t0))), false},
		{"the runs passed (a failure the history does not record): recomputed", failed(),
			recordOf("default/p", continuousOf(b1, crunOf(3, verification.Successful, runEnd))), false},
		{"an inconclusive run: recomputed", failed(), recordOf("default/p", continuousOf(b1, crunOf(3, verification.Inconclusive, runEnd))), false},
		{"another version's failed run: recomputed", failed(), recordOf("default/p", continuousOf(a1, crunOf(3, verification.Failed, runEnd))), false},
		{"no history: recomputed", failed(), nil, false},
		{"the version was aborted, the MCA not moved back yet: kept", failed(), recordOf("default/p", aborted, versionOf(a1)), true},
		{"another placement's run of the version: kept", failed(),
			&history.Record{Addon: "hello", Placements: []history.Placement{{Placement: "default/p", Versions: []history.Version{versionOf(a1)}},
				{Placement: "default/q", Versions: []history.Version{continuousOf(b1, crunOf(3, verification.Failed, runEnd))}}}}, true},
		{"a succeeded MCA: the decision fails it, not the tracker", finishedB(addonstatus.ReasonUpgradeSucceed),
			recordOf("default/p", continuousOf(b1, crunOf(3, verification.Failed, runEnd))), false},
	}
	now := metav1.NewTime(runEnd.Add(time.Minute))
	gate := Gate{Checked: true}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, recheck := Track(tc.mca, readyB(), gate, func() *history.Record { return tc.rec }, now)
			if tc.kept {
				if recheck != 0 || !equality.Semantic.DeepEqual(st, tc.mca.Status) {
					t.Fatalf("status changed (recheck %s):\n got %+v\nwant %+v", recheck, st, tc.mca.Status)
				}
				return
			}
			want, wantRecheck := Progress(tc.mca, readyB(), gate, now)
			if recheck != wantRecheck || !equality.Semantic.DeepEqual(st, want) {
				t.Fatalf("Track is not Progress:\n got %+v\nwant %+v", st, want)
			}
			if c := progressingOf(st); c.Reason != addonstatus.ReasonUpgradeSucceed {
				t.Fatalf("Progressing %+v, want reason %s", c, addonstatus.ReasonUpgradeSucceed)
			}
		})
	}
}

// A continuous run that fails mid-rollout (no auto-abort): the clusters told the version that had
// finished it by the run's end are failed in their MCAs (UpgradeFailed naming the run, at its end),
// once, and neither writer takes it back; a cluster told the version but still in flight then
// counts as failed in the progression while its MCA follows its agent (UpgradeSucceed), without
// flapping either. A retry recomputes them; the rollout completes.
func TestContinuousVerificationFailureOnTheMCA(t *testing.T) {
	v, cv := verdicts{"c1": verification.Successful, "c2": verification.Successful, "c3": verification.Successful}, continuousVerdicts{1: verification.Successful}
	w, p := continuousWorld(t, v, cv)
	w.agent("c1", succeed)
	w.step()
	w.advance(time.Second)
	w.step()
	w.expectStates("c1=b/b/T c2=b/a/T c3=a/a/F")
	w.advance(time.Minute)
	w.step()
	w.expectContinuous("default/p~2:c1,c2" + bg)
	cv[2] = verification.Failed
	runEnded := Now(w.now)
	w.step()
	if got := w.continuousOf(p); got != "1:Successful 2:Failed" {
		t.Fatalf("history: %s", got)
	}
	w.expectProgression(p, addonstatus.ReasonUpgradeFailed, "failed: c1 (continuous verification failed: run 2 of AnalysisTemplate default/background: metric background Failed), c2 (continuous verification failed: run 2", "b", "a", "a")
	w.expectMCA("c1", addonstatus.ReasonUpgradeFailed, "upgrade failed: continuous verification run 2 of placement default/p with AnalysisTemplate default/background failed: metric background Failed; the add-on runs the version, the version failed its continuous verification")
	if c := meta.FindStatusCondition(w.mcas["c1"].Status.Conditions, addonstatus.ConditionProgressing); !c.LastTransitionTime.Equal(&runEnded) {
		t.Fatalf("c1 failed at %s, want the run's end %s", c.LastTransitionTime, runEnded)
	}
	w.expectSteady("c1")
	// c2 was told the version, in flight when the run ended: it finishes afterwards, its MCA says so.
	w.advance(time.Second)
	w.agent("c2", succeed)
	w.step()
	w.expectMCA("c2", addonstatus.ReasonUpgradeSucceed, "")
	w.expectSteady("c2")
	w.expectSteady("c1")
	w.expectStates("c1=b/b/T c2=b/b/T c3=a/a/F")
	w.expectProgression(p, addonstatus.ReasonUpgradeFailed, "c2 (continuous verification failed: run 2", "b", "a", "a")

	// A person retries: the failed run no longer counts, c1's MCA is recomputed, the runs and the
	// rollout go on.
	cv[3], cv[4], cv[5] = verification.Successful, verification.Successful, verification.Successful
	w.advance(time.Minute)
	w.annotateAs("addonops-cli", operations.RetryAnnotation, operations.FormatMap(map[canary.PlacementKey]string{canary.PlacementKey(p): "r1"}))
	w.step()
	if c := ProgressingOf(w.progression(p)); c.Reason == addonstatus.ReasonUpgradeFailed {
		t.Fatalf("still failed after the retry: %+v", c)
	}
	w.recheck("c1")
	if c := meta.FindStatusCondition(w.mcas["c1"].Status.Conditions, addonstatus.ConditionProgressing); c.Reason == addonstatus.ReasonUpgradeFailed {
		t.Fatalf("c1 still failed after the retry: %+v", c)
	}
	w.settle()
	w.expectProgression(p, addonstatus.ReasonUpgradeSucceed, "3/3 upgrade completed", "b", "b", "b")
	for _, c := range []string{"c1", "c2", "c3"} {
		w.expectMCA(c, addonstatus.ReasonUpgradeSucceed, "")
	}
	if cs := w.history.Placement(p.String()).Last().Continuous; len(cs) < 2 || !cs[1].Retried {
		t.Fatalf("continuous runs %+v: want run 2 retried", cs)
	}
}

// With minSuccessTime, a cluster soaking when a continuous run fails ran the version by the run's
// end (its soak counts from when it began, as a batch's run judges it): its MCA is failed once the
// soak passes, once, and stays failed.
func TestContinuousVerificationFailureDuringTheSoak(t *testing.T) {
	cv := continuousVerdicts{}
	w := newWorld(t)
	w.config("a")
	w.config("b")
	p := w.placement("p", "a", progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{MinSuccessTime: metav1.Duration{Duration: time.Minute}}), []string{"c1", "c2"})
	w.installAll()
	w.advance(2 * time.Minute)
	w.verifyContinuously(verdicts{}, cv)
	w.setConfig(p, "b")
	w.step()
	w.agent("c1", succeed)
	w.step()
	w.expectContinuous("default/p~1:c1" + bg)
	w.advance(10 * time.Second)
	cv[1] = verification.Failed
	w.step()
	if got := w.continuousOf(p); got != "1:Failed" {
		t.Fatalf("history: %s", got)
	}
	// Soaking: not finished, its MCA is its agent's.
	if addonstatus.Applied(w.mcas["c1"]) {
		t.Fatalf("c1 finished before its soak passed: %+v", w.mcas["c1"].Status.Conditions)
	}
	w.expectProgression(p, addonstatus.ReasonUpgradeFailed, "c1 (continuous verification failed: run 1", "b", "a", "a")
	for range 3 {
		w.advance(30 * time.Second)
		w.recheck("c1")
		w.step()
	}
	w.expectMCA("c1", addonstatus.ReasonUpgradeFailed, "upgrade failed: continuous verification run 1 of placement default/p")
	w.expectSteady("c1")
	w.expectStates("c1=b/b/T c2=a/a/F")
}

// The decision's rule (continuousState.failMCA): it writes the failure once, for a cluster told the
// version that finished it by the failed run's end, and only when the history records the version.
func TestContinuousFailMCA(t *testing.T) {
	failedRun := crunOf(3, verification.Failed, runEnd)
	state := func(mod func(*continuousState)) *continuousState {
		s := &continuousState{known: true, told: []string{"c1", "c2"}, entries: []history.Verification{crunOf(2, verification.Successful, t1), failedRun}}
		s.failed = &s.entries[1]
		if mod != nil {
			mod(s)
		}
		return s
	}
	alreadyFailed := func() *addonv1alpha1.ManagedClusterAddOn {
		st, _ := FailContinuous(finishedB(addonstatus.ReasonUpgradeSucceed), "default/p", &failedRun)
		return &addonv1alpha1.ManagedClusterAddOn{Status: st}
	}
	cases := []struct {
		name    string
		s       *continuousState
		cluster string
		mca     *addonv1alpha1.ManagedClusterAddOn
		write   bool
	}{
		{"told, finished by the run's end: written", state(nil), "c1", finishedB(addonstatus.ReasonUpgradeSucceed), true},
		{"the history does not record the version yet: not written", state(func(s *continuousState) { s.known = false }), "c1", finishedB(addonstatus.ReasonUpgradeSucceed), false},
		{"not told the version: not written", state(nil), "c3", finishedB(addonstatus.ReasonUpgradeSucceed), false},
		{"finished after the run's end: not written", state(func(s *continuousState) { s.entries[1].Covers = t0; s.failed = &s.entries[1] }), "c1", finishedB(addonstatus.ReasonUpgradeSucceed), false},
		{"no failed run: not written", state(func(s *continuousState) { s.entries = s.entries[:1]; s.failed = nil }), "c1", finishedB(addonstatus.ReasonUpgradeSucceed), false},
		{"its MCA says so already: not written again", state(nil), "c1", alreadyFailed(), false},
		{"no continuous verification: not written", nil, "c1", finishedB(addonstatus.ReasonUpgradeSucceed), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, ok := tc.s.failMCA(tc.cluster, tc.mca, PlacementKey{Namespace: "default", Name: "p"})
			if ok != tc.write {
				t.Fatalf("written %v, want %v", ok, tc.write)
			}
			if ok {
				if c := progressingOf(st); c.Reason != addonstatus.ReasonUpgradeFailed || !c.LastTransitionTime.Equal(&runEnd) {
					t.Fatalf("Progressing %+v, want UpgradeFailed at the run's end", c)
				}
			}
		})
	}
}
