package rolloutplan

import (
	"k8s.io/apimachinery/pkg/util/sets"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/operations"
)

// Owners returns, per cluster, the install placement whose rollout moves it, as Decide assigns
// them on the same input (a cluster several placements select belongs to the last of them, unless
// that one is gated by the other as its canary). `addonops plan` files the clusters a simulated
// decision tells a new version under their placement with it.
func Owners(in Input) map[string]PlacementKey {
	if in.CMA.Spec.InstallStrategy.Type != StrategyPlacements {
		return nil
	}
	d := &decider{in: in, res: resolver{lookup: in.Configs, memo: map[configref.Ref]lookupResult{}},
		mcas: map[string]*addonv1alpha1.ManagedClusterAddOn{}, updates: map[string]addonv1alpha1.ManagedClusterAddOnStatus{},
		health: GateOf(in.CMA), supported: sets.New[configref.GroupResource](), requests: operations.Parse(in.CMA.Annotations)}
	states := d.placementStates(defaultRefs(in.CMA))
	if canaries, err := ParseCanaries(in.CMA.Annotations); err == nil {
		for _, p := range states {
			if c, ok := canaries[p.key]; ok {
				p.canary = &c
			}
		}
	}
	d.assignOwners(states)
	out := make(map[string]PlacementKey, len(d.owners))
	for c, i := range d.owners {
		out[c] = d.ownerStates[i].key
	}
	return out
}
