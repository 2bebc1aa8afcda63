// DecideInstall decides which ManagedClusterAddOns the install controller creates and deletes for
// one ClusterManagementAddOn (docs/design/install-strategy.md; OCM's counterpart is the
// addon-manager's addon_install_reconciler.go), as a pure function of what the hub holds.
//
// It differs from OCM's install controller on purpose:
//   - only MCAs this controller created (labelled CreatedByLabel) are ever deleted for leaving the
//     placements; an MCA created by a user or by GitOps is left alone (OCM deletes it and then
//     fights Argo CD's self-heal);
//   - a placement that does not exist, or whose decisions cannot be read, holds back every deletion
//     (its clusters are unknown, so any MCA might still be wanted) but not the creations for the
//     other placements (OCM treats a missing placement as "selects nothing" and deletes its MCAs).

package rolloutplan

import (
	"fmt"
	"slices"
)

// CreatedByLabel marks the MCAs this controller created, the only ones it deletes when their
// cluster leaves the placements.
const (
	CreatedByLabel = "addonops.io/created-by"
	CreatedByValue = "addonops-controller"
)

// Strategy types of spec.installStrategy (addon v1alpha1 AddonInstallStrategyManual/Placements).
const (
	StrategyManual     = "Manual"
	StrategyPlacements = "Placements"
)

// Cluster is what the install decision needs to know of a ManagedCluster.
type Cluster struct {
	// Deleting is set when the ManagedCluster has a deletionTimestamp.
	Deleting bool
}

// MCA is what the install decision needs to know of an existing ManagedClusterAddOn of the add-on.
type MCA struct {
	// Namespace is the cluster namespace the MCA lives in.
	Namespace string
	// Ours is set when this controller created it (CreatedByLabel).
	Ours bool
	// Deleting is set when the MCA has a deletionTimestamp.
	Deleting bool
}

// InstallInput is the hub state the decision is taken on.
type InstallInput struct {
	// Strategy is spec.installStrategy.type; "" means Manual, as the API defaults it.
	Strategy string
	// Decided lists, per placement that could be read, the clusters its PlacementDecisions select.
	Decided map[string][]string
	// Unknown names the placements whose clusters are unknown (missing, unreadable decisions),
	// with the reason.
	Unknown map[string]string
	// Clusters holds every ManagedCluster by name; a name missing here has no ManagedCluster.
	Clusters map[string]Cluster
	// Existing are the MCAs of the add-on, in any namespace.
	Existing []MCA
}

// InstallPlan is the decision. Every list is sorted.
type InstallPlan struct {
	// Create names the cluster namespaces that get a new MCA.
	Create []string
	// Delete names the namespaces whose MCA is deleted.
	Delete []string
	// Held names the namespaces of MCAs this controller created that no placement selects any
	// more but that are kept because a placement's clusters are unknown (see Input.Unknown).
	Held []string
	// NotCreated explains, per selected cluster that gets no MCA, why.
	NotCreated map[string]string
}

// DecideInstall computes the plan. Manual (or no) strategy never creates or deletes anything: the
// user or GitOps owns the MCAs.
func DecideInstall(in InstallInput) InstallPlan {
	plan := InstallPlan{NotCreated: map[string]string{}}
	if in.Strategy != StrategyPlacements {
		return plan
	}
	required := map[string]bool{}
	for _, clusters := range in.Decided {
		for _, c := range clusters {
			required[c] = true
		}
	}
	existing := map[string]MCA{}
	for _, m := range in.Existing {
		existing[m.Namespace] = m
	}

	for c := range required {
		cluster, ok := in.Clusters[c]
		switch {
		case !ok:
			plan.NotCreated[c] = fmt.Sprintf("ManagedCluster %s does not exist", c)
		case cluster.Deleting:
			plan.NotCreated[c] = fmt.Sprintf("ManagedCluster %s is being deleted", c)
		default:
			if _, has := existing[c]; !has {
				plan.Create = append(plan.Create, c)
			}
		}
	}

	for _, m := range in.Existing {
		if m.Deleting {
			continue
		}
		// A cluster that is going away takes every MCA of the add-on with it, whoever created it,
		// as OCM's registration garbage collector does.
		if cl, ok := in.Clusters[m.Namespace]; ok && cl.Deleting {
			plan.Delete = append(plan.Delete, m.Namespace)
			continue
		}
		if !m.Ours || required[m.Namespace] {
			continue
		}
		if len(in.Unknown) > 0 {
			plan.Held = append(plan.Held, m.Namespace)
			continue
		}
		plan.Delete = append(plan.Delete, m.Namespace)
	}
	slices.Sort(plan.Create)
	slices.Sort(plan.Delete)
	slices.Sort(plan.Held)
	return plan
}
