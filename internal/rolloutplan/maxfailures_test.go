package rolloutplan

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/history"
)

// The cases of sdk-go's rollout_test.go (TestGetRolloutCluster_Progressive and _ProgressivePerGroup,
// sdk-go v1.3.0) that are about maxFailures, mandatory decision groups and minSuccessTime, played
// through a whole decision: the clusters are in the states of sdk-go's dummy workloads, written as
// this controller's MCA statuses, and the decision must move exactly the clusters sdk-go puts in
// ClustersToRollout as ToApply, and report the rollout stopped exactly when sdk-go reports
// MaxFailureBreach. Cluster cN is sdk-go's clusterN; sdk-go's "group1" is decision group 0.

// mcaState is what a cluster of a placement rolling a → b is doing (sdk-go's dummy workload states).
type mcaState string

const (
	waiting  mcaState = ""         // still on a, its turn has not come (ToApply)
	applying mcaState = "applying" // told to run b, Upgrading (Progressing)
	failedOn mcaState = "failed"   // told to run b, UpgradeFailed (Failed)
	doneOn   mcaState = "done"     // runs b, UpgradeSucceed (Succeeded)
)

// at is a cluster's state and how long ago it entered it (sdk-go's LastTransitionTime).
type at struct {
	state mcaState
	ago   time.Duration
}

// put writes cluster c's MCA as this controller leaves it in state s, entered ago before now.
func (w *world) put(c string, s at) {
	w.t.Helper()
	a, b := cfgOf("a"), cfgOf("b")
	since := metav1.NewTime(w.now.Add(-s.ago))
	refs := func(desired, applied Config) []addonv1alpha1.ConfigReference {
		return []addonv1alpha1.ConfigReference{{
			ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: desired.Group, Resource: desired.Resource},
			ConfigReferent:      addonv1alpha1.ConfigReferent{Namespace: desired.Namespace, Name: desired.Name},
			DesiredConfig:       desired.SpecHashOf(), LastAppliedConfig: applied.SpecHashOf(),
		}}
	}
	configured := func(ok bool) metav1.Condition {
		c := Configured(ok)
		c.ObservedGeneration, c.LastTransitionTime = 1, since
		return c
	}
	progressing := func(status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: addonstatus.ConditionProgressing, Status: status, Reason: reason, Message: reason, LastTransitionTime: since}
	}
	m := w.mca(c).DeepCopy()
	switch s.state {
	case waiting:
		m.Status.ConfigReferences = refs(a, a)
		m.Status.Conditions = []metav1.Condition{configured(false), progressing(metav1.ConditionFalse, addonstatus.ReasonInstallSucceed)}
	case applying:
		m.Status.ConfigReferences = refs(b, a)
		m.Status.Conditions = []metav1.Condition{configured(true), progressing(metav1.ConditionTrue, addonstatus.ReasonUpgrading)}
	case failedOn:
		m.Status.ConfigReferences = refs(b, a)
		m.Status.Conditions = []metav1.Condition{configured(true), progressing(metav1.ConditionFalse, addonstatus.ReasonUpgradeFailed)}
	case doneOn:
		m.Status.ConfigReferences = refs(b, b)
		m.Status.Conditions = []metav1.Condition{configured(true), progressing(metav1.ConditionFalse, addonstatus.ReasonUpgradeSucceed),
			{Type: addonstatus.ConditionHealthSoak, Status: metav1.ConditionTrue, Reason: addonstatus.ReasonSoaked, LastTransitionTime: since}}
	default:
		w.t.Fatalf("unknown state %q", s.state)
	}
	w.mcas[c] = m
}

// movedTo lists the clusters told to run cfg now that were not before, sorted.
func movedTo(before, after map[string]*addonv1alpha1.ManagedClusterAddOn, cfg string) []string {
	var out []string
	for c, m := range after {
		was := Desired(before[c])
		now := Desired(m)
		if len(now) > 0 && now[0].Name == cfg && (len(was) == 0 || was[0].Name != cfg) {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

func perGroup(cfg clusterv1alpha1.RolloutConfig, mandatory ...clusterv1alpha1.MandatoryDecisionGroup) clusterv1alpha1.RolloutStrategy {
	return clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.ProgressivePerGroup, ProgressivePerGroup: &clusterv1alpha1.RolloutProgressivePerGroup{
		RolloutConfig: cfg, MandatoryDecisionGroups: clusterv1alpha1.MandatoryDecisionGroups{MandatoryDecisionGroups: mandatory}}}
}

var group1 = clusterv1alpha1.MandatoryDecisionGroup{GroupName: "group1"}

// rollCase is one decision of a placement rolling a → b.
type rollCase struct {
	name     string
	strategy clusterv1alpha1.RolloutStrategy
	groups   [][]string // decision groups; group 0 is named group1
	states   map[string]at
	moved    []string // clusters the decision moves to b
	reason   string   // the progression's Progressing reason
	msg      string   // contained in its message
}

func (tc rollCase) run(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	w.config("b")
	p := w.placement("aws", "a", tc.strategy, tc.groups...)
	names := make([]string, len(tc.groups))
	names[0] = "group1"
	w.groupNames[p] = names
	w.installAll()
	w.setConfig(p, "b")
	// The first decision starts the upgrade (the progression then says Upgrading for b); the
	// clusters are then put in the case's states, which the next decision judges.
	w.step()
	w.advance(10 * time.Minute)
	for _, g := range tc.groups {
		for _, c := range g {
			w.put(c, tc.states[c])
		}
	}
	before := map[string]*addonv1alpha1.ManagedClusterAddOn{}
	for c, m := range w.mcas {
		before[c] = m
	}
	w.step()
	if got := movedTo(before, w.mcas, "b"); !slices.Equal(got, tc.moved) {
		t.Errorf("moved %v, want %v (states %s)", got, tc.moved, w.states())
	}
	c := ProgressingOf(w.progression(p))
	if c == nil || c.Reason != tc.reason || !strings.Contains(c.Message, tc.msg) {
		t.Fatalf("progression %+v, want %s containing %q", c, tc.reason, tc.msg)
	}
	// Progressing=True exactly while the rollout goes on by itself (internal/addonstatus).
	if wantTrue := tc.reason == addonstatus.ReasonUpgrading; (c.Status == metav1.ConditionTrue) != wantTrue {
		t.Fatalf("progression status %s with reason %s", c.Status, c.Reason)
	}
}

const stoppedOnMaxFailures = "upgrade stopped: more clusters failed than maxFailures allows; "

func TestMaxFailuresAsInSDKGo(t *testing.T) {
	s := func(st mcaState, ago time.Duration) at { return at{st, ago} }
	three := [][]string{{"c1", "c2", "c3"}, {"c4", "c5", "c6"}}
	nine := [][]string{{"c1", "c2", "c3"}, {"c4", "c5", "c6"}, {"c7", "c8", "c9"}}
	oneFailed := map[string]at{"c1": s(doneOn, 60*time.Second), "c2": s(failedOn, 120*time.Second), "c3": s(applying, 60*time.Second)}
	cases := []rollCase{
		// sdk-go "test progressive rollout with timeout 90s and no maxFailures set": c2's failure
		// timed out; 1 > maxFailures 0 breaches, c3 finishes, nobody new starts.
		{name: "progressive, maxFailures unset: one timeout breaches", strategy: progressive(intstr.FromInt32(2), clusterv1alpha1.RolloutConfig{ProgressDeadline: "90s"}),
			groups: three, states: oneFailed,
			reason: addonstatus.ReasonUpgradeFailed, msg: stoppedOnMaxFailures + "1/6 clusters done, 1 in progress, 0 failed, 1 timed out"},
		// sdk-go "... timeout 90s and maxFailures 1": one timeout is within maxFailures 1, c4 takes
		// c2's slot.
		{name: "progressive, maxFailures 1: one timeout goes on", strategy: progressive(intstr.FromInt32(2), clusterv1alpha1.RolloutConfig{ProgressDeadline: "90s", MaxFailures: intstr.FromInt32(1)}),
			groups: three, states: oneFailed, moved: []string{"c4"},
			reason: addonstatus.ReasonUpgrading, msg: "upgrading... 1/6 clusters done, 2 in progress, 0 failed, 1 timed out"},
		// sdk-go "... timeout 90s, 100% maxFailures, minSuccessTime 60s": c1 still soaks and keeps
		// its slot with c3; c2 timed out.
		{name: "progressive, maxFailures 100%, minSuccessTime: the soaking cluster keeps its slot",
			strategy: progressive(intstr.FromInt32(2), clusterv1alpha1.RolloutConfig{ProgressDeadline: "90s", MaxFailures: intstr.FromString("100%"), MinSuccessTime: metav1.Duration{Duration: time.Minute}}),
			groups:   three, states: map[string]at{"c1": s(doneOn, 30*time.Second), "c2": s(failedOn, 120*time.Second), "c3": s(applying, 30*time.Second)},
			reason: addonstatus.ReasonUpgrading, msg: "upgrading... 0/6 clusters done, 2 in progress, 0 failed, 1 timed out"},
		// sdk-go "... timeout 0s, maxFailures 3": both clusters in flight time out at once; 2 ≤ 3.
		{name: "progressive, progressDeadline 0s, maxFailures 3", strategy: progressive(intstr.FromInt32(2), clusterv1alpha1.RolloutConfig{ProgressDeadline: "0s", MaxFailures: intstr.FromInt32(3)}),
			groups: three, states: map[string]at{"c1": s(doneOn, 30*time.Second), "c2": s(applying, 30*time.Second), "c3": s(applying, 30*time.Second)}, moved: []string{"c4", "c5"},
			reason: addonstatus.ReasonUpgrading, msg: "upgrading... 1/6 clusters done, 2 in progress, 0 failed, 2 timed out"},
		// sdk-go "... timeout None, MaxConcurrency 50%, MaxFailures 100%": 50% of 6 is 3 slots; the
		// failed c2 (no deadline) keeps one, c3 another, c4 takes the last.
		{name: "progressive, no deadline, maxFailures 100%: a failed cluster keeps its slot",
			strategy: progressive(intstr.FromString("50%"), clusterv1alpha1.RolloutConfig{ProgressDeadline: "None", MaxFailures: intstr.FromString("100%")}),
			groups:   [][]string{{"c1", "c2"}, {"c3", "c4", "c5", "c6"}}, states: oneFailed, moved: []string{"c4"},
			reason: addonstatus.ReasonUpgrading, msg: "upgrading... 1/6 clusters done, 2 in progress, 1 failed, 0 timed out"},
		// sdk-go "... timeout None, MaxConcurrency 50%, MaxFailures 0%": the failure counts at once.
		{name: "progressive, no deadline, maxFailures 0%: a failure breaches at once",
			strategy: progressive(intstr.FromString("50%"), clusterv1alpha1.RolloutConfig{ProgressDeadline: "None", MaxFailures: intstr.FromString("0%")}),
			groups:   [][]string{{"c1", "c2"}, {"c3", "c4", "c5", "c6"}}, states: oneFailed,
			reason: addonstatus.ReasonUpgradeFailed, msg: stoppedOnMaxFailures + "1/6 clusters done, 1 in progress, 1 failed, 0 timed out"},
		// sdk-go "... with mandatoryDecisionGroup and timeout 90s": the mandatory group tolerates no
		// failure.
		{name: "progressive, mandatory group with a timeout breaches", strategy: progressive(intstr.FromInt32(3), clusterv1alpha1.RolloutConfig{ProgressDeadline: "90s"}, group1),
			groups: three, states: oneFailed,
			reason: addonstatus.ReasonUpgradeFailed, msg: stoppedOnMaxFailures + "1/6 clusters done, 1 in progress, 0 failed, 1 timed out"},
		// sdk-go "... with mandatory decision groups failed".
		{name: "progressive, mandatory group failed", strategy: progressive(intstr.FromInt32(3), clusterv1alpha1.RolloutConfig{ProgressDeadline: "90s"}, group1),
			groups: [][]string{{"c1", "c2"}, {"c3", "c4"}, {"c5", "c6"}}, states: map[string]at{"c1": s(failedOn, 120*time.Second), "c2": s(failedOn, 60*time.Second)},
			reason: addonstatus.ReasonUpgradeFailed, msg: stoppedOnMaxFailures + "0/6 clusters done, 0 in progress, 1 failed, 1 timed out"},
		// sdk-go "... with mandatory decision groups Succeed": then maxConcurrency 3 over the rest.
		{name: "progressive, mandatory group succeeded", strategy: progressive(intstr.FromInt32(3), clusterv1alpha1.RolloutConfig{}, group1),
			groups: [][]string{{"c1", "c2"}, {"c3", "c4"}, {"c5", "c6"}}, states: map[string]at{"c1": s(doneOn, 60*time.Second), "c2": s(doneOn, 120*time.Second)},
			moved: []string{"c3", "c4", "c5"}, reason: addonstatus.ReasonUpgrading, msg: "upgrading... 2/6 clusters done, 3 in progress"},

		// sdk-go "test progressivePerGroup rollout with timeout 90s": maxFailures 0 per group.
		{name: "per group, maxFailures unset: one timeout breaches", strategy: perGroup(clusterv1alpha1.RolloutConfig{ProgressDeadline: "90s"}),
			groups: three, states: oneFailed,
			reason: addonstatus.ReasonUpgradeFailed, msg: stoppedOnMaxFailures + "1/6 clusters done, 1 in progress, 0 failed, 1 timed out"},
		// sdk-go "... timeout 90s and first group timeOut, maxFailures 2": the next group starts whole.
		{name: "per group, maxFailures 2: a timeout in group 0 goes on", strategy: perGroup(clusterv1alpha1.RolloutConfig{ProgressDeadline: "90s", MaxFailures: intstr.FromInt32(2)}),
			groups: nine, states: map[string]at{"c1": s(doneOn, 60*time.Second), "c2": s(failedOn, 120*time.Second), "c3": s(doneOn, 60*time.Second)},
			moved: []string{"c4", "c5", "c6"}, reason: addonstatus.ReasonUpgrading, msg: "upgrading... 2/9 clusters done, 3 in progress, 0 failed, 1 timed out"},
		// sdk-go "... first group timeOut, second group succeeded".
		{name: "per group, maxFailures 2: group 1 done, group 2 starts", strategy: perGroup(clusterv1alpha1.RolloutConfig{ProgressDeadline: "90s", MaxFailures: intstr.FromInt32(2)}),
			groups: nine, states: map[string]at{"c1": s(doneOn, 60*time.Second), "c2": s(failedOn, 120*time.Second), "c3": s(doneOn, 60*time.Second),
				"c4": s(doneOn, 60*time.Second), "c5": s(doneOn, 60*time.Second), "c6": s(doneOn, 60*time.Second)},
			moved: []string{"c7", "c8", "c9"}, reason: addonstatus.ReasonUpgrading, msg: "upgrading... 5/9 clusters done, 3 in progress, 0 failed, 1 timed out"},
		// sdk-go "... timeout None and first group failing": the failure counts at once.
		{name: "per group, no deadline, maxFailures unset: a failure breaches at once", strategy: perGroup(clusterv1alpha1.RolloutConfig{ProgressDeadline: "None"}),
			groups: nine, states: map[string]at{"c1": s(doneOn, 60*time.Second), "c2": s(failedOn, 120*time.Second), "c3": s(doneOn, 60*time.Second)},
			reason: addonstatus.ReasonUpgradeFailed, msg: stoppedOnMaxFailures + "2/9 clusters done, 0 in progress, 1 failed, 0 timed out"},
		// sdk-go "... timeout None, first group 1 cluster is failing and maxFailures is 2": a failed
		// cluster does not hold its group back.
		{name: "per group, no deadline, maxFailures 2: a failure in group 0 goes on", strategy: perGroup(clusterv1alpha1.RolloutConfig{ProgressDeadline: "None", MaxFailures: intstr.FromInt32(2)}),
			groups: nine, states: map[string]at{"c1": s(doneOn, 60*time.Second), "c2": s(failedOn, 120*time.Second), "c3": s(doneOn, 60*time.Second)},
			moved: []string{"c4", "c5", "c6"}, reason: addonstatus.ReasonUpgrading, msg: "upgrading... 2/9 clusters done, 3 in progress, 1 failed, 0 timed out"},
		// sdk-go "... first group 2 clusters are failing 2 and maxFailures is 30%": 30% of a group of 3
		// rounds up to 1; 2 > 1.
		{name: "per group, maxFailures 30% of 3 is 1: two failures breach", strategy: perGroup(clusterv1alpha1.RolloutConfig{ProgressDeadline: "None", MaxFailures: intstr.FromString("30%")}),
			groups: nine, states: map[string]at{"c1": s(doneOn, 60*time.Second), "c2": s(failedOn, 120*time.Second), "c3": s(failedOn, 120*time.Second)},
			reason: addonstatus.ReasonUpgradeFailed, msg: stoppedOnMaxFailures + "1/9 clusters done, 0 in progress, 2 failed, 0 timed out"},
		// sdk-go "ProgressivePerGroup rollout with mandatoryDecisionGroup failing and timeout 90s".
		{name: "per group, mandatory group failing", strategy: perGroup(clusterv1alpha1.RolloutConfig{ProgressDeadline: "90s"}, group1),
			groups: three, states: map[string]at{"c1": s(doneOn, 60*time.Second), "c2": s(failedOn, 120*time.Second), "c3": s(failedOn, 120*time.Second)},
			reason: addonstatus.ReasonUpgradeFailed, msg: stoppedOnMaxFailures + "1/6 clusters done, 0 in progress, 0 failed, 2 timed out"},
		// sdk-go "... mandatoryDecisionGroup failing 1 cluster, timeout 90s and with maxFailures is
		// 2": maxFailures does not apply to mandatory groups, which tolerate no failure.
		{name: "per group, mandatory group tolerates no failure whatever maxFailures", strategy: perGroup(clusterv1alpha1.RolloutConfig{ProgressDeadline: "90s", MaxFailures: intstr.FromInt32(2)}, group1),
			groups: nine, states: map[string]at{"c1": s(doneOn, 60*time.Second), "c2": s(failedOn, 120*time.Second), "c3": s(doneOn, 60*time.Second)},
			reason: addonstatus.ReasonUpgradeFailed, msg: stoppedOnMaxFailures + "2/9 clusters done, 0 in progress, 0 failed, 1 timed out"},
		// sdk-go "ProgressivePerGroup rollout with mandatoryDecisionGroup Succeeded".
		{name: "per group, mandatory group succeeded: the next group starts whole", strategy: perGroup(clusterv1alpha1.RolloutConfig{ProgressDeadline: "90s"}, group1),
			groups: nine, states: map[string]at{"c1": s(doneOn, 60*time.Second), "c2": s(doneOn, 60*time.Second), "c3": s(doneOn, 60*time.Second)},
			moved: []string{"c4", "c5", "c6"}, reason: addonstatus.ReasonUpgrading, msg: "upgrading... 3/9 clusters done, 3 in progress, 0 failed, 0 timed out"},
		// sdk-go "... with minSuccessTime and mixed cluster states": c1 soaks, so group 1 waits.
		{name: "per group, minSuccessTime holds the next group", strategy: perGroup(clusterv1alpha1.RolloutConfig{ProgressDeadline: "90s", MaxFailures: intstr.FromString("50%"), MinSuccessTime: metav1.Duration{Duration: time.Minute}}),
			groups: [][]string{{"c1", "c2", "c3"}, {"c4", "c5"}}, states: map[string]at{"c1": s(doneOn, 30*time.Second), "c2": s(doneOn, 120*time.Second), "c3": s(applying, 30*time.Second)},
			reason: addonstatus.ReasonUpgrading, msg: "upgrading... 1/5 clusters done, 2 in progress, 0 failed, 0 timed out"},
	}
	for _, tc := range cases {
		t.Run(tc.name, tc.run)
	}
}

// What sdk-go's threshold means where its own cases stop: the rollout stops only when failures
// exceed maxFailures (calculateRolloutSize: a percentage of the clusters rounded up, a number
// larger than the clusters counted as 0), and a failure within maxFailures is reported as the
// rollout's failure only once nothing is left that time alone would start.
func TestMaxFailuresThreshold(t *testing.T) {
	s := func(st mcaState, ago time.Duration) at { return at{st, ago} }
	c3 := [][]string{{"c1", "c2", "c3"}}
	cases := []rollCase{
		// The off-by-one this controller had: maxFailures 1 and one failure still within its
		// progressDeadline, which keeps the only slot (sdk-go keeps a failed cluster in
		// ClustersToRollout until it times out). The rollout goes on once the deadline passes, so it
		// is still upgrading, not failed.
		{name: "one failure within maxFailures 1 keeps its slot until its deadline: still upgrading",
			strategy: progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{ProgressDeadline: "90s", MaxFailures: intstr.FromInt32(1)}),
			groups:   c3, states: map[string]at{"c1": s(failedOn, 30*time.Second)},
			reason: addonstatus.ReasonUpgrading, msg: "upgrading... 0/3 clusters done, 0 in progress, 1 failed, 0 timed out; failed: c1 (UpgradeFailed); the next clusters start when the progressDeadline (90s) of the failed clusters holding their places in the batch passes"},
		{name: "after its deadline the failure frees its slot and counts as a timeout",
			strategy: progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{ProgressDeadline: "90s", MaxFailures: intstr.FromInt32(1)}),
			groups:   c3, states: map[string]at{"c1": s(failedOn, 120*time.Second)}, moved: []string{"c2"},
			reason: addonstatus.ReasonUpgrading, msg: "upgrading... 0/3 clusters done, 1 in progress, 0 failed, 1 timed out"},
		// Without a progressDeadline the failed cluster keeps its slot for ever (sdk-go): nothing
		// else starts by itself, so the rollout has stopped although maxFailures is not exceeded.
		{name: "without a deadline a failure within maxFailures holding every slot stops the rollout",
			strategy: progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{MaxFailures: intstr.FromInt32(1)}),
			groups:   c3, states: map[string]at{"c1": s(failedOn, time.Hour)},
			reason: addonstatus.ReasonUpgradeFailed, msg: "upgrade stopped: the failed clusters keep their places in the batch (progressDeadline None), so no other cluster starts; 0/3 clusters done, 0 in progress, 1 failed"},
		// Every other cluster is done: the rollout ended within maxFailures, but not every cluster
		// runs the version, so it failed (and is not complete: lastApplied stays a).
		{name: "every other cluster done, one failure within maxFailures: failed",
			strategy: progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{ProgressDeadline: "90s", MaxFailures: intstr.FromInt32(1)}),
			groups:   c3, states: map[string]at{"c1": s(failedOn, 120*time.Second), "c2": s(doneOn, 60*time.Second), "c3": s(doneOn, time.Second)},
			reason: addonstatus.ReasonUpgradeFailed, msg: "upgrade failed: 2/3 clusters done, 0 in progress, 0 failed, 1 timed out"},
		// calculateRolloutSize: a maxFailures larger than the placement's clusters is read as 0.
		{name: "maxFailures larger than the clusters tolerates none",
			strategy: progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{ProgressDeadline: "90s", MaxFailures: intstr.FromInt32(5)}),
			groups:   c3, states: map[string]at{"c1": s(failedOn, 120*time.Second)},
			reason: addonstatus.ReasonUpgradeFailed, msg: stoppedOnMaxFailures + "0/3 clusters done, 0 in progress, 0 failed, 1 timed out"},
		// Percentages of the placement's clusters round up: 34% of 3 is 2, 33% is 1.
		{name: "maxFailures 34% of 3 clusters is 2",
			strategy: progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{ProgressDeadline: "90s", MaxFailures: intstr.FromString("34%")}),
			groups:   c3, states: map[string]at{"c1": s(failedOn, 120*time.Second), "c2": s(failedOn, 120*time.Second)}, moved: []string{"c3"},
			reason: addonstatus.ReasonUpgrading, msg: "upgrading... 0/3 clusters done, 1 in progress, 0 failed, 2 timed out"},
		{name: "maxFailures 33% of 3 clusters is 1",
			strategy: progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{ProgressDeadline: "90s", MaxFailures: intstr.FromString("33%")}),
			groups:   c3, states: map[string]at{"c1": s(failedOn, 120*time.Second), "c2": s(failedOn, 120*time.Second)},
			reason: addonstatus.ReasonUpgradeFailed, msg: stoppedOnMaxFailures + "0/3 clusters done, 0 in progress, 0 failed, 2 timed out"},
		// sdk-go's All never breaches (its maxFailures is the number of clusters): a failure is
		// the rollout's only once every other cluster finished.
		{name: "All: a failure while others are in flight goes on",
			strategy: clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All},
			groups:   c3, states: map[string]at{"c1": s(failedOn, time.Second), "c2": s(applying, time.Second), "c3": s(doneOn, time.Second)},
			reason: addonstatus.ReasonUpgrading, msg: "upgrading... 1/3 clusters done, 1 in progress, 1 failed, 0 timed out"},
		{name: "All: a failure once the others finished fails the rollout",
			strategy: clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All},
			groups:   c3, states: map[string]at{"c1": s(failedOn, time.Second), "c2": s(doneOn, time.Second), "c3": s(doneOn, time.Second)},
			reason: addonstatus.ReasonUpgradeFailed, msg: "upgrade failed: 2/3 clusters done, 0 in progress, 1 failed, 0 timed out"},
	}
	for _, tc := range cases {
		t.Run(tc.name, tc.run)
	}
}

// A rollout with maxFailures 1 and a progressDeadline goes on past one failure, step by step, as
// OCM's (open-cluster-management-io/ocm test/integration/addon/addon_manager_upgrade_test.go,
// "rolling upgrade per cluster with ProgressDeadline and MaxFailures"): the failed cluster keeps
// its slot until its deadline, the next one then starts, and the rollout is never reported failed
// on the way; once every other cluster is done it is (OCM says progressing for ever, see README).
func TestMaxFailuresOneGoesOnPastAFailure(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	w.config("b")
	p := w.placement("aws", "a", progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{ProgressDeadline: "30s", MaxFailures: intstr.FromInt32(1)}),
		[]string{"c1", "c2", "c3"})
	w.installAll()
	w.setConfig(p, "b")
	w.step()
	w.agent("c1", fail)
	w.step()
	w.expectStates("c1=b/a/T c2=a/a/F c3=a/a/F")
	w.expectProgression(p, addonstatus.ReasonUpgrading, "0/3 clusters done, 0 in progress, 1 failed, 0 timed out", "b", "a", "a")
	w.expectResults(p, history.Superseded, history.InProgress)
	if plan := w.lastPlan; plan.RecheckAfter <= 0 || plan.RecheckAfter > 30*time.Second {
		t.Fatalf("RecheckAfter = %v, want c1's deadline", plan.RecheckAfter)
	}
	w.advance(31 * time.Second)
	w.step()
	w.expectStates("c1=b/a/T c2=b/a/T c3=a/a/F")
	w.expectProgression(p, addonstatus.ReasonUpgrading, "0/3 clusters done, 1 in progress, 0 failed, 1 timed out", "b", "a", "a")
	w.agent("c2", succeed)
	w.step()
	w.agent("c3", succeed)
	w.step()
	w.expectStates("c1=b/a/T c2=b/b/T c3=b/b/T")
	w.expectProgression(p, addonstatus.ReasonUpgradeFailed, "upgrade failed: 2/3 clusters done, 0 in progress, 0 failed, 1 timed out", "b", "a", "a")
	w.expectResults(p, history.Superseded, history.Failed)
	// The failed cluster recovers: the rollout completes.
	w.agent("c1", succeed)
	w.step()
	w.expectProgression(p, addonstatus.ReasonUpgradeSucceed, "3/3 upgrade completed with no errors.", "b", "b", "b")
	w.expectResults(p, history.Superseded, history.Succeeded)
	if c := meta.FindStatusCondition(w.mcas["c1"].Status.Conditions, addonstatus.ConditionProgressing); c.Reason != addonstatus.ReasonUpgradeSucceed {
		t.Fatalf("c1 Progressing %+v", c)
	}
}

// expectResults checks the results of placement k's versions in the version history, oldest first.
func (w *world) expectResults(k PlacementKey, want ...history.Result) {
	w.t.Helper()
	var got []history.Result
	if w.history != nil {
		for _, ph := range w.history.Placements {
			if ph.Placement == k.String() {
				for _, v := range ph.Versions {
					got = append(got, v.Result)
				}
			}
		}
	}
	if !slices.Equal(got, want) {
		w.t.Fatalf("history of %s: results %v, want %v", k, got, want)
	}
}
