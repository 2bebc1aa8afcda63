package rolloutplan

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"
	rollout "open-cluster-management.io/sdk-go/pkg/apis/cluster/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/verification"
)

// The MCA of a cluster a failed verification judged (mcastatus_verify.go): an MCA that finished b
// (its health soak began at t1), its works ready and its add-on healthy, and a run of b.

// finishedB is an MCA that finished upgrading to b: its health soak began at t1 and passed.
func finishedB(done string) *addonv1alpha1.ManagedClusterAddOn {
	m := mca([]addonv1alpha1.ConfigReference{ref(&b1, &b1)},
		cond(addonstatus.ConditionConfigured, "True", addonstatus.ReasonConfigured, t0),
		cond(addonstatus.ConditionProgressing, "False", done, t1),
		cond(addonstatus.ConditionHealthSoak, "True", addonstatus.ReasonSoaked, t1),
		cond(addonstatus.ConditionManifestApplied, "True", "AddonManifestApplied", t0),
		cond(addonstatus.ConditionAvailable, "True", "ProbeAvailable", t0))
	return m
}

// readyB are the works of b, applied and available.
func readyB() []*workv1.ManifestWork {
	return []*workv1.ManifestWork{work("addon-hello-deploy-0", 2, annB, wcond(workv1.WorkApplied, "True", 2), wcond(workv1.WorkAvailable, "True", 2))}
}

var runEnd = metav1.NewTime(t1.Add(30 * time.Second))

// run is batch 2 of b's verification, covering clusters that finished by covers.
func run(phase verification.Phase, covers metav1.Time) history.Verification {
	return history.Verification{Batch: 2, Clusters: 2, Sample: []string{"c1", "c2"}, Covers: covers, Template: "AnalysisTemplate default/error-rate",
		Phase: string(phase), Message: "metric error-rate assessed Failed: last value [0.4]", Started: t1, Finished: runEnd}
}

// recordOf is a history in which placement default/p ran the versions given (configs, runs).
func recordOf(placement string, versions ...history.Version) *history.Record {
	return &history.Record{Addon: "hello", Placements: []history.Placement{{Placement: placement, Versions: versions}}}
}

func versionOf(c Config, runs ...history.Verification) history.Version {
	cfgs := toHistory([]Config{c})
	return history.Version{ID: history.VersionID(cfgs), Configs: cfgs, Kind: "Upgrade", Result: history.InProgress, Verifications: runs}
}

func progressingOf(st addonv1alpha1.ManagedClusterAddOnStatus) metav1.Condition {
	return *meta.FindStatusCondition(st.Conditions, addonstatus.ConditionProgressing)
}

// FailVerified: the failed reason of the change, a message naming the run, the run's end as the
// transition time; configs, lastApplied and HealthSoak as they were; once.
func TestFailVerified(t *testing.T) {
	merged := run(verification.Failed, t1)
	merged.FirstBatch, merged.Batch = 1, 3
	cases := []struct {
		name, done, wantReason, wantMessage string
		run                                 history.Verification
	}{
		{"upgrade", addonstatus.ReasonUpgradeSucceed, addonstatus.ReasonUpgradeFailed,
			"upgrade failed: the verification of batch 2 of placement default/p with AnalysisTemplate default/error-rate failed: metric error-rate assessed Failed: last value [0.4]; the add-on runs the version, the version failed its verification",
			run(verification.Failed, t1)},
		{"install", addonstatus.ReasonInstallSucceed, addonstatus.ReasonInstallFailed,
			"install failed: the verification of batch 2 of placement default/p with AnalysisTemplate default/error-rate failed: metric error-rate assessed Failed: last value [0.4]; the add-on runs the version, the version failed its verification",
			run(verification.Failed, t1)},
		{"merged runs", addonstatus.ReasonUpgradeSucceed, addonstatus.ReasonUpgradeFailed,
			"upgrade failed: the verification of batches 1-3 of placement default/p with AnalysisTemplate default/error-rate failed: metric error-rate assessed Failed: last value [0.4]; the add-on runs the version, the version failed its verification",
			merged},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := finishedB(tc.done)
			st, changed := FailVerified(m, "default/p", &tc.run)
			c := progressingOf(st)
			if !changed || c.Status != metav1.ConditionFalse || c.Reason != tc.wantReason || c.Message != tc.wantMessage || !c.LastTransitionTime.Equal(&runEnd) {
				t.Fatalf("changed %v, Progressing %+v\nwant %s %q at %s", changed, c, tc.wantReason, tc.wantMessage, runEnd)
			}
			if !equality.Semantic.DeepEqual(st.ConfigReferences, m.Status.ConfigReferences) ||
				!equality.Semantic.DeepEqual(meta.FindStatusCondition(st.Conditions, addonstatus.ConditionHealthSoak), meta.FindStatusCondition(m.Status.Conditions, addonstatus.ConditionHealthSoak)) {
				t.Fatalf("configs or HealthSoak changed: %+v", st)
			}
			if addonstatus.Applied(&addonv1alpha1.ManagedClusterAddOn{Status: st}) {
				t.Fatalf("a failed MCA reads as applied")
			}
			if r := RolloutStatus("c1", &addonv1alpha1.ManagedClusterAddOn{Status: st}, []Config{b1}); r.Status != rollout.Failed || !r.LastTransitionTime.Equal(&runEnd) {
				t.Fatalf("rollout status %+v, want Failed at the run's end", r)
			}
			again, changed := FailVerified(&addonv1alpha1.ManagedClusterAddOn{Status: st}, "default/p", &tc.run)
			if changed || !equality.Semantic.DeepEqual(again, st) {
				t.Fatalf("failed twice: changed %v", changed)
			}
		})
	}
}

// The progress tracker's rule (Track): an MCA a failed run judged keeps its status as long as the
// version history says so; anything else is Progress's.
func TestTrackVerificationVerdict(t *testing.T) {
	failed := func() *addonv1alpha1.ManagedClusterAddOn {
		e := run(verification.Failed, t1)
		st, _ := FailVerified(finishedB(addonstatus.ReasonUpgradeSucceed), "default/p", &e)
		return &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "c1"}, Status: st}
	}
	retried := run(verification.Failed, t1)
	retried.Retried = true
	aborted := versionOf(b1, run(verification.Failed, t1))
	aborted.Result = history.Aborted
	unhealthyFailure := func() *addonv1alpha1.ManagedClusterAddOn {
		// Failed for staying unhealthy (FailUnhealthy): its soak never passed.
		m := finishedB(addonstatus.ReasonUpgradeFailed)
		meta.SetStatusCondition(&m.Status.Conditions, cond(addonstatus.ConditionHealthSoak, "False", addonstatus.ReasonNotHealthy, t1))
		return m
	}
	cases := []struct {
		name string
		mca  *addonv1alpha1.ManagedClusterAddOn
		rec  *history.Record
		// kept: Track returns the MCA's status as it is; else what Progress computes, with
		// Progressing reason wantReason.
		kept       bool
		wantReason string
		// readsHistory: the history is read at all (only for an MCA that can be judged).
		readsHistory bool
	}{
		{"a failed run judged it: kept", failed(), recordOf("default/p", versionOf(b1, run(verification.Failed, t1))), true, "", true},
		{"a later batch's run covers it too: the first covering one judged it", failed(),
			recordOf("default/p", versionOf(b1, run(verification.Failed, t1), func() history.Verification { e := run(verification.Successful, runEnd); e.Batch = 3; return e }())), true, "", true},
		{"the run was retried: recomputed, a healthy agent succeeds", failed(), recordOf("default/p", versionOf(b1, retried)), false, addonstatus.ReasonUpgradeSucceed, true},
		{"the run that covers it passed (a failure the history does not record): recomputed", failed(),
			recordOf("default/p", versionOf(b1, run(verification.Successful, t1))), false, addonstatus.ReasonUpgradeSucceed, true},
		{"the run covers only clusters that finished before it did: recomputed", failed(),
			recordOf("default/p", versionOf(b1, run(verification.Failed, t0))), false, addonstatus.ReasonUpgradeSucceed, true},
		{"no history (off, or unreadable): recomputed", failed(), nil, false, addonstatus.ReasonUpgradeSucceed, true},
		{"the history knows other configs only: recomputed", failed(), recordOf("default/p", versionOf(a1, run(verification.Failed, t1))), false, addonstatus.ReasonUpgradeSucceed, true},
		{"the version was aborted, the MCA not moved back yet: kept", failed(),
			recordOf("default/p", aborted, versionOf(a1)), true, "", true},
		{"another placement's run of the version: kept (the MCA does not say its placement)", failed(),
			&history.Record{Addon: "hello", Placements: []history.Placement{{Placement: "default/p", Versions: []history.Version{versionOf(a1)}},
				{Placement: "default/q", Versions: []history.Version{versionOf(b1, run(verification.Failed, t1))}}}}, true, "", true},
		{"a succeeded MCA: the decision fails it, not the tracker", finishedB(addonstatus.ReasonUpgradeSucceed),
			recordOf("default/p", versionOf(b1, run(verification.Failed, t1))), false, addonstatus.ReasonUpgradeSucceed, false},
		{"a failure of its own (never soaked): Progress's, the history not read", unhealthyFailure(),
			recordOf("default/p", versionOf(b1, run(verification.Failed, t1))), false, addonstatus.ReasonUpgradeSucceed, false},
	}
	now := metav1.NewTime(runEnd.Add(time.Minute))
	gate := Gate{Checked: true}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reads := 0
			hist := func() *history.Record { reads++; return tc.rec }
			st, recheck := Track(tc.mca, readyB(), gate, hist, now)
			if (reads > 0) != tc.readsHistory {
				t.Fatalf("history read %d times, want read: %v", reads, tc.readsHistory)
			}
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
			if c := progressingOf(st); c.Reason != tc.wantReason {
				t.Fatalf("Progressing %+v, want reason %s", c, tc.wantReason)
			}
		})
	}
}
