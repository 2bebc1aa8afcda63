//go:build integration

package controller

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/rolloutplan"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/simagent"
)

// upgradeEnv installs cfg-a on the clusters of placement p (decision groups as given, named by
// groupNames) with the strategy, then returns with cfg-b created but not referenced yet.
func upgradeEnv(t *testing.T, delay time.Duration, strategy clusterv1alpha1.RolloutStrategy, groups [][]string, groupNames ...string) (*env, []string) {
	e := newEnv(t, envOptions{agentDelay: delay})
	var all []string
	for _, g := range groups {
		all = append(all, g...)
	}
	e.ensureClusters(all...)
	e.adc("cfg-a", "a")
	e.adc("cfg-b", "b")
	e.placement("p", groups, groupNames...)
	e.cma(nil, install{placement: "p", config: "cfg-a", strategy: strategy})
	e.startController(Options{})
	e.waitInstalled(60*time.Second, "cfg-a", all...)
	e.waitProgression(10*time.Second, "p", addonstatus.ReasonInstallSucceed, "install completed")
	return e, all
}

func (e *env) waitUpgraded(timeout time.Duration, cfg string, shorts ...string) {
	e.t.Helper()
	want := map[string]string{}
	for _, s := range shorts {
		want[s] = cfg + "/" + cfg + "/True/UpgradeSucceed"
	}
	e.waitStates(timeout, want)
}

func TestProgressiveMandatoryDecisionGroups(t *testing.T) {
	t.Parallel()
	e, all := upgradeEnv(t, 300*time.Millisecond,
		progressive(intstr.FromInt32(2), clusterv1alpha1.RolloutConfig{}, clusterv1alpha1.MandatoryDecisionGroup{GroupName: "first"}),
		[][]string{{"m1"}, {"c1", "c2", "c3", "c4"}}, "first", "rest")
	e.setConfig("p", "cfg-b")
	e.waitUpgraded(60*time.Second, "cfg-b", all...)
	rest := e.clusters("c1", "c2", "c3", "c4")
	if first, last := e.rec.firstDesireIndex("cfg-b", rest), e.rec.lastApplyIndex("cfg-b", e.clusters("m1")); first < last {
		t.Fatalf("a cluster of the other group got cfg-b (event %d) before the mandatory group applied it (event %d)", first, last)
	}
	if n := e.rec.maxInFlightAmong("cfg-b", rest); n != 2 {
		t.Fatalf("%d clusters in flight at most, want maxConcurrency 2", n)
	}
}

func TestProgressivePerGroup(t *testing.T) {
	t.Parallel()
	e, all := upgradeEnv(t, 300*time.Millisecond, clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.ProgressivePerGroup},
		[][]string{{"g1", "g2"}, {"h1", "h2"}})
	e.setConfig("p", "cfg-b")
	e.waitUpgraded(60*time.Second, "cfg-b", all...)
	if first, last := e.rec.firstDesireIndex("cfg-b", e.clusters("h1", "h2")), e.rec.lastApplyIndex("cfg-b", e.clusters("g1", "g2")); first < last {
		t.Fatalf("group 1 started (event %d) before group 0 finished (event %d)", first, last)
	}
	if n := e.rec.maxInFlightAmong("cfg-b", e.clusters("g1", "g2")); n != 2 {
		t.Fatalf("group 0: %d in flight at most, want the whole group (2)", n)
	}
	e.waitProgression(10*time.Second, "p", addonstatus.ReasonUpgradeSucceed, "4/4 upgrade completed")
}

// ProgressivePerGroup with a mandatory decision group named at index 1: that group goes first, whole,
// then the other groups in index order, one group at a time (sdk-go).
func TestProgressivePerGroupMandatoryDecisionGroups(t *testing.T) {
	t.Parallel()
	e, all := upgradeEnv(t, 300*time.Millisecond,
		clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.ProgressivePerGroup, ProgressivePerGroup: &clusterv1alpha1.RolloutProgressivePerGroup{
			MandatoryDecisionGroups: clusterv1alpha1.MandatoryDecisionGroups{MandatoryDecisionGroups: []clusterv1alpha1.MandatoryDecisionGroup{{GroupName: "canary"}}}}},
		[][]string{{"g1", "g2"}, {"k1", "k2", "k3"}, {"h1", "h2"}}, "", "canary", "")
	e.setConfig("p", "cfg-b")
	e.waitUpgraded(60*time.Second, "cfg-b", all...)
	canary, g, h := e.clusters("k1", "k2", "k3"), e.clusters("g1", "g2"), e.clusters("h1", "h2")
	if first, last := e.rec.firstDesireIndex("cfg-b", append(slices.Clone(g), h...)), e.rec.lastApplyIndex("cfg-b", canary); first < last {
		t.Fatalf("another group started (event %d) before the mandatory group finished (event %d)", first, last)
	}
	if first, last := e.rec.firstDesireIndex("cfg-b", h), e.rec.lastApplyIndex("cfg-b", g); first < last {
		t.Fatalf("group 2 started (event %d) before group 0 finished (event %d)", first, last)
	}
	if n := e.rec.maxInFlightAmong("cfg-b", canary); n != 3 {
		t.Fatalf("mandatory group: %d in flight at most, want the whole group (3)", n)
	}
	if n := e.rec.maxInFlightAmong("cfg-b", g); n != 2 {
		t.Fatalf("group 0: %d in flight at most, want the whole group (2)", n)
	}
	e.waitProgression(10*time.Second, "p", addonstatus.ReasonUpgradeSucceed, "7/7 upgrade completed")
}

// maxFailures counts real failures (Applied=False), not only timeouts.
func TestMaxFailuresCountsRealFailures(t *testing.T) {
	t.Parallel()
	e, _ := upgradeEnv(t, 200*time.Millisecond,
		progressive(intstr.FromInt32(2), clusterv1alpha1.RolloutConfig{MaxFailures: intstr.FromInt32(1)}),
		[][]string{{"c1", "c2", "c3", "c4", "c5"}})
	e.outcome("c1", "cfg-b", simagent.Fail)
	e.outcome("c3", "cfg-b", simagent.Fail)
	e.setConfig("p", "cfg-b")
	e.waitProgression(60*time.Second, "p", addonstatus.ReasonUpgradeFailed, "more clusters failed than maxFailures allows")
	e.waitStates(10*time.Second, map[string]string{
		"c1": "cfg-b/cfg-a/True/UpgradeFailed", "c2": "cfg-b/cfg-b/True/UpgradeSucceed", "c3": "cfg-b/cfg-a/True/UpgradeFailed",
		"c4": "cfg-a/cfg-a/False/InstallSucceed", "c5": "cfg-a/cfg-a/False/InstallSucceed",
	})
	if c := e.rec.progression(e.name, "p"); !strings.Contains(c.Message, "1/5 clusters done, 0 in progress, 2 failed, 0 timed out") || c.Status != metav1.ConditionFalse {
		t.Fatalf("progression %+v", c)
	}
	p := meta.FindStatusCondition(e.rec.mca(e.cluster("c1")).Status.Conditions, addonstatus.ConditionProgressing)
	if !strings.Contains(p.Message, "Applied=False") {
		t.Fatalf("c1 Progressing %+v should say which work failed and how", p)
	}
	e.holds(2*time.Second, "c4 and c5 stay on cfg-a", func() string {
		for _, c := range []string{"c4", "c5"} {
			if h := e.rec.history(e.cluster(c)); !slices.Equal(h, []string{"cfg-a"}) {
				return fmt.Sprintf("%s moved after the rollout stopped: %v", c, h)
			}
		}
		return ""
	})
}

// progressDeadline turns a cluster that never reports into a timeout; the rollout goes on within
// maxFailures. Nothing but the controller's own recheck wakes it up: the stuck cluster sends no event.
func TestProgressDeadlineTimesOut(t *testing.T) {
	t.Parallel()
	e, _ := upgradeEnv(t, 200*time.Millisecond,
		progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{ProgressDeadline: "3s", MaxFailures: intstr.FromInt32(1)}),
		[][]string{{"c1", "c2", "c3"}})
	e.outcome("c1", "cfg-b", simagent.Never)
	e.setConfig("p", "cfg-b")
	e.waitProgression(60*time.Second, "p", addonstatus.ReasonUpgradeFailed, "upgrade failed: 2/3 clusters done, 0 in progress, 0 failed, 1 timed out")
	t1, _ := e.rec.firstDesired(e.cluster("c1"), "cfg-b")
	t2, _ := e.rec.firstDesired(e.cluster("c2"), "cfg-b")
	// Transition times have whole seconds, so the deadline can end up to 1s early.
	if gap := t2.Sub(t1); gap < 2*time.Second || gap > 8*time.Second {
		t.Fatalf("c2 started %v after c1; the 3s progress deadline should set that gap", gap)
	}
	if got := state(e.rec.mca(e.cluster("c1"))); got != "cfg-b/cfg-a/True/Upgrading" {
		t.Fatalf("c1: %s", got)
	}
}

func TestMinSuccessTime(t *testing.T) {
	t.Parallel()
	e, all := upgradeEnv(t, 100*time.Millisecond,
		progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{MinSuccessTime: metav1.Duration{Duration: 3 * time.Second}}),
		[][]string{{"c1", "c2"}})
	e.setConfig("p", "cfg-b")
	e.waitUpgraded(60*time.Second, "cfg-b", all...)
	applied, _ := e.rec.firstApplied(e.cluster("c1"), "cfg-b")
	started, _ := e.rec.firstDesired(e.cluster("c2"), "cfg-b")
	if gap := started.Sub(applied); gap < 2*time.Second || gap > 8*time.Second {
		t.Fatalf("c2 started %v after c1 succeeded; minSuccessTime is 3s", gap)
	}
	e.waitProgression(10*time.Second, "p", addonstatus.ReasonUpgradeSucceed, "2/2 upgrade completed")
}

// A cluster that failed and then recovers holds the next batch for minSuccessTime from its recovery:
// its Progressing condition goes from UpgradeFailed to UpgradeSucceed with status False throughout,
// and a transition time kept from the failure made the next cluster start at once. With
// maxFailures 1 the failure is tolerated, but without a progressDeadline c1 keeps the only place
// in the batch: the rollout waits, stopped, until c1 recovers.
func TestMinSuccessTimeAfterRecovery(t *testing.T) {
	t.Parallel()
	const minSuccess = 5 * time.Second
	e, all := upgradeEnv(t, 100*time.Millisecond,
		progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{MaxFailures: intstr.FromInt32(1), MinSuccessTime: metav1.Duration{Duration: minSuccess}}),
		[][]string{{"c1", "c2"}})
	e.outcome("c1", "cfg-b", simagent.Fail)
	e.setConfig("p", "cfg-b")
	e.waitCluster(60*time.Second, "c1", "cfg-b/cfg-a/True/UpgradeFailed")
	e.waitProgression(10*time.Second, "p", addonstatus.ReasonUpgradeFailed, "the failed clusters keep their places in the batch")
	failedAt := meta.FindStatusCondition(e.rec.mca(e.cluster("c1")).Status.Conditions, addonstatus.ConditionProgressing).LastTransitionTime
	// Longer than minSuccessTime after the failure, c1's work and agent recover.
	harness.Pass(minSuccess + 2*time.Second) // time itself: the recovery must come after minSuccessTime
	e.outcome("c1", "cfg-b", simagent.Succeed)
	e.setWorkReady("c1")
	e.setAvailable("c1", metav1.ConditionTrue)
	e.waitUpgraded(60*time.Second, "cfg-b", all...)

	recovered, _ := e.rec.firstApplied(e.cluster("c1"), "cfg-b")
	started, _ := e.rec.firstDesired(e.cluster("c2"), "cfg-b")
	// Transition times have whole seconds, so the soak can end up to 1s early.
	if gap := started.Sub(recovered); gap < minSuccess-time.Second {
		t.Fatalf("c2 started %v after c1 recovered; minSuccessTime is %v", gap.Round(time.Millisecond), minSuccess)
	}
	c := meta.FindStatusCondition(e.rec.mca(e.cluster("c1")).Status.Conditions, addonstatus.ConditionProgressing)
	if !c.LastTransitionTime.After(failedAt.Time) || c.LastTransitionTime.Time.Before(recovered.Add(-time.Second)) {
		t.Fatalf("c1 Progressing %s since %v; it failed at %v and recovered at %v", c.Reason, c.LastTransitionTime, failedAt, recovered)
	}
	e.waitProgression(10*time.Second, "p", addonstatus.ReasonUpgradeSucceed, "2/2 upgrade completed")
}

// setWorkReady reports the add-on's deploy work in cluster short Applied and Available at its
// generation, as the work agent does once a failed apply succeeds on a retry of its own.
func (e *env) setWorkReady(short string) {
	e.t.Helper()
	api := e.c.Work.WorkV1().ManifestWorks(e.cluster(short))
	for range 10 {
		w, err := api.Get(e.ctx, "addon-"+e.name+"-deploy-0", metav1.GetOptions{})
		if err != nil {
			e.t.Fatal(err)
		}
		for _, typ := range []string{workv1.WorkApplied, workv1.WorkAvailable} {
			meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: "SetByTest",
				Message: "recovered (set by the test)", ObservedGeneration: w.Generation})
		}
		if _, err = api.UpdateStatus(e.ctx, w, metav1.UpdateOptions{}); err == nil {
			return
		}
	}
	e.t.Fatal("writing the work's status kept conflicting")
}

// Seed story 4: rollback. The new version fails on the first cluster and the rollout stops; the
// revert is a rollback: the clusters that still run the old version are done at once, the failed
// one rolls back (RollingBack, then RollbackSucceeded once its works run the old version again).
func TestRollback(t *testing.T) {
	t.Parallel()
	e, _ := upgradeEnv(t, 200*time.Millisecond, progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{}),
		[][]string{{"c1", "c2", "c3", "c4"}})
	e.outcome("c1", "cfg-b", simagent.Fail)
	e.setConfig("p", "cfg-b")
	e.waitProgression(60*time.Second, "p", addonstatus.ReasonUpgradeFailed, "1 failed")

	e.setConfig("p", "cfg-a")
	e.waitProgression(10*time.Second, "p", addonstatus.ReasonRollbackSucceeded, "4/4 rollback completed with no errors.")
	e.waitStates(30*time.Second, map[string]string{
		"c1": "cfg-a/cfg-a/True/RollbackSucceeded", "c2": "cfg-a/cfg-a/True/InstallSucceed",
		"c3": "cfg-a/cfg-a/True/InstallSucceed", "c4": "cfg-a/cfg-a/True/InstallSucceed",
	})
	if h := e.rec.history(e.cluster("c1")); !slices.Equal(h, []string{"cfg-a", "cfg-b", "cfg-a"}) {
		t.Fatalf("c1 desired %v", h)
	}
	for _, c := range []string{"c2", "c3", "c4"} {
		if h := e.rec.history(e.cluster(c)); !slices.Equal(h, []string{"cfg-a"}) {
			t.Fatalf("%s desired %v: it should never have left cfg-a", c, h)
		}
	}
	// The simulated deployer rendered c1's work back to cfg-a and the agent applied it.
	e.waitFor(10*time.Second, "c1's work back at cfg-a", func() bool {
		w, err := e.c.Work.WorkV1().ManifestWorks(e.cluster("c1")).Get(e.ctx, "addon-"+e.name+"-deploy-0", metav1.GetOptions{})
		return err == nil && strings.Contains(w.Annotations[simagent.ConfigSpecHashAnnotation], "/cfg-a\"")
	})
}

// A controller restarted in the middle of a rollout continues from the status alone: no cluster
// moves twice and never more than maxConcurrency clusters are in flight, which the recorder proves
// from every MCA change the API server reported.
func TestRestartMidRollout(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{agentDelay: 700 * time.Millisecond})
	names := []string{"c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8"}
	e.ensureClusters(names...)
	e.adc("cfg-a", "a")
	e.adc("cfg-b", "b")
	e.placement("p", [][]string{names})
	e.cma(nil, install{placement: "p", config: "cfg-a", strategy: progressive(intstr.FromInt32(2), clusterv1alpha1.RolloutConfig{})})
	stop := e.startController(Options{})
	e.waitInstalled(60*time.Second, "cfg-a", names...)
	e.waitProgression(10*time.Second, "p", addonstatus.ReasonInstallSucceed, "8/8 install completed")

	e.setConfig("p", "cfg-b")
	inFlightAndDone := func(done int) func() bool {
		return func() bool {
			applied, flying := 0, 0
			for _, s := range e.rec.states() {
				switch {
				case strings.HasPrefix(s, "cfg-b/cfg-b/"):
					applied++
				case strings.HasPrefix(s, "cfg-b/"):
					flying++
				}
			}
			return applied >= done && flying > 0
		}
	}
	e.waitFor(60*time.Second, "a batch in flight", inFlightAndDone(0))
	stop()                                // with a batch in flight: its works get applied while nobody watches
	harness.Pass(1500 * time.Millisecond) // the controller stays down: nothing of its to poll
	stop = e.startController(Options{})
	e.waitFor(60*time.Second, "4 applied and a batch in flight", inFlightAndDone(4))
	stop()
	harness.Pass(time.Second) // down again a moment
	e.startController(Options{})
	e.waitUpgraded(60*time.Second, "cfg-b", names...)
	e.waitProgression(10*time.Second, "p", addonstatus.ReasonUpgradeSucceed, "8/8 upgrade completed")

	if n := e.rec.maxInFlight("cfg-b"); n > 2 {
		t.Fatalf("%d clusters in flight at once across restarts, maxConcurrency is 2", n)
	}
	for _, c := range e.clusters(names...) {
		if h := e.rec.history(c); !slices.Equal(h, []string{"cfg-a", "cfg-b"}) {
			t.Errorf("%s: desired %v, want moved once", c, h)
		}
		moves := 0
		prev := ""
		for _, ev := range e.rec.events() {
			if ev.Cluster != c || ev.Type == watch.Deleted {
				continue
			}
			d := rolloutplan.Desired(ev.MCA)
			cur := ""
			if len(d) > 0 {
				cur = d[0].Name + "@" + d[0].SpecHash
			}
			if cur != prev && prev != "" {
				moves++
			}
			prev = cur
		}
		if moves != 1 {
			t.Errorf("%s: desired config changed %d times during the upgrade, want 1", c, moves)
		}
	}
}
