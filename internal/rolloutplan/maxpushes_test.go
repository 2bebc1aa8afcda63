package rolloutplan

import (
	"maps"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/operations"
)

// A batch larger than Input.MaxPushes is moved by consecutive decisions, MaxPushes clusters each, taken
// at once: the deferred clusters are not written in between, count as in progress, and the
// rollout completes as it would.
func TestMaxPushesSplitsABatch(t *testing.T) {
	w := newWorld(t)
	w.maxPushes = 2
	w.config("a")
	clusters := []string{"c1", "c2", "c3", "c4", "c5"}
	p := w.placement("aws", "a", all(), clusters)

	plan := w.step()
	if len(plan.Updates) != 2 || plan.RecheckAfter <= 0 || plan.RecheckAfter > PushRecheck {
		t.Fatalf("first decision: %d updates, recheck %s; want 2 and at most %s", len(plan.Updates), plan.RecheckAfter, PushRecheck)
	}
	w.expectStates("c1=a//T c2=a//T c3=//- c4=//- c5=//-")
	w.expectProgression(p, addonstatus.ReasonInstalling, "installing... 0/5 clusters done, 5 in progress, 0 failed, 0 timed out", "a", "", "")
	if plan := w.step(); len(plan.Updates) != 2 {
		t.Fatalf("second decision: %d updates, want 2", len(plan.Updates))
	}
	w.expectStates("c1=a//T c2=a//T c3=a//T c4=a//T c5=//-")
	if plan := w.step(); len(plan.Updates) != 1 || plan.RecheckAfter == PushRecheck {
		t.Fatalf("third decision: %d updates, recheck %s; want 1, and no deferred cluster to recheck for", len(plan.Updates), plan.RecheckAfter)
	}
	w.agents(succeed, clusters...)
	w.step()
	w.expectProgression(p, addonstatus.ReasonInstallSucceed, "5/5 install completed with no errors.", "a", "a", "a")
}

// The bound changes neither what an upgrade writes per cluster nor maxConcurrency: a batch of 3 is
// moved 2 + 1, never more than 3 in flight, and each MCA gets the writes it gets without the bound.
func TestMaxPushesKeepsWritesAndConcurrency(t *testing.T) {
	upgrade := func(t *testing.T, maxPushes int) map[string]int {
		w := newWorld(t)
		w.maxPushes = maxPushes
		w.config("a")
		w.config("b")
		clusters := []string{"c1", "c2", "c3", "c4", "c5"}
		p := w.placement("aws", "a", progressive(intstr.FromInt32(3), clusterv1alpha1.RolloutConfig{}), clusters)
		w.installAll()
		w.setConfig(p, "b")
		writes := map[string]int{}
		for range 20 {
			before := map[string]string{}
			for _, c := range clusters {
				before[c] = w.desiredOf(c)
			}
			plan := w.step()
			moved := 0
			for _, u := range plan.Updates {
				writes[u.MCA.Namespace]++
				if before[u.MCA.Namespace] != "b" && w.desiredOf(u.MCA.Namespace) == "b" {
					moved++
				}
			}
			if n := w.inFlight("b"); n > 3 {
				t.Fatalf("%d clusters in flight, maxConcurrency is 3: %s", n, w.states())
			}
			if moved > maxPushes {
				t.Fatalf("a decision moved %d clusters, MaxPushes is %d", moved, maxPushes)
			}
			if moved == 0 {
				for _, c := range clusters {
					if w.desiredOf(c) == "b" && w.appliedOf(c) != "b" {
						w.agent(c, succeed)
					}
				}
			}
		}
		w.expectStates("c1=b/b/T c2=b/b/T c3=b/b/T c4=b/b/T c5=b/b/T")
		w.expectProgression(p, addonstatus.ReasonUpgradeSucceed, "5/5 upgrade completed with no errors.", "b", "b", "b")
		return writes
	}
	var bounded, unbounded map[string]int
	t.Run("bounded", func(t *testing.T) { bounded = upgrade(t, 2) })
	t.Run("unbounded", func(t *testing.T) { unbounded = upgrade(t, 1000) })
	if !maps.Equal(bounded, unbounded) {
		t.Errorf("MCA writes per cluster with MaxPushes 2: %v, without the bound: %v", bounded, unbounded)
	}
}

// splitWorld: p (All, c1..c5) runs a and moves to b with MaxPushes 2: the first decision moved c1
// and c2; c3..c5 wait for the next decisions.
func splitWorld(t *testing.T) (*world, PlacementKey) {
	w := newWorld(t)
	w.maxPushes = 2
	w.config("a")
	w.config("b")
	p := w.placement("p", "a", all(), []string{"c1", "c2", "c3", "c4", "c5"})
	w.installAll()
	w.setConfig(p, "b")
	w.step()
	w.expectStates("c1=b/a/T c2=b/a/T c3=a/a/T c4=a/a/T c5=a/a/T")
	return w, p
}

// A pause between the decisions of a split batch stops it there: the clusters the batch had not
// yet moved are not moved while paused, however often the controller decides; the two moved
// finish. Resuming moves the rest, still MaxPushes per decision.
func TestMaxPushesPauseMidSplit(t *testing.T) {
	w, p := splitWorld(t)
	w.cma.Annotations[operations.PauseAnnotation] = p.String()
	w.step()
	w.expectProgression(p, addonstatus.ReasonPaused, "paused (annotation addonops.io/pause): no new cluster starts, clusters in flight finish", "b", "a", "a")
	w.agents(succeed, "c1", "c2")
	for range 5 {
		w.advance(PushRecheck)
		w.step()
	}
	w.expectStates("c1=b/b/T c2=b/b/T c3=a/a/F c4=a/a/F c5=a/a/F")
	w.expectProgression(p, addonstatus.ReasonPaused, "2/5 clusters done, 0 in progress", "b", "a", "a")

	delete(w.cma.Annotations, operations.PauseAnnotation)
	if plan := w.step(); w.inFlight("b") != 2 {
		t.Fatalf("after the resume %d clusters in flight (%d updates), want MaxPushes 2: %s", w.inFlight("b"), len(plan.Updates), w.states())
	}
	w.settle()
	w.expectStates("c1=b/b/T c2=b/b/T c3=b/b/T c4=b/b/T c5=b/b/T")
	w.expectProgression(p, addonstatus.ReasonUpgradeSucceed, "5/5 upgrade completed", "b", "b", "b")
}

// An abort between the decisions of a split batch: the clusters already moved go back, the ones
// not yet moved are never told b, and the rollout ends Aborted.
func TestMaxPushesAbortMidSplit(t *testing.T) {
	w, p := splitWorld(t)
	w.agent("c1", succeed)
	idB := versionID([]Config{cfgOf("b")})
	w.cma.Annotations[operations.AbortAnnotation] = operations.FormatMap(map[canary.PlacementKey]string{canary.PlacementKey(p): idB})
	for range 10 {
		w.step()
		for _, c := range []string{"c3", "c4", "c5"} {
			if w.desiredOf(c) == "b" {
				t.Fatalf("%s was moved to b after the abort: %s", c, w.states())
			}
		}
		for c := range w.mcas {
			if w.desiredOf(c) == "a" && w.appliedOf(c) != "a" {
				w.agent(c, succeed)
			}
		}
		w.advance(PushRecheck)
	}
	w.expectStates("c1=a/a/T c2=a/a/T c3=a/a/T c4=a/a/T c5=a/a/T")
	w.expectProgression(p, addonstatus.ReasonAborted, "5/5 clusters are back on", "b", "a", "a")
	w.expectVersions(p, "a:Superseded:c b:Aborted")
}
