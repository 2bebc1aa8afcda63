package rolloutplan

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
)

// batches rolls placement p from its installed config to cfg, every cluster succeeding as soon as
// it is moved, and returns the batches in order: the clusters each decision had in flight, sorted.
func (w *world) batches(p PlacementKey, cfg string) [][]string {
	w.t.Helper()
	w.setConfig(p, cfg)
	var out [][]string
	for range 20 {
		w.step()
		var batch []string
		for c, m := range w.mcas {
			d := Desired(m)
			if len(d) > 0 && d[0].Name == cfg && w.appliedOf(c) != cfg && isConfigured(m) {
				batch = append(batch, c)
			}
		}
		if len(batch) == 0 {
			return out
		}
		slices.Sort(batch)
		out = append(out, batch)
		w.agents(succeed, batch...)
	}
	w.t.Fatal("rollout did not end in 20 decisions")
	return nil
}

func renderBatches(bs [][]string) string {
	parts := make([]string, len(bs))
	for i, b := range bs {
		parts[i] = "[" + strings.Join(b, " ") + "]"
	}
	return strings.Join(parts, " ")
}

// Mandatory decision groups as sdk-go rolls them (getProgressivePerGroupClusters,
// getProgressiveClusters): first, each mandatory group as one batch of its own, in decision group
// index order (not the order the strategy lists them in), whatever maxConcurrency says; a group
// name names every decision group of that name, and one that names none is ignored; then the other
// groups, one group per batch under ProgressivePerGroup, maxConcurrency clusters (of the
// non-mandatory ones, sorted by name) per batch under Progressive.
func TestMandatoryDecisionGroups(t *testing.T) {
	byName := func(n string) clusterv1alpha1.MandatoryDecisionGroup {
		return clusterv1alpha1.MandatoryDecisionGroup{GroupName: n}
	}
	byIndex := func(i int32) clusterv1alpha1.MandatoryDecisionGroup {
		return clusterv1alpha1.MandatoryDecisionGroup{GroupIndex: i}
	}
	cases := []struct {
		name     string
		strategy clusterv1alpha1.RolloutStrategy
		groups   [][]string
		names    []string
		want     string
	}{
		{name: "per group: a mandatory group named at index 2 goes first",
			strategy: perGroup(clusterv1alpha1.RolloutConfig{}, byName("canary")),
			groups:   [][]string{{"a1", "a2"}, {"b1", "b2"}, {"k1", "k2", "k3"}}, names: []string{"", "", "canary"},
			want: "[k1 k2 k3] [a1 a2] [b1 b2]"},
		{name: "per group: a mandatory group by index",
			strategy: perGroup(clusterv1alpha1.RolloutConfig{}, byIndex(1)),
			groups:   [][]string{{"a1", "a2"}, {"k1", "k2"}, {"b1"}},
			want:     "[k1 k2] [a1 a2] [b1]"},
		{name: "per group: a name on two decision groups makes both mandatory, one batch each",
			strategy: perGroup(clusterv1alpha1.RolloutConfig{}, byName("canary")),
			groups:   [][]string{{"k1"}, {"a1", "a2"}, {"k2", "k3"}, {"b1"}}, names: []string{"canary", "", "canary", ""},
			want: "[k1] [k2 k3] [a1 a2] [b1]"},
		{name: "per group: mandatory groups go in index order, not in the order listed",
			strategy: perGroup(clusterv1alpha1.RolloutConfig{}, byName("late"), byIndex(1)),
			groups:   [][]string{{"a1"}, {"m1", "m2"}, {"b1"}, {"l1"}}, names: []string{"", "", "", "late"},
			want: "[m1 m2] [l1] [a1] [b1]"},
		{name: "per group: a mandatory name that names no group is ignored",
			strategy: perGroup(clusterv1alpha1.RolloutConfig{}, byName("nosuch")),
			groups:   [][]string{{"a1", "a2"}, {"b1", "b2"}},
			want:     "[a1 a2] [b1 b2]"},
		{name: "per group: maxFailures leaves a mandatory group whole",
			strategy: perGroup(clusterv1alpha1.RolloutConfig{MaxFailures: intstr.FromString("50%")}, byName("canary")),
			groups:   [][]string{{"a1", "a2"}, {"k1", "k2", "k3"}}, names: []string{"", "canary"},
			want: "[k1 k2 k3] [a1 a2]"},
		{name: "progressive: the mandatory group is one batch whatever maxConcurrency, then one at a time",
			strategy: progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{}, byName("canary")),
			groups:   [][]string{{"a1", "a2"}, {"k1", "k2", "k3"}, {"b1"}}, names: []string{"", "canary", ""},
			want: "[k1 k2 k3] [a1] [a2] [b1]"},
		{name: "progressive: maxConcurrency 50% is of the clusters outside the mandatory groups",
			strategy: progressive(intstr.FromString("50%"), clusterv1alpha1.RolloutConfig{}, byIndex(0)),
			groups:   [][]string{{"k1", "k2", "k3", "k4"}, {"a1", "a2"}, {"b1", "b2"}},
			want:     "[k1 k2 k3 k4] [a1 a2] [b1 b2]"},
		{name: "progressive: two mandatory groups, one batch each, then the rest across groups",
			strategy: progressive(intstr.FromInt32(3), clusterv1alpha1.RolloutConfig{}, byIndex(2), byIndex(0)),
			groups:   [][]string{{"k1"}, {"a1", "a2"}, {"m1", "m2"}, {"b1", "b2"}},
			want:     "[k1] [m1 m2] [a1 a2 b1] [b2]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.config("a")
			w.config("b")
			p := w.placement("aws", "a", tc.strategy, tc.groups...)
			w.groupNames[p] = tc.names
			w.installAll()
			if got := renderBatches(w.batches(p, "b")); got != tc.want {
				t.Fatalf("batches %s, want %s", got, tc.want)
			}
			n := 0
			for _, g := range tc.groups {
				n += len(g)
			}
			w.expectProgression(p, addonstatus.ReasonUpgradeSucceed, fmt.Sprintf("%d/%d upgrade completed with no errors.", n, n), "b", "b", "b")
		})
	}
}

// A mandatory group of ProgressivePerGroup whose cluster fails stops the rollout before any other
// group starts, whatever maxFailures (sdk-go rolls mandatory groups with maxFailures 0); the other
// groups then never move.
func TestProgressivePerGroupMandatoryGroupFails(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	w.config("b")
	p := w.placement("aws", "a", perGroup(clusterv1alpha1.RolloutConfig{MaxFailures: intstr.FromString("100%")}, clusterv1alpha1.MandatoryDecisionGroup{GroupName: "canary"}),
		[]string{"a1", "a2"}, []string{"k1", "k2"})
	w.groupNames[p] = []string{"", "canary"}
	w.installAll()
	w.setConfig(p, "b")
	w.step()
	w.expectStates("a1=a/a/F a2=a/a/F k1=b/a/T k2=b/a/T")
	w.agent("k1", fail)
	w.agent("k2", succeed)
	w.step()
	w.expectStates("a1=a/a/F a2=a/a/F k1=b/a/T k2=b/b/T")
	w.expectProgression(p, addonstatus.ReasonUpgradeFailed, stoppedOnMaxFailures+"1/4 clusters done, 0 in progress, 1 failed, 0 timed out; failed: k1", "b", "a", "a")
	w.step()
	w.expectStates("a1=a/a/F a2=a/a/F k1=b/a/T k2=b/b/T")
	// k1 recovers: the mandatory group is done and the rest goes, as one group.
	w.agent("k1", succeed)
	w.step()
	w.expectStates("a1=b/a/T a2=b/a/T k1=b/b/T k2=b/b/T")
}
