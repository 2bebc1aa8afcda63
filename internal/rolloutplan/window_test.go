package rolloutplan

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	rollout "open-cluster-management.io/sdk-go/pkg/apis/cluster/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
)

// Clusters in flight past sdk-go's cut (pastTheCut): sdk-go's Progressive batch is the first
// maxConcurrency clusters in name order that are not done, so in every case below sdk-go alone
// moves c1 (and c2) although c5 and c6, later in the order, are still in flight: they joined the
// rollout first, before c1..c4 had MCAs or were selected.
func TestInFlightPastTheCut(t *testing.T) {
	s := func(st mcaState, ago time.Duration) at { return at{st, ago} }
	six := [][]string{{"c1", "c2", "c3", "c4", "c5", "c6"}}
	cases := []rollCase{
		{name: "two in flight take both slots", strategy: progressive(intstr.FromInt32(2), clusterv1alpha1.RolloutConfig{}),
			groups: six, states: map[string]at{"c5": s(applying, 30*time.Second), "c6": s(applying, 30*time.Second)},
			reason: addonstatus.ReasonUpgrading, msg: "upgrading... 0/6 clusters done, 2 in progress, 0 failed, 0 timed out"},
		{name: "a percentage: 50% of 6 leaves one slot", strategy: progressive(intstr.FromString("50%"), clusterv1alpha1.RolloutConfig{}),
			groups: six, states: map[string]at{"c5": s(applying, 30*time.Second), "c6": s(applying, 30*time.Second)},
			moved: []string{"c1"}, reason: addonstatus.ReasonUpgrading, msg: "upgrading... 0/6 clusters done, 3 in progress, 0 failed, 0 timed out"},
		{name: "one in flight and one done leave one slot", strategy: progressive(intstr.FromInt32(2), clusterv1alpha1.RolloutConfig{}),
			groups: six, states: map[string]at{"c5": s(doneOn, 30*time.Second), "c6": s(applying, 30*time.Second)},
			moved: []string{"c1"}, reason: addonstatus.ReasonUpgrading, msg: "upgrading... 1/6 clusters done, 2 in progress, 0 failed, 0 timed out"},
		{name: "a cluster soaking keeps its slot", strategy: progressive(intstr.FromInt32(2), clusterv1alpha1.RolloutConfig{MinSuccessTime: metav1.Duration{Duration: time.Minute}}),
			groups: six, states: map[string]at{"c5": s(doneOn, 2*time.Minute), "c6": s(doneOn, 30*time.Second)},
			moved: []string{"c1"}, reason: addonstatus.ReasonUpgrading, msg: "upgrading... 1/6 clusters done, 2 in progress, 0 failed, 0 timed out"},
		{name: "a failure counts toward maxFailures: 0 allowed, the rollout stops", strategy: progressive(intstr.FromInt32(2), clusterv1alpha1.RolloutConfig{ProgressDeadline: "None"}),
			groups: six, states: map[string]at{"c6": s(failedOn, 30*time.Second)},
			reason: addonstatus.ReasonUpgradeFailed, msg: stoppedOnMaxFailures + "0/6 clusters done, 0 in progress, 1 failed, 0 timed out"},
		{name: "a failure within maxFailures keeps its slot", strategy: progressive(intstr.FromInt32(2), clusterv1alpha1.RolloutConfig{ProgressDeadline: "None", MaxFailures: intstr.FromInt32(1)}),
			groups: six, states: map[string]at{"c6": s(failedOn, 30*time.Second)},
			moved: []string{"c1"}, reason: addonstatus.ReasonUpgrading, msg: "upgrading... 0/6 clusters done, 1 in progress, 1 failed, 0 timed out"},
		{name: "a timeout frees its slot and counts", strategy: progressive(intstr.FromInt32(2), clusterv1alpha1.RolloutConfig{ProgressDeadline: "90s", MaxFailures: intstr.FromInt32(1)}),
			groups: six, states: map[string]at{"c5": s(applying, 30*time.Second), "c6": s(applying, 120*time.Second)},
			moved: []string{"c1"}, reason: addonstatus.ReasonUpgrading, msg: "upgrading... 0/6 clusters done, 2 in progress, 0 failed, 1 timed out"},
		{name: "a timeout past maxFailures stops the rollout", strategy: progressive(intstr.FromInt32(2), clusterv1alpha1.RolloutConfig{ProgressDeadline: "90s"}),
			groups: six, states: map[string]at{"c5": s(applying, 30*time.Second), "c6": s(applying, 120*time.Second)},
			reason: addonstatus.ReasonUpgradeFailed, msg: stoppedOnMaxFailures + "0/6 clusters done, 1 in progress, 0 failed, 1 timed out"},
		// Nothing past the cut: the batch is sdk-go's.
		{name: "in flight before the cut: sdk-go's batch", strategy: progressive(intstr.FromInt32(2), clusterv1alpha1.RolloutConfig{}),
			groups: six, states: map[string]at{"c1": s(applying, 30*time.Second)},
			moved: []string{"c2"}, reason: addonstatus.ReasonUpgrading, msg: "upgrading... 0/6 clusters done, 2 in progress, 0 failed, 0 timed out"},
	}
	for _, tc := range cases {
		t.Run(tc.name, tc.run)
	}
}

// A fresh install whose MCAs appear out of name order (the install reconciler creates them in
// parallel, the informer delivers them one by one): the clusters that got theirs first start, and
// the others wait for their slots. In flight never exceeds maxConcurrency.
func TestLateMCAsKeepMaxConcurrency(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	names := []string{"c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8"}
	w.placement("aws", "a", progressive(intstr.FromString("25%"), clusterv1alpha1.RolloutConfig{}), names)
	all := w.mcas
	w.mcas = map[string]*addonv1alpha1.ManagedClusterAddOn{"c5": all["c5"], "c7": all["c7"]}
	inFlight := func() int {
		n := 0
		for _, m := range w.mcas {
			if d := Desired(m); len(d) > 0 && !addonstatus.Applied(m) {
				n++
			}
		}
		return n
	}
	w.step()
	w.expectStates("c5=a//T c7=a//T")
	for _, c := range names {
		if w.mcas[c] == nil {
			w.mcas[c] = all[c]
		}
	}
	for step := 0; step < 20 && w.states() != "c1=a/a/T c2=a/a/T c3=a/a/T c4=a/a/T c5=a/a/T c6=a/a/T c7=a/a/T c8=a/a/T"; step++ {
		w.step()
		if n := inFlight(); n > 2 {
			t.Fatalf("step %d: %d clusters in flight, maxConcurrency is 2 (25%% of 8): %s", step, n, w.states())
		}
		if step == 0 {
			w.expectStates("c1=//F c2=//F c3=//F c4=//F c5=a//T c6=//F c7=a//T c8=//F")
		}
		// The agents finish what is configured, one batch per step.
		for _, c := range names {
			m := w.mcas[c]
			if d := Desired(m); len(d) > 0 && !addonstatus.Applied(m) {
				w.agent(c, succeed)
			}
		}
		w.advance(time.Second)
	}
	w.expectStates("c1=a/a/T c2=a/a/T c3=a/a/T c4=a/a/T c5=a/a/T c6=a/a/T c7=a/a/T c8=a/a/T")
}

// The clusters past the cut bring the next decision when the first of them may time out or end its
// soak: a slot they hold is freed by time alone, so nothing else would ask.
func TestPastTheCutRecheck(t *testing.T) {
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	prev := rollout.RolloutClock
	rollout.RolloutClock = clocktesting.NewFakeClock(now)
	t.Cleanup(func() { rollout.RolloutClock = prev })
	at := func(ago time.Duration) *metav1.Time { v := metav1.NewTime(now.Add(-ago)); return &v }
	statuses := []rollout.ClusterRolloutStatus{
		{ClusterName: "c1", Status: rollout.ToApply},
		{ClusterName: "c2", Status: rollout.ToApply},
		{ClusterName: "c5", Status: rollout.Progressing, LastTransitionTime: at(30 * time.Second)},
		{ClusterName: "c6", Status: rollout.Succeeded, LastTransitionTime: at(50 * time.Second)},
	}
	// sdk-go's batch: c1 and c2, cut there.
	res := rollout.RolloutResult{ClustersToRollout: statuses[:2]}
	s := progressive(intstr.FromInt32(2), clusterv1alpha1.RolloutConfig{ProgressDeadline: "90s", MinSuccessTime: metav1.Duration{Duration: time.Minute}})
	got, recheck := pastTheCut(s, 4, res, statuses, time.Minute)
	var names []string
	for _, c := range got.ClustersToRollout {
		names = append(names, c.ClusterName)
	}
	if !slices.Equal(names, []string{"c5", "c6"}) {
		t.Errorf("batch %v, want the two clusters in flight past the cut", names)
	}
	// c6's soak ends in 10 s, c5 times out in 60 s.
	if recheck == nil || *recheck != 10*time.Second {
		t.Errorf("recheck %v, want 10s", recheck)
	}
	// Strategies other than Progressive are sdk-go's as they are.
	if got, recheck := pastTheCut(all(), 4, res, statuses, 0); len(got.ClustersToRollout) != 2 || recheck != nil {
		t.Errorf("All: batch %v, recheck %v", got.ClustersToRollout, recheck)
	}
}
