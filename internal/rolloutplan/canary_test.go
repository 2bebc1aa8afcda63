package rolloutplan

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/addonops/addonops/internal/addonstatus"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
)

func TestParseCanaries(t *testing.T) {
	cases := []struct {
		name    string
		ann     map[string]string
		want    map[PlacementKey]PlacementKey
		wantErr string
	}{
		{"absent", nil, nil, ""},
		{"one", map[string]string{CanaryAnnotation: `{"default/aws":"default/canary"}`},
			map[PlacementKey]PlacementKey{{"default", "aws"}: {"default", "canary"}}, ""},
		{"not JSON", map[string]string{CanaryAnnotation: `default/aws: default/canary`}, nil, "want a JSON object"},
		{"bad key", map[string]string{CanaryAnnotation: `{"aws":"default/canary"}`}, nil, `"aws" is not <namespace>/<placement>`},
		{"bad value", map[string]string{CanaryAnnotation: `{"default/aws":"a/b/c"}`}, nil, `"a/b/c" is not <namespace>/<placement>`},
		{"self", map[string]string{CanaryAnnotation: `{"default/aws":"default/aws"}`}, nil, "cannot be its own canary"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseCanaries(tc.ann)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ParseCanaries = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestCanaryOrder(t *testing.T) {
	k := func(n string) PlacementKey { return PlacementKey{"ns", n} }
	order, cyclic := canaryOrder([]PlacementKey{k("aws"), k("gcp"), k("canary"), k("x"), k("y")},
		map[PlacementKey]PlacementKey{k("aws"): k("canary"), k("gcp"): k("aws"), k("x"): k("y"), k("y"): k("x")})
	if want := []PlacementKey{k("canary"), k("aws"), k("gcp")}; !reflect.DeepEqual(order, want) {
		t.Fatalf("order = %v, want %v", order, want)
	}
	got := slices.SortedFunc(maps.Keys(cyclic), func(a, b PlacementKey) int { return strings.Compare(a.Name, b.Name) })
	if !reflect.DeepEqual(got, []PlacementKey{k("x"), k("y")}) {
		t.Fatalf("cyclic = %v", got)
	}
}

// canaryWorld: "canary" (All, k1 k2) is listed after "aws" (Progressive 1 of c1..c4), which is
// gated by it, both at config a.
func canaryWorld(t *testing.T) (w *world, aws, canary PlacementKey) {
	w = newWorld(t)
	for _, c := range []string{"a", "b", "c"} {
		w.config(c)
	}
	aws = w.placement("aws", "a", progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{}), []string{"c1", "c2", "c3", "c4"})
	canary = w.placement("canary", "a", all(), []string{"k1", "k2"})
	w.cma.Annotations[CanaryAnnotation] = `{"default/aws": "default/canary"}`
	return w, aws, canary
}

func TestCanaryFreshInstallWaitsForCanary(t *testing.T) {
	w, aws, canary := canaryWorld(t)
	w.step()
	w.expectStates("c1=//F c2=//F c3=//F c4=//F k1=a//T k2=a//T")
	w.expectProgression(aws, addonstatus.ReasonWaitingForCanary, "waiting for canary placement default/canary to run addondeploymentconfigs.addon.open-cluster-management.io default/a (hash-a) on every cluster, healthy: 0/2 do; not yet: k1, k2", "a", "", "")
	w.agents(succeed, "k1", "k2")
	w.step()
	// The canary passed a: aws adopts it in the same decision and starts its own rollout.
	w.expectProgression(canary, addonstatus.ReasonInstallSucceed, "2/2 install completed", "a", "a", "a")
	w.expectProgression(aws, addonstatus.ReasonInstalling, "0/4 clusters done, 1 in progress", "a", "a", "")
	w.expectStates("c1=a//T c2=//F c3=//F c4=//F k1=a/a/T k2=a/a/T")
}

func (w *world) finishPlacement(clusters ...string) {
	w.t.Helper()
	for range 3 * len(clusters) {
		w.step()
		moved := false
		for _, c := range clusters {
			m := w.mcas[c]
			if isConfigured(m) && !addonstatus.Applied(m) && len(Desired(m)) > 0 {
				w.agent(c, succeed)
				moved = true
			}
		}
		if !moved {
			return
		}
	}
}

func TestCanaryUpgrade(t *testing.T) {
	w, aws, canary := canaryWorld(t)
	w.installAll()
	w.expectStates("c1=a/a/T c2=a/a/T c3=a/a/T c4=a/a/T k1=a/a/T k2=a/a/T")

	w.setConfig(aws, "b")
	w.setConfig(canary, "b")
	w.step()
	// aws runs its last known good a and waits; its clusters stay configured (they run their turn's
	// configs).
	w.expectStates("c1=a/a/T c2=a/a/T c3=a/a/T c4=a/a/T k1=b/a/T k2=b/a/T")
	w.expectProgression(aws, addonstatus.ReasonWaitingForCanary, "4/4 clusters run the last known good configs; waiting for canary placement default/canary", "b", "a", "a")
	w.expectProgression(canary, addonstatus.ReasonUpgrading, "", "b", "a", "a")

	w.agent("k1", succeed)
	w.step()
	w.expectStates("c1=a/a/T c2=a/a/T c3=a/a/T c4=a/a/T k1=b/b/T k2=b/a/T")
	w.agent("k2", succeed)
	w.step()
	w.expectProgression(canary, addonstatus.ReasonUpgradeSucceed, "2/2 upgrade completed", "b", "b", "b")
	w.expectProgression(aws, addonstatus.ReasonUpgrading, "", "b", "b", "a")
	w.expectStates("c1=b/a/T c2=a/a/F c3=a/a/F c4=a/a/F k1=b/b/T k2=b/b/T")
	w.finishPlacement("c1", "c2", "c3", "c4")
	w.expectProgression(aws, addonstatus.ReasonUpgradeSucceed, "4/4 upgrade completed", "b", "b", "b")
}

// docs/design/lifecycle.md#a-newer-version-waits-for-the-rollout-under-way: the configs change
// after the canary passed and before the rollout finished. The rollout finishes at the last known
// good version, then moves on.
func TestCanaryConfigChangeDuringRolloutFinishesFirst(t *testing.T) {
	w, aws, canary := canaryWorld(t)
	w.installAll()
	w.setConfig(aws, "b")
	w.setConfig(canary, "b")
	w.step()
	w.agents(succeed, "k1", "k2")
	w.step() // canary passed b; aws starts b with c1
	w.agent("c1", succeed)
	w.step() // c2 gets b

	w.setConfig(aws, "c")
	w.setConfig(canary, "c")
	w.step()
	w.expectProgression(aws, addonstatus.ReasonUpgrading, "rolling out the last known good configs first", "c", "b", "a")
	w.agents(succeed, "k1", "k2") // the canary passes c before aws finished b
	w.step()
	w.expectProgression(canary, addonstatus.ReasonUpgradeSucceed, "", "c", "c", "c")
	w.expectProgression(aws, addonstatus.ReasonUpgrading, "", "c", "b", "a")

	// aws finishes b cluster by cluster; nobody gets c before every aws cluster runs b.
	for _, c := range []string{"c2", "c3", "c4"} {
		if w.desiredOf(c) != "b" {
			t.Fatalf("%s: desired %s, want b (states %s)", c, w.desiredOf(c), w.states())
		}
		for _, o := range []string{"c1", "c2", "c3", "c4"} {
			if w.desiredOf(o) == "c" {
				t.Fatalf("%s got c before aws finished b: %s", o, w.states())
			}
		}
		w.agent(c, succeed)
		w.step()
	}
	// b complete: aws adopted c in the same decision and started it.
	w.expectProgression(aws, addonstatus.ReasonUpgrading, "", "c", "c", "b")
	w.expectStates("c1=c/b/T c2=b/b/F c3=b/b/F c4=b/b/F k1=c/c/T k2=c/c/T")
	w.finishPlacement("c1", "c2", "c3", "c4")
	w.expectProgression(aws, addonstatus.ReasonUpgradeSucceed, "4/4 upgrade completed", "c", "c", "c")
}

// docs/design/lifecycle.md#canary-cluster-churn-never-restarts-a-rollout: cluster churn in the
// canary does not restart an ongoing rollout.
func TestCanaryChurnDoesNotRestartRollout(t *testing.T) {
	w, aws, canary := canaryWorld(t)
	w.installAll()
	w.setConfig(aws, "b")
	w.setConfig(canary, "b")
	w.step()
	w.agents(succeed, "k1", "k2")
	w.step()
	w.agent("c1", succeed)

	// A new cluster joins the canary; it has not applied b yet.
	w.decide(canary, []string{"k1", "k2", "k3"})
	w.mca("k3")
	w.step()
	w.expectProgression(canary, addonstatus.ReasonUpgrading, "2/3 clusters done", "b", "b", "b")
	w.expectStates("c1=b/b/T c2=b/a/T c3=a/a/F c4=a/a/F k1=b/b/T k2=b/b/T k3=b//T")
	w.finishPlacement("c1", "c2", "c3", "c4")
	w.expectProgression(aws, addonstatus.ReasonUpgradeSucceed, "4/4 upgrade completed", "b", "b", "b")
}

// New clusters (docs/design/lifecycle.md#a-cluster-in-both-placements-follows-the-canary-first).
func TestCanaryNewClusters(t *testing.T) {
	w, aws, canary := canaryWorld(t)
	w.installAll()
	w.setConfig(aws, "b")
	w.setConfig(canary, "b")
	w.step()

	// While the canary tests b: a new cluster in both placements follows the canary first; a new
	// cluster only in aws is installed with aws's last known good a.
	w.decide(aws, []string{"c1", "c2", "c3", "c4", "both", "new"})
	w.decide(canary, []string{"k1", "k2", "both"})
	w.mca("both")
	w.mca("new")
	w.step()
	if got := w.desiredOf("both"); got != "b" {
		t.Fatalf("cluster in both placements: desired %q, want the canary's b (states %s)", got, w.states())
	}
	if got := w.desiredOf("new"); got != "a" {
		t.Fatalf("new aws cluster: desired %q, want aws's last known good a (states %s)", got, w.states())
	}
	w.agents(succeed, "new")
	w.step()
	w.expectProgression(aws, addonstatus.ReasonWaitingForCanary, "5/5 clusters run the last known good configs", "b", "a", "a")
	w.expectProgression(canary, addonstatus.ReasonUpgrading, "0/3 clusters done, 3 in progress", "b", "a", "a")
}

// TestCanaryPlacementMissingWithinGrace: a commit adds a canary install placement and its Placement,
// and the GitOps engine applies the add-on first. While the canary's Placement is missing within
// the placement grace, the gated placement waits Progressing (no person must act, no warning);
// after the grace both are Degraded.
func TestCanaryPlacementMissingWithinGrace(t *testing.T) {
	w, aws, canary := canaryWorld(t)
	delete(w.placements, canary)
	delete(w.decisions, canary)
	w.step()
	for _, tc := range []struct {
		key    PlacementKey
		reason string
		msg    string
	}{
		{canary, addonstatus.ReasonPlacementNotFound, "not found yet"},
		{aws, addonstatus.ReasonWaitingForCanary, "waiting for canary placement default/canary, whose Placement is not found yet"},
	} {
		c := ProgressingOf(w.progression(tc.key))
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != tc.reason || !strings.Contains(c.Message, tc.msg) {
			t.Errorf("%s within the grace: %+v, want Progressing=True %s %q", tc.key, c, tc.reason, tc.msg)
		}
	}
	for _, e := range w.lastPlan.Events {
		if e.Warning {
			t.Errorf("warning within the grace: %+v", e)
		}
	}
	// Nothing moves: aws's clusters wait for the canary; the canary's keep what they run.
	w.expectStates("c1=//F c2=//F c3=//F c4=//F k1=//- k2=//-")

	w.advance(DefaultPlacementGrace)
	w.step()
	for _, k := range []PlacementKey{canary, aws} {
		if c := ProgressingOf(w.progression(k)); c == nil || c.Status != metav1.ConditionFalse {
			t.Errorf("%s after the grace: %+v, want Progressing=False (Degraded)", k, c)
		}
	}
	w.expectProgression(aws, addonstatus.ReasonWaitingForCanary, "canary placement default/canary (annotation addonops.io/canary-placements) not found: create it or fix the annotation", "a", "", "")
}

func TestCanaryNotAnInstallPlacement(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	aws := w.placement("aws", "a", all(), []string{"c1"})
	w.cma.Annotations[CanaryAnnotation] = `{"default/aws": "default/ghost"}`
	w.step()
	w.expectStates("c1=//F")
	w.expectProgression(aws, addonstatus.ReasonWaitingForCanary, "canary placement default/ghost (annotation addonops.io/canary-placements) not found: create it or fix the annotation", "a", "", "")
	if ev := w.lastPlan.Events; len(ev) != 1 || !ev[0].Warning || ev[0].Reason != addonstatus.ReasonWaitingForCanary {
		t.Fatalf("events = %+v, want one WaitingForCanary warning", ev)
	}
}

func TestInvalidCanaryAnnotationStopsEverything(t *testing.T) {
	w, aws, canary := canaryWorld(t)
	w.cma.Annotations[CanaryAnnotation] = `{"default/aws": "canary"}`
	if plan := w.step(); len(plan.Updates) != 0 {
		t.Fatalf("invalid annotation moved %d MCAs", len(plan.Updates))
	}
	w.expectProgression(aws, addonstatus.ReasonInvalidCanaryPlacements, `"canary" is not <namespace>/<placement>`, "a", "", "")
	w.expectProgression(canary, addonstatus.ReasonInvalidCanaryPlacements, "", "a", "", "")
}

func TestCanaryCycle(t *testing.T) {
	w, aws, canary := canaryWorld(t)
	w.cma.Annotations[CanaryAnnotation] = `{"default/aws": "default/canary", "default/canary": "default/aws"}`
	if plan := w.step(); len(plan.Updates) != 0 {
		t.Fatalf("canary cycle moved %d MCAs", len(plan.Updates))
	}
	w.expectProgression(aws, addonstatus.ReasonInvalidCanaryPlacements, "form a cycle", "a", "", "")
	w.expectProgression(canary, addonstatus.ReasonInvalidCanaryPlacements, "form a cycle", "a", "", "")
}

// The canary's pass is read from the CMA status, so a decision taken by a fresh controller (no
// memory but the status) continues a gated rollout at the same version.
func TestCanaryStateSurvivesInStatus(t *testing.T) {
	w, aws, canary := canaryWorld(t)
	w.installAll()
	w.setConfig(aws, "b")
	w.setConfig(canary, "b")
	w.step()
	w.agents(succeed, "k1", "k2")
	w.step()
	w.setConfig(aws, "c")
	w.setConfig(canary, "c")
	w.step()
	// Round-trip the CMA through its JSON form, as a restarted controller would read it.
	w.cma = roundTrip(t, w.cma)
	w.agent("c1", succeed)
	w.step()
	w.expectStates("c1=b/b/T c2=b/a/T c3=a/a/F c4=a/a/F k1=c/b/T k2=c/b/T")
}
