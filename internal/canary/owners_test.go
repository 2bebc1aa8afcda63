package canary

import (
	"maps"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
)

func TestAssignOwners(t *testing.T) {
	a, b, c := PlacementKey{Namespace: "ns", Name: "a"}, PlacementKey{Namespace: "ns", Name: "b"}, PlacementKey{Namespace: "ns", Name: "c"}
	for _, tc := range []struct {
		name string
		sels []Selection
		want map[string]int
	}{
		{"nothing selected", nil, map[string]int{}},
		{"one placement", []Selection{{Placement: a, Clusters: sets.New("c1", "c2")}}, map[string]int{"c1": 0, "c2": 0}},
		{"the last placement that selects a cluster owns it",
			[]Selection{{Placement: a, Clusters: sets.New("c1", "c2")}, {Placement: b, Clusters: sets.New("c2", "c3")}},
			map[string]int{"c1": 0, "c2": 1, "c3": 1}},
		{"a gated placement listed last never takes a cluster from its canary",
			[]Selection{{Placement: a, Clusters: sets.New("c1")}, {Placement: b, Clusters: sets.New("c1", "c2"), Canary: &a}},
			map[string]int{"c1": 0, "c2": 1}},
		{"a canary listed last takes the cluster from the placement it gates",
			[]Selection{{Placement: b, Clusters: sets.New("c1", "c2"), Canary: &a}, {Placement: a, Clusters: sets.New("c1")}},
			map[string]int{"c1": 1, "c2": 0}},
		{"the gate spares only its own canary: a third placement still takes the cluster",
			[]Selection{{Placement: a, Clusters: sets.New("c1")}, {Placement: c, Clusters: sets.New("c1")}, {Placement: b, Clusters: sets.New("c1"), Canary: &a}},
			map[string]int{"c1": 2}},
		{"a gated placement keeps what its canary does not select",
			[]Selection{{Placement: a, Clusters: sets.New[string]()}, {Placement: b, Clusters: sets.New("c1"), Canary: &a}},
			map[string]int{"c1": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := AssignOwners(tc.sels); !maps.Equal(got, tc.want) {
				t.Errorf("AssignOwners = %v, want %v", got, tc.want)
			}
		})
	}
}
