//go:build integration

package controller

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/rolloutplan"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/simagent"
)

// Safety (issue "Rollouts that stay safe when a version is bad") on the real API server: recorded
// sequences of every MCA write, as the other integration tests.

// maxBusyAmong is the largest number of clusters whose change was under way at once (Progressing
// reason Installing, Upgrading or RollingBack) right after one of their recorded events from event
// from on (the clusters busy at from, before any of their changes, do not count).
func (r *recorder) maxBusyAmong(clusters []string, from int) int {
	start, events := r.mcas.Since(from)
	n, _ := harness.MaxInFlight(start, events, clusters, func(ev mcaEvent) bool {
		c := meta.FindStatusCondition(ev.MCA.Status.Conditions, addonstatus.ConditionProgressing)
		return ev.Type != watch.Deleted && c != nil && addonstatus.IsBusyReason(c.Reason)
	}, harness.ChangesOnly())
	return n
}

// reasons is the sequence of distinct Progressing reasons of cluster from event from on.
func (r *recorder) reasons(cluster string, from int) []string {
	var out []string
	for _, ev := range r.events()[from:] {
		if ev.Cluster != cluster {
			continue
		}
		if c := meta.FindStatusCondition(ev.MCA.Status.Conditions, addonstatus.ConditionProgressing); c != nil && (len(out) == 0 || out[len(out)-1] != c.Reason) {
			out = append(out, c.Reason)
		}
	}
	return out
}

// desiredSince reports whether cluster was told to run cfg at or after event from.
func (r *recorder) desiredSince(cluster, cfg string, from int) bool {
	for _, ev := range r.events()[from:] {
		if ev.Cluster == cluster {
			if d := rolloutplan.Desired(ev.MCA); len(d) > 0 && d[0].Name == cfg {
				return true
			}
		}
	}
	return false
}

// cmaEvents lists "reason: message" of the Kubernetes events recorded on the test's CMA.
func (e *env) cmaEvents() []string {
	list, err := e.c.Kube.CoreV1().Events("").List(e.ctx, metav1.ListOptions{FieldSelector: fields.AndSelectors(
		fields.OneTermEqualSelector("involvedObject.kind", "ClusterManagementAddOn"),
		fields.OneTermEqualSelector("involvedObject.name", e.name)).String()})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, ev := range list.Items {
		prefix := ""
		if ev.Type == corev1.EventTypeWarning {
			prefix = "Warning "
		}
		out = append(out, prefix+ev.Reason+": "+ev.Message)
	}
	return out
}

// waitCMAEvent waits for an event on the test's CMA whose "[Warning ]reason: message" starts with
// prefix and contains contains.
func (e *env) waitCMAEvent(timeout time.Duration, prefix, contains string) {
	e.t.Helper()
	var seen []string
	e.waitFor(timeout, fmt.Sprintf("event %q containing %q", prefix, contains), func() bool {
		seen = e.cmaEvents()
		return slices.ContainsFunc(seen, func(s string) bool { return strings.HasPrefix(s, prefix) && strings.Contains(s, contains) })
	})
}

// revertAfterFailedBatch: the canary passed cfg-b, cfg-b fails on aws's first cluster (maxFailures
// 0): the rollout stops. It returns the event index of the revert, after which it reverts both
// placements to cfg-a; killMidRollback restarts the controller while c1 rolls back.
func revertAfterFailedBatch(t *testing.T, killMidRollback bool) {
	e := canaryEnv(t)
	e.outcome("c1", "cfg-b", simagent.Fail)
	e.setBoth("cfg-b")
	e.waitProgression(60*time.Second, "aws", addonstatus.ReasonUpgradeFailed, "failed: "+e.cluster("c1")+" (upgrade failed: ManifestWork addon-"+e.name+"-deploy-0 is Applied=False")
	e.waitCMAEvent(10*time.Second, "Warning UpgradeFailed", "placement "+e.name+"/aws: upgrade stopped")
	for _, c := range []string{"c2", "c3", "c4"} {
		if e.rec.desiredSince(e.cluster(c), "cfg-b", 0) {
			t.Fatalf("%s got cfg-b although the first batch failed with maxFailures 0", c)
		}
	}

	// git revert.
	if killMidRollback {
		e.outcome("c1", "cfg-a", simagent.Never) // c1's works stay on cfg-b for now
	}
	revert := e.rec.count()
	e.setBoth("cfg-a")
	e.waitCluster(30*time.Second, "c1", "cfg-a/cfg-a/True/RollingBack")
	if killMidRollback {
		e.stopController()
		// The controller stays down a moment mid-rollback: nothing to poll while it is.
		harness.Pass(500 * time.Millisecond)
		e.startController(Options{})
		e.outcome("c1", "cfg-a", simagent.Succeed)
		e.agent.Recheck()
	}
	e.waitStates(60*time.Second, map[string]string{
		"c1": "cfg-a/cfg-a/True/RollbackSucceeded", "c2": "cfg-a/cfg-a/True/InstallSucceed",
		"c3": "cfg-a/cfg-a/True/InstallSucceed", "c4": "cfg-a/cfg-a/True/InstallSucceed",
		"k1": "cfg-a/cfg-a/True/RollbackSucceeded", "k2": "cfg-a/cfg-a/True/RollbackSucceeded",
	})
	e.waitProgression(10*time.Second, "aws", addonstatus.ReasonRollbackSucceeded, "4/4 rollback completed with no errors.")
	e.waitProgression(10*time.Second, "canary", addonstatus.ReasonRollbackSucceeded, "2/2 rollback completed with no errors.")
	if !killMidRollback { // events are best effort: a killed controller may not have sent its last ones
		e.waitCMAEvent(10*time.Second, "RollbackStarted", "placement "+e.name+"/aws: rollback to")
	}
	e.waitCMAEvent(10*time.Second, "RollbackSucceeded", "placement "+e.name+"/aws")

	// Nothing ever moved to cfg-b after the revert, never more than maxConcurrency (1) of aws in
	// flight, and c1 went RollingBack -> RollbackSucceeded.
	for _, c := range append(slices.Clone(awsShorts), canaryShorts...) {
		if e.rec.desiredSince(e.cluster(c), "cfg-b", revert+1) {
			t.Errorf("%s was told to run cfg-b after the revert:%s", c, e.rec.eventsOf(e.cluster(c)))
		}
	}
	if n := e.rec.maxBusyAmong(e.clusters(awsShorts...), revert); n > 1 {
		t.Errorf("%d aws clusters in flight during the rollback, maxConcurrency is 1", n)
	}
	if got := e.rec.reasons(e.cluster("c1"), revert); !slices.Equal(got, []string{addonstatus.ReasonRollingBack, addonstatus.ReasonRollbackSucceeded}) {
		t.Errorf("c1 reasons after the revert %v, want RollingBack, RollbackSucceeded", got)
	}
	for _, c := range []string{"c2", "c3", "c4"} {
		if h := e.rec.history(e.cluster(c)); !slices.Equal(h, []string{"cfg-a"}) {
			t.Errorf("%s desired %v: it should never have left cfg-a", c, h)
		}
	}
	e.quiet(2 * time.Second)
}

func TestRevertAfterTheCanaryPassedAndTheFirstBatchFailed(t *testing.T) {
	t.Parallel()
	revertAfterFailedBatch(t, false)
}

func TestRevertWithTheControllerKilledMidRollback(t *testing.T) {
	t.Parallel()
	revertAfterFailedBatch(t, true)
}

// Canary MCAs whose works are fine but whose add-on is not healthy (Available=False) never pass
// the canary: the gated placement does not start until they are healthy.
func TestUnhealthyCanaryHoldsTheGatedPlacement(t *testing.T) {
	t.Parallel()
	e := canaryEnv(t)
	for _, k := range canaryShorts {
		e.outcome(k, "cfg-b", simagent.Unhealthy)
	}
	e.setBoth("cfg-b")
	for _, k := range canaryShorts {
		e.waitFor(30*time.Second, k+" waiting for health", func() bool {
			m := e.rec.mca(e.cluster(k))
			c := meta.FindStatusCondition(m.Status.Conditions, addonstatus.ConditionProgressing)
			return c != nil && c.Reason == addonstatus.ReasonUpgrading && strings.Contains(c.Message, "waiting for it to be healthy: Available=False (ProbeUnavailable")
		})
	}
	e.waitProgression(10*time.Second, "aws", addonstatus.ReasonWaitingForCanary, "0/2 do")
	e.quiet(2 * time.Second)
	if i := e.rec.firstDesireIndex("cfg-b", e.clusters(awsShorts...)); i >= 0 {
		t.Fatalf("an aws cluster got cfg-b (event %d) while the canary was unhealthy", i)
	}
	// The prober sees the agents become ready: the canary passes, aws starts.
	for _, k := range canaryShorts {
		e.setAvailable(k, metav1.ConditionTrue)
	}
	e.waitProgression(30*time.Second, "canary", addonstatus.ReasonUpgradeSucceed, "2/2 upgrade completed")
	e.waitProgression(30*time.Second, "aws", addonstatus.ReasonUpgrading, "")
	e.waitCMAEvent(10*time.Second, "CanaryPassed", "canary placement "+e.name+"/canary runs")
}

// setAvailable writes an MCA's Available condition, as a health prober does.
func (e *env) setAvailable(short string, s metav1.ConditionStatus) {
	e.t.Helper()
	api := e.c.Addon.AddonV1alpha1().ManagedClusterAddOns(e.cluster(short))
	for range 10 {
		m, err := api.Get(e.ctx, e.name, metav1.GetOptions{})
		if err != nil {
			e.t.Fatal(err)
		}
		meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: addonstatus.ConditionAvailable, Status: s, Reason: "ProbeAvailable", Message: "set by the test"})
		if _, err = api.UpdateStatus(e.ctx, m, metav1.UpdateOptions{}); err == nil {
			return
		}
	}
	e.t.Fatal("writing Available kept conflicting")
}

// A deployer that cannot render the new version (ManifestApplied=False) fails the cluster: it
// counts toward maxFailures and stops the rollout, with the deployer's words in the status.
func TestRenderErrorFailsTheRollout(t *testing.T) {
	t.Parallel()
	e, _ := upgradeEnv(t, 0, progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{}), [][]string{{"c1", "c2", "c3"}})
	e.outcome("c1", "cfg-b", simagent.RenderError)
	e.setConfig("p", "cfg-b")
	e.waitCluster(30*time.Second, "c1", "cfg-b/cfg-a/True/UpgradeFailed")
	e.waitProgression(30*time.Second, "p", addonstatus.ReasonUpgradeFailed, "1 failed, 0 timed out; failed: "+e.cluster("c1")+" (upgrade failed: the add-on deployer reports ManifestApplied=False (ManifestWorkApplyFailed: failed to get manifest")
	if c := meta.FindStatusCondition(e.rec.mca(e.cluster("c1")).Status.Conditions, addonstatus.ConditionProgressing); !strings.HasSuffix(c.Message, "render error (simulated))") {
		t.Fatalf("c1 Progressing message %q, want the deployer's words in full", c.Message)
	}
	e.quiet(time.Second)
	for _, c := range []string{"c2", "c3"} {
		if e.rec.desiredSince(e.cluster(c), "cfg-b", 0) {
			t.Fatalf("%s got cfg-b after the render error", c)
		}
	}
}

// The canary placement need not be an install placement: its clusters get the configs from
// another install placement (staging); an empty canary says so.
func TestCanaryOutsideTheInstallPlacements(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	e.ensureClusters("c1", "c2", "k1")
	for _, c := range []string{"cfg-a", "cfg-b"} {
		e.adc(c, c)
	}
	e.placement("aws", [][]string{{"c1", "c2"}})
	e.placement("staging", [][]string{{"k1"}})
	e.placement("canary", [][]string{{"k1"}}) // selects what staging installs; not an install placement
	e.cma(map[string]string{
		addonv1alpha1.AddonLifecycleAnnotationKey: addonv1alpha1.AddonLifecycleSelfManageAnnotationValue,
		rolloutplan.CanaryAnnotation:              `{"` + e.name + `/aws": "` + e.name + `/canary"}`,
	},
		install{placement: "aws", config: "cfg-a", strategy: progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{})},
		install{placement: "staging", config: "cfg-a", strategy: allStrategy},
	)
	e.startController(Options{})
	e.waitInstalled(60*time.Second, "cfg-a", "c1", "c2", "k1")
	e.waitProgression(10*time.Second, "aws", addonstatus.ReasonInstallSucceed, "2/2 install completed")

	e.setConfig("aws", "cfg-b")
	e.waitProgression(10*time.Second, "aws", addonstatus.ReasonWaitingForCanary, "waiting for canary placement "+e.name+"/canary to run")
	e.quiet(time.Second)
	e.setConfig("staging", "cfg-b")
	e.waitStates(60*time.Second, map[string]string{"c1": "cfg-b/cfg-b/True/UpgradeSucceed", "c2": "cfg-b/cfg-b/True/UpgradeSucceed", "k1": "cfg-b/cfg-b/True/UpgradeSucceed"})
	if first, last := e.rec.firstDesireIndex("cfg-b", e.clusters("c1", "c2")), e.rec.lastApplyIndex("cfg-b", e.clusters("k1")); first < last {
		t.Fatalf("aws got cfg-b (event %d) before the canary's cluster ran it (event %d)", first, last)
	}

	// An empty canary: a clear condition and a Warning event, never a silent wait.
	e.decide("canary", nil)
	e.adc("cfg-c", "cfg-c")
	e.setConfig("aws", "cfg-c")
	e.waitProgression(10*time.Second, "aws", addonstatus.ReasonWaitingForCanary, "canary placement "+e.name+"/canary selects no cluster")
	e.waitCMAEvent(10*time.Second, "Warning WaitingForCanary", "selects no cluster")
}

// docs/design/install-strategy.md#switching-to-manual-re-targets-nothing: switching to Manual
// mid-rollout leaves every MCA on the configs it runs; the progress history stays; unsupported and
// missing MCA configs are named.
func TestSwitchToManualAndMCAConfigs(t *testing.T) {
	t.Parallel()
	e, _ := upgradeEnv(t, 0, progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{}), [][]string{{"c1", "c2", "c3"}})
	e.outcome("c1", "cfg-b", simagent.Never) // c1 stays in flight
	e.setConfig("p", "cfg-b")
	e.waitCluster(30*time.Second, "c1", "cfg-b/cfg-a/True/Upgrading")
	e.updateCMA(func(cma *addonv1alpha1.ClusterManagementAddOn) {
		cma.Spec.InstallStrategy.Type = rolloutplan.StrategyManual
	})
	e.waitProgression(10*time.Second, "p", addonstatus.ReasonManual, "keeps the configs it runs")
	e.waitStates(10*time.Second, map[string]string{
		"c1": "cfg-b/cfg-a/True/Upgrading", "c2": "cfg-a/cfg-a/True/InstallSucceed", "c3": "cfg-a/cfg-a/True/InstallSucceed",
	})
	e.quiet(time.Second)

	// MCA configs: an unsupported type and a missing config.
	api := e.c.Addon.AddonV1alpha1().ManagedClusterAddOns
	setConfigs := func(short string, cfg addonv1alpha1.AddOnConfig) {
		for range 10 {
			m, err := api(e.cluster(short)).Get(e.ctx, e.name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			m.Spec.Configs = []addonv1alpha1.AddOnConfig{cfg}
			if _, err = api(e.cluster(short)).Update(e.ctx, m, metav1.UpdateOptions{}); err == nil {
				return
			}
		}
		t.Fatal("updating the MCA kept conflicting")
	}
	setConfigs("c2", addonv1alpha1.AddOnConfig{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: "example.io", Resource: "widgets"}, ConfigReferent: addonv1alpha1.ConfigReferent{Name: "w"}})
	setConfigs("c3", addonv1alpha1.AddOnConfig{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"},
		ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: e.name, Name: "missing"}})
	for short, want := range map[string]string{
		"c2": "ConfigurationUnsupported: Configuration with gvr example.io/widgets is not supported for this addon",
		"c3": "ConfigurationNotFound: the ManagedClusterAddOn's own config cannot be used: config addondeploymentconfigs.addon.open-cluster-management.io " + e.name + "/missing not found",
	} {
		e.waitFor(10*time.Second, short+" Configured "+want, func() bool {
			c := meta.FindStatusCondition(e.rec.mca(e.cluster(short)).Status.Conditions, addonstatus.ConditionConfigured)
			return c != nil && c.Status == metav1.ConditionFalse && strings.HasPrefix(c.Reason+": "+c.Message, want)
		})
	}
	// Back to Placements: the placement names both clusters and does not complete.
	e.updateCMA(func(cma *addonv1alpha1.ClusterManagementAddOn) {
		cma.Spec.InstallStrategy.Type = rolloutplan.StrategyPlacements
	})
	e.waitProgression(10*time.Second, "p", addonstatus.ReasonUpgrading, "2 cannot be configured; cannot be configured: "+e.cluster("c2")+" (Configuration with gvr example.io/widgets")
}
