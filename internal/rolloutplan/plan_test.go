package rolloutplan

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/configref"
)

// installAll installs the current configs everywhere (every cluster succeeds at once).
func (w *world) installAll() {
	w.t.Helper()
	for range 20 {
		p := w.step()
		if len(p.Updates) == 0 {
			done := true
			for _, m := range w.mcas {
				done = done && addonstatus.Applied(m)
			}
			for i := range w.cma.Status.InstallProgressions {
				c := ProgressingOf(&w.cma.Status.InstallProgressions[i])
				done = done && c != nil && c.Status == metav1.ConditionFalse
			}
			if done {
				return
			}
			w.advance(time.Hour) // soak times
			continue
		}
		for c, m := range w.mcas {
			if Desired(m) != nil && !addonstatus.Applied(m) && isConfigured(m) {
				w.agent(c, succeed)
			}
		}
	}
	w.t.Fatal("install did not settle in 20 steps")
}

func isConfigured(m *addonv1alpha1.ManagedClusterAddOn) bool {
	for _, c := range m.Status.Conditions {
		if c.Type == addonstatus.ConditionConfigured {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

// inFlight counts clusters told to run name that have not applied it.
func (w *world) inFlight(name string) int {
	n := 0
	for c := range w.mcas {
		if w.desiredOf(c) == name && w.appliedOf(c) != name {
			n++
		}
	}
	return n
}

func TestFreshInstallAll(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	p := w.placement("aws", "a", all(), []string{"c1", "c2", "c3", "c4"})
	w.step()
	w.expectStates("c1=a//T c2=a//T c3=a//T c4=a//T")
	w.expectProgression(p, addonstatus.ReasonInstalling, "installing... 0/4 clusters done, 4 in progress, 0 failed, 0 timed out", "a", "", "")
	w.agents(succeed, "c1", "c2")
	w.step()
	w.expectProgression(p, addonstatus.ReasonInstalling, "2/4 clusters done, 2 in progress", "a", "", "")
	w.agents(succeed, "c3", "c4")
	w.step()
	w.expectStates("c1=a/a/T c2=a/a/T c3=a/a/T c4=a/a/T")
	w.expectProgression(p, addonstatus.ReasonInstallSucceed, "4/4 install completed with no errors.", "a", "a", "a")

	// Nothing changes: no MCA write, identical CMA status, and the install stays an install.
	before := w.cma.Status.DeepCopy()
	w.advance(time.Hour)
	if plan := w.step(); len(plan.Updates) != 0 {
		t.Fatalf("idle decision updates %d MCAs", len(plan.Updates))
	}
	if !equality.Semantic.DeepEqual(*before, w.cma.Status) {
		t.Fatalf("idle decision changed the CMA status:\n%+v\n%+v", *before, w.cma.Status)
	}
}

func TestRollingUpgrade25Percent(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	w.config("b")
	clusters := []string{"c1", "c2", "c3", "c4"}
	p := w.placement("aws", "a", progressive(intstr.FromString("25%"), clusterv1alpha1.RolloutConfig{}), clusters)
	w.installAll()
	w.setConfig(p, "b")

	var order []string
	for range 10 {
		w.step()
		if n := w.inFlight("b"); n > 1 {
			t.Fatalf("%d clusters in flight, maxConcurrency is 1: %s", n, w.states())
		}
		moved := ""
		for _, c := range clusters {
			if w.desiredOf(c) == "b" && w.appliedOf(c) != "b" {
				moved = c
			}
		}
		if moved == "" {
			break
		}
		order = append(order, moved)
		// A second decision before the cluster finished moves nobody else.
		if plan := w.step(); len(plan.Updates) != 0 {
			t.Fatalf("decision while %s in flight updated %d MCAs", moved, len(plan.Updates))
		}
		w.agent(moved, succeed)
	}
	if strings.Join(order, ",") != "c1,c2,c3,c4" {
		t.Fatalf("rollout order %v, want c1..c4 one by one", order)
	}
	w.expectStates("c1=b/b/T c2=b/b/T c3=b/b/T c4=b/b/T")
	w.expectProgression(p, addonstatus.ReasonUpgradeSucceed, "4/4 upgrade completed with no errors.", "b", "b", "b")
}

func TestRollingUpgradeFirstBatch(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	w.config("b")
	p := w.placement("aws", "a", progressive(intstr.FromString("25%"), clusterv1alpha1.RolloutConfig{}), []string{"c1", "c2", "c3", "c4"})
	w.installAll()
	w.setConfig(p, "b")
	w.step()
	// The batch gets the new config and Configured=True; the others keep theirs and wait.
	w.expectStates("c1=b/a/T c2=a/a/F c3=a/a/F c4=a/a/F")
	w.expectProgression(p, addonstatus.ReasonUpgrading, "upgrading... 0/4 clusters done, 1 in progress, 0 failed, 0 timed out", "b", "a", "a")
}

func TestMaxFailuresCountsRealFailures(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	w.config("b")
	p := w.placement("aws", "a", progressive(intstr.FromInt32(2), clusterv1alpha1.RolloutConfig{MaxFailures: intstr.FromInt32(1)}),
		[]string{"c1", "c2", "c3", "c4", "c5"})
	w.installAll()
	w.setConfig(p, "b")
	w.step()
	w.expectStates("c1=b/a/T c2=b/a/T c3=a/a/F c4=a/a/F c5=a/a/F")
	w.agent("c1", fail)
	w.agent("c2", succeed)
	w.step()
	// One failure is tolerated: c1 keeps its slot (still within progressDeadline), c3 takes c2's.
	w.expectStates("c1=b/a/T c2=b/b/T c3=b/a/T c4=a/a/F c5=a/a/F")
	w.expectProgression(p, addonstatus.ReasonUpgrading, "1/5 clusters done, 1 in progress, 1 failed, 0 timed out", "b", "a", "a")
	w.agent("c3", fail)
	w.step()
	// Two failures > maxFailures 1: the rollout stops, nobody else moves.
	w.expectStates("c1=b/a/T c2=b/b/T c3=b/a/T c4=a/a/F c5=a/a/F")
	w.expectProgression(p, addonstatus.ReasonUpgradeFailed, "upgrade stopped: more clusters failed than maxFailures allows; 1/5 clusters done, 0 in progress, 2 failed", "b", "a", "a")
	if c := ProgressingOf(w.progression(p)); c.Status != metav1.ConditionFalse {
		t.Fatalf("failed progression must be Progressing=False: %+v", c)
	}
	// A failed cluster that recovers counts as done.
	w.agent("c1", succeed)
	w.step()
	w.expectStates("c1=b/b/T c2=b/b/T c3=b/a/T c4=b/a/T c5=a/a/F")
}

func TestMaxFailuresZeroStopsAtFirstFailure(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	w.config("b")
	p := w.placement("aws", "a", progressive(intstr.FromInt32(2), clusterv1alpha1.RolloutConfig{}), []string{"c1", "c2", "c3"})
	w.installAll()
	w.setConfig(p, "b")
	w.step()
	w.agent("c1", fail)
	w.agent("c2", succeed)
	w.step()
	w.expectStates("c1=b/a/T c2=b/b/T c3=a/a/F")
	w.expectProgression(p, addonstatus.ReasonUpgradeFailed, "upgrade stopped", "b", "a", "a")
}

func TestProgressDeadlineTimesOut(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	w.config("b")
	p := w.placement("aws", "a", progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{ProgressDeadline: "30s", MaxFailures: intstr.FromInt32(1)}),
		[]string{"c1", "c2", "c3"})
	w.installAll()
	w.setConfig(p, "b")
	w.step()
	// The next decision (the MCA write triggers one) knows when c1's deadline passes.
	if plan := w.step(); plan.RecheckAfter <= 0 || plan.RecheckAfter > 30*time.Second {
		t.Fatalf("RecheckAfter = %v, want the deadline of c1 (30s)", plan.RecheckAfter)
	}
	w.agent("c1", never)
	w.advance(29 * time.Second)
	w.step()
	w.expectStates("c1=b/a/T c2=a/a/F c3=a/a/F")
	w.advance(2 * time.Second)
	w.step()
	w.expectStates("c1=b/a/T c2=b/a/T c3=a/a/F")
	w.expectProgression(p, addonstatus.ReasonUpgrading, "0/3 clusters done, 1 in progress, 0 failed, 1 timed out", "b", "a", "a")
	w.agent("c2", never)
	w.advance(31 * time.Second)
	w.step()
	// Second timeout breaches maxFailures 1.
	w.expectStates("c1=b/a/T c2=b/a/T c3=a/a/F")
	w.expectProgression(p, addonstatus.ReasonUpgradeFailed, "0/3 clusters done, 0 in progress, 0 failed, 2 timed out", "b", "a", "a")
}

func TestMinSuccessTimeHoldsTheNextBatch(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	w.config("b")
	p := w.placement("aws", "a", progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{MinSuccessTime: metav1.Duration{Duration: time.Minute}}),
		[]string{"c1", "c2"})
	w.installAll()
	w.advance(2 * time.Minute)
	w.setConfig(p, "b")
	w.step()
	w.agent("c1", succeed)
	plan := w.step()
	w.expectStates("c1=b/b/T c2=a/a/F")
	if plan.RecheckAfter <= 0 || plan.RecheckAfter > time.Minute {
		t.Fatalf("RecheckAfter = %v, want the end of c1's soak time", plan.RecheckAfter)
	}
	w.expectProgression(p, addonstatus.ReasonUpgrading, "0/2 clusters done, 1 in progress", "b", "a", "a")
	w.advance(59 * time.Second)
	w.step()
	w.expectStates("c1=b/b/T c2=a/a/F")
	w.advance(2 * time.Second)
	w.step()
	w.expectStates("c1=b/b/T c2=b/a/T")
}

// A cluster that failed and recovers soaks minSuccessTime from its recovery, not from its failure:
// its Progressing condition stays False from UpgradeFailed to UpgradeSucceed, so its transition time
// would still say when it failed.
func TestMinSuccessTimeAfterRecovery(t *testing.T) {
	for _, soak := range []string{"0s", "30s"} {
		t.Run("health soak "+soak, func(t *testing.T) {
			w := newWorld(t)
			w.config("a")
			w.config("b")
			p := w.placement("aws", "a", progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{MaxFailures: intstr.FromInt32(1), MinSuccessTime: metav1.Duration{Duration: time.Minute}}),
				[]string{"c1", "c2"})
			w.installAll()
			w.cma.Annotations[HealthSoakAnnotation] = soak
			w.advance(2 * time.Minute)
			w.setConfig(p, "b")
			w.step()
			w.agent("c1", fail)
			w.step()
			w.expectStates("c1=b/a/T c2=a/a/F")
			// Long after the failure, c1's works recover (and it soaks its health, if any).
			w.advance(10 * time.Minute)
			w.agent("c1", succeed)
			if soak != "0s" {
				w.advance(31 * time.Second)
				w.recheck("c1")
			}
			recovered := w.now
			plan := w.step()
			w.expectStates("c1=b/b/T c2=a/a/F")
			if plan.RecheckAfter <= 0 || plan.RecheckAfter > time.Minute {
				t.Fatalf("RecheckAfter = %v, want the end of c1's minSuccessTime", plan.RecheckAfter)
			}
			w.expectProgression(p, addonstatus.ReasonUpgrading, "0/2 clusters done, 1 in progress", "b", "a", "a")
			// minSuccessTime counts from the recovery (with a health soak, from its start, which
			// was after the recovery too).
			start := recovered
			if soak != "0s" {
				start = recovered.Add(-31 * time.Second)
			}
			w.now = start.Add(59 * time.Second)
			w.step()
			w.expectStates("c1=b/b/T c2=a/a/F")
			w.now = start.Add(61 * time.Second)
			w.step()
			w.expectStates("c1=b/b/T c2=b/a/T")
		})
	}
}

func TestMandatoryDecisionGroupsFirst(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	w.config("b")
	p := w.placement("aws", "a", progressive(intstr.FromInt32(2), clusterv1alpha1.RolloutConfig{},
		clusterv1alpha1.MandatoryDecisionGroup{GroupName: "canary"}),
		[]string{"c9"}, []string{"c1", "c2", "c3"})
	w.groupNames[p] = []string{"canary", ""}
	w.installAll()
	w.setConfig(p, "b")
	w.step()
	w.expectStates("c1=a/a/F c2=a/a/F c3=a/a/F c9=b/a/T")
	w.step()
	w.expectStates("c1=a/a/F c2=a/a/F c3=a/a/F c9=b/a/T")
	w.agent("c9", succeed)
	w.step()
	w.expectStates("c1=b/a/T c2=b/a/T c3=a/a/F c9=b/b/T")
}

func TestProgressivePerGroup(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	w.config("b")
	p := w.placement("aws", "a", clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.ProgressivePerGroup},
		[]string{"c1", "c2"}, []string{"c3", "c4"})
	w.installAll()
	w.setConfig(p, "b")
	w.step()
	w.expectStates("c1=b/a/T c2=b/a/T c3=a/a/F c4=a/a/F")
	w.agent("c1", succeed)
	w.step()
	w.expectStates("c1=b/b/T c2=b/a/T c3=a/a/F c4=a/a/F")
	w.agent("c2", succeed)
	w.step()
	w.expectStates("c1=b/b/T c2=b/b/T c3=b/a/T c4=b/a/T")
}

func TestProgressiveDefaultsToClustersPerDecisionGroup(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	w.config("b")
	p := w.placement("aws", "a", clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.Progressive}, []string{"c1", "c2", "c3", "c4"})
	w.placements[p].Spec.DecisionStrategy.GroupStrategy.ClustersPerDecisionGroup = intstr.FromString("50%")
	w.installAll()
	w.setConfig(p, "b")
	w.step()
	w.expectStates("c1=b/a/T c2=b/a/T c3=a/a/F c4=a/a/F")
}

func TestRollbackFinishesAtOnceWhereTheOldVersionRuns(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	w.config("b")
	p := w.placement("aws", "a", progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{}), []string{"c1", "c2", "c3", "c4"})
	w.installAll()
	w.setConfig(p, "b")
	w.step()
	w.agent("c1", fail)
	w.step()
	w.expectProgression(p, addonstatus.ReasonUpgradeFailed, "1 failed", "b", "a", "a")
	w.setConfig(p, "a")
	w.step()
	// The others never left a: done at once, untouched. c1's works still hold b (Applied=False):
	// it rolls back, and is done only once its works run a again.
	w.expectStates("c1=a/a/T c2=a/a/T c3=a/a/T c4=a/a/T")
	w.expectProgression(p, addonstatus.ReasonRollingBack, "rolling back... 3/4 clusters done, 1 in progress", "a", "a", "a")
	if got := w.mcaReason("c1"); got != addonstatus.ReasonRollingBack {
		t.Fatalf("c1: Progressing %s, want RollingBack", got)
	}
	w.agent("c1", succeed)
	w.step()
	w.expectProgression(p, addonstatus.ReasonRollbackSucceeded, "4/4 rollback completed with no errors.", "a", "a", "a")
	if got := w.mcaReason("c1"); got != addonstatus.ReasonRollbackSucceeded {
		t.Fatalf("c1: Progressing %s, want RollbackSucceeded", got)
	}
	// It stays a rollback while nothing changes.
	w.step()
	w.expectProgression(p, addonstatus.ReasonRollbackSucceeded, "4/4 rollback completed", "a", "a", "a")
}

func TestInvalidRolloutStrategy(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	p := w.placement("aws", "a", clusterv1alpha1.RolloutStrategy{Type: "UpdateAll"}, []string{"c1"})
	if plan := w.step(); len(plan.Updates) != 0 {
		t.Fatalf("invalid strategy moved %d MCAs", len(plan.Updates))
	}
	w.expectProgression(p, addonstatus.ReasonInvalidRolloutStrategy, `spec.installStrategy.placements[0].rolloutStrategy.type: "UpdateAll" is not one of OCM's rollout types`, "a", "", "")
}

func TestLaterPlacementOwnsASharedCluster(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	w.config("b")
	p1 := w.placement("first", "a", all(), []string{"c1", "c2"})
	p2 := w.placement("second", "b", all(), []string{"c2", "c3"})
	w.installAll()
	w.expectStates("c1=a/a/T c2=b/b/T c3=b/b/T")
	w.expectProgression(p1, addonstatus.ReasonInstallSucceed, "1/1 install completed", "a", "a", "a")
	w.expectProgression(p2, addonstatus.ReasonInstallSucceed, "2/2 install completed", "b", "b", "b")
}

func TestPrecedenceDefaultsPlacementMCA(t *testing.T) {
	w := newWorld(t)
	w.config("default")
	w.config("a")
	w.config("own")
	w.cma.Spec.SupportedConfigs[0].DefaultConfig = &addonv1alpha1.ConfigReferent{Namespace: "default", Name: "default"}
	w.placement("p1", "", all(), []string{"c1", "c2"})
	w.placement("p2", "a", all(), []string{"c3", "c4"})
	w.mca("c4").Spec.Configs = []addonv1alpha1.AddOnConfig{{
		ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: adcGR.Group, Resource: adcGR.Resource},
		ConfigReferent:      addonv1alpha1.ConfigReferent{Namespace: "default", Name: "own"}}}
	w.step()
	w.expectStates("c1=default//T c2=default//T c3=a//T c4=own//T")
	if got := w.cma.Status.DefaultConfigReferences; len(got) != 1 || got[0].DesiredConfig.Name != "default" || got[0].DesiredConfig.SpecHash != "hash-default" {
		t.Fatalf("defaultconfigReferences = %+v", got)
	}
}

func TestMissingMCAConfigSkipsOnlyThatCluster(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	p := w.placement("p", "a", progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{}), []string{"c1", "c2"})
	w.mca("c1").Spec.Configs = []addonv1alpha1.AddOnConfig{{
		ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: adcGR.Group, Resource: adcGR.Resource},
		ConfigReferent:      addonv1alpha1.ConfigReferent{Namespace: "default", Name: "missing"}}}
	w.step()
	// c1 cannot be configured (Configured=False naming the config); it does not take c2's slot,
	// and the placement names it.
	w.expectStates("c1=//F c2=a//T")
	if c := meta.FindStatusCondition(w.mcas["c1"].Status.Conditions, addonstatus.ConditionConfigured); c.Reason != addonstatus.ReasonConfigurationNotFound ||
		!strings.Contains(c.Message, "addondeploymentconfigs.addon.open-cluster-management.io default/missing not found") {
		t.Fatalf("c1 Configured = %+v", c)
	}
	w.expectProgression(p, addonstatus.ReasonInstalling, "0/2 clusters done, 1 in progress, 0 failed, 0 timed out, 1 cannot be configured; cannot be configured: c1 (the ManagedClusterAddOn's own config cannot be used: addondeploymentconfigs.addon.open-cluster-management.io default/missing not found)", "a", "", "")
}

func TestMissingPlacementWaitsOthersContinue(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	w.config("b")
	p1 := w.placement("p1", "a", all(), []string{"c1"})
	p2 := w.placement("p2", "a", all(), []string{"c2"})
	w.installAll()
	delete(w.placements, p2)
	delete(w.decisions, p2)
	w.setConfig(p1, "b")
	w.setConfig(p2, "b")
	// A GitOps MCA no placement selects.
	gitops := w.mca("x")
	delete(gitops.Labels, CreatedByLabel)
	w.step()
	w.expectStates("c1=b/a/T c2=a/a/T x=//-")
	w.expectProgression(p2, addonstatus.ReasonPlacementNotFound, "Placement default/p2 not found", "b", "a", "a")
	w.expectProgression(p1, addonstatus.ReasonUpgrading, "", "b", "a", "a")
}

func TestMissingConfigWaits(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	p1 := w.placement("p1", "a", all(), []string{"c1"})
	p2 := w.placement("p2", "zzz", all(), []string{"c2"})
	w.step()
	w.expectStates("c1=a//T c2=//-")
	w.expectProgression(p2, addonstatus.ReasonConfigurationNotFound, "addondeploymentconfigs.addon.open-cluster-management.io default/zzz not found", "zzz", "", "")
	w.expectProgression(p1, addonstatus.ReasonInstalling, "", "a", "", "")
	if h := w.progression(p2).ConfigReferences[0].DesiredConfig.SpecHash; h != "" {
		t.Fatalf("missing config has spec hash %q, want empty", h)
	}
	w.config("zzz")
	w.step()
	w.expectStates("c1=a//T c2=zzz//T")
}

// A config kind the controller may not read: the placement waits with ConfigurationForbidden, also
// when another config is merely missing (the permission must be granted whatever else is), and an
// MCA whose own config is of that kind gets Configured=False with the same reason.
func TestForbiddenConfigKind(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	w.placement("p1", "a", all(), []string{"c1"})
	p2 := w.placement("p2", "a", all(), []string{"c2"})
	w.installAll()
	foos := configref.GroupResource{Group: "example.io", Resource: "foos"}
	w.cma.Spec.SupportedConfigs = append(w.cma.Spec.SupportedConfigs, addonv1alpha1.ConfigMeta{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: foos.Group, Resource: foos.Resource}})
	w.refused = map[configref.GroupResource]bool{foos: true}
	foo := addonv1alpha1.AddOnConfig{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: foos.Group, Resource: foos.Resource},
		ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "default", Name: "f"}}
	missing := addonv1alpha1.AddOnConfig{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: adcGR.Group, Resource: adcGR.Resource},
		ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "default", Name: "zzz"}}
	w.cma.Spec.InstallStrategy.Placements[1].Configs = append(w.cma.Spec.InstallStrategy.Placements[1].Configs, foo, missing)
	w.mca("c1").Spec.Configs = []addonv1alpha1.AddOnConfig{foo}
	w.step()
	c := ProgressingOf(w.progression(p2))
	if c == nil || c.Reason != addonstatus.ReasonConfigurationForbidden || !strings.Contains(c.Message, "config foos.example.io default/f: foos.example.io is forbidden: RBAC: list refused") {
		t.Fatalf("p2 Progressing = %+v, want ConfigurationForbidden naming the config", c)
	}
	if !strings.Contains(c.Message, "default/zzz not found") {
		t.Errorf("the forbidden reason hides the other problem: %q", c.Message)
	}
	if c := meta.FindStatusCondition(w.mcas["c1"].Status.Conditions, addonstatus.ConditionConfigured); c == nil ||
		c.Reason != addonstatus.ReasonConfigurationForbidden || !strings.Contains(c.Message, "foos.example.io default/f") {
		t.Fatalf("c1 Configured = %+v", c)
	}
	if !addonstatus.WaitingReasons.Has(addonstatus.ReasonConfigurationForbidden) {
		t.Errorf("ConfigurationForbidden is no waiting reason: no warning event would be raised")
	}
}

func TestManualTakesDefaultsAtOnce(t *testing.T) {
	w := newWorld(t)
	w.config("d")
	w.cma.Spec.SupportedConfigs[0].DefaultConfig = &addonv1alpha1.ConfigReferent{Namespace: "default", Name: "d"}
	w.cma.Spec.InstallStrategy = addonv1alpha1.InstallStrategy{Type: StrategyManual}
	w.mca("m1")
	w.mca("m2")
	w.step()
	w.expectStates("m1=d//T m2=d//T")
	if len(w.cma.Status.InstallProgressions) != 0 {
		t.Fatalf("Manual has install progressions: %+v", w.cma.Status.InstallProgressions)
	}
	// MCAs that follow the defaults follow a new default at once (OCM's defaults node).
	w.config("e")
	w.cma.Spec.SupportedConfigs[0].DefaultConfig.Name = "e"
	w.step()
	w.expectStates("m1=e//T m2=e//T")
}

func TestUnplacedMCAs(t *testing.T) {
	w := newWorld(t)
	w.config("d")
	w.config("a")
	w.cma.Spec.SupportedConfigs[0].DefaultConfig = &addonv1alpha1.ConfigReferent{Namespace: "default", Name: "d"}
	w.placement("p", "a", all(), []string{"c1"})
	gitops := w.mca("gitops")
	delete(gitops.Labels, CreatedByLabel)
	w.mca("leaving") // ours, no placement selects it: the install controller deletes it
	w.step()
	w.expectStates("c1=a//T gitops=d//T leaving=//-")
}

func TestZeroConfigAddon(t *testing.T) {
	w := newWorld(t)
	w.cma.Spec.SupportedConfigs = nil
	p := w.placement("p", "", progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{}), []string{"c1", "c2"})
	w.step()
	w.expectStates("c1=//T c2=//F")
	w.agent("c1", succeed)
	w.step()
	w.expectStates("c1=//T c2=//T")
	w.agent("c2", succeed)
	w.step()
	w.expectProgression(p, addonstatus.ReasonInstallSucceed, "2/2 install completed", "", "", "")
}

func TestEmptyPlacementNeverCompletes(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	p := w.placement("p", "a", all())
	w.step()
	w.expectProgression(p, addonstatus.ReasonInstalling, "no cluster selected yet", "a", "", "")
}

// TestMissingDefaultPlacementGrace: a Placement the spec names but the hub lacks is Progressing for
// DefaultPlacementGrace from the moment it was first missed (a GitOps sync may apply it after the
// add-on), then Degraded with one warning; the grace does not start again while it stays missing,
// and the Placement's arrival ends it.
func TestMissingDefaultPlacementGrace(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	p1 := w.placement("p1", "a", all(), []string{"c1"})
	p2 := w.placement("p2", "a", all(), []string{"c2"})
	w.installAll()
	w.expectStates("c1=a/a/T c2=a/a/T")

	// A commit adds placement p3; the engine applied the add-on first.
	w.cma.Spec.InstallStrategy.Placements = append(w.cma.Spec.InstallStrategy.Placements, w.cma.Spec.InstallStrategy.Placements[1])
	w.cma.Spec.InstallStrategy.Placements[2].Name = "p3"
	p3 := PlacementKey{Namespace: p2.Namespace, Name: "p3"}
	// And p2's Placement, after its rollout completed long ago, is deleted.
	w.advance(time.Hour)
	delete(w.placements, p2)
	delete(w.decisions, p2)
	start := w.now
	plan := w.step()

	cond := func(k PlacementKey) metav1.Condition {
		t.Helper()
		c := ProgressingOf(w.progression(k))
		if c == nil {
			t.Fatalf("placement %s has no Progressing condition", k)
		}
		return *c
	}
	for _, k := range []PlacementKey{p2, p3} {
		c := cond(k)
		if c.Status != metav1.ConditionTrue || c.Reason != addonstatus.ReasonPlacementNotFound || !strings.Contains(c.Message, "not found yet") {
			t.Errorf("%s within the grace: %s %s %q, want True PlacementNotFound \"... not found yet ...\"", k, c.Status, c.Reason, c.Message)
		}
		// The grace starts now, not when p2's old condition last changed status.
		if !c.LastTransitionTime.Time.Equal(start) {
			t.Errorf("%s: lastTransitionTime %s, want the moment it was missed, %s", k, c.LastTransitionTime, start)
		}
		if got := addonstatus.ClassOf(c.Status, c.Reason); got != addonstatus.ClassProgressing {
			t.Errorf("%s within the grace is %s, want %s", k, got, addonstatus.ClassProgressing)
		}
	}
	if slices.Contains(w.eventReasons(), addonstatus.ReasonPlacementNotFound) {
		t.Errorf("events within the grace: %v; want no PlacementNotFound warning yet", w.eventReasons())
	}
	if plan.RecheckAfter <= 0 || plan.RecheckAfter > DefaultPlacementGrace {
		t.Errorf("RecheckAfter = %s, want the rest of the grace (0, %s]", plan.RecheckAfter, DefaultPlacementGrace)
	}
	w.expectStates("c1=a/a/T c2=a/a/T")

	// Still within the grace: the transition time stays, the recheck comes at its end.
	w.advance(DefaultPlacementGrace - 5*time.Second)
	plan = w.step()
	if c := cond(p3); c.Status != metav1.ConditionTrue || !c.LastTransitionTime.Time.Equal(start) {
		t.Errorf("p3 %s into the grace: %s since %s, want True since %s", w.now.Sub(start), c.Status, c.LastTransitionTime, start)
	}
	if plan.RecheckAfter != 5*time.Second {
		t.Errorf("RecheckAfter = %s, want the grace's last 5s", plan.RecheckAfter)
	}

	// The grace is over: Degraded, one warning per placement.
	w.advance(5 * time.Second)
	w.step()
	for _, k := range []PlacementKey{p2, p3} {
		c := cond(k)
		if c.Status != metav1.ConditionFalse || c.Reason != addonstatus.ReasonPlacementNotFound || strings.Contains(c.Message, "not found yet") {
			t.Errorf("%s after the grace: %s %s %q, want False PlacementNotFound", k, c.Status, c.Reason, c.Message)
		}
		if got := addonstatus.ClassOf(c.Status, c.Reason); got != addonstatus.ClassDegraded {
			t.Errorf("%s after the grace is %s, want %s", k, got, addonstatus.ClassDegraded)
		}
	}
	var warnings []string
	for _, e := range w.lastPlan.Events {
		if e.Reason == addonstatus.ReasonPlacementNotFound && e.Warning {
			warnings = append(warnings, e.Message)
		}
	}
	if len(warnings) != 2 {
		t.Errorf("warnings at the end of the grace: %q, want one per missing placement", warnings)
	}

	// Staying missing never restarts the grace, nor repeats the warning.
	w.advance(time.Minute)
	w.step()
	if c := cond(p3); c.Status != metav1.ConditionFalse {
		t.Errorf("p3 a minute after the grace: %s, want False", c.Status)
	}
	if slices.Contains(w.eventReasons(), addonstatus.ReasonPlacementNotFound) {
		t.Errorf("events while it stays missing: %v; want none", w.eventReasons())
	}

	// The Placement arrives: p3 installs its cluster.
	w.placements[p3] = w.placements[p1].DeepCopy()
	w.placements[p3].Name = "p3"
	w.decide(p3, []string{"c3"})
	w.mca("c3")
	w.step()
	if c := cond(p3); c.Reason == addonstatus.ReasonPlacementNotFound {
		t.Errorf("p3 after its Placement arrived: %s %s %q", c.Status, c.Reason, c.Message)
	}
}
