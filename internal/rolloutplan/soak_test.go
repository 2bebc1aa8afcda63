package rolloutplan

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
)

// The health soak (Progress) in decisions: a canary passes, and a batch is done, only
// once its clusters stayed healthy for the soak after their works reported the new version.

// setHealth is the health prober writing a cluster's Available condition now, then the progress
// tracker looking at the cluster.
func (w *world) setHealth(cluster string, s metav1.ConditionStatus) {
	m := w.mcas[cluster].DeepCopy()
	meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: addonstatus.ConditionAvailable, Status: s, Reason: "ProbeUnavailable",
		Message: "the new agent crash-loops", LastTransitionTime: Now(w.now)})
	w.mcas[cluster] = m
	w.recheck(cluster)
}

// soakCanaryWorld: canaryWorld installed at a, then the CMA gets a 30s health soak and both
// placements move to b; the canary's clusters are pushed to b and their works report it (the
// add-on has been Available=True since the install: the old agent).
func soakCanaryWorld(t *testing.T) (w *world, aws, canary PlacementKey) {
	w, aws, canary = canaryWorld(t)
	w.installAll()
	w.advance(time.Hour)
	w.cma.Annotations[HealthSoakAnnotation] = "30s"
	w.setConfig(aws, "b")
	w.setConfig(canary, "b")
	w.step()
	w.agents(succeed, "k1", "k2")
	w.step()
	w.expectStates("c1=a/a/T c2=a/a/T c3=a/a/T c4=a/a/T k1=b/a/T k2=b/a/T")
	w.expectProgression(aws, addonstatus.ReasonWaitingForCanary, "0/2 do; not yet: k1, k2", "b", "a", "a")
	if msg := condMsg(w.mcas["k1"], addonstatus.ConditionProgressing); !strings.Contains(msg, "it must stay healthy for 30s (health soak)") {
		t.Fatalf("k1 Progressing: %s", msg)
	}
	return w, aws, canary
}

func TestHealthSoakHoldsTheCanary(t *testing.T) {
	w, aws, canary := soakCanaryWorld(t)
	// 30s, and the second the soak began in (condition times have whole seconds).
	w.advance(30 * time.Second)
	w.recheck("k1")
	w.recheck("k2")
	w.step()
	w.expectProgression(aws, addonstatus.ReasonWaitingForCanary, "0/2 do", "b", "a", "a")
	w.expectStates("c1=a/a/T c2=a/a/T c3=a/a/T c4=a/a/T k1=b/a/T k2=b/a/T")
	w.advance(time.Second)
	w.recheck("k1")
	w.recheck("k2")
	w.step()
	w.expectProgression(canary, addonstatus.ReasonUpgradeSucceed, "2/2 upgrade completed", "b", "b", "b")
	w.expectEvent("CanaryPassed", "canary placement default/canary runs")
	w.expectStates("c1=b/a/T c2=a/a/F c3=a/a/F c4=a/a/F k1=b/b/T k2=b/b/T")
}

// OCM's prober: the works report the new generation while Available=True still describes the old
// agent; a moment later it turns False. The canary never passes, and fails after its deadline.
func TestHealthTurningFalseDuringTheSoakFailsTheCanary(t *testing.T) {
	w, aws, canary := soakCanaryWorld(t)
	w.advance(time.Second)
	w.setHealth("k1", metav1.ConditionFalse)
	for range 3 {
		w.advance(20 * time.Second)
		w.recheck("k1")
		w.recheck("k2")
		w.step()
		w.expectProgression(aws, addonstatus.ReasonWaitingForCanary, "", "b", "a", "a")
		if got := w.desiredSet("b"); strings.Join(got, ",") != "k1,k2" {
			t.Fatalf("clusters told to run b: %v", got)
		}
	}
	if msg := condMsg(w.mcas["k1"], addonstatus.ConditionProgressing); !strings.Contains(msg, "waiting for it to be healthy: Available=False") {
		t.Fatalf("k1 Progressing: %s", msg)
	}
	w.advance(DefaultUnhealthyDeadline)
	w.step()
	w.expectProgression(canary, addonstatus.ReasonUpgradeFailed, "1 failed, 0 timed out; failed: k1 (upgrade failed: the add-on has not been healthy for 5m0s", "b", "a", "a")
	w.step()
	w.expectProgression(aws, addonstatus.ReasonWaitingForCanary, "", "b", "a", "a")
	w.expectStates("c1=a/a/T c2=a/a/T c3=a/a/T c4=a/a/T k1=b/a/T k2=b/b/T")
}

// soakBatches: placement p (one cluster at a time, minSuccessTime min) at a, then moved to b with a
// health soak; c1 is pushed and its works report b at once. It returns when c1's soak began.
func soakBatches(t *testing.T, soak string, min time.Duration) (*world, PlacementKey, time.Time) {
	w := newWorld(t)
	w.config("a")
	w.config("b")
	p := w.placement("p", "a", progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{MinSuccessTime: metav1.Duration{Duration: min}}), []string{"c1", "c2"})
	w.installAll()
	w.advance(time.Hour)
	w.cma.Annotations[HealthSoakAnnotation] = soak
	w.setConfig(p, "b")
	w.step()
	w.agent("c1", succeed)
	w.step()
	w.expectStates("c1=b/a/T c2=a/a/F")
	return w, p, w.now
}

// A placement's minSuccessTime longer than the health soak wins: it counts from the start of the
// soak, so the next batch starts minSuccessTime after c1 was first seen healthy, not after the
// soak and minSuccessTime one after the other.
func TestMinSuccessTimeLongerThanTheHealthSoak(t *testing.T) {
	w, p, start := soakBatches(t, "10s", time.Minute)
	w.advance(11 * time.Second)
	w.recheck("c1")
	plan := w.step()
	w.expectStates("c1=b/b/T c2=a/a/F")
	if plan.RecheckAfter != 49*time.Second {
		t.Fatalf("RecheckAfter %v, want the 49s of minSuccessTime left", plan.RecheckAfter)
	}
	w.now = start.Add(59 * time.Second)
	w.step()
	w.expectStates("c1=b/b/T c2=a/a/F")
	w.now = start.Add(time.Minute)
	w.step()
	w.expectStates("c1=b/b/T c2=b/a/T")
	w.expectProgression(p, addonstatus.ReasonUpgrading, "1/2 clusters done, 1 in progress", "b", "a", "a")
}

// A health soak longer than minSuccessTime: the next batch starts as soon as c1 is done.
func TestHealthSoakLongerThanMinSuccessTime(t *testing.T) {
	w, _, _ := soakBatches(t, "30s", 5*time.Second)
	w.advance(30 * time.Second)
	w.recheck("c1")
	w.step()
	w.expectStates("c1=b/a/T c2=a/a/F")
	w.advance(time.Second)
	w.recheck("c1")
	w.step()
	w.expectStates("c1=b/b/T c2=b/a/T")
}
