package rolloutplan

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/rolloutrules"
)

// fakeRaw is Input.Raw: objects by "<namespace>/<name>" that do not decode, and the rollout
// strategies as written.
type fakeRaw struct {
	undecodable map[string]string
	strategies  []map[string]any // nil: unknown
}

func (f fakeRaw) Undecodable(obj metav1.Object) string {
	return f.undecodable[obj.GetNamespace()+"/"+obj.GetName()]
}

func (f fakeRaw) RolloutStrategy(i int) (map[string]any, bool) {
	if f.strategies == nil {
		return nil, false
	}
	return f.strategies[i], true
}

// stepRaw is step with Input.Raw.
func (w *world) stepRaw(raw Raw) Plan {
	w.t.Helper()
	in := w.input()
	in.Raw = raw
	plan := Decide(in)
	w.lastPlan = plan
	w.cma = w.cma.DeepCopy()
	w.cma.Status = plan.Status
	for _, u := range plan.Updates {
		m := w.mcas[u.MCA.Namespace].DeepCopy()
		m.Status = u.Status
		w.mcas[u.MCA.Namespace] = m
	}
	return plan
}

// An upgrade under a rollout strategy that breaks the rules moves nothing: the placement waits with
// InvalidRolloutStrategy, naming the placement, the field and the value, with the function's words.
func TestUnsafeStrategyMovesNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		mc   intstr.IntOrString
		raw  any // the written maxConcurrency; nil: the Go form alone
		want string
	}{
		{"-1", intstr.FromInt32(-1), nil, rolloutrules.MaxConcurrency(rolloutrules.Value{Kind: rolloutrules.Int, Text: "-1"})},
		{"0%", intstr.FromString("0%"), nil, rolloutrules.MaxConcurrency(rolloutrules.Value{Kind: rolloutrules.String, Text: "0%"})},
		{"written 0", intstr.FromInt32(0), int64(0), `"0" would move every cluster at once (OCM treats a maxConcurrency of 0 as no limit); write at least 1 or a percentage like 25%, or use type All to move every cluster at once`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.config("a")
			w.config("b")
			p := w.placement("aws", "a", all(), []string{"c1", "c2", "c3"})
			w.step()
			w.agents(succeed, "c1", "c2", "c3")
			w.step()
			w.expectStates("c1=a/a/T c2=a/a/T c3=a/a/T")

			w.cma.Spec.InstallStrategy.Placements[0].RolloutStrategy = progressive(tc.mc, clusterv1alpha1.RolloutConfig{})
			w.setConfig(p, "b")
			raw := fakeRaw{}
			if tc.raw != nil {
				raw.strategies = []map[string]any{{"type": "Progressive", "progressive": map[string]any{"maxConcurrency": tc.raw}}}
			}
			for i := range 2 {
				if plan := w.stepRaw(raw); len(plan.Updates) != 0 {
					t.Fatalf("%d MCAs updated under an invalid strategy", len(plan.Updates))
				}
				// One Warning, when the placement starts waiting.
				if warned := slices.ContainsFunc(w.lastPlan.Events, func(e Event) bool {
					return e.Warning && e.Reason == addonstatus.ReasonInvalidRolloutStrategy
				}); warned != (i == 0) {
					t.Fatalf("decision %d: events %+v", i, w.lastPlan.Events)
				}
			}
			w.expectStates("c1=a/a/T c2=a/a/T c3=a/a/T")
			const field = "spec.installStrategy.placements[0].rolloutStrategy.progressive.maxConcurrency"
			w.expectProgression(p, addonstatus.ReasonInvalidRolloutStrategy, "the rollout strategy of placement default/aws is invalid: "+field+": "+tc.want, "b", "a", "a")

			// Fixed, the upgrade goes on, one cluster at a time.
			w.cma.Spec.InstallStrategy.Placements[0].RolloutStrategy.Progressive.MaxConcurrency = intstr.FromInt32(1)
			w.stepRaw(fakeRaw{})
			if got := strings.Count(w.states(), "=b/"); got != 1 {
				t.Fatalf("states %s: want one cluster moved to b", w.states())
			}
		})
	}
}

// Without the written strategy, an int 0 is unset: OCM's default, the placement's
// clustersPerDecisionGroup; with it, an absent maxConcurrency is that default too.
func TestUnsetMaxConcurrencyIsNotZero(t *testing.T) {
	for _, raw := range []Raw{nil, fakeRaw{strategies: []map[string]any{{"type": "Progressive", "progressive": map[string]any{"maxFailures": int64(0)}}}}} {
		w := newWorld(t)
		w.config("a")
		w.placement("aws", "a", progressive(intstr.IntOrString{}, clusterv1alpha1.RolloutConfig{}), []string{"c1", "c2"})
		w.stepRaw(raw)
		w.expectStates("c1=a//T c2=a//T")
	}
}

// An MCA that does not decode cannot be configured: it is never written, never counted done, and
// its placement names it; the others go on.
func TestUndecodableMCA(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	p := w.placement("aws", "a", all(), []string{"c1", "c2"})
	raw := fakeRaw{undecodable: map[string]string{"c2/hello": "ManagedClusterAddOn c2/hello cannot be decoded: boom"}}
	plan := w.stepRaw(raw)
	for _, u := range plan.Updates {
		if u.MCA.Namespace == "c2" {
			t.Fatalf("the MCA that does not decode was written: %+v", u.Status)
		}
	}
	w.agents(succeed, "c1")
	w.stepRaw(raw)
	w.expectStates("c1=a/a/T c2=//-")
	// Nothing else can move: a person must fix the MCA (Degraded, ClustersNotConfigurable).
	w.expectProgression(p, addonstatus.ReasonClustersNotConfigurable, "1/2 clusters done, 0 in progress, 0 failed, 0 timed out, 1 cannot be configured; cannot be configured: c2 (ManagedClusterAddOn c2/hello cannot be decoded: boom)", "a", "", "")
}

// A Placement that does not decode: its clusters keep their configs.
func TestUndecodablePlacement(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	w.config("b")
	p := w.placement("aws", "a", all(), []string{"c1"})
	w.step()
	w.agents(succeed, "c1")
	w.step()
	w.setConfig(p, "b")
	raw := fakeRaw{undecodable: map[string]string{"default/aws": "Placement default/aws cannot be decoded: boom"}}
	if plan := w.stepRaw(raw); len(plan.Updates) != 0 {
		t.Fatalf("%d MCAs updated", len(plan.Updates))
	}
	w.expectProgression(p, addonstatus.ReasonUndecodable, "placement default/aws: Placement default/aws cannot be decoded: boom; its clusters keep their configs", "b", "a", "a")
	if !slices.Contains(w.eventReasons(), addonstatus.ReasonUndecodable) {
		t.Fatalf("events %v: want a Warning %s", w.eventReasons(), addonstatus.ReasonUndecodable)
	}
}
