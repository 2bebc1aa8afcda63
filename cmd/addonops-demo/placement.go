package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	"github.com/addonops/addonops/internal/testing/localhub"
)

// No OCM placement controller runs in the demo (the e2e suite runs OCM's own): the demo decides
// each Placement it applies from the Placement's spec and the simulated clusters' labels, and
// writes the PlacementDecisions as OCM's controller lays them out (localhub.SetPlacementDecisions).
// It understands what the examples use and a little more: cluster sets, label-selector predicates,
// numberOfClusters and decision groups. Anything it cannot evaluate is refused with an error
// rather than decided wrongly.

// clusterInfo is what placement decisions look at: a cluster's name and labels.
type clusterInfo struct {
	Name   string
	Labels map[string]string
}

// decidePlacement returns the decision groups of Placement p over clusters. Clusters are taken in
// name order: without prioritizers every selected cluster scores the same, and OCM then breaks
// ties by name.
func decidePlacement(p *clusterv1beta1.Placement, clusters []clusterInfo) ([]localhub.DecisionGroup, error) {
	where := fmt.Sprintf("Placement %s/%s", p.Namespace, p.Name)
	preds := make([]labels.Selector, 0, len(p.Spec.Predicates))
	for i, pred := range p.Spec.Predicates {
		sel := pred.RequiredClusterSelector
		if len(sel.ClaimSelector.MatchExpressions) > 0 || len(sel.CelSelector.CelExpressions) > 0 {
			return nil, fmt.Errorf("%s: predicate %d uses a claim or CEL selector, which the demo's simulated placement "+
				"cannot evaluate (simulated clusters have labels only); use a labelSelector", where, i)
		}
		s, err := metav1.LabelSelectorAsSelector(&sel.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("%s: predicate %d: %w", where, i, err)
		}
		preds = append(preds, s)
	}

	var selected []clusterInfo
	for _, c := range clusters {
		if len(p.Spec.ClusterSets) > 0 && !slices.Contains(p.Spec.ClusterSets, c.Labels[clusterv1beta2.ClusterSetLabel]) {
			continue
		}
		if len(preds) > 0 && !slices.ContainsFunc(preds, func(s labels.Selector) bool { return s.Matches(labels.Set(c.Labels)) }) {
			continue
		}
		selected = append(selected, c)
	}
	slices.SortFunc(selected, func(a, b clusterInfo) int { return strings.Compare(a.Name, b.Name) })
	if n := p.Spec.NumberOfClusters; n != nil && int(*n) < len(selected) {
		selected = selected[:max(*n, 0)]
	}

	gs := p.Spec.DecisionStrategy.GroupStrategy
	per := len(selected)
	if gs.ClustersPerDecisionGroup != (intstr.IntOrString{}) { // unset: one group of everything
		v, err := intstr.GetScaledValueFromIntOrPercent(&gs.ClustersPerDecisionGroup, len(selected), true)
		if err != nil {
			return nil, fmt.Errorf("%s: decisionStrategy.groupStrategy.clustersPerDecisionGroup: %w", where, err)
		}
		per = v
	}
	per = max(per, 1)

	var groups []localhub.DecisionGroup
	add := func(name string, members []string) {
		for len(members) > per {
			groups = append(groups, localhub.DecisionGroup{Name: name, Clusters: members[:per]})
			members = members[per:]
		}
		if len(members) > 0 {
			groups = append(groups, localhub.DecisionGroup{Name: name, Clusters: members})
		}
	}
	taken := map[string]bool{}
	for i, g := range gs.DecisionGroups {
		if len(g.ClusterSelector.ClaimSelector.MatchExpressions) > 0 {
			return nil, fmt.Errorf("%s: decision group %d (%q) uses a claim selector, which the demo's simulated placement cannot evaluate", where, i, g.GroupName)
		}
		s, err := metav1.LabelSelectorAsSelector(&g.ClusterSelector.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("%s: decision group %d (%q): %w", where, i, g.GroupName, err)
		}
		var members []string
		for _, c := range selected {
			if !taken[c.Name] && s.Matches(labels.Set(c.Labels)) {
				taken[c.Name] = true
				members = append(members, c.Name)
			}
		}
		add(g.GroupName, members)
	}
	var rest []string
	for _, c := range selected {
		if !taken[c.Name] {
			rest = append(rest, c.Name)
		}
	}
	add("", rest)
	return groups, nil
}

// schedulePlacement reads Placement namespace/name back from the hub (with the server's defaults),
// decides it over clusters and writes its PlacementDecisions and status. It returns how many
// clusters it decided and the generation of the Placement it decided.
func schedulePlacement(ctx context.Context, c *localhub.Clients, namespace, name string, clusters []clusterInfo) (int, int64, error) {
	p, err := c.Cluster.ClusterV1beta1().Placements(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return 0, 0, fmt.Errorf("reading Placement %s/%s to decide it: %w", namespace, name, err)
	}
	groups, err := decidePlacement(p, clusters)
	if err != nil {
		return 0, p.Generation, err
	}
	if err := localhub.SetPlacementDecisions(ctx, c, namespace, name, groups); err != nil {
		return 0, p.Generation, err
	}
	n := 0
	for _, g := range groups {
		n += len(g.Clusters)
	}
	return n, p.Generation, nil
}
