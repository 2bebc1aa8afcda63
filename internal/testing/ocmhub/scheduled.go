package ocmhub

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/addonops/addonops/internal/testing/localhub"
)

// Scheduled reports whether OCM's placement controller has scheduled Placement namespace/name:
// its PlacementSatisfied condition is True and its PlacementDecisions hold the
// status.numberOfSelectedClusters it reports. It returns the number of clusters decided, or
// pending saying what is missing (for a poll: harness.Until), or an error when the hub cannot be
// read.
//
// OCM writes no observedGeneration on a Placement: a caller that changes the spec of a Placement
// OCM already scheduled cannot tell the new decisions from the old ones here. Callers wait on new
// Placements (a step that adds one); a changed Placement's decisions follow within about a second,
// and the addonops controller follows decisions as they change.
func Scheduled(ctx context.Context, c *localhub.Clients, namespace, name string) (clusters int, pending string, err error) {
	what := fmt.Sprintf("Placement %s/%s", namespace, name)
	p, err := c.Cluster.ClusterV1beta1().Placements(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return 0, what + " (not on the hub)", nil
	}
	if err != nil {
		return 0, "", fmt.Errorf("reading %s: %w", what, err)
	}
	cond := meta.FindStatusCondition(p.Status.Conditions, clusterv1beta1.PlacementConditionSatisfied)
	switch {
	case cond == nil:
		return 0, what + " scheduled by OCM's placement controller (no PlacementSatisfied condition yet)", nil
	case cond.Status != metav1.ConditionTrue:
		return 0, fmt.Sprintf("%s satisfied (PlacementSatisfied=%s %s: %s)", what, cond.Status, cond.Reason, cond.Message), nil
	}
	sel := labels.SelectorFromSet(labels.Set{clusterv1beta1.PlacementLabel: name}).String()
	list, err := c.Cluster.ClusterV1beta1().PlacementDecisions(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return 0, "", fmt.Errorf("listing the PlacementDecisions of %s: %w", what, err)
	}
	for _, d := range list.Items {
		clusters += len(d.Status.Decisions)
	}
	if want := int(p.Status.NumberOfSelectedClusters); clusters != want {
		return 0, fmt.Sprintf("%s's PlacementDecisions to hold its %d selected clusters (they hold %d)", what, want, clusters), nil
	}
	return clusters, "", nil
}
