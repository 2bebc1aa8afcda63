//go:build integration

package controller

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/operations"
	"github.com/addonops/addonops/internal/rolloutplan"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/simagent"
)

// Version history and day-2 operations on the real API server.

// historyRecord reads the add-on's version history ConfigMap (the harness keeps it in "default");
// nil while there is none.
func (e *env) historyRecord() *history.Record {
	e.t.Helper()
	rec, err := harness.ReadHistory(e.ctx, e.c.Kube, e.c.Addon, "default", e.name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return rec
}

// waitVersions waits until the history of placement reads want ("cfg:Result[:c] ...", c: completed).
func (e *env) waitVersions(timeout time.Duration, placement, want string) {
	e.t.Helper()
	got := ""
	e.waitFor(timeout, "history of "+placement+" "+want, func() bool {
		rec := e.historyRecord()
		if rec == nil {
			return false
		}
		var parts []string
		if hp := rec.Placement(e.name + "/" + placement); hp != nil {
			for _, v := range hp.Versions {
				s := v.Configs[0].Name + ":" + string(v.Result)
				if v.Completed != nil {
					s += ":c"
				}
				parts = append(parts, s)
			}
		}
		got = strings.Join(parts, " ")
		return got == want
	})
}

// annotate sets (or with value "" removes) an annotation on the test's CMA.
func (e *env) annotate(key, value string) {
	e.t.Helper()
	e.updateCMA(func(cma *addonv1alpha1.ClusterManagementAddOn) {
		if value == "" {
			delete(cma.Annotations, key)
			return
		}
		cma.Annotations[key] = value
	})
}

// cliFieldManager is the field manager of the `addonops` CLI's writes (cmd/addonops).
const cliFieldManager = "addonops-cli"

// annotateAs sets an annotation on the test's CMA as field manager manager, the way the
// `addonops` CLI writes one (operations.Annotator: a JSON merge patch of that key).
func (e *env) annotateAs(manager, key, value string) {
	e.t.Helper()
	a := operations.Annotator{Client: e.c.Addon, FieldManager: manager}
	if _, _, _, err := a.Write(e.ctx, e.name, key, func(*addonv1alpha1.ClusterManagementAddOn) (operations.Edit, error) {
		return operations.Edit{Value: &value}, nil
	}); err != nil {
		e.t.Fatal(err)
	}
}

// desiredVersion is the version id of a placement's desired configs, as `addonops` computes it
// from the CMA's install progression.
func (e *env) desiredVersion(placement string) string {
	e.t.Helper()
	cma, err := e.c.Addon.AddonV1alpha1().ClusterManagementAddOns().Get(e.ctx, e.name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, ip := range cma.Status.InstallProgressions {
		if ip.Name != placement {
			continue
		}
		var cfgs []history.Config
		for _, r := range ip.ConfigReferences {
			if d := r.DesiredConfig; d != nil {
				cfgs = append(cfgs, history.Config{Group: r.Group, Resource: r.Resource, Namespace: d.Namespace, Name: d.Name, SpecHash: d.SpecHash})
			}
		}
		return history.VersionID(cfgs)
	}
	e.t.Fatalf("no progression for %s", placement)
	return ""
}

func (e *env) placementKey(placement string) canary.PlacementKey {
	return canary.PlacementKey{Namespace: e.name, Name: placement}
}

// cmaCount and reasonsSince read the recorded CMA statuses from index from on.
func (r *recorder) cmaCount() int { return r.cmas.Mark() }

func (r *recorder) reasonsSince(placement string, from int) []string {
	var out []string
	for _, ev := range r.cmas.Events()[from:] {
		for i := range ev.CMA.Status.InstallProgressions {
			ip := &ev.CMA.Status.InstallProgressions[i]
			if c := rolloutplan.ProgressingOf(ip); ip.Name == placement && c != nil && !slices.Contains(out, c.Reason) {
				out = append(out, c.Reason)
			}
		}
	}
	return out
}

// a → b completes everywhere (with a canary); the revert to a is a rollback: never gated, paced by
// maxConcurrency, RollbackSucceeded everywhere; also with the controller killed midway.
func revertAfterCompletedRollout(t *testing.T, kill bool) {
	e := canaryEnv(t)
	e.setBoth("cfg-b")
	want := map[string]string{}
	for _, c := range append(slices.Clone(awsShorts), canaryShorts...) {
		want[c] = "cfg-b/cfg-b/True/UpgradeSucceed"
	}
	e.waitStates(60*time.Second, want)
	e.waitProgression(10*time.Second, "aws", addonstatus.ReasonUpgradeSucceed, "4/4 upgrade completed")
	e.waitVersions(10*time.Second, "aws", "cfg-a:Superseded:c cfg-b:Succeeded:c")

	revert, revertCMA := e.rec.count(), e.rec.cmaCount()
	if kill {
		e.outcome("c1", "cfg-a", simagent.Never) // c1 stays rolling back while the controller is down
	}
	e.setBoth("cfg-a")
	e.waitCluster(30*time.Second, "c1", "cfg-a/cfg-b/True/RollingBack")
	if kill {
		e.stopController()
		// The controller stays down a moment while c1 rolls back: nothing to poll while it is.
		harness.Pass(500 * time.Millisecond)
		e.startController(Options{})
		e.outcome("c1", "cfg-a", simagent.Succeed)
		e.agent.Recheck()
	}
	for c := range want {
		want[c] = "cfg-a/cfg-a/True/RollbackSucceeded"
	}
	e.waitStates(90*time.Second, want)
	e.waitProgression(10*time.Second, "aws", addonstatus.ReasonRollbackSucceeded, "4/4 rollback completed with no errors.")
	e.waitProgression(10*time.Second, "canary", addonstatus.ReasonRollbackSucceeded, "2/2 rollback completed with no errors.")
	e.waitVersions(10*time.Second, "aws", "cfg-a:Superseded:c cfg-b:RolledBack:c cfg-a:Succeeded:c")
	if got := e.rec.reasonsSince("aws", revertCMA); slices.Contains(got, addonstatus.ReasonWaitingForCanary) || slices.Contains(got, addonstatus.ReasonUpgrading) {
		t.Errorf("aws reported %v after the revert: a rollback never waits for the canary and is no upgrade", got)
	}
	if n := e.rec.maxBusyAmong(e.clusters(awsShorts...), revert); n > 1 {
		t.Errorf("%d aws clusters in flight during the rollback, maxConcurrency is 1", n)
	}
	for _, c := range awsShorts {
		// A cluster waiting for its turn is held first (Configured=False, still UpgradeSucceed).
		got := e.rec.reasons(e.cluster(c), revert)
		if len(got) > 0 && got[0] == addonstatus.ReasonUpgradeSucceed {
			got = got[1:]
		}
		if !slices.Equal(got, []string{addonstatus.ReasonRollingBack, addonstatus.ReasonRollbackSucceeded}) {
			t.Errorf("%s reasons after the revert %v, want RollingBack, RollbackSucceeded", c, got)
		}
	}
	// No event assertion here: by now the CMA had more events than client-go's spam filter lets
	// through per object (25 in a burst), so the rollback's events may be dropped; the status is
	// what counts, and TestRevertAfterTheCanaryPassedAndTheFirstBatchFailed checks the events.
}

func TestRevertAfterACompletedRolloutIsARollback(t *testing.T) {
	t.Parallel()
	revertAfterCompletedRollout(t, false)
}

func TestRevertAfterACompletedRolloutWithTheControllerKilled(t *testing.T) {
	t.Parallel()
	revertAfterCompletedRollout(t, true)
}

// Twelve versions: the history keeps the newest ten, and the oldest kept is a rollback target.
func TestHistoryKeepsTheNewestVersions(t *testing.T) {
	t.Parallel()
	e, _ := upgradeEnv(t, 0, allStrategy, [][]string{{"c1", "c2"}})
	for i := 3; i <= 12; i++ {
		name := "cfg-" + string(rune('a'+i-1))
		e.adc(name, name)
	}
	for i := 2; i <= 12; i++ {
		name := "cfg-" + string(rune('a'+i-1))
		e.setConfig("p", name)
		e.waitStates(30*time.Second, map[string]string{"c1": name + "/" + name + "/True/UpgradeSucceed", "c2": name + "/" + name + "/True/UpgradeSucceed"})
		e.waitProgression(10*time.Second, "p", addonstatus.ReasonUpgradeSucceed, "2/2 upgrade completed")
	}
	var hp *history.Placement
	e.waitFor(10*time.Second, "ten versions, the last one completed", func() bool {
		rec := e.historyRecord()
		hp = rec.Placement(e.name + "/p")
		return hp != nil && len(hp.Versions) == history.DefaultLimit && hp.Last().Completed != nil
	})
	if first, last := hp.Versions[0].Configs[0].Name, hp.Last().Configs[0].Name; first != "cfg-c" || last != "cfg-l" {
		t.Fatalf("history keeps %s..%s, want cfg-c..cfg-l", first, last)
	}
	e.setConfig("p", "cfg-c")
	e.waitProgression(30*time.Second, "p", addonstatus.ReasonRollbackSucceeded, "2/2 rollback completed")
}

// A version history a newer controller wrote (a field this one does not know), as after the
// controller itself is rolled back from Git: it is still read, so a revert to a version only the
// history remembers is a rollback; it is never written (that would drop the newer controller's
// fields); the CMA gets one Warning event VersionHistoryNewer. (Before: the record was refused as
// invalid, and the revert rolled out as an upgrade.)
func TestNewerHistoryIsReadNotWritten(t *testing.T) {
	t.Parallel()
	e, _ := upgradeEnv(t, 0, allStrategy, [][]string{{"c1", "c2"}})
	e.adc("cfg-c", "c")
	for _, cfg := range []string{"cfg-b", "cfg-c"} {
		e.setConfig("p", cfg)
		e.waitUpgraded(30*time.Second, cfg, "c1", "c2")
		e.waitProgression(10*time.Second, "p", addonstatus.ReasonUpgradeSucceed, "2/2 upgrade completed")
	}
	e.waitVersions(10*time.Second, "p", "cfg-a:Superseded:c cfg-b:Superseded:c cfg-c:Succeeded:c")

	cms := e.c.Kube.CoreV1().ConfigMaps("default")
	var newer *corev1.ConfigMap
	if err := retryConflicts(func() error {
		cm, err := cms.Get(e.ctx, history.ConfigMapName(e.name), metav1.GetOptions{})
		if err != nil {
			return err
		}
		data := cm.Data[history.DataKey]
		cm.Data[history.DataKey] = strings.Replace(data, "{", `{"recordedByANewerController":{"x":1},`, 1)
		newer, err = cms.Update(e.ctx, cm, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}

	e.setConfig("p", "cfg-a")
	e.waitProgression(30*time.Second, "p", addonstatus.ReasonRollbackSucceeded, "2/2 rollback completed")
	events := func() []corev1.Event {
		list, err := e.c.Kube.CoreV1().Events("").List(e.ctx, metav1.ListOptions{FieldSelector: fields.AndSelectors(
			fields.OneTermEqualSelector("involvedObject.kind", "ClusterManagementAddOn"), fields.OneTermEqualSelector("involvedObject.name", e.name),
			fields.OneTermEqualSelector("reason", "VersionHistoryNewer")).String()})
		if err != nil {
			t.Fatal(err)
		}
		return list.Items
	}
	e.waitFor(10*time.Second, "a VersionHistoryNewer event", func() bool { return len(events()) > 0 })
	if evs := events(); len(evs) != 1 || evs[0].Count > 1 || evs[0].Type != corev1.EventTypeWarning || !strings.Contains(evs[0].Message, `field "recordedByANewerController" is unknown`) {
		t.Errorf("VersionHistoryNewer events %+v, want one Warning naming the field", evs)
	}
	now, err := cms.Get(e.ctx, newer.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if now.ResourceVersion != newer.ResourceVersion {
		t.Errorf("the controller wrote over a history a newer controller wrote:\n%s", now.Data[history.DataKey])
	}
}

// Pause mid-batch: the cluster in flight finishes, nothing new starts for 60 s; resume completes.
func TestPauseMidBatchAndResume(t *testing.T) {
	t.Parallel()
	e, all := upgradeEnv(t, 300*time.Millisecond, progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{}), [][]string{{"c1", "c2", "c3", "c4"}})
	e.outcome("c1", "cfg-b", simagent.Never)
	e.setConfig("p", "cfg-b")
	e.waitCluster(30*time.Second, "c1", "cfg-b/cfg-a/True/Upgrading")
	// Paused as `addonops pause` does: the event names its field manager.
	e.annotateAs(cliFieldManager, operations.PauseAnnotation, e.name+"/p")
	e.waitProgression(10*time.Second, "p", addonstatus.ReasonPaused, "no new cluster starts, clusters in flight finish")
	e.waitCMAEvent(10*time.Second, "Paused", "placement "+e.name+"/p: paused")
	e.waitCMAEvent(time.Second, "Paused", "; annotation addonops.io/pause set by addonops-cli")
	e.outcome("c1", "cfg-b", simagent.Succeed)
	e.agent.Recheck()
	e.waitCluster(30*time.Second, "c1", "cfg-b/cfg-b/True/UpgradeSucceed")
	mark := e.rec.count()
	e.holds(60*time.Second, "no cluster starts while paused", func() string {
		for _, c := range []string{"c2", "c3", "c4"} {
			if e.rec.desiredSince(e.cluster(c), "cfg-b", mark) {
				return fmt.Sprintf("%s started while the rollout was paused:%s", c, e.rec.eventsOf(e.cluster(c)))
			}
		}
		return ""
	})
	e.waitProgression(time.Second, "p", addonstatus.ReasonPaused, "1/4 clusters done, 0 in progress")

	e.annotate(operations.PauseAnnotation, "")
	e.waitUpgraded(60*time.Second, "cfg-b", all...)
	e.waitProgression(10*time.Second, "p", addonstatus.ReasonUpgradeSucceed, "4/4 upgrade completed")
	e.waitCMAEvent(10*time.Second, "Resumed", "placement "+e.name+"/p: resumed")
	if n := e.rec.maxInFlight("cfg-b"); n > 1 {
		t.Fatalf("%d clusters in flight, maxConcurrency is 1", n)
	}
}

// A person passes a canary gate the canary cannot pass (one canary cluster fails the new version).
func TestPromotePassesAWaitingCanary(t *testing.T) {
	t.Parallel()
	e := canaryEnv(t)
	e.outcome("k2", "cfg-b", simagent.Fail)
	e.setBoth("cfg-b")
	e.waitProgression(30*time.Second, "canary", addonstatus.ReasonUpgradeFailed, "")
	e.waitProgression(30*time.Second, "aws", addonstatus.ReasonWaitingForCanary, "")
	e.quiet(time.Second)
	if i := e.rec.firstDesireIndex("cfg-b", e.clusters(awsShorts...)); i >= 0 {
		t.Fatalf("aws got cfg-b before the promote (event %d)", i)
	}
	id := e.desiredVersion("aws")
	e.annotateAs(cliFieldManager, operations.PromoteAnnotation, operations.FormatMap(map[canary.PlacementKey]string{e.placementKey("aws"): id}))
	e.waitCMAEvent(10*time.Second, "CanaryPromoted", "a person passed the canary gate (annotation addonops.io/promote, set by addonops-cli) for version "+id)
	e.waitProgression(10*time.Second, "aws", addonstatus.ReasonUpgrading, "canary gate passed by a person")
	e.waitStates(60*time.Second, map[string]string{
		"c1": "cfg-b/cfg-b/True/UpgradeSucceed", "c2": "cfg-b/cfg-b/True/UpgradeSucceed", "c3": "cfg-b/cfg-b/True/UpgradeSucceed",
		"c4": "cfg-b/cfg-b/True/UpgradeSucceed", "k1": "cfg-b/cfg-b/True/UpgradeSucceed", "k2": "cfg-b/cfg-a/True/UpgradeFailed"})
	e.waitProgression(10*time.Second, "aws", addonstatus.ReasonUpgradeSucceed, "4/4 upgrade completed")
}

// Retry after maxFailures: the failed cluster goes again, then the rollout completes, paced.
func TestRetryAfterMaxFailures(t *testing.T) {
	t.Parallel()
	e, all := upgradeEnv(t, 300*time.Millisecond, progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{ProgressDeadline: "5s"}), [][]string{{"c1", "c2", "c3"}})
	e.outcome("c1", "cfg-b", simagent.Unhealthy)
	e.setConfig("p", "cfg-b")
	e.waitProgression(60*time.Second, "p", addonstatus.ReasonUpgradeFailed, "upgrade stopped")
	// The rollout stays stopped; c1 stays failed while its agent is not ready.
	e.holds(2*time.Second, "the rollout stays stopped, c1 on cfg-a", func() string {
		if c := e.rec.progression(e.name, "p"); c == nil || c.Reason != addonstatus.ReasonUpgradeFailed || !strings.Contains(c.Message, "upgrade stopped") {
			return fmt.Sprintf("progression p: %+v", c)
		}
		if _, i := e.rec.firstApplied(e.cluster("c1"), "cfg-b"); i >= 0 {
			return "c1 applied cfg-b: " + state(e.rec.mca(e.cluster("c1")))
		}
		return ""
	})
	e.waitProgression(time.Second, "p", addonstatus.ReasonUpgradeFailed, "upgrade stopped")
	e.waitCluster(time.Second, "c1", "cfg-b/cfg-a/True/UpgradeFailed")
	e.waitVersions(10*time.Second, "p", "cfg-a:Superseded:c cfg-b:Failed")

	// Retry (say the deadline was too short for a slow image pull): c1 gets a new attempt with a
	// new deadline; its agent becomes ready within it, and the rollout goes on, paced.
	e.annotate(operations.RetryAnnotation, operations.FormatMap(map[canary.PlacementKey]string{e.placementKey("p"): time.Now().Format(time.RFC3339Nano)}))
	e.waitCMAEvent(10*time.Second, "RetryStarted", "retrying the rollout of")
	e.waitCluster(10*time.Second, "c1", "cfg-b/cfg-a/True/Upgrading")
	e.waitProgression(10*time.Second, "p", addonstatus.ReasonUpgrading, "")
	e.outcome("c1", "cfg-b", simagent.Succeed)
	e.setAvailable("c1", metav1.ConditionTrue)
	e.waitUpgraded(60*time.Second, "cfg-b", all...)
	e.waitProgression(10*time.Second, "p", addonstatus.ReasonUpgradeSucceed, "3/3 upgrade completed")
	e.waitVersions(10*time.Second, "p", "cfg-a:Superseded:c cfg-b:Succeeded:c")
	if n := e.rec.maxInFlight("cfg-b"); n > 1 {
		t.Fatalf("%d clusters in flight, maxConcurrency is 1", n)
	}
}

// Abort returns the clusters that moved to the new version to the last known good, paced; the
// others never get it; Aborted until the configs change.
func TestAbortReturnsMovedClusters(t *testing.T) {
	t.Parallel()
	e, all := upgradeEnv(t, 300*time.Millisecond, progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{}), [][]string{{"c1", "c2", "c3", "c4"}})
	e.outcome("c2", "cfg-b", simagent.Never)
	e.setConfig("p", "cfg-b")
	e.waitCluster(30*time.Second, "c1", "cfg-b/cfg-b/True/UpgradeSucceed")
	e.waitCluster(30*time.Second, "c2", "cfg-b/cfg-a/True/Upgrading")
	abort := e.rec.count()
	id := e.desiredVersion("p")
	e.annotateAs("kubectl-annotate", operations.AbortAnnotation, operations.FormatMap(map[canary.PlacementKey]string{e.placementKey("p"): id}))
	e.waitProgression(30*time.Second, "p", addonstatus.ReasonAborted, "the rollout of "+id+" was aborted by a person (annotation addonops.io/abort, set by kubectl-annotate); 4/4 clusters are back on")
	want := map[string]string{}
	for _, c := range all {
		want[c] = "cfg-a/cfg-a/True/"
	}
	e.waitFor(10*time.Second, "every cluster back on cfg-a", func() bool {
		for c := range want {
			if !strings.HasPrefix(state(e.rec.mca(e.cluster(c))), "cfg-a/cfg-a/True/") {
				return false
			}
		}
		return true
	})
	if got := e.rec.reasons(e.cluster("c1"), abort); !slices.Equal(got, []string{addonstatus.ReasonRollingBack, addonstatus.ReasonRollbackSucceeded}) {
		t.Errorf("c1 reasons after the abort %v, want RollingBack, RollbackSucceeded", got)
	}
	for _, c := range []string{"c3", "c4"} {
		if e.rec.desiredSince(e.cluster(c), "cfg-b", 0) {
			t.Errorf("%s got cfg-b", c)
		}
	}
	// c2 was in flight (Upgrading) when the abort came: count the clusters going back.
	if n := e.rec.maxReasonAmong(addonstatus.ReasonRollingBack, e.clusters(all...), abort); n > 1 {
		t.Errorf("%d clusters going back at once, maxConcurrency is 1", n)
	}
	e.waitVersions(10*time.Second, "p", "cfg-a:Superseded:c cfg-b:Aborted")
	e.waitCMAEvent(10*time.Second, "Warning Aborted", "placement "+e.name+"/p")
	e.quiet(2 * time.Second)
	e.waitProgression(time.Second, "p", addonstatus.ReasonAborted, "")
}

// With addonops.io/auto-abort, a bad version that breaches maxFailures is taken back by itself.
func TestAutoAbortOnMaxFailures(t *testing.T) {
	t.Parallel()
	e, all := upgradeEnv(t, 300*time.Millisecond, progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{}), [][]string{{"c1", "c2", "c3"}})
	e.annotate(operations.AutoAbortAnnotation, "true")
	e.outcome("c1", "cfg-b", simagent.Fail)
	e.setConfig("p", "cfg-b")
	e.waitProgression(60*time.Second, "p", addonstatus.ReasonAborted, "aborted automatically: more clusters failed than maxFailures allows")
	e.waitCluster(30*time.Second, "c1", "cfg-a/cfg-a/True/RollbackSucceeded")
	for _, c := range all[1:] {
		if e.rec.desiredSince(e.cluster(c), "cfg-b", 0) {
			t.Errorf("%s got cfg-b", c)
		}
	}
	e.waitVersions(10*time.Second, "p", "cfg-a:Superseded:c cfg-b:Aborted")
}

// maxReasonAmong is the largest number of clusters whose Progressing reason was reason at once,
// right after one of their recorded events from event from on.
func (r *recorder) maxReasonAmong(reason string, clusters []string, from int) int {
	start, events := r.mcas.Since(from)
	n, _ := harness.MaxInFlight(start, events, clusters, func(ev mcaEvent) bool {
		c := meta.FindStatusCondition(ev.MCA.Status.Conditions, addonstatus.ConditionProgressing)
		return ev.Type != watch.Deleted && c != nil && c.Reason == reason
	}, harness.ChangesOnly())
	return n
}
