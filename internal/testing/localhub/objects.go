package localhub

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
)

// The helpers below put the hub in the state OCM's registration and placement controllers would:
// clusters that joined, cluster sets, placements and their decisions. Each is idempotent: calling it
// again with the same input changes nothing, with a different input moves the objects to it.

// EnsureNamespace creates the namespace if it does not exist.
func EnsureNamespace(ctx context.Context, kube kubernetes.Interface, name string) error {
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

// EnsureManagedCluster makes a ManagedCluster that the hub accepted, that joined and is available
// (the conditions OCM's registration controller and agent set), plus its cluster namespace. labels
// are added to the cluster's labels; labels it already has are kept. To put the cluster in a
// ManagedClusterSet, pass clusterv1beta2.ClusterSetLabel: "<set>".
func EnsureManagedCluster(ctx context.Context, c *Clients, name string, labels map[string]string) (*clusterv1.ManagedCluster, error) {
	if err := EnsureNamespace(ctx, c.Kube, name); err != nil {
		return nil, fmt.Errorf("cluster namespace of ManagedCluster %s: %w", name, err)
	}
	clusters := c.Cluster.ClusterV1().ManagedClusters()
	var mc *clusterv1.ManagedCluster
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		existing, err := clusters.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			mc, err = clusters.Create(ctx, &clusterv1.ManagedCluster{
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: maps.Clone(labels)},
				Spec:       clusterv1.ManagedClusterSpec{HubAcceptsClient: true},
			}, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(clusterv1.Resource("managedclusters"), name, err)
			}
			return err
		}
		if err != nil {
			return err
		}
		mc = existing
		if hasLabels(existing.Labels, labels) && existing.Spec.HubAcceptsClient {
			return nil
		}
		updated := existing.DeepCopy()
		if updated.Labels == nil {
			updated.Labels = map[string]string{}
		}
		maps.Copy(updated.Labels, labels)
		updated.Spec.HubAcceptsClient = true
		mc, err = clusters.Update(ctx, updated, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("ensuring ManagedCluster %s: %w", name, err)
	}

	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		updated := mc.DeepCopy()
		changed := false
		for _, cond := range []metav1.Condition{
			{Type: clusterv1.ManagedClusterConditionHubAccepted, Status: metav1.ConditionTrue, Reason: "HubClusterAdminAccepted", Message: "Accepted by localhub"},
			{Type: clusterv1.ManagedClusterConditionJoined, Status: metav1.ConditionTrue, Reason: "ManagedClusterJoined", Message: "Joined (simulated by localhub)"},
			{Type: clusterv1.ManagedClusterConditionAvailable, Status: metav1.ConditionTrue, Reason: "ManagedClusterAvailable", Message: "Available (simulated by localhub)"},
		} {
			changed = meta.SetStatusCondition(&updated.Status.Conditions, cond) || changed
		}
		if !changed {
			return nil
		}
		var err error
		mc, err = clusters.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			if fresh, getErr := clusters.Get(ctx, name, metav1.GetOptions{}); getErr == nil {
				mc = fresh
			}
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("setting the status of ManagedCluster %s: %w", name, err)
	}
	return mc, nil
}

// EnsureClusterSet makes a ManagedClusterSet (members: clusters labelled
// cluster.open-cluster-management.io/clusterset=<set>) and binds it to each namespace, which OCM's
// placement controller requires before a Placement there selects any of its clusters.
func EnsureClusterSet(ctx context.Context, c *Clients, set string, namespaces ...string) error {
	_, err := c.Cluster.ClusterV1beta2().ManagedClusterSets().Create(ctx, &clusterv1beta2.ManagedClusterSet{
		ObjectMeta: metav1.ObjectMeta{Name: set},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ManagedClusterSet %s: %w", set, err)
	}
	for _, ns := range namespaces {
		if err := EnsureNamespace(ctx, c.Kube, ns); err != nil {
			return err
		}
		_, err := c.Cluster.ClusterV1beta2().ManagedClusterSetBindings(ns).Create(ctx, &clusterv1beta2.ManagedClusterSetBinding{
			ObjectMeta: metav1.ObjectMeta{Name: set, Namespace: ns},
			Spec:       clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: set},
		}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("binding ManagedClusterSet %s to namespace %s: %w", set, ns, err)
		}
	}
	return nil
}

// EnsurePlacement creates the Placement (and its namespace) or, when it exists, sets its spec to
// p.Spec and adds p's labels and annotations.
func EnsurePlacement(ctx context.Context, c *Clients, p *clusterv1beta1.Placement) (*clusterv1beta1.Placement, error) {
	if p.Namespace == "" || p.Name == "" {
		return nil, fmt.Errorf("ensuring Placement: namespace and name are required, got %q/%q", p.Namespace, p.Name)
	}
	if err := EnsureNamespace(ctx, c.Kube, p.Namespace); err != nil {
		return nil, err
	}
	placements := c.Cluster.ClusterV1beta1().Placements(p.Namespace)
	var out *clusterv1beta1.Placement
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		existing, err := placements.Get(ctx, p.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			fresh := p.DeepCopy()
			fresh.ResourceVersion = ""
			out, err = placements.Create(ctx, fresh, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(clusterv1beta1.Resource("placements"), p.Name, err)
			}
			return err
		}
		if err != nil {
			return err
		}
		// The server defaults parts of the spec (decision strategy, prioritizer mode), so a spec that
		// differs only there is rewritten; the server then sees no change and keeps the object as is.
		if equality.Semantic.DeepEqual(existing.Spec, p.Spec) &&
			hasLabels(existing.Labels, p.Labels) && hasLabels(existing.Annotations, p.Annotations) {
			out = existing
			return nil
		}
		updated := existing.DeepCopy()
		updated.Spec = p.Spec
		updated.Labels = mergeMaps(updated.Labels, p.Labels)
		updated.Annotations = mergeMaps(updated.Annotations, p.Annotations)
		out, err = placements.Update(ctx, updated, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("ensuring Placement %s/%s: %w", p.Namespace, p.Name, err)
	}
	return out, nil
}

// DecisionGroup is one decision group of a placement: its index is its position in the list given
// to SetPlacementDecisions, Name may be empty (OCM's groups made by clustersPerDecisionGroup alone).
type DecisionGroup struct {
	Name     string
	Clusters []string
}

// maxDecisionsPerObject is OCM's limit of cluster decisions in one PlacementDecision.
const maxDecisionsPerObject = 100

// SetPlacementDecisions makes the placement's PlacementDecisions say exactly groups, laid out as
// OCM's placement controller writes them: per group, clusters sorted by name in objects of at most
// 100 decisions named <placement>-decision-<n> (n from 1 across groups), labelled with the
// placement and the group's index and name, owned by the Placement; an empty group (or no group at
// all) still gets one empty PlacementDecision. Decisions of the placement that are no longer needed
// are deleted, and the Placement's status (selected clusters, decision groups, PlacementSatisfied)
// is set to match. The Placement must exist.
func SetPlacementDecisions(ctx context.Context, c *Clients, namespace, placement string, groups []DecisionGroup) error {
	p, err := c.Cluster.ClusterV1beta1().Placements(namespace).Get(ctx, placement, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("setting decisions of Placement %s/%s: %w (create it first, e.g. with EnsurePlacement)",
			namespace, placement, err)
	}
	desired, groupStatus, err := placementDecisions(p, groups)
	if err != nil {
		return fmt.Errorf("setting decisions of Placement %s/%s: %w", namespace, placement, err)
	}

	api := c.Cluster.ClusterV1beta1().PlacementDecisions(namespace)
	keep := map[string]bool{}
	for _, want := range desired {
		keep[want.Name] = true
		if err := ensureDecision(ctx, c, want); err != nil {
			return fmt.Errorf("setting decisions of Placement %s/%s: %w", namespace, placement, err)
		}
	}
	existing, err := api.List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{clusterv1beta1.PlacementLabel: placement}).String(),
	})
	if err != nil {
		return fmt.Errorf("listing PlacementDecisions of %s/%s: %w", namespace, placement, err)
	}
	for _, d := range existing.Items {
		if keep[d.Name] {
			continue
		}
		if err := api.Delete(ctx, d.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting PlacementDecision %s/%s no longer needed: %w", namespace, d.Name, err)
		}
	}
	return setPlacementStatus(ctx, c, p, groupStatus)
}

// placementDecisions computes the PlacementDecisions and the Placement's decision group status for
// groups, without touching the API server.
func placementDecisions(p *clusterv1beta1.Placement, groups []DecisionGroup) ([]*clusterv1beta1.PlacementDecision, []clusterv1beta1.DecisionGroupStatus, error) {
	if len(groups) == 0 {
		groups = []DecisionGroup{{}}
	}
	seen := map[string]int{}
	for i, g := range groups {
		for _, name := range g.Clusters {
			if name == "" {
				return nil, nil, fmt.Errorf("decision group %d (%q) has an empty cluster name", i, g.Name)
			}
			if j, dup := seen[name]; dup {
				return nil, nil, fmt.Errorf("cluster %s is in decision groups %d and %d: a cluster belongs to one group only", name, j, i)
			}
			seen[name] = i
		}
	}

	owner := metav1.NewControllerRef(p, clusterv1beta1.SchemeGroupVersion.WithKind("Placement"))
	var decisions []*clusterv1beta1.PlacementDecision
	statuses := []clusterv1beta1.DecisionGroupStatus{}
	next := 1
	for i, g := range groups {
		clusters := slices.Sorted(slices.Values(g.Clusters))
		var chunks [][]string
		for len(clusters) > maxDecisionsPerObject {
			chunks = append(chunks, clusters[:maxDecisionsPerObject])
			clusters = clusters[maxDecisionsPerObject:]
		}
		chunks = append(chunks, clusters) // the last chunk, or the one empty chunk of an empty group
		status := clusterv1beta1.DecisionGroupStatus{
			DecisionGroupIndex: int32(i),
			DecisionGroupName:  g.Name,
			Decisions:          []string{},
			ClustersCount:      int32(len(g.Clusters)),
		}
		for _, chunk := range chunks {
			d := &clusterv1beta1.PlacementDecision{
				ObjectMeta: metav1.ObjectMeta{
					Name:      fmt.Sprintf("%s-decision-%d", p.Name, next),
					Namespace: p.Namespace,
					Labels: map[string]string{
						clusterv1beta1.PlacementLabel:          p.Name,
						clusterv1beta1.DecisionGroupIndexLabel: strconv.Itoa(i),
						clusterv1beta1.DecisionGroupNameLabel:  g.Name,
					},
					OwnerReferences: []metav1.OwnerReference{*owner},
				},
				Status: clusterv1beta1.PlacementDecisionStatus{Decisions: []clusterv1beta1.ClusterDecision{}},
			}
			for _, name := range chunk {
				d.Status.Decisions = append(d.Status.Decisions, clusterv1beta1.ClusterDecision{ClusterName: name})
			}
			decisions = append(decisions, d)
			status.Decisions = append(status.Decisions, d.Name)
			next++
		}
		statuses = append(statuses, status)
	}
	return decisions, statuses, nil
}

// ensureDecision creates or updates one PlacementDecision: labels and owner through the object,
// decisions through the status subresource.
func ensureDecision(ctx context.Context, c *Clients, want *clusterv1beta1.PlacementDecision) error {
	api := c.Cluster.ClusterV1beta1().PlacementDecisions(want.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got, err := api.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			got, err = api.Create(ctx, want.DeepCopy(), metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(clusterv1beta1.Resource("placementdecisions"), want.Name, err)
			}
		}
		if err != nil {
			return fmt.Errorf("PlacementDecision %s: %w", want.Name, err)
		}
		if !hasLabels(got.Labels, want.Labels) || len(got.OwnerReferences) == 0 {
			updated := got.DeepCopy()
			updated.Labels = mergeMaps(updated.Labels, want.Labels)
			if len(updated.OwnerReferences) == 0 {
				updated.OwnerReferences = want.OwnerReferences
			}
			if got, err = api.Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
				return err
			}
		}
		if equality.Semantic.DeepEqual(got.Status.Decisions, want.Status.Decisions) ||
			(len(got.Status.Decisions) == 0 && len(want.Status.Decisions) == 0) {
			return nil
		}
		updated := got.DeepCopy()
		updated.Status.Decisions = want.Status.Decisions
		_, err = api.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		return err
	})
}

func setPlacementStatus(ctx context.Context, c *Clients, p *clusterv1beta1.Placement, groups []clusterv1beta1.DecisionGroupStatus) error {
	var selected int32
	for _, g := range groups {
		selected += g.ClustersCount
	}
	cond := metav1.Condition{
		Type: clusterv1beta1.PlacementConditionSatisfied, Status: metav1.ConditionTrue,
		Reason: "AllDecisionsScheduled", Message: "All cluster decisions scheduled (by localhub)",
	}
	if selected == 0 {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "NoManagedClusterMatched", "No cluster decided (by localhub)"
	}
	api := c.Cluster.ClusterV1beta1().Placements(p.Namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		updated := p.DeepCopy()
		if updated.Status.Conditions == nil {
			updated.Status.Conditions = []metav1.Condition{}
		}
		changed := meta.SetStatusCondition(&updated.Status.Conditions, cond)
		changed = changed || updated.Status.NumberOfSelectedClusters != selected ||
			!equality.Semantic.DeepEqual(updated.Status.DecisionGroups, groups)
		if !changed {
			return nil
		}
		updated.Status.NumberOfSelectedClusters = selected
		updated.Status.DecisionGroups = groups
		_, err := api.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			if fresh, getErr := api.Get(ctx, p.Name, metav1.GetOptions{}); getErr == nil {
				p = fresh
			}
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("setting the status of Placement %s/%s: %w", p.Namespace, p.Name, err)
	}
	return nil
}

// hasLabels reports whether have contains every key of want with the same value.
func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func mergeMaps(dst, src map[string]string) map[string]string {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		dst = map[string]string{}
	}
	maps.Copy(dst, src)
	return dst
}
