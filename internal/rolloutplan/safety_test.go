package rolloutplan

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/configref"
)

// The decision's safety rules (package doc, "Rollback, failures and health"), one corner case each.

// expectNever fails if any of clusters was ever told to run cfg since the last call of noteDesired.
func (w *world) desiredSet(cfg string) []string {
	var out []string
	for c := range w.mcas {
		if w.desiredOf(c) == cfg {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

func (w *world) expectEvent(reason, msg string) {
	w.t.Helper()
	for _, e := range w.lastPlan.Events {
		if e.Reason == reason && strings.Contains(e.Message, msg) {
			return
		}
	}
	w.t.Fatalf("no event %s containing %q in %+v", reason, msg, w.lastPlan.Events)
}

// gatedWorld: aws (Progressive maxConcurrency 1, maxFailures 0, c1..c4) is gated by canary (All,
// k1 k2); both installed at a; then both move to b and the canary passes b.
func gatedWorld(t *testing.T) (w *world, aws, canary PlacementKey) {
	w, aws, canary = canaryWorld(t)
	w.installAll()
	w.setConfig(aws, "b")
	w.setConfig(canary, "b")
	w.step()
	w.agents(succeed, "k1", "k2")
	w.step()
	w.expectProgression(canary, addonstatus.ReasonUpgradeSucceed, "2/2 upgrade completed", "b", "b", "b")
	w.expectProgression(aws, addonstatus.ReasonUpgrading, "", "b", "b", "a")
	w.expectEvent("CanaryPassed", "canary placement default/canary runs addondeploymentconfigs.addon.open-cluster-management.io default/b (hash-b) on every cluster")
	w.expectStates("c1=b/a/T c2=a/a/F c3=a/a/F c4=a/a/F k1=b/b/T k2=b/b/T")
	return w, aws, canary
}

// The first scenario: the canary passed b, b fails on the first gated batch (maxFailures
// 0): the rollout stops; a revert to a wins at once, nothing ever moves to b again.
func TestRevertAfterTheCanaryPassedAndTheFirstBatchFailed(t *testing.T) {
	w, aws, canary := gatedWorld(t)
	w.agent("c1", fail)
	w.step()
	w.expectProgression(aws, addonstatus.ReasonUpgradeFailed, "upgrade stopped: more clusters failed than maxFailures allows; 0/4 clusters done, 0 in progress, 1 failed, 0 timed out; failed: c1 (upgrade failed: ManifestWork addon-hello-deploy-0 is Applied=False", "b", "b", "a")
	w.expectEvent("UpgradeFailed", "placement default/aws: upgrade stopped")
	w.step()
	w.expectStates("c1=b/a/T c2=a/a/F c3=a/a/F c4=a/a/F k1=b/b/T k2=b/b/T")

	// git revert: both placements back to a.
	w.setConfig(aws, "a")
	w.setConfig(canary, "a")
	w.step()
	// aws rolls back without waiting for the canary: c1 (on the abandoned b) goes back first,
	// the clusters still on a are done at once and untouched. The canary placement ran a before
	// (aws's last applied), so it rolls back too.
	w.expectStates("c1=a/a/T c2=a/a/T c3=a/a/T c4=a/a/T k1=a/b/T k2=a/b/T")
	w.expectProgression(aws, addonstatus.ReasonRollingBack, "rolling back... 3/4 clusters done, 1 in progress", "a", "a", "a")
	w.expectProgression(canary, addonstatus.ReasonRollingBack, "0/2 clusters done, 2 in progress", "a", "a", "b")
	w.expectEvent("RollbackStarted", "placement default/aws: rollback to addondeploymentconfigs.addon.open-cluster-management.io default/a (hash-a) started")
	for _, c := range []string{"c1", "k1", "k2"} {
		if got := w.mcaReason(c); got != addonstatus.ReasonRollingBack {
			t.Fatalf("%s: Progressing %s, want RollingBack", c, got)
		}
	}
	if n := w.inFlight("a"); n > 1+2 { // aws maxConcurrency 1, canary All (2)
		t.Fatalf("%d in flight", n)
	}
	w.agents(succeed, "c1", "k1", "k2")
	w.step()
	w.expectProgression(aws, addonstatus.ReasonRollbackSucceeded, "4/4 rollback completed with no errors.", "a", "a", "a")
	w.expectProgression(canary, addonstatus.ReasonRollbackSucceeded, "2/2 rollback completed with no errors.", "a", "a", "a")
	w.expectEvent("RollbackSucceeded", "placement default/aws")
	if got := w.desiredSet("b"); len(got) != 0 {
		t.Fatalf("clusters still told to run b: %v", got)
	}
	// And it stays so.
	for range 3 {
		w.advance(time.Hour)
		if p := w.step(); len(p.Updates) != 0 {
			t.Fatalf("settled rollback still updates %d MCAs", len(p.Updates))
		}
	}
}

// A rollback is paced by the placement's strategy: the clusters that run the abandoned version go
// back maxConcurrency at a time.
func TestRollbackIsPacedByMaxConcurrency(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	w.config("b")
	p := w.placement("aws", "a", progressive(intstr.FromInt32(2), clusterv1alpha1.RolloutConfig{MaxFailures: intstr.FromInt32(5)}), []string{"c1", "c2", "c3", "c4", "c5"})
	w.installAll()
	w.setConfig(p, "b")
	w.step()
	w.agents(succeed, "c1", "c2")
	w.step()
	w.agents(succeed, "c3")
	w.agents(fail, "c4")
	w.step()
	w.expectStates("c1=b/b/T c2=b/b/T c3=b/b/T c4=b/a/T c5=b/a/T")
	w.setConfig(p, "a") // revert
	maxInFlight := 0
	for range 10 {
		w.step()
		if n := w.inFlight("a"); n > maxInFlight {
			maxInFlight = n
		}
		if len(w.desiredSet("b")) == 0 && w.inFlight("a") == 0 {
			break
		}
		for _, c := range []string{"c1", "c2", "c3", "c4", "c5"} {
			if w.desiredOf(c) == "a" && w.appliedOf(c) != "a" || w.mcaReason(c) == addonstatus.ReasonRollingBack {
				w.agent(c, succeed)
			}
		}
	}
	if maxInFlight > 2 {
		t.Fatalf("%d clusters rolled back at once, maxConcurrency is 2", maxInFlight)
	}
	w.expectStates("c1=a/a/T c2=a/a/T c3=a/a/T c4=a/a/T c5=a/a/T")
	w.expectProgression(p, addonstatus.ReasonRollbackSucceeded, "5/5 rollback completed", "a", "a", "a")
}

// A rollout stopped on maxFailures restarts when desired changes: fix forward.
func TestFixForwardRestartsAStoppedRollout(t *testing.T) {
	w := newWorld(t)
	for _, c := range []string{"a", "b", "c"} {
		w.config(c)
	}
	p := w.placement("aws", "a", progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{}), []string{"c1", "c2", "c3"})
	w.installAll()
	w.setConfig(p, "b")
	w.step()
	w.agent("c1", fail)
	w.step()
	w.expectProgression(p, addonstatus.ReasonUpgradeFailed, "upgrade stopped", "b", "a", "a")
	w.setConfig(p, "c")
	w.step()
	w.expectProgression(p, addonstatus.ReasonUpgrading, "0/3 clusters done, 1 in progress", "c", "a", "a")
	w.expectStates("c1=c/a/T c2=a/a/F c3=a/a/F")
}

// Fix forward on a gated placement: the rollout of the last known good b stopped on failures; the
// canary passes c, and the gated placement abandons b for c.
func TestGatedFixForwardAfterTheLastKnownGoodFailed(t *testing.T) {
	w, aws, canary := gatedWorld(t)
	w.agent("c1", fail)
	w.step()
	w.expectProgression(aws, addonstatus.ReasonUpgradeFailed, "upgrade stopped", "b", "b", "a")
	w.setConfig(aws, "c")
	w.setConfig(canary, "c")
	w.step()
	w.expectProgression(aws, addonstatus.ReasonWaitingForCanary, "the rollout of the last known good configs stopped: 0/4 clusters done, 0 in progress, 1 failed", "c", "b", "a")
	w.agents(succeed, "k1", "k2")
	w.step()
	w.expectProgression(aws, addonstatus.ReasonUpgrading, "", "c", "c", "a")
	if got := w.desiredOf("c1"); got != "c" {
		t.Fatalf("c1 desired %s, want c (states %s)", got, w.states())
	}
}

// Health gates the canary: canary clusters whose works are fine but whose agents are not healthy
// never pass it, and fail once unhealthy for longer than the progress deadline.
func TestUnhealthyCanaryBlocksTheGatedPlacement(t *testing.T) {
	w, aws, canary := canaryWorld(t)
	w.installAll()
	w.setConfig(aws, "b")
	w.setConfig(canary, "b")
	w.step()
	w.agents(unhealthy, "k1", "k2")
	w.step()
	w.expectProgression(aws, addonstatus.ReasonWaitingForCanary, "0/2 do; not yet: k1, k2", "b", "a", "a")
	w.expectProgression(canary, addonstatus.ReasonUpgrading, "0/2 clusters done, 2 in progress", "b", "a", "a")
	w.expectStates("c1=a/a/T c2=a/a/T c3=a/a/T c4=a/a/T k1=b/a/T k2=b/a/T")
	if c := w.mcas["k1"]; !strings.Contains(condMsg(c, addonstatus.ConditionProgressing), "waiting for it to be healthy: Available=False (ProbeUnavailable: agent has no ready replica)") {
		t.Fatalf("k1 Progressing: %s", condMsg(c, addonstatus.ConditionProgressing))
	}
	plan := w.step()
	if plan.RecheckAfter <= 0 || plan.RecheckAfter > DefaultUnhealthyDeadline {
		t.Fatalf("RecheckAfter %v, want the end of the unhealthy deadline", plan.RecheckAfter)
	}
	w.advance(DefaultUnhealthyDeadline + time.Second)
	w.step()
	w.expectProgression(canary, addonstatus.ReasonUpgradeFailed, "upgrade failed: 0/2 clusters done, 0 in progress, 2 failed, 0 timed out; failed: k1 (upgrade failed: the add-on has not been healthy for 5m0s: Available=False (ProbeUnavailable: agent has no ready replica)), k2", "b", "a", "a")
	w.expectEvent("CanaryFailed", "placements gated by this canary (default/aws) keep their last known good configs")
	w.step()
	w.expectProgression(aws, addonstatus.ReasonWaitingForCanary, "", "b", "a", "a")
	w.expectStates("c1=a/a/T c2=a/a/T c3=a/a/T c4=a/a/T k1=b/a/T k2=b/a/T")
}

func condMsg(m *addonv1alpha1.ManagedClusterAddOn, t string) string {
	for _, c := range m.Status.Conditions {
		if c.Type == t {
			return c.Reason + ": " + c.Message
		}
	}
	return ""
}

// An unhealthy cluster in a batch counts toward maxFailures (the strategy's progressDeadline).
func TestUnhealthyBatchStopsTheRollout(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	w.config("b")
	p := w.placement("aws", "a", progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{ProgressDeadline: "2m"}), []string{"c1", "c2"})
	w.installAll()
	w.setConfig(p, "b")
	w.step()
	w.agent("c1", unhealthy)
	w.advance(time.Minute)
	w.step()
	w.expectProgression(p, addonstatus.ReasonUpgrading, "0/2 clusters done, 1 in progress", "b", "a", "a")
	w.advance(61 * time.Second)
	w.step()
	w.step()
	w.expectProgression(p, addonstatus.ReasonUpgradeFailed, "c1 (upgrade failed: the add-on has not been healthy for 2m0s", "b", "a", "a")
	w.expectStates("c1=b/a/T c2=a/a/F")
}

// Deployer-side failures are failures: a render error counts toward maxFailures.
func TestRenderErrorIsAFailure(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	w.config("b")
	p := w.placement("aws", "a", progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{}), []string{"c1", "c2"})
	w.installAll()
	w.setConfig(p, "b")
	w.step()
	w.agent("c1", renderError)
	w.step()
	// A moment of grace: a deployer that lost a write race reports False and then True again.
	w.expectProgression(p, addonstatus.ReasonUpgrading, "0/2 clusters done, 1 in progress", "b", "a", "a")
	w.advance(DeployerGrace)
	w.recheck("c1")
	w.step()
	w.expectProgression(p, addonstatus.ReasonUpgradeFailed, "failed: c1 (upgrade failed: the add-on deployer reports ManifestApplied=False (ManifestWorkApplyFailed: failed to render: boom))", "b", "a", "a")
	w.expectStates("c1=b/a/T c2=a/a/F")
	// Revert: c1's works never left a, so it is done at once.
	w.setConfig(p, "a")
	w.step()
	w.expectProgression(p, addonstatus.ReasonRollingBack, "1/2 clusters done, 1 in progress", "a", "a", "a")
	w.agent("c1", succeed)
	w.step()
	w.expectProgression(p, addonstatus.ReasonRollbackSucceeded, "2/2 rollback completed", "a", "a", "a")
}

// A deployer that loses a write race (ManifestApplied=False for a moment, then True) fails nothing.
func TestDeployerWriteRaceIsNotAFailure(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	w.config("b")
	p := w.placement("aws", "a", progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{}), []string{"c1", "c2"})
	w.installAll()
	w.setConfig(p, "b")
	w.step()
	w.agent("c1", renderError) // "failed to apply manifestWork: the object has been modified"
	w.step()
	w.agent("c1", succeed) // the retry a moment later
	w.step()
	w.expectProgression(p, addonstatus.ReasonUpgrading, "1/2 clusters done, 1 in progress, 0 failed", "b", "a", "a")
	if slices.Contains(w.eventReasons(), "UpgradeFailed") {
		t.Fatalf("a lost write race raised a failure event: %v", w.eventReasons())
	}
}

// The canary placement may be any placement: here not an install placement; its clusters get
// their configs from another install placement (staging) and from a manual MCA's own spec.
func TestCanaryThatIsNotAnInstallPlacement(t *testing.T) {
	w := newWorld(t)
	for _, c := range []string{"a", "b"} {
		w.config(c)
	}
	aws := w.placement("aws", "a", progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{}), []string{"c1", "c2"})
	staging := w.placement("staging", "a", all(), []string{"k1"})
	w.cma.Annotations[CanaryAnnotation] = `{"default/aws": "default/canary"}`
	// The canary placement (not in the install strategy) selects k1 and m1; m1 is a manual MCA.
	canary := PlacementKey{Namespace: "default", Name: "canary"}
	w.placements[canary] = w.placements[staging].DeepCopy()
	w.placements[canary].Name = "canary"
	w.decide(canary, []string{"k1", "m1"})
	manual := w.mca("m1")
	delete(manual.Labels, CreatedByLabel)
	manual.Spec.Configs = []addonv1alpha1.AddOnConfig{{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: adcGR.Group, Resource: adcGR.Resource},
		ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "default", Name: "a"}}}
	w.installAll()
	w.expectProgression(aws, addonstatus.ReasonInstallSucceed, "2/2 install completed", "a", "a", "a")

	w.setConfig(aws, "b")
	w.step()
	w.expectProgression(aws, addonstatus.ReasonWaitingForCanary, "waiting for canary placement default/canary to run addondeploymentconfigs.addon.open-cluster-management.io default/b (hash-b) on every cluster, healthy: 0/2 do; not yet: k1, m1", "b", "a", "a")
	// The canary's clusters get b: staging by its placement, m1 by its own spec.
	w.setConfig(staging, "b")
	manual = w.mcas["m1"].DeepCopy()
	manual.Spec.Configs[0].Name = "b"
	manual.Generation++
	w.mcas["m1"] = manual
	w.step()
	w.agents(succeed, "k1", "m1")
	w.step()
	w.expectProgression(aws, addonstatus.ReasonUpgrading, "0/2 clusters done, 1 in progress", "b", "b", "a")
}

func TestEmptyCanaryWarns(t *testing.T) {
	w, aws, canary := canaryWorld(t)
	w.decide(canary)
	w.step()
	w.expectProgression(aws, addonstatus.ReasonWaitingForCanary, "canary placement default/canary selects no cluster, so no version can pass it", "a", "", "")
	if ev := w.lastPlan.Events; !slices.ContainsFunc(ev, func(e Event) bool { return e.Warning && e.Reason == addonstatus.ReasonWaitingForCanary }) {
		t.Fatalf("no WaitingForCanary warning: %+v", ev)
	}
	// The warning is not repeated while nothing changes.
	w.step()
	if slices.ContainsFunc(w.lastPlan.Events, func(e Event) bool { return e.Warning }) {
		t.Fatalf("warning repeated: %+v", w.lastPlan.Events)
	}
}

// A canary cluster whose only way to get configs is the gated placement itself can never pass.
func TestCanaryClusterOwnedByTheGatedPlacement(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	aws := w.placement("aws", "a", all(), []string{"c1", "c2"})
	canary := PlacementKey{Namespace: "default", Name: "canary"}
	w.placements[canary] = w.placements[aws].DeepCopy()
	w.placements[canary].Name = "canary"
	w.decide(canary, []string{"c1"})
	w.cma.Annotations[CanaryAnnotation] = `{"default/aws": "default/canary"}`
	w.step()
	w.expectProgression(aws, addonstatus.ReasonWaitingForCanary, "0/1 do; c1 get their configs from placement default/aws, which waits for this canary", "a", "", "")
	if !slices.ContainsFunc(w.lastPlan.Events, func(e Event) bool { return e.Warning }) {
		t.Fatalf("no warning event: %+v", w.lastPlan.Events)
	}
}

// docs/design/install-strategy.md#switching-to-manual-re-targets-nothing: switching to Manual
// leaves each MCA on the configs it runs, mid-rollout too; the progressions stay as history; an MCA
// whose own spec changes then takes defaults and its configs.
func TestSwitchToManualMidRollout(t *testing.T) {
	w := newWorld(t)
	for _, c := range []string{"a", "b", "d"} {
		w.config(c)
	}
	w.cma.Spec.SupportedConfigs[0].DefaultConfig = &addonv1alpha1.ConfigReferent{Namespace: "default", Name: "d"}
	p := w.placement("aws", "a", progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{}), []string{"c1", "c2", "c3"})
	w.installAll()
	w.setConfig(p, "b")
	w.step()
	w.expectStates("c1=b/a/T c2=a/a/F c3=a/a/F")
	w.cma.Spec.InstallStrategy.Type = StrategyManual
	w.step()
	w.expectStates("c1=b/a/T c2=a/a/T c3=a/a/T")
	w.expectProgression(p, addonstatus.ReasonManual, "each ManagedClusterAddOn keeps the configs it runs", "b", "a", "a")
	w.agent("c1", succeed)
	w.step()
	w.expectStates("c1=b/b/T c2=a/a/T c3=a/a/T")
	// c3's own spec changes: it takes the defaults (d) with its own configs (none here but a new
	// generation): re-targeted alone.
	m := w.mcas["c3"].DeepCopy()
	m.Generation++
	w.mcas["c3"] = m
	w.step()
	w.expectStates("c1=b/b/T c2=a/a/T c3=d/a/T")
}

func TestUnsupportedMCAConfig(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	p := w.placement("aws", "a", all(), []string{"c1", "c2"})
	w.mca("c1").Spec.Configs = []addonv1alpha1.AddOnConfig{{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: "example.io", Resource: "widgets"},
		ConfigReferent: addonv1alpha1.ConfigReferent{Name: "w"}}}
	w.step()
	// As in OCM, c1 is still told to run the placement's config, and lists the unsupported
	// reference with an empty spec hash; Configured=False keeps its works as they are.
	w.expectStates("c1=a//F c2=a//T")
	c := w.mcas["c1"].Status.Conditions
	if got := condMsg(w.mcas["c1"], addonstatus.ConditionConfigured); !strings.HasPrefix(got, "ConfigurationUnsupported: Configuration with gvr example.io/widgets is not supported for this addon") {
		t.Fatalf("c1 Configured: %s (%+v)", got, c)
	}
	if got := condMsg(w.mcas["c1"], addonstatus.ConditionProgressing); got != "ConfigurationUnsupported: Configuration with gvr example.io/widgets is not supported for this addon" {
		t.Fatalf("c1 Progressing: %s, want OCM's ConfigurationUnsupported condition", got)
	}
	if got := refsOfStatus(w.mcas["c1"]); got != "addondeploymentconfigs default/a hash-a; widgets.example.io /w " {
		t.Fatalf("c1 configReferences: %s", got)
	}
	w.expectProgression(p, addonstatus.ReasonInstalling, "1 cannot be configured; cannot be configured: c1 (Configuration with gvr example.io/widgets", "a", "", "")
	w.agent("c2", succeed)
	w.step()
	// The placement never completes while a cluster cannot be configured; once that cluster is all
	// that is left, it says so (Progressing=False: a person must act).
	if r := ProgressingOf(w.progression(p)); r.Status != metav1.ConditionFalse || r.Reason != addonstatus.ReasonClustersNotConfigurable {
		t.Fatalf("progression with only an unconfigurable cluster left: %+v, want Progressing=False %s", r, addonstatus.ReasonClustersNotConfigurable)
	}
	// The progress tracker leaves the blocked cluster's status to the rollout.
	before := w.mcas["c1"].Status.DeepCopy()
	if w.recheck("c1"); !equality.Semantic.DeepEqual(*before, w.mcas["c1"].Status) {
		t.Fatalf("progress changed a blocked MCA:\n%+v\nwas\n%+v", w.mcas["c1"].Status, *before)
	}
	if plan := w.step(); len(plan.Updates) != 0 {
		t.Fatalf("a blocked MCA is written again: %+v", plan.Updates)
	}

	// c2, running a, gets an unsupported config too: its lastApplied stays, Progressing says why.
	w.mca("c2").Spec.Configs = w.mcas["c1"].Spec.Configs
	w.mcas["c2"].Generation++
	w.step()
	w.expectStates("c1=a//F c2=a/a/F")
	if got := condMsg(w.mcas["c2"], addonstatus.ConditionProgressing); !strings.HasPrefix(got, "ConfigurationUnsupported: ") {
		t.Fatalf("c2 Progressing: %s", got)
	}
	// Fixed: the config is removed from the spec; both move to a in their turn.
	for _, c := range []string{"c1", "c2"} {
		w.mcas[c].Spec.Configs = nil
		w.mcas[c].Generation++
	}
	w.step()
	w.expectStates("c1=a//T c2=a/a/T")
	w.agents(succeed, "c1", "c2")
	w.step()
	// An upgrade: c2 ran a before its spec changed.
	w.expectProgression(p, addonstatus.ReasonUpgradeSucceed, "2/2 upgrade completed", "a", "a", "a")
	if got := refsOfStatus(w.mcas["c1"]); got != "addondeploymentconfigs default/a hash-a" {
		t.Fatalf("c1 configReferences after the fix: %s", got)
	}
}

// OCM's "Should not update unsupported config spec hash" (addon_configs_test.go): an MCA with a
// config of an unsupported type, on an add-on with a default config and no placement, keeps the
// default configured and lists the unsupported reference with an empty spec hash.
func TestUnsupportedMCAConfigKeepsDefaults(t *testing.T) {
	w := newWorld(t)
	w.config("d")
	w.generations = map[configref.Ref]int64{adcRef("d"): 1}
	w.cma.Spec.SupportedConfigs[0].DefaultConfig = &addonv1alpha1.ConfigReferent{Namespace: "default", Name: "d"}
	w.cma.Spec.InstallStrategy.Type = StrategyManual
	m := w.mca("c1")
	m.Labels = nil
	m.Spec.Configs = []addonv1alpha1.AddOnConfig{{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: "example.io", Resource: "widgets"},
		ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "c1", Name: "addon-config-test"}}}
	w.step()
	got := w.mcas["c1"].Status.ConfigReferences
	want := []addonv1alpha1.ConfigReference{
		{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: adcGR.Group, Resource: adcGR.Resource},
			ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "default", Name: "d"}, LastObservedGeneration: 1,
			DesiredConfig: &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "default", Name: "d"}, SpecHash: "hash-d"}},
		{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: "example.io", Resource: "widgets"},
			ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "c1", Name: "addon-config-test"}, LastObservedGeneration: 0,
			DesiredConfig: &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "c1", Name: "addon-config-test"}, SpecHash: ""}},
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Fatalf("configReferences:\n%+v\nwant\n%+v", got, want)
	}
	if got := condMsg(w.mcas["c1"], addonstatus.ConditionConfigured); !strings.HasPrefix(got, "ConfigurationUnsupported: Configuration with gvr example.io/widgets is not supported for this addon") {
		t.Fatalf("Configured: %s", got)
	}
	if got := condMsg(w.mcas["c1"], addonstatus.ConditionProgressing); got != "ConfigurationUnsupported: Configuration with gvr example.io/widgets is not supported for this addon" {
		t.Fatalf("Progressing: %s", got)
	}
}

// refsOfStatus renders an MCA's status.configReferences: "<resource[.group]> <ns>/<name> <desired
// hash>" joined by "; ".
func refsOfStatus(m *addonv1alpha1.ManagedClusterAddOn) string {
	var out []string
	for _, r := range m.Status.ConfigReferences {
		res := r.Resource
		if r.Group != configref.AddonGroup {
			res += "." + r.Group
		}
		h := ""
		if r.DesiredConfig != nil {
			h = r.DesiredConfig.SpecHash
		}
		out = append(out, fmt.Sprintf("%s %s/%s %s", res, r.Namespace, r.Name, h))
	}
	return strings.Join(out, "; ")
}

// Health check type None: an add-on without health prober (Customized mode, no Available) is done
// once its works are applied; the CMA annotation turns the check off for every cluster.
func TestHealthCheckOff(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	w.cma.Annotations[HealthCheckAnnotation] = "none"
	p := w.placement("aws", "a", all(), []string{"c1"})
	w.step()
	w.agent("c1", unhealthy)
	w.step()
	w.expectProgression(p, addonstatus.ReasonInstallSucceed, "1/1 install completed", "a", "a", "a")
}

// An MCA's spec naming 500 unsupported config types: its Configured message names the first
// few and counts the rest, so it stays far below the 32 KiB the API server accepts for a
// condition message (naming all 500 made the MCA's status unwritable), and still tells what to do.
func TestManyUnsupportedMCAConfigs(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	w.placement("aws", "a", all(), []string{"c1"})
	m := w.mca("c1")
	for i := range 500 {
		m.Spec.Configs = append(m.Spec.Configs, addonv1alpha1.AddOnConfig{
			ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: fmt.Sprintf("g%d.example.io", i), Resource: "widgets"},
			ConfigReferent:      addonv1alpha1.ConfigReferent{Name: "w"}})
	}
	w.step()
	got := condMsg(w.mcas["c1"], addonstatus.ConditionConfigured)
	want := "ConfigurationUnsupported: Configuration with gvr g0.example.io/widgets is not supported for this addon; "
	if !strings.HasPrefix(got, want) || !strings.Contains(got, "g4.example.io/widgets is not supported for this addon; and 495 more unsupported types; add the type to") ||
		strings.Contains(got, "g5.example.io") || len(got) > 2048 {
		t.Fatalf("Configured message (%d bytes): %s", len(got), got)
	}
	if got := condMsg(w.mcas["c1"], addonstatus.ConditionProgressing); got != "ConfigurationUnsupported: Configuration with gvr g0.example.io/widgets is not supported for this addon" {
		t.Fatalf("Progressing: %s", got)
	}
}
