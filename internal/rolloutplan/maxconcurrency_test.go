package rolloutplan

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	rollout "open-cluster-management.io/sdk-go/pkg/apis/cluster/v1alpha1"
	clustersdk "open-cluster-management.io/sdk-go/pkg/apis/cluster/v1beta1"
)

// TestMaxConcurrencyIsSDKBatch: MaxConcurrency is the size of the first batch sdk-go's
// RolloutHandler picks when every cluster still has to apply, for counts, percentages, values out
// of range, unset (the placement's clustersPerDecisionGroup) and the types without a number.
func TestMaxConcurrencyIsSDKBatch(t *testing.T) {
	const total = 7
	clusters := sets.New[string]()
	for i := range total {
		clusters.Insert(fmt.Sprintf("c%d", i))
	}
	tracker := clustersdk.NewPlacementDecisionClustersTrackerWithGroups(nil, nil, clustersdk.ClusterGroupsMap{{GroupIndex: 0}: clusters})
	handler, err := rollout.NewRolloutHandler(tracker, func(c string, _ struct{}) (rollout.ClusterRolloutStatus, error) {
		return rollout.ClusterRolloutStatus{ClusterName: c, Status: rollout.ToApply}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var statuses []rollout.ClusterRolloutStatus
	for _, c := range sets.List(clusters) {
		statuses = append(statuses, rollout.ClusterRolloutStatus{ClusterName: c, Status: rollout.ToApply})
	}
	progressive := func(mc intstr.IntOrString) clusterv1alpha1.RolloutStrategy {
		return clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.Progressive, Progressive: &clusterv1alpha1.RolloutProgressive{MaxConcurrency: mc}}
	}
	perGroup := &clusterv1beta1.Placement{Spec: clusterv1beta1.PlacementSpec{DecisionStrategy: clusterv1beta1.DecisionStrategy{
		GroupStrategy: clusterv1beta1.GroupStrategy{ClustersPerDecisionGroup: intstr.FromString("30%")}}}}
	for _, tc := range []struct {
		name      string
		s         clusterv1alpha1.RolloutStrategy
		placement *clusterv1beta1.Placement
		want      int
	}{
		{"count", progressive(intstr.FromInt32(3)), nil, 3},
		{"one", progressive(intstr.FromInt32(1)), nil, 1},
		{"count above total", progressive(intstr.FromInt32(20)), nil, total},
		{"percentage rounds up", progressive(intstr.FromString("30%")), nil, 3},
		{"fractional percentage", progressive(intstr.FromString("14.3%")), nil, 2},
		{"100%", progressive(intstr.FromString("100%")), nil, total},
		{"0% means all", progressive(intstr.FromString("0%")), nil, total},
		{"unset without placement", progressive(intstr.IntOrString{}), nil, total},
		{"unset takes clustersPerDecisionGroup", progressive(intstr.IntOrString{}), perGroup, 3},
		{"All", clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All}, nil, total},
		{"type unset is All", clusterv1alpha1.RolloutStrategy{}, nil, total},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := MaxConcurrency(tc.s, tc.placement, total)
			_, res, err := handler.GetRolloutCluster(effectiveStrategy(tc.s, tc.placement), statuses)
			if err != nil {
				t.Fatal(err)
			}
			if got != len(res.ClustersToRollout) || got != tc.want {
				t.Errorf("MaxConcurrency = %d, sdk-go's first batch %d clusters, want %d", got, len(res.ClustersToRollout), tc.want)
			}
		})
	}
	if got := MaxConcurrency(progressive(intstr.FromString("many")), nil, total); got != total {
		t.Errorf("an invalid maxConcurrency (the placement waits): %d, want the total %d", got, total)
	}
	if got := MaxConcurrency(clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.ProgressivePerGroup}, nil, total); got != total {
		t.Errorf("ProgressivePerGroup: %d, want the total %d", got, total)
	}
}
