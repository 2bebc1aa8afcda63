package canary

import "k8s.io/apimachinery/pkg/util/sets"

// Selection is what one install placement selects, for AssignOwners: its clusters, and the
// placement that gates it as its canary (nil: none).
type Selection struct {
	Placement PlacementKey
	Clusters  sets.Set[string]
	Canary    *PlacementKey
}

// AssignOwners gives every selected cluster to one placement (sels in the add-on's spec order):
// the last one in the list that selects it (OCM: "the latter strategy overrides the previous
// one"), except that a canary-gated placement never takes a cluster from its canary placement: a
// cluster in both follows the canary first
// (docs/design/lifecycle.md#a-cluster-in-both-placements-follows-the-canary-first), and the gated
// placement then finds it at the canary's version. It returns, per cluster, the index in sels of
// its owner. The controller decides with it (internal/rolloutplan) and `addonops status` shows it
// (internal/rolloutview).
func AssignOwners(sels []Selection) map[string]int {
	owner := map[string]int{}
	for i, s := range sels {
		for c := range s.Clusters {
			if cur, ok := owner[c]; ok && s.Canary != nil && *s.Canary == sels[cur].Placement {
				continue
			}
			owner[c] = i
		}
	}
	return owner
}
