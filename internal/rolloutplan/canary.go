package rolloutplan

import "github.com/addonops/addonops/internal/canary"

// CanaryAnnotation on a ClusterManagementAddOn maps a placement to its canary placement:
// '{"<ns>/<placement>": "<ns>/<canary-placement>"}'. It expresses the design's
// RollingUpdateWithCanary, which OCM's RolloutStrategy API cannot: the placement moves its clusters
// only to the configs every cluster of the canary placement applied successfully. The model lives
// in internal/canary, shared with the rollout-strategy function that writes and checks it at build
// time; this file only adapts it to the controller's names.
const CanaryAnnotation = canary.Annotation

// PlacementKey names a Placement. It is canary.PlacementKey as a type of this package (not an
// alias), so the controller and its tests keep writing PlacementKey{ns, name}.
type PlacementKey canary.PlacementKey

func (k PlacementKey) String() string { return canary.PlacementKey(k).String() }

// ParseCanaries reads the canary annotation: gated placement → canary placement. No annotation
// means no canary. A placement that is its own canary is an error.
func ParseCanaries(annotations map[string]string) (map[PlacementKey]PlacementKey, error) {
	parsed, err := canary.Parse(annotations)
	if err != nil || parsed == nil {
		return nil, err
	}
	out := make(map[PlacementKey]PlacementKey, len(parsed))
	for gated, c := range parsed {
		out[PlacementKey(gated)] = PlacementKey(c)
	}
	return out, nil
}

// canaryOrder orders placements so that every canary comes before the placements it gates (a
// gated placement adopts what its canary passed in the same evaluation). Placements caught in a
// canary cycle are returned separately: they cannot be ordered and must wait.
func canaryOrder(keys []PlacementKey, canaries map[PlacementKey]PlacementKey) (order []PlacementKey, cyclic map[PlacementKey]bool) {
	ks := make([]canary.PlacementKey, len(keys))
	for i, k := range keys {
		ks[i] = canary.PlacementKey(k)
	}
	cs := make(map[canary.PlacementKey]canary.PlacementKey, len(canaries))
	for gated, c := range canaries {
		cs[canary.PlacementKey(gated)] = canary.PlacementKey(c)
	}
	o, cy := canary.Order(ks, cs)
	for _, k := range o {
		order = append(order, PlacementKey(k))
	}
	cyclic = make(map[PlacementKey]bool, len(cy))
	for k := range cy {
		cyclic[PlacementKey(k)] = true
	}
	return order, cyclic
}
