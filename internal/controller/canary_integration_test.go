//go:build integration

package controller

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/rolloutplan"
	"github.com/addonops/addonops/internal/testing/simagent"
)

var (
	awsShorts    = []string{"c1", "c2", "c3", "c4"}
	canaryShorts = []string{"k1", "k2"}
)

// canaryEnv: placement "aws" (c1..c4, one cluster at a time) gated by placement "canary" (k1 k2,
// All), both at cfg-a, installed.
func canaryEnv(t *testing.T) *env {
	e := newEnv(t, envOptions{agentDelay: 300 * time.Millisecond})
	e.ensureClusters(append(slices.Clone(awsShorts), canaryShorts...)...)
	for _, c := range []string{"cfg-a", "cfg-b", "cfg-c"} {
		e.adc(c, c)
	}
	e.placement("aws", [][]string{awsShorts})
	e.placement("canary", [][]string{canaryShorts})
	e.cma(map[string]string{
		addonv1alpha1.AddonLifecycleAnnotationKey: addonv1alpha1.AddonLifecycleSelfManageAnnotationValue,
		rolloutplan.CanaryAnnotation:              `{"` + e.name + `/aws": "` + e.name + `/canary"}`,
	},
		install{placement: "aws", config: "cfg-a", strategy: progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{})},
		install{placement: "canary", config: "cfg-a", strategy: allStrategy},
	)
	e.startController(Options{})
	e.waitInstalled(60*time.Second, "cfg-a", append(slices.Clone(awsShorts), canaryShorts...)...)
	e.waitProgression(10*time.Second, "aws", addonstatus.ReasonInstallSucceed, "4/4 install completed")
	// Even the fresh install went through the canary first.
	if first, last := e.rec.firstDesireIndex("cfg-a", e.clusters(awsShorts...)), e.rec.lastApplyIndex("cfg-a", e.clusters(canaryShorts...)); first < last {
		t.Fatalf("aws got cfg-a (event %d) before the canary applied it everywhere (event %d)", first, last)
	}
	return e
}

func (e *env) setBoth(cfg string) {
	e.t.Helper()
	e.updateCMA(func(cma *addonv1alpha1.ClusterManagementAddOn) {
		for i := range cma.Spec.InstallStrategy.Placements {
			cma.Spec.InstallStrategy.Placements[i].Configs[0].Name = cfg
		}
	})
}

// Seed story 3: canary upgrade.
func TestCanaryUpgrade(t *testing.T) {
	t.Parallel()
	e := canaryEnv(t)
	e.setBoth("cfg-b")
	e.waitProgression(10*time.Second, "aws", addonstatus.ReasonWaitingForCanary, "waiting for canary placement")
	all := map[string]string{}
	for _, c := range append(slices.Clone(awsShorts), canaryShorts...) {
		all[c] = "cfg-b/cfg-b/True/UpgradeSucceed"
	}
	e.waitStates(60*time.Second, all)
	e.waitProgression(10*time.Second, "aws", addonstatus.ReasonUpgradeSucceed, "4/4 upgrade completed")
	e.waitProgression(10*time.Second, "canary", addonstatus.ReasonUpgradeSucceed, "2/2 upgrade completed")

	if first, last := e.rec.firstDesireIndex("cfg-b", e.clusters(awsShorts...)), e.rec.lastApplyIndex("cfg-b", e.clusters(canaryShorts...)); first < last {
		t.Fatalf("aws got cfg-b (event %d) before the canary applied it everywhere (event %d)", first, last)
	}
	if n := e.rec.maxInFlightAmong("cfg-b", e.clusters(awsShorts...)); n != 1 {
		t.Fatalf("aws had %d clusters in flight at once, want 1", n)
	}
	for _, c := range e.clusters(awsShorts...) {
		if h := e.rec.history(c); !slices.Equal(h, []string{"cfg-a", "cfg-b"}) {
			t.Errorf("%s: desired %v", c, h)
		}
	}
}

// docs/design/lifecycle.md#a-newer-version-waits-for-the-rollout-under-way: a config change after
// the canary passed and before the rollout finished lets the rollout finish at the last known good
// version, then moves on.
func TestCanaryConfigChangeDuringRollout(t *testing.T) {
	t.Parallel()
	e := canaryEnv(t)
	e.outcome("c3", "cfg-b", simagent.Never) // holds aws's rollout of cfg-b at c3
	e.setBoth("cfg-b")
	e.waitCluster(60*time.Second, "c3", "cfg-b/cfg-a/True/Upgrading")
	e.waitCluster(5*time.Second, "c2", "cfg-b/cfg-b/True/UpgradeSucceed")

	e.setBoth("cfg-c")
	e.waitCluster(30*time.Second, "k1", "cfg-c/cfg-c/True/UpgradeSucceed")
	e.waitCluster(30*time.Second, "k2", "cfg-c/cfg-c/True/UpgradeSucceed")
	e.waitProgression(10*time.Second, "aws", addonstatus.ReasonUpgrading, "rolling out the last known good configs first")
	e.holds(time.Second, "no aws cluster told cfg-c", func() string {
		for _, c := range e.clusters(awsShorts...) {
			if _, i := e.rec.firstDesired(c, "cfg-c"); i >= 0 {
				return fmt.Sprintf("%s got cfg-c while aws's rollout of cfg-b was not finished", c)
			}
		}
		return ""
	})

	e.outcome("c3", "cfg-b", simagent.Succeed)
	e.agent.Recheck()
	all := map[string]string{}
	for _, c := range append(slices.Clone(awsShorts), canaryShorts...) {
		all[c] = "cfg-c/cfg-c/True/UpgradeSucceed"
	}
	e.waitStates(60*time.Second, all)
	e.waitProgression(10*time.Second, "aws", addonstatus.ReasonUpgradeSucceed, "4/4 upgrade completed")
	if first, last := e.rec.firstDesireIndex("cfg-c", e.clusters(awsShorts...)), e.rec.lastApplyIndex("cfg-b", e.clusters(awsShorts...)); first < last {
		t.Fatalf("aws moved to cfg-c (event %d) before every aws cluster applied cfg-b (event %d)", first, last)
	}
	for _, c := range e.clusters(awsShorts...) {
		if h := e.rec.history(c); !slices.Equal(h, []string{"cfg-a", "cfg-b", "cfg-c"}) {
			t.Errorf("%s: desired %v, want a, then the last known good b, then c", c, h)
		}
	}
}

// docs/design/lifecycle.md#canary-cluster-churn-never-restarts-a-rollout: cluster churn in the
// canary does not restart an ongoing rollout.
func TestCanaryChurnDoesNotRestartRollout(t *testing.T) {
	t.Parallel()
	e := canaryEnv(t)
	e.outcome("c2", "cfg-b", simagent.Never)
	e.setBoth("cfg-b")
	e.waitCluster(60*time.Second, "c2", "cfg-b/cfg-a/True/Upgrading")

	// A new canary cluster that never applies anything: the canary is no longer complete.
	e.ensureClusters("k3")
	e.outcome("k3", "", simagent.Never)
	e.decide("canary", [][]string{{"k1", "k2", "k3"}})
	e.waitCluster(30*time.Second, "k3", "cfg-b/-/True/Installing")
	e.waitProgression(10*time.Second, "canary", addonstatus.ReasonUpgrading, "2/3 clusters done")

	e.outcome("c2", "cfg-b", simagent.Succeed)
	e.agent.Recheck()
	for _, c := range awsShorts {
		e.waitCluster(60*time.Second, c, "cfg-b/cfg-b/True/UpgradeSucceed")
	}
	e.waitProgression(10*time.Second, "aws", addonstatus.ReasonUpgradeSucceed, "4/4 upgrade completed")
	if got := e.rec.progression(e.name, "canary"); got.Reason != addonstatus.ReasonUpgrading {
		t.Fatalf("canary progression %+v: k3 never applied, it cannot be complete", got)
	}
	if got := e.rec.reasonsSeen("aws"); slices.Index(got, addonstatus.ReasonWaitingForCanary) < 0 {
		t.Fatalf("aws reasons %v", got)
	}
}

// New clusters (docs/design/lifecycle.md#a-cluster-in-both-placements-follows-the-canary-first).
// One in both placements follows the canary first; one only in the gated placement is installed
// with its last known good configs while the canary tests new ones.
func TestCanaryNewClusters(t *testing.T) {
	t.Parallel()
	e := canaryEnv(t)
	e.outcome("k1", "cfg-b", simagent.Never) // the canary test of cfg-b does not end
	e.setBoth("cfg-b")
	e.waitProgression(10*time.Second, "aws", addonstatus.ReasonWaitingForCanary, "waiting for canary placement")

	e.ensureClusters("both", "new")
	// The canary selects "both" first. (Had aws selected it first, it would be installed with aws's
	// last known good configs until the canary selects it too: placements decide independently.)
	e.decide("canary", [][]string{append(slices.Clone(canaryShorts), "both")})
	e.decide("aws", [][]string{append(slices.Clone(awsShorts), "both", "new")})
	e.waitCluster(30*time.Second, "new", "cfg-a/cfg-a/True/InstallSucceed")
	e.waitCluster(30*time.Second, "both", "cfg-b/cfg-b/True/InstallSucceed")
	e.waitProgression(10*time.Second, "aws", addonstatus.ReasonWaitingForCanary, "5/5 clusters run the last known good configs")
	e.waitProgression(10*time.Second, "canary", addonstatus.ReasonUpgrading, "2/3 clusters done")

	e.outcome("k1", "cfg-b", simagent.Succeed)
	e.agent.Recheck()
	for _, c := range append(slices.Clone(awsShorts), "new") {
		e.waitCluster(60*time.Second, c, "cfg-b/cfg-b/True/UpgradeSucceed")
	}
	e.waitProgression(10*time.Second, "aws", addonstatus.ReasonUpgradeSucceed, "5/5 upgrade completed")
	if h := e.rec.history(e.cluster("both")); !slices.Equal(h, []string{"cfg-b"}) {
		t.Fatalf("cluster in both placements: desired %v, want only the canary's cfg-b", h)
	}
	if h := e.rec.history(e.cluster("new")); !slices.Equal(h, []string{"cfg-a", "cfg-b"}) {
		t.Fatalf("new aws cluster: desired %v, want the last known good cfg-a, then cfg-b", h)
	}
}
