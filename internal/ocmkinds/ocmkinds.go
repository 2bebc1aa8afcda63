// Package ocmkinds checks that a hub serves the Open Cluster Management kinds addonops reads, in
// the versions it reads them, and says which are missing and how to install them. Without it the
// controller only repeats client-go's "Failed to watch ... could not find the requested resource"
// and `addonops status` says the add-on is not found, when what is missing is its kind.
//
// The controller (its /readyz check and its log) and the addonops command share the one check.
package ocmkinds

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// Kind is one resource addonops reads, in the version it reads it.
type Kind struct {
	Group, Version, Resource, Kind string
}

func (k Kind) GroupVersion() string {
	return schema.GroupVersion{Group: k.Group, Version: k.Version}.String()
}

// String is "ClusterManagementAddOn (addon.open-cluster-management.io/v1alpha1)".
func (k Kind) String() string { return k.Kind + " (" + k.GroupVersion() + ")" }

const (
	addonGroup   = "addon.open-cluster-management.io"
	clusterGroup = "cluster.open-cluster-management.io"
	workGroup    = "work.open-cluster-management.io"
)

// The kinds, in the versions of open-cluster-management.io/api v1.3.0 that internal/hubcache
// and the addonops command use.
var (
	ClusterManagementAddOn = Kind{addonGroup, "v1alpha1", "clustermanagementaddons", "ClusterManagementAddOn"}
	ManagedClusterAddOn    = Kind{addonGroup, "v1alpha1", "managedclusteraddons", "ManagedClusterAddOn"}
	AddOnDeploymentConfig  = Kind{addonGroup, "v1alpha1", "addondeploymentconfigs", "AddOnDeploymentConfig"}
	AddOnTemplate          = Kind{addonGroup, "v1alpha1", "addontemplates", "AddOnTemplate"}
	ManagedCluster         = Kind{clusterGroup, "v1", "managedclusters", "ManagedCluster"}
	Placement              = Kind{clusterGroup, "v1beta1", "placements", "Placement"}
	PlacementDecision      = Kind{clusterGroup, "v1beta1", "placementdecisions", "PlacementDecision"}
	ManifestWork           = Kind{workGroup, "v1", "manifestworks", "ManifestWork"}
)

// Controller returns the kinds the controller's cache watches from the start (internal/hubcache):
// add-ons, clusters, placements, decisions and works, and with --deploy-templates the templates and
// deployment configs it renders. Other config kinds are watched when a CMA names them, and an
// unserved one is reported on that add-on, so they are not required here.
func Controller(deployTemplates bool) []Kind {
	kinds := []Kind{ClusterManagementAddOn, ManagedClusterAddOn, ManagedCluster, Placement, PlacementDecision, ManifestWork}
	if deployTemplates {
		kinds = append(kinds, AddOnTemplate, AddOnDeploymentConfig)
	}
	return kinds
}

// Status are the kinds `addonops status` reads; Day2 the kind the day-2 commands write.
var (
	Status = []Kind{ClusterManagementAddOn, ManagedClusterAddOn, PlacementDecision}
	Day2   = []Kind{ClusterManagementAddOn}
)

// Gap is one required kind the hub does not serve.
type Gap struct {
	Kind Kind
	// GroupVersions are the versions of the kind's group the hub serves instead ("" none): an OCM
	// too old or too new for addonops, or an api CRD installed without the needed version.
	GroupVersions []string
}

// Missing is the decision: the required kinds that groups and resources (what discovery returned)
// do not serve, in the order of required.
func Missing(required []Kind, groups []*metav1.APIGroup, resources []*metav1.APIResourceList) []Gap {
	served := map[string]map[string]bool{} // group/version -> resource
	for _, l := range resources {
		if l == nil {
			continue
		}
		rs := map[string]bool{}
		for _, r := range l.APIResources {
			if !strings.Contains(r.Name, "/") { // not a subresource
				rs[r.Name] = true
			}
		}
		served[l.GroupVersion] = rs
	}
	versions := map[string][]string{}
	for _, g := range groups {
		if g == nil {
			continue
		}
		for _, v := range g.Versions {
			versions[g.Name] = append(versions[g.Name], v.Version)
		}
	}
	var gaps []Gap
	for _, k := range required {
		if served[k.GroupVersion()][k.Resource] {
			continue
		}
		var other []string
		for _, v := range versions[k.Group] {
			if v != k.Version && served[schema.GroupVersion{Group: k.Group, Version: v}.String()][k.Resource] {
				other = append(other, v)
			}
		}
		gaps = append(gaps, Gap{Kind: k, GroupVersions: other})
	}
	return gaps
}

// MissingError says which kinds the hub lacks and how to install them. Find it with errors.As.
type MissingError struct {
	// Host is the hub's API server.
	Host string
	Gaps []Gap
}

// Install is how to give a hub OCM's kinds; every message about missing kinds ends with it.
const Install = "install Open Cluster Management's hub (`clusteradm init`, or OCM's cluster-manager operator), " +
	"or apply the CRDs of open-cluster-management.io/api v1.3.0 (the *.crd.yaml files of its addon/v1alpha1, " +
	"cluster/v1, cluster/v1beta1 and work/v1 folders) with `kubectl apply -f`"

func (e *MissingError) Error() string {
	var missing, versions []string
	for _, g := range e.Gaps {
		if len(g.GroupVersions) == 0 {
			missing = append(missing, g.Kind.String())
			continue
		}
		versions = append(versions, fmt.Sprintf("%s (served only as %s)", g.Kind, strings.Join(g.GroupVersions, ", ")))
	}
	var b strings.Builder
	b.WriteString("the hub")
	if e.Host != "" {
		b.WriteString(" " + e.Host)
	}
	b.WriteString(" is not an Open Cluster Management hub addonops can use: ")
	if len(missing) > 0 {
		fmt.Fprintf(&b, "it does not serve %s", strings.Join(missing, ", "))
	}
	if len(versions) > 0 {
		if len(missing) > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "it serves other versions than addonops reads of %s (an unsupported OCM release)", strings.Join(versions, ", "))
	}
	b.WriteString("; " + Install)
	return b.String()
}

// Kinds lists the missing kinds' names, for logs.
func (e *MissingError) Kinds() []string {
	out := make([]string, 0, len(e.Gaps))
	for _, g := range e.Gaps {
		out = append(out, g.Kind.Kind)
	}
	return out
}

// Check asks the hub's discovery whether it serves every required kind: nil if so, a *MissingError
// if not, another error if discovery itself failed (hub unreachable, credentials refused).
// Discovery takes no context: the client's rest.Config Timeout bounds it.
func Check(disc discovery.DiscoveryInterface, host string, required []Kind) error {
	groups, resources, err := discovery.ServerGroupsAndResources(disc)
	if err != nil {
		// Groups that failed to answer (an aggregated API down) make a partial result: an error only
		// if one of ours is among them.
		var failed *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &failed) {
			return fmt.Errorf("asking the hub %s which API kinds it serves (discovery): %w", host, err)
		}
		for gv, gerr := range failed.Groups {
			if slices.ContainsFunc(required, func(k Kind) bool { return k.Group == gv.Group }) {
				return fmt.Errorf("asking the hub %s which API kinds it serves (discovery of %s): %w", host, gv, gerr)
			}
		}
	}
	if gaps := Missing(required, groups, resources); len(gaps) > 0 {
		return &MissingError{Host: host, Gaps: gaps}
	}
	return nil
}
