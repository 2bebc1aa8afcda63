package rolloutplan

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/configref"
)

// generationStates renders every cluster's lastObservedGeneration per config reference, sorted:
// "c1=cfg-a:2 c2=cfg-a:2".
func (w *world) generationStates() string {
	var parts []string
	for _, c := range []string{"c1", "c2", "c3"} {
		m := w.mcas[c]
		if m == nil {
			continue
		}
		var refs []string
		for _, r := range m.Status.ConfigReferences {
			refs = append(refs, fmt.Sprintf("%s:%d", r.Name, r.LastObservedGeneration))
		}
		parts = append(parts, c+"="+strings.Join(refs, ","))
	}
	return strings.Join(parts, " ")
}

func (w *world) expectGenerations(want string) {
	w.t.Helper()
	if got := w.generationStates(); got != want {
		w.t.Fatalf("lastObservedGeneration:\n got %s\nwant %s", got, want)
	}
}

// status.configReferences[].lastObservedGeneration follows the config objects' generation, as
// addon-framework's addonconfig controller writes it: with the desired config that moves a cluster,
// for every cluster when a config is edited in place (waiting ones too), through renames (config-hash
// versions are new objects) and rollbacks, and under Manual.
func TestLastObservedGeneration(t *testing.T) {
	w := newWorld(t)
	w.generations = map[configref.Ref]int64{}
	create := func(name string) { w.config(name); w.generations[adcRef(name)] = 1 }
	edit := func(name string) { w.configs[adcRef(name)] += "-edited"; w.generations[adcRef(name)]++ }
	create("a")
	p := w.placement("aws", "a", progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{}), []string{"c1", "c2"})
	w.step()
	// c1's turn: told to run cfg-a with its generation in the same write; c2 waits with nothing.
	w.expectStates("c1=a//T c2=//F")
	w.expectGenerations("c1=a:1 c2=")
	w.agent("c1", succeed)
	w.step()
	w.agent("c2", succeed)
	w.step()
	w.expectProgression(p, addonstatus.ReasonInstallSucceed, "2/2 install completed", "a", "a", "a")
	w.expectGenerations("c1=a:1 c2=a:1")

	// Edited in place (generation 2): c1 moves to the new hash; c2 waits on the old hash and
	// still shows generation 2, as OCM's addonconfig controller writes it for every MCA.
	edit("a")
	plan := w.step()
	w.expectGenerations("c1=a:2 c2=a:2")
	if h := w.mcas["c2"].Status.ConfigReferences[0].DesiredConfig.SpecHash; h != "hash-a" {
		t.Fatalf("c2 desired hash %s, want the old hash-a while it waits", h)
	}
	if len(plan.Updates) != 2 {
		t.Fatalf("%d MCA updates, want 2 (c1 moved, c2 observed the new generation)", len(plan.Updates))
	}
	w.agents(succeed, "c1")
	w.step()
	w.agents(succeed, "c2")
	w.step()
	// Nothing changes: no write.
	if plan := w.step(); len(plan.Updates) != 0 {
		t.Fatalf("steady state: %d MCA updates, want none", len(plan.Updates))
	}

	// Renamed, as config-hash does: a new object at generation 1.
	create("b")
	w.setConfig(p, "b")
	w.step()
	w.expectGenerations("c1=b:1 c2=a:2")
	w.agents(succeed, "c1")
	w.step()
	w.agents(succeed, "c2")
	w.step()
	w.expectGenerations("c1=b:1 c2=b:1")

	// Rolled back to a: the older object's generation.
	w.setConfig(p, "a")
	w.step()
	w.expectGenerations("c1=a:2 c2=b:1")
	w.agents(succeed, "c1")
	w.step()
	w.agents(succeed, "c2")
	w.step()
	w.expectGenerations("c1=a:2 c2=a:2")

	// b is garbage collected (unreferenced); a deleted by hand: the last generation seen stays.
	delete(w.configs, adcRef("b"))
	delete(w.generations, adcRef("b"))
	delete(w.generations, adcRef("a"))
	w.step()
	w.expectGenerations("c1=a:2 c2=a:2")

	// Manual: MCAs following the defaults get their generations too.
	w.generations[adcRef("a")] = 2
	create("d")
	w.cma.Spec.SupportedConfigs[0].DefaultConfig = &addonv1alpha1.ConfigReferent{Namespace: "default", Name: "d"}
	w.cma.Spec.InstallStrategy.Type = StrategyManual
	m := w.mca("c3")
	m.Labels = nil
	w.step()
	w.expectGenerations("c1=a:2 c2=a:2 c3=d:1")
}
