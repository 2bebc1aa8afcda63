package rolloutplan

import (
	"reflect"
	"testing"
)

func TestDecide(t *testing.T) {
	clusters := map[string]Cluster{"c1": {}, "c2": {}, "c3": {}, "gone": {Deleting: true}}
	cases := []struct {
		name string
		in   InstallInput
		want InstallPlan
	}{
		{
			name: "manual never creates or deletes, even for a deleting cluster",
			in: InstallInput{Strategy: StrategyManual, Decided: map[string][]string{"p": {"c1"}}, Clusters: clusters,
				Existing: []MCA{{Namespace: "c2", Ours: true}, {Namespace: "gone", Ours: true}}},
			want: InstallPlan{NotCreated: map[string]string{}},
		},
		{
			name: "empty strategy is manual",
			in:   InstallInput{Decided: map[string][]string{"p": {"c1"}}, Clusters: clusters},
			want: InstallPlan{NotCreated: map[string]string{}},
		},
		{
			name: "union of placements, existing MCAs untouched",
			in: InstallInput{Strategy: StrategyPlacements, Decided: map[string][]string{"p1": {"c1", "c2"}, "p2": {"c2", "c3"}},
				Clusters: clusters, Existing: []MCA{{Namespace: "c2"}}},
			want: InstallPlan{Create: []string{"c1", "c3"}, NotCreated: map[string]string{}},
		},
		{
			name: "only our MCAs outside the decisions are deleted",
			in: InstallInput{Strategy: StrategyPlacements, Decided: map[string][]string{"p1": {"c1"}}, Clusters: clusters,
				Existing: []MCA{{Namespace: "c1", Ours: true}, {Namespace: "c2", Ours: true}, {Namespace: "c3", Ours: false}}},
			want: InstallPlan{Delete: []string{"c2"}, NotCreated: map[string]string{}},
		},
		{
			name: "deleting cluster: no create, every MCA of it deleted",
			in: InstallInput{Strategy: StrategyPlacements, Decided: map[string][]string{"p1": {"gone", "c1"}}, Clusters: clusters,
				Existing: []MCA{{Namespace: "gone", Ours: false}}},
			want: InstallPlan{Create: []string{"c1"}, Delete: []string{"gone"}, NotCreated: map[string]string{"gone": "ManagedCluster gone is being deleted"}},
		},
		{
			name: "decided cluster without ManagedCluster is not created",
			in:   InstallInput{Strategy: StrategyPlacements, Decided: map[string][]string{"p1": {"nope"}}, Clusters: clusters},
			want: InstallPlan{NotCreated: map[string]string{"nope": "ManagedCluster nope does not exist"}},
		},
		{
			name: "unknown placement holds deletions but not creations",
			in: InstallInput{Strategy: StrategyPlacements, Decided: map[string][]string{"p1": {"c1"}}, Unknown: map[string]string{"ns/p2": "not found"},
				Clusters: clusters, Existing: []MCA{{Namespace: "c2", Ours: true}, {Namespace: "gone", Ours: true}}},
			want: InstallPlan{Create: []string{"c1"}, Delete: []string{"gone"}, Held: []string{"c2"}, NotCreated: map[string]string{}},
		},
		{
			name: "an MCA being deleted is neither recreated nor deleted again",
			in: InstallInput{Strategy: StrategyPlacements, Decided: map[string][]string{"p1": {"c1"}}, Clusters: clusters,
				Existing: []MCA{{Namespace: "c1", Ours: true, Deleting: true}, {Namespace: "c2", Ours: true, Deleting: true}}},
			want: InstallPlan{NotCreated: map[string]string{}},
		},
		{
			name: "our MCA in a namespace whose cluster is gone is deleted",
			in: InstallInput{Strategy: StrategyPlacements, Decided: map[string][]string{}, Clusters: clusters,
				Existing: []MCA{{Namespace: "removed", Ours: true}, {Namespace: "removed-gitops"}}},
			want: InstallPlan{Delete: []string{"removed"}, NotCreated: map[string]string{}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := DecideInstall(tc.in)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Decide =\n%#v\nwant\n%#v", got, tc.want)
			}
		})
	}
}
