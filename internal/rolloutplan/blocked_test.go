package rolloutplan

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/addonops/addonops/internal/addonstatus"
)

// TestWaitingStatesAreClassified pins, for every way a placement can wait, whether the controller
// says time will fix it (Progressing=True: Progressing everywhere) or a person must act
// (Progressing=False: Degraded everywhere, see addonstatus.ClassOf), and that a blocked wait
// raises a Warning event.
func TestWaitingStatesAreClassified(t *testing.T) {
	// ghostCanary: aws (c1) is gated by a placement that is not an install placement.
	ghostCanary := func(t *testing.T, canaryClusters ...string) (*world, PlacementKey) {
		w := newWorld(t)
		w.config("a")
		aws := w.placement("aws", "a", all(), []string{"c1"})
		canary := PlacementKey{Namespace: "default", Name: "canary"}
		w.placements[canary] = w.placements[aws].DeepCopy()
		w.placements[canary].Name = "canary"
		w.decide(canary, canaryClusters)
		w.cma.Annotations[CanaryAnnotation] = `{"default/aws": "default/canary"}`
		return w, aws
	}
	// unconfigurable gives cluster c a config of its own whose kind the add-on does not support.
	unconfigurable := func(w *world, c string) {
		w.mca(c).Spec.Configs = []addonv1alpha1.AddOnConfig{{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: "example.io", Resource: "widgets"},
			ConfigReferent: addonv1alpha1.ConfigReferent{Name: "w"}}}
	}
	for _, tc := range []struct {
		name   string
		setup  func(t *testing.T) (*world, PlacementKey)
		status metav1.ConditionStatus
		reason string
		msg    string
	}{
		{
			name: "fresh install waits for a canary that is installing",
			setup: func(t *testing.T) (*world, PlacementKey) {
				w, aws, _ := canaryWorld(t)
				w.step()
				return w, aws
			},
			status: metav1.ConditionTrue, reason: addonstatus.ReasonWaitingForCanary, msg: "0/2 do; not yet: k1, k2",
		},
		{
			name: "upgrade waits for a canary that is upgrading",
			setup: func(t *testing.T) (*world, PlacementKey) {
				w, aws, canary := canaryWorld(t)
				w.installAll()
				w.setConfig(aws, "b")
				w.setConfig(canary, "b")
				w.step()
				return w, aws
			},
			status: metav1.ConditionTrue, reason: addonstatus.ReasonWaitingForCanary, msg: "4/4 clusters run the last known good configs; waiting for canary placement default/canary",
		},
		{
			name: "a canary cluster of an install placement has no MCA yet (the install reconciler creates it)",
			setup: func(t *testing.T) (*world, PlacementKey) {
				w, aws, canary := canaryWorld(t)
				w.decide(canary, []string{"k1", "k2", "k3"})
				w.step()
				return w, aws
			},
			status: metav1.ConditionTrue, reason: addonstatus.ReasonWaitingForCanary, msg: "0/3 do; not yet: k1, k2, k3",
		},
		{
			name: "the canary placement does not exist",
			setup: func(t *testing.T) (*world, PlacementKey) {
				w, aws := ghostCanary(t)
				delete(w.placements, PlacementKey{Namespace: "default", Name: "canary"})
				w.step()
				return w, aws
			},
			status: metav1.ConditionFalse, reason: addonstatus.ReasonWaitingForCanary, msg: "canary placement default/canary (annotation addonops.io/canary-placements) not found: create it or fix the annotation",
		},
		{
			name: "the canary placement selects no cluster",
			setup: func(t *testing.T) (*world, PlacementKey) {
				w, aws, canary := canaryWorld(t)
				w.decide(canary)
				w.step()
				return w, aws
			},
			status: metav1.ConditionFalse, reason: addonstatus.ReasonWaitingForCanary, msg: "canary placement default/canary selects no cluster, so no version can pass it",
		},
		{
			name: "the canary placement was just created and OCM's placement controller has not scheduled it yet",
			setup: func(t *testing.T) (*world, PlacementKey) {
				w, aws, canary := canaryWorld(t)
				w.placements[canary].CreationTimestamp = metav1.NewTime(w.now.Add(-DefaultPlacementGrace / 2))
				w.decide(canary)
				w.step()
				return w, aws
			},
			status: metav1.ConditionTrue, reason: addonstatus.ReasonWaitingForCanary, msg: "waiting for OCM's placement controller to schedule canary placement default/canary",
		},
		{
			name: "the canary placement is still unscheduled after the placement grace",
			setup: func(t *testing.T) (*world, PlacementKey) {
				w, aws, canary := canaryWorld(t)
				w.placements[canary].CreationTimestamp = metav1.NewTime(w.now.Add(-DefaultPlacementGrace))
				w.decide(canary)
				w.step()
				return w, aws
			},
			status: metav1.ConditionFalse, reason: addonstatus.ReasonWaitingForCanary, msg: "canary placement default/canary selects no cluster, so no version can pass it",
		},
		{
			name: "the canary placement was just created and scheduled: it selects no cluster",
			setup: func(t *testing.T) (*world, PlacementKey) {
				w, aws, canary := canaryWorld(t)
				w.placements[canary].CreationTimestamp = metav1.NewTime(w.now)
				w.placements[canary].Status.Conditions = []metav1.Condition{{Type: clusterv1beta1.PlacementConditionSatisfied, Status: metav1.ConditionFalse, Reason: "NoManagedClusterMatched"}}
				w.decide(canary)
				w.step()
				return w, aws
			},
			status: metav1.ConditionFalse, reason: addonstatus.ReasonWaitingForCanary, msg: "canary placement default/canary selects no cluster, so no version can pass it",
		},
		{
			name: "a canary cluster has no MCA and no install placement selects it",
			setup: func(t *testing.T) (*world, PlacementKey) {
				w, aws := ghostCanary(t, "k1")
				w.step()
				return w, aws
			},
			status: metav1.ConditionFalse, reason: addonstatus.ReasonWaitingForCanary, msg: `0/1 do; no ManagedClusterAddOn "hello" on k1: install the add-on there`,
		},
		{
			name: "a canary cluster gets its configs only from the gated placement",
			setup: func(t *testing.T) (*world, PlacementKey) {
				w, aws := ghostCanary(t, "c1")
				w.step()
				return w, aws
			},
			status: metav1.ConditionFalse, reason: addonstatus.ReasonWaitingForCanary, msg: "0/1 do; c1 get their configs from placement default/aws, which waits for this canary",
		},
		{
			name: "the canary failed",
			setup: func(t *testing.T) (*world, PlacementKey) {
				w, aws, canary := canaryWorld(t)
				w.installAll()
				w.setConfig(aws, "b")
				w.setConfig(canary, "b")
				w.step()
				w.agents(fail, "k1", "k2")
				w.step()
				w.expectProgression(canary, addonstatus.ReasonUpgradeFailed, "upgrade failed", "b", "a", "a")
				return w, aws
			},
			status: metav1.ConditionFalse, reason: addonstatus.ReasonWaitingForCanary,
			msg: "not yet: k1, k2; canary placement default/canary is Degraded (UpgradeFailed): no version passes it until that is fixed",
		},
		{
			name: "the gated placement's rollout of its last known good configs stopped on failures",
			setup: func(t *testing.T) (*world, PlacementKey) {
				w, aws, canary := gatedWorld(t)
				w.agent("c1", fail)
				w.step()
				w.setConfig(aws, "c")
				w.setConfig(canary, "c")
				w.step()
				return w, aws
			},
			status: metav1.ConditionFalse, reason: addonstatus.ReasonWaitingForCanary,
			msg: "the rollout of the last known good configs stopped: 0/4 clusters done, 0 in progress, 1 failed, 0 timed out; failed: c1 (upgrade failed: ",
		},
		{
			name: "a cluster cannot be configured while others roll out",
			setup: func(t *testing.T) (*world, PlacementKey) {
				w := newWorld(t)
				w.config("a")
				p := w.placement("aws", "a", all(), []string{"c1", "c2"})
				unconfigurable(w, "c1")
				w.step()
				return w, p
			},
			status: metav1.ConditionTrue, reason: addonstatus.ReasonInstalling, msg: "installing... 0/2 clusters done, 1 in progress, 0 failed, 0 timed out, 1 cannot be configured",
		},
		{
			name: "only clusters that cannot be configured are left",
			setup: func(t *testing.T) (*world, PlacementKey) {
				w := newWorld(t)
				w.config("a")
				p := w.placement("aws", "a", progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{}), []string{"c1", "c2", "c3"})
				unconfigurable(w, "c2")
				w.finishPlacement("c1", "c3")
				return w, p
			},
			status: metav1.ConditionFalse, reason: addonstatus.ReasonClustersNotConfigurable,
			msg: "install cannot complete: the clusters left cannot be configured; 2/3 clusters done, 0 in progress, 0 failed, 0 timed out, 1 cannot be configured; cannot be configured: c2 (Configuration with gvr example.io/widgets is not supported for this addon",
		},
		{
			name: "a cluster that cannot be configured and one still without MCA are left",
			setup: func(t *testing.T) (*world, PlacementKey) {
				w := newWorld(t)
				w.config("a")
				p := w.placement("aws", "a", all(), []string{"c1", "c2"})
				unconfigurable(w, "c1")
				w.finishPlacement("c2")
				w.decide(p, []string{"c1", "c2", "new"}) // the install reconciler creates new's MCA next
				w.step()
				return w, p
			},
			status: metav1.ConditionTrue, reason: addonstatus.ReasonInstalling, msg: "installing... 1/3 clusters done, 0 in progress, 0 failed, 0 timed out, 1 cannot be configured",
		},
		{
			name: "a gated placement's last known good rollout has only clusters that cannot be configured left",
			setup: func(t *testing.T) (*world, PlacementKey) {
				w, aws, canary := canaryWorld(t)
				unconfigurable(w, "c4")
				w.step()
				w.agents(succeed, "k1", "k2")
				w.finishPlacement("c1", "c2", "c3")
				w.expectProgression(aws, addonstatus.ReasonClustersNotConfigurable, "3/4 clusters done", "a", "a", "")
				w.setConfig(aws, "b")
				w.setConfig(canary, "b")
				w.step()
				return w, aws
			},
			status: metav1.ConditionFalse, reason: addonstatus.ReasonClustersNotConfigurable,
			msg: "install cannot complete: the clusters left cannot be configured; 3/4 clusters done, 0 in progress, 0 failed, 0 timed out, 1 cannot be configured; cannot be configured: c4 (",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, k := tc.setup(t)
			c := ProgressingOf(w.progression(k))
			if c == nil || c.Status != tc.status || c.Reason != tc.reason || !strings.Contains(c.Message, tc.msg) {
				t.Fatalf("progression %s: %+v\nwant Progressing=%s %s with message containing %q", k, c, tc.status, tc.reason, tc.msg)
			}
			wantClass := addonstatus.ClassProgressing
			if tc.status == metav1.ConditionFalse {
				wantClass = addonstatus.ClassDegraded
			}
			if got := addonstatus.ClassOf(c.Status, c.Reason); got != wantClass {
				t.Errorf("ClassOf(%s, %s) = %s, want %s", c.Status, c.Reason, got, wantClass)
			}
			// A blocked wait is announced with a Warning event when it begins (or its message
			// changes); a wait that time fixes never warns.
			// (Decide again with the old message changed: the decision reads only its reason.)
			w.cma = w.cma.DeepCopy()
			for i := range w.cma.Status.InstallProgressions {
				if ip := &w.cma.Status.InstallProgressions[i]; ip.Namespace == k.Namespace && ip.Name == k.Name {
					ProgressingOf(ip).Message = "an older message"
				}
			}
			w.step()
			warned := slices.ContainsFunc(w.lastPlan.Events, func(e Event) bool {
				return e.Warning && e.Reason == tc.reason && strings.Contains(e.Message, "placement "+k.String()+": ")
			})
			if warned != (tc.status == metav1.ConditionFalse) {
				t.Errorf("warning event %v, want %v: %+v", warned, tc.status == metav1.ConditionFalse, w.lastPlan.Events)
			}
		})
	}
}

// A placement with nothing but unconfigurable clusters left continues by itself once they are
// fixed: the condition is a state, not a stop.
func TestClustersNotConfigurableResumesWhenFixed(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	p := w.placement("aws", "a", all(), []string{"c1", "c2"})
	w.mca("c1").Spec.Configs = []addonv1alpha1.AddOnConfig{{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: adcGR.Group, Resource: adcGR.Resource},
		ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "default", Name: "missing"}}}
	w.finishPlacement("c2")
	w.expectProgression(p, addonstatus.ReasonClustersNotConfigurable, "1/2 clusters done, 0 in progress, 0 failed, 0 timed out, 1 cannot be configured; cannot be configured: c1 (the ManagedClusterAddOn's own config cannot be used: addondeploymentconfigs.addon.open-cluster-management.io default/missing not found)", "a", "", "")
	w.config("missing")
	w.step()
	w.expectProgression(p, addonstatus.ReasonInstalling, "1/2 clusters done, 1 in progress", "a", "", "")
	w.finishPlacement("c1")
	w.expectProgression(p, addonstatus.ReasonInstallSucceed, "2/2 install completed", "a", "a", "a")
}
