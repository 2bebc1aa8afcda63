package rolloutplan

import (
	"slices"
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
)

// Version history and the day-2 requests (package operations), one scenario each.

// versionsOf renders a placement's history as "name:result[:c]" (c: completed).
func (w *world) versionsOf(k PlacementKey) string {
	hp := w.history.Placement(k.String())
	if hp == nil {
		return ""
	}
	var parts []string
	for _, v := range hp.Versions {
		s := v.Configs[0].Name + ":" + string(v.Result)
		if v.Completed != nil {
			s += ":c"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// settle lets every configured cluster that does not run its desired configs succeed, then
// decides again, until nothing changes.
func (w *world) settle() {
	w.t.Helper()
	for range 30 {
		for c, m := range w.mcas {
			if len(Desired(m)) > 0 && !addonstatus.Applied(m) && isConfigured(m) {
				w.agent(c, succeed)
			}
		}
		if p := w.step(); len(p.Updates) == 0 && p.History == nil {
			return
		}
		w.advance(time.Minute)
	}
	w.t.Fatal("the rollout did not settle in 30 steps")
}

func (w *world) expectVersions(k PlacementKey, want string) {
	w.t.Helper()
	if got := w.versionsOf(k); got != want {
		w.t.Fatalf("history of %s:\n got %s\nwant %s", k, got, want)
	}
}

// annotateAs sets a day-2 annotation on the CMA as field manager manager does (its managedFields
// entry owns the key, as the API server records it), taking the key over from any other manager.
func (w *world) annotateAs(manager, key, value string) {
	w.t.Helper()
	w.cma.Annotations[key] = value
	var kept []metav1.ManagedFieldsEntry
	for _, mf := range w.cma.ManagedFields {
		if !slices.Contains(operations.Setters([]metav1.ManagedFieldsEntry{mf}, key), mf.Manager) {
			kept = append(kept, mf)
		}
	}
	w.cma.ManagedFields = append(kept, metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate,
		Time: &metav1.Time{Time: w.now}, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{".":{},"f:` + key + `":{}}}}`)}})
}

// upgradedWorld: aws (Progressive maxConcurrency 1) gated by gate (All); both run a, then b
// everywhere.
func upgradedWorld(t *testing.T) (w *world, aws, gate PlacementKey) {
	w, aws, gate = canaryWorld(t)
	w.installAll()
	w.setConfig(aws, "b")
	w.setConfig(gate, "b")
	w.installAll()
	w.expectStates("c1=b/b/T c2=b/b/T c3=b/b/T c4=b/b/T k1=b/b/T k2=b/b/T")
	w.expectProgression(aws, addonstatus.ReasonUpgradeSucceed, "4/4 upgrade completed", "b", "b", "b")
	w.expectVersions(aws, "a:Superseded:c b:Succeeded:c")
	return w, aws, gate
}

// The first story: a → b completed on every cluster; a revert to a days later is a
// rollback: never gated by the gate, paced by maxConcurrency, RollbackSucceeded everywhere.
func TestRevertAfterACompletedRolloutIsARollback(t *testing.T) {
	w, aws, gate := upgradedWorld(t)
	// The progressions no longer remember a (lkg and applied are b): only the history does.
	w.advance(24 * time.Hour)
	w.setConfig(aws, "a")
	w.setConfig(gate, "a")
	w.step()
	w.expectProgression(aws, addonstatus.ReasonRollingBack, "0/4 clusters done, 1 in progress", "a", "a", "b")
	w.expectProgression(gate, addonstatus.ReasonRollingBack, "0/2 clusters done, 2 in progress", "a", "a", "b")
	w.expectEvent("RollbackStarted", "placement default/aws: rollback to")
	if n := w.inFlight("a"); n > 1+2 {
		t.Fatalf("%d clusters in flight, want at most 3 (aws maxConcurrency 1, canary All)", n)
	}
	for _, c := range []string{"c1", "k1", "k2"} {
		if got := w.mcaReason(c); got != addonstatus.ReasonRollingBack {
			t.Fatalf("%s: Progressing %s, want RollingBack", c, got)
		}
	}
	w.settle()
	w.expectProgression(aws, addonstatus.ReasonRollbackSucceeded, "4/4 rollback completed", "a", "a", "a")
	w.expectProgression(gate, addonstatus.ReasonRollbackSucceeded, "2/2 rollback completed", "a", "a", "a")
	w.expectVersions(aws, "a:Superseded:c b:RolledBack:c a:Succeeded:c")
}

// Without history the same revert is an ordinary gate-gated upgrade: history is what makes it a
// rollback (a regression guard for the test above).
func TestRevertWithoutHistoryIsAnUpgrade(t *testing.T) {
	w, aws, gate := upgradedWorld(t)
	w.history = nil
	w.setConfig(aws, "a")
	w.setConfig(gate, "a")
	w.step()
	w.expectProgression(aws, addonstatus.ReasonWaitingForCanary, "", "a", "b", "b")
}

// The history keeps the newest HistoryLimit versions per placement.
func TestHistoryIsBounded(t *testing.T) {
	w := newWorld(t)
	names := []string{"v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12"}
	for _, n := range names {
		w.config(n)
	}
	p := w.placement("p", "v1", all(), []string{"c1", "c2"})
	w.installAll()
	for _, n := range names[1:] {
		w.setConfig(p, n)
		w.installAll()
	}
	hp := w.history.Placement(p.String())
	if len(hp.Versions) != history.DefaultLimit {
		t.Fatalf("%d versions kept, want %d", len(hp.Versions), history.DefaultLimit)
	}
	if hp.Versions[0].Configs[0].Name != "v3" || hp.Last().Configs[0].Name != "v12" {
		t.Fatalf("kept %s..%s, want v3..v12", hp.Versions[0].Configs[0].Name, hp.Last().Configs[0].Name)
	}
	// v3, the oldest kept, is still a rollback target.
	w.setConfig(p, "v3")
	w.step()
	w.expectProgression(p, addonstatus.ReasonRollingBack, "", "v3", "v3", "v12")
}

// pausedWorld: p (Progressive maxConcurrency 1, c1..c4) runs a and moves to b; c1 is in flight.
func pausedWorld(t *testing.T) (*world, PlacementKey) {
	w := newWorld(t)
	w.config("a")
	w.config("b")
	p := w.placement("p", "a", progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{}), []string{"c1", "c2", "c3", "c4"})
	w.installAll()
	w.setConfig(p, "b")
	w.step()
	w.expectStates("c1=b/a/T c2=a/a/F c3=a/a/F c4=a/a/F")
	return w, p
}

// Pause mid-batch: the cluster in flight finishes, nothing new starts; resume continues.
func TestPauseAndResume(t *testing.T) {
	w, p := pausedWorld(t)
	w.annotateAs("addonops-cli", operations.PauseAnnotation, p.String())
	w.step()
	w.expectProgression(p, addonstatus.ReasonPaused, "paused (annotation addonops.io/pause): no new cluster starts, clusters in flight finish; 0/4 clusters done, 1 in progress", "b", "a", "a")
	w.expectEvent(addonstatus.ReasonPaused, "placement default/p: paused")
	w.expectEvent(addonstatus.ReasonPaused, "; annotation addonops.io/pause set by addonops-cli")
	w.agent("c1", succeed)
	for range 5 {
		w.advance(time.Hour)
		w.step()
	}
	w.expectStates("c1=b/b/T c2=a/a/F c3=a/a/F c4=a/a/F")
	w.expectProgression(p, addonstatus.ReasonPaused, "1/4 clusters done, 0 in progress", "b", "a", "a")
	w.expectVersions(p, "a:Superseded:c b:InProgress")

	delete(w.cma.Annotations, operations.PauseAnnotation)
	w.step()
	w.expectStates("c1=b/b/T c2=b/a/T c3=a/a/F c4=a/a/F")
	w.expectProgression(p, addonstatus.ReasonUpgrading, "1/4 clusters done, 1 in progress", "b", "a", "a")
	w.expectEvent("Resumed", "placement default/p: resumed")
	w.settle()
	w.expectProgression(p, addonstatus.ReasonUpgradeSucceed, "4/4 upgrade completed", "b", "b", "b")
}

// A rollback paused before its first decision stays a rollback when resumed: the Paused condition
// says nothing of the change's kind, so the kind is decided again from what is known good, as when
// the change began (TestArgoCD resumed a paused revert as an upgrade).
func TestPausedRollbackResumesAsARollback(t *testing.T) {
	w, p := pausedWorld(t)
	w.settle()
	w.expectProgression(p, addonstatus.ReasonUpgradeSucceed, "4/4 upgrade completed", "b", "b", "b")
	w.advance(time.Hour)
	w.annotateAs("addonops-cli", operations.PauseAnnotation, p.String())
	w.setConfig(p, "a")
	w.step()
	w.expectProgression(p, addonstatus.ReasonPaused, "", "a", "a", "b")
	w.advance(time.Minute)
	w.step()
	delete(w.cma.Annotations, operations.PauseAnnotation)
	w.step()
	w.expectProgression(p, addonstatus.ReasonRollingBack, "", "a", "a", "b")
	w.settle()
	w.expectProgression(p, addonstatus.ReasonRollbackSucceeded, "4/4 rollback completed", "a", "a", "a")
}

// A gated placement paused before a new version, whose canary passes that version meanwhile,
// resumes as an upgrade: the canary's proof makes the version the gate's target, not a version the
// placement ran (make demo's pause step: it resumed as a rollback for a moment in development).
func TestPausedUpgradeWhoseCanaryPassedResumesAsAnUpgrade(t *testing.T) {
	w, aws, gate := upgradedWorld(t)
	w.config("c")
	w.annotateAs("addonops-cli", operations.PauseAnnotation, aws.String())
	w.setConfig(aws, "c")
	w.setConfig(gate, "c")
	w.step()
	w.settle()
	w.expectProgression(gate, addonstatus.ReasonUpgradeSucceed, "2/2 upgrade completed", "c", "c", "c")
	w.expectProgression(aws, addonstatus.ReasonPaused, "", "c", "c", "b")
	delete(w.cma.Annotations, operations.PauseAnnotation)
	w.step()
	w.expectProgression(aws, addonstatus.ReasonUpgrading, "", "c", "c", "b")
	w.settle()
	w.expectProgression(aws, addonstatus.ReasonUpgradeSucceed, "4/4 upgrade completed", "c", "c", "c")
}

// "*" pauses every placement, and a pause annotation that does not parse pauses everything too.
func TestPauseAllAndBadPause(t *testing.T) {
	for _, value := range []string{"*", "not a placement key"} {
		t.Run(value, func(t *testing.T) {
			w, p := pausedWorld(t)
			w.cma.Annotations[operations.PauseAnnotation] = value
			w.agent("c1", succeed)
			w.step()
			// An object without managedFields (or a cache without them) says so.
			w.expectEvent(addonstatus.ReasonPaused, "; annotation addonops.io/pause set by an unknown manager")
			w.step()
			w.expectStates("c1=b/b/T c2=a/a/F c3=a/a/F c4=a/a/F")
			w.expectProgression(p, addonstatus.ReasonPaused, "", "b", "a", "a")
		})
	}
}

// A person passes a gate gate the gate cannot pass (a gate cluster fails b), for the version
// they checked; the promote does not carry over to a later version.
func TestPromotePassesTheCanaryGate(t *testing.T) {
	w, aws, gate := canaryWorld(t)
	w.installAll()
	w.setConfig(aws, "b")
	w.setConfig(gate, "b")
	w.step()
	w.agent("k1", succeed)
	w.agent("k2", fail)
	w.step()
	w.expectProgression(aws, addonstatus.ReasonWaitingForCanary, "", "b", "a", "a")
	w.annotateAs("kubectl-annotate", operations.PromoteAnnotation, operations.FormatMap(map[canary.PlacementKey]string{canary.PlacementKey(aws): versionID([]Config{cfgOf("b")})}))
	w.step()
	w.expectEvent("CanaryPromoted", "placement default/aws: a person passed the canary gate (annotation addonops.io/promote, set by kubectl-annotate) for version "+versionID([]Config{cfgOf("b")}))
	w.expectProgression(aws, addonstatus.ReasonUpgrading, "canary gate passed by a person", "b", "b", "a")
	w.expectStates("c1=b/a/T c2=a/a/F c3=a/a/F c4=a/a/F k1=b/b/T k2=b/a/T")

	// A promote of b does not pass c.
	w2, aws2, canary2 := canaryWorld(t)
	w2.installAll()
	w2.setConfig(aws2, "c")
	w2.setConfig(canary2, "c")
	w2.cma.Annotations[operations.PromoteAnnotation] = operations.FormatMap(map[canary.PlacementKey]string{canary.PlacementKey(aws2): versionID([]Config{cfgOf("b")})})
	w2.step()
	w2.expectProgression(aws2, addonstatus.ReasonWaitingForCanary, "", "c", "a", "a")
}

// retryWorld: p (Progressive maxConcurrency 1, maxFailures 0) moves from a to b and c1's agent
// stays unhealthy past the progress deadline: the rollout stops.
func retryWorld(t *testing.T) (*world, PlacementKey) {
	w, p := pausedWorld(t)
	w.agent("c1", unhealthy)
	w.step()
	w.advance(DefaultUnhealthyDeadline + time.Minute)
	w.step()
	w.step()
	w.expectProgression(p, addonstatus.ReasonUpgradeFailed, "upgrade stopped", "b", "a", "a")
	w.expectVersions(p, "a:Superseded:c b:Failed")
	return w, p
}

// Retry restarts a rollout stopped on maxFailures for the same version, once per request: the
// failed cluster gets a new attempt (a new progress deadline), then the rollout goes on paced.
func TestRetry(t *testing.T) {
	w, p := retryWorld(t)
	w.advance(time.Minute)
	w.annotateAs("argocd-controller", operations.RetryAnnotation, operations.FormatMap(map[canary.PlacementKey]string{canary.PlacementKey(p): "token-1"}))
	w.step()
	w.expectEvent("RetryStarted", "placement default/p: retrying the rollout of")
	w.expectEvent("RetryStarted", "(annotation addonops.io/retry, set by argocd-controller): failed clusters go again")
	w.expectProgression(p, addonstatus.ReasonUpgrading, "0/4 clusters done, 1 in progress, 0 failed", "b", "a", "a")
	if got := w.mcaReason("c1"); got != addonstatus.ReasonUpgrading {
		t.Fatalf("c1: %s, want Upgrading again", got)
	}
	w.expectStates("c1=b/a/T c2=a/a/F c3=a/a/F c4=a/a/F")
	w.expectVersions(p, "a:Superseded:c b:InProgress")
	if hp := w.history.Placement(p.String()); hp.RetryToken != "token-1" || hp.Last().Retries != 1 {
		t.Fatalf("retry not recorded: %+v", hp)
	}
	// Still unhealthy: it fails again after the deadline, and the same request does not restart it.
	w.advance(DefaultUnhealthyDeadline + time.Minute)
	w.step()
	w.step()
	w.expectProgression(p, addonstatus.ReasonUpgradeFailed, "upgrade stopped", "b", "a", "a")
	// A new request does; this time the agent becomes ready and the rollout completes.
	w.advance(time.Minute)
	w.cma.Annotations[operations.RetryAnnotation] = operations.FormatMap(map[canary.PlacementKey]string{canary.PlacementKey(p): "token-2"})
	w.step()
	w.agent("c1", succeed)
	w.step()
	w.expectStates("c1=b/b/T c2=b/a/T c3=a/a/F c4=a/a/F")
	w.settle()
	w.expectProgression(p, addonstatus.ReasonUpgradeSucceed, "4/4 upgrade completed", "b", "b", "b")
	w.expectVersions(p, "a:Superseded:c b:Succeeded:c")
}

// Abort returns the clusters that moved to the aborted version to the last known good, paced;
// Aborted stays until the desired configs change.
func TestAbort(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	w.config("b")
	w.config("c")
	p := w.placement("p", "a", progressive(intstr.FromInt32(2), clusterv1alpha1.RolloutConfig{}), []string{"c1", "c2", "c3", "c4", "c5"})
	w.installAll()
	w.setConfig(p, "b")
	w.step()
	w.agent("c1", succeed)
	w.step()
	w.expectStates("c1=b/b/T c2=b/a/T c3=b/a/T c4=a/a/F c5=a/a/F")

	idB := versionID([]Config{cfgOf("b")})
	w.annotateAs("addonops-cli", operations.AbortAnnotation, operations.FormatMap(map[canary.PlacementKey]string{canary.PlacementKey(p): idB}))
	w.step()
	w.expectProgression(p, addonstatus.ReasonAborting, "the rollout of "+idB+" was aborted by a person (annotation addonops.io/abort, set by addonops-cli); returning its clusters to", "b", "a", "a")
	w.expectEvent(addonstatus.ReasonAborting, "placement default/p: the rollout of "+idB+" was aborted by a person (annotation addonops.io/abort, set by addonops-cli)")
	// The version history keeps who asked: a later writer of the annotation does not change it.
	w.annotateAs("argocd-controller", operations.AbortAnnotation, w.cma.Annotations[operations.AbortAnnotation])
	if n := w.inFlight("a"); n > 2 {
		t.Fatalf("%d clusters going back at once, want at most maxConcurrency 2", n)
	}
	// c1 ran b and goes back; c2 and c3 were told b but their works never changed: back at once.
	if r := w.mcaReason("c1"); r != addonstatus.ReasonRollingBack {
		t.Fatalf("c1: %s, want RollingBack", r)
	}
	w.settle()
	w.expectStates("c1=a/a/T c2=a/a/T c3=a/a/T c4=a/a/T c5=a/a/T")
	w.expectProgression(p, addonstatus.ReasonAborted, "5/5 clusters are back on", "b", "a", "a")
	w.expectProgression(p, addonstatus.ReasonAborted, "aborted by a person (annotation addonops.io/abort, set by addonops-cli)", "b", "a", "a")
	w.expectVersions(p, "a:Superseded:c b:Aborted")
	if last := w.history.Placement(p.String()).Last(); !strings.Contains(last.Message, "set by addonops-cli") {
		t.Fatalf("the history of the aborted version says %q, want who aborted it", last.Message)
	}
	for range 3 {
		w.advance(time.Hour)
		if plan := w.step(); len(plan.Updates) != 0 {
			t.Fatalf("an aborted rollout still updates %d MCAs", len(plan.Updates))
		}
	}
	// The annotation stays in Git; the next version rolls out normally.
	w.setConfig(p, "c")
	w.settle()
	w.expectProgression(p, addonstatus.ReasonUpgradeSucceed, "5/5 upgrade completed", "c", "c", "c")
	w.expectVersions(p, "a:Superseded:c b:Aborted c:Succeeded:c")
}

// With addonops.io/auto-abort a forward rollout that breaches maxFailures is aborted by itself.
func TestAutoAbort(t *testing.T) {
	w, p := pausedWorld(t)
	w.cma.Annotations[operations.AutoAbortAnnotation] = "true"
	w.agent("c1", fail)
	w.step()
	w.expectProgression(p, addonstatus.ReasonAborting, "aborted automatically: more clusters failed than maxFailures allows", "b", "a", "a")
	w.expectStates("c1=a/a/T c2=a/a/T c3=a/a/T c4=a/a/T")
	w.settle()
	w.expectProgression(p, addonstatus.ReasonAborted, "4/4 clusters are back on", "b", "a", "a")
	w.expectVersions(p, "a:Superseded:c b:Aborted")
}

// An abort with nothing to return to stops the rollout where it is.
func TestAbortWithoutAnEarlierVersion(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	p := w.placement("p", "a", progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{}), []string{"c1", "c2"})
	w.step()
	w.cma.Annotations[operations.AbortAnnotation] = operations.FormatMap(map[canary.PlacementKey]string{canary.PlacementKey(p): versionID([]Config{cfgOf("a")})})
	w.agent("c1", succeed)
	w.step()
	w.step()
	w.expectProgression(p, addonstatus.ReasonAborted, "no earlier version of this placement completed, so its clusters stay where they are", "a", "", "")
	w.expectStates("c1=a/a/T c2=//F")
}

// A canary placement added after a version completed rolls back with the others when Git goes back
// to that version: the add-on ran it everywhere and left it.
func TestRevertRollsBackACanaryAddedLater(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	w.config("b")
	aws := w.placement("aws", "a", progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{}), []string{"c1", "c2", "k1", "k2"})
	w.installAll()
	gate := w.placement("canary", "b", all(), []string{"k1", "k2"})
	w.cma.Annotations[CanaryAnnotation] = `{"default/aws": "default/canary"}`
	w.setConfig(aws, "b")
	w.settle()
	w.expectStates("c1=b/b/T c2=b/b/T k1=b/b/T k2=b/b/T")
	w.expectVersions(gate, "b:Succeeded:c")
	w.setConfig(aws, "a")
	w.setConfig(gate, "a")
	w.step()
	w.expectProgression(gate, addonstatus.ReasonRollingBack, "", "a", "a", "b")
	w.expectProgression(aws, addonstatus.ReasonRollingBack, "", "a", "a", "b")
	w.settle()
	w.expectProgression(gate, addonstatus.ReasonRollbackSucceeded, "2/2 rollback completed", "a", "a", "a")
}

// The canary's new version is no rollback target for the placement it gates: moving that
// placement to it later (a second commit) is its upgrade.
func TestTheCanarysNewVersionIsAnUpgradeForTheGatedPlacement(t *testing.T) {
	w, aws, gate := canaryWorld(t)
	w.installAll()
	w.setConfig(gate, "b")
	w.settle()
	w.expectProgression(gate, addonstatus.ReasonUpgradeSucceed, "2/2 upgrade completed", "b", "b", "b")
	w.setConfig(aws, "b")
	w.step()
	w.expectProgression(aws, addonstatus.ReasonUpgrading, "", "b", "b", "a")
}
