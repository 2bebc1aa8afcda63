package rolloutplan

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// CanaryAnnotation on a ClusterManagementAddOn maps a placement to its canary placement:
// '{"<ns>/<placement>": "<ns>/<canary-placement>"}'. It expresses the seed's
// RollingUpdateWithCanary, which OCM's RolloutStrategy API cannot: the placement moves its clusters
// only to the configs every cluster of the canary placement applied successfully.
const CanaryAnnotation = "addonops.io/canary-placements"

// PlacementKey names a Placement.
type PlacementKey struct {
	Namespace, Name string
}

func (k PlacementKey) String() string { return k.Namespace + "/" + k.Name }

func parsePlacementKey(s string) (PlacementKey, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return PlacementKey{}, fmt.Errorf("%q is not <namespace>/<placement>", s)
	}
	return PlacementKey{Namespace: ns, Name: name}, nil
}

// ParseCanaries reads the canary annotation: gated placement → canary placement. No annotation
// means no canary. A placement that is its own canary is an error.
func ParseCanaries(annotations map[string]string) (map[PlacementKey]PlacementKey, error) {
	raw, ok := annotations[CanaryAnnotation]
	if !ok {
		return nil, nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil, fmt.Errorf("annotation %s: %v; want a JSON object such as {\"default/aws-placement\": \"default/canary-placement\"}", CanaryAnnotation, err)
	}
	out := make(map[PlacementKey]PlacementKey, len(m))
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		gated, err := parsePlacementKey(k)
		if err != nil {
			return nil, fmt.Errorf("annotation %s: key %v", CanaryAnnotation, err)
		}
		canary, err := parsePlacementKey(m[k])
		if err != nil {
			return nil, fmt.Errorf("annotation %s: value of %q: %v", CanaryAnnotation, k, err)
		}
		if gated == canary {
			return nil, fmt.Errorf("annotation %s: placement %s cannot be its own canary", CanaryAnnotation, gated)
		}
		out[gated] = canary
	}
	return out, nil
}

// canaryOrder orders placements so that every canary comes before the placements it gates (a
// gated placement adopts what its canary passed in the same evaluation). Placements caught in a
// canary cycle are returned separately: they cannot be ordered and must wait.
func canaryOrder(keys []PlacementKey, canaries map[PlacementKey]PlacementKey) (order []PlacementKey, cyclic map[PlacementKey]bool) {
	known := map[PlacementKey]bool{}
	for _, k := range keys {
		known[k] = true
	}
	cyclic = map[PlacementKey]bool{}
	const (
		unvisited = iota
		visiting
		done
	)
	state := map[PlacementKey]int{}
	var visit func(k PlacementKey) bool
	visit = func(k PlacementKey) bool {
		switch state[k] {
		case done:
			return !cyclic[k]
		case visiting:
			return false
		}
		state[k] = visiting
		ok := true
		if c, gated := canaries[k]; gated && known[c] {
			ok = visit(c)
		}
		state[k] = done
		if !ok {
			cyclic[k] = true
			return false
		}
		order = append(order, k)
		return true
	}
	for _, k := range keys {
		visit(k)
	}
	return order, cyclic
}
