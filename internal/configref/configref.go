// Package configref is addonops' one model of add-on config references: the group/resource/
// namespace/name coordinates OCM uses, the table that maps config kinds to their plural resource
// names, where references live inside ClusterManagementAddOn and ManagedClusterAddOn objects (both
// API versions), and OCM's precedence rules for merging reference lists. The build-time config-hash
// function rewrites references with it and the run-time controller resolves them with it, so both
// halves agree on what a reference points at.
package configref

import (
	"cmp"
	"fmt"
	"slices"
)

// GroupResource identifies a kind of config the way OCM references it: API group and plural
// resource, never the version.
type GroupResource struct {
	Group    string `json:"group"`
	Resource string `json:"resource"`
}

func (gr GroupResource) String() string {
	if gr.Group == "" {
		return gr.Resource
	}
	return gr.Resource + "." + gr.Group
}

// Ref is a reference to one config object. Namespace is empty for cluster-scoped configs.
type Ref struct {
	GroupResource
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// String renders a reference the way error messages and status messages show it,
// e.g. "addondeploymentconfigs.addon.open-cluster-management.io default/hello-config".
func (r Ref) String() string {
	if r.Namespace == "" {
		return r.GroupResource.String() + " " + r.Name
	}
	return r.GroupResource.String() + " " + r.Namespace + "/" + r.Name
}

// ReservedNoDefault is the name OCM's v1alpha1→v1beta1 conversion gives a supportedConfig that has
// no defaultConfig (open-cluster-management.io/api addon/v1beta1 ReservedNoDefaultConfigName).
// Every OCM controller skips it, and so do we.
const ReservedNoDefault = "__reserved_no_default__"

// Merge applies OCM's configuration precedence: each later layer overrides the earlier ones per
// group/resource. The first time a higher layer mentions a group/resource, everything lower layers
// said about it is dropped (whole-list replacement); within a layer duplicates are dropped and order
// is kept. The result is sorted by group, then resource, keeping input order within a group/resource
// (docs/design/configuration.md#resolution-order; OCM addonconfiguration/graph.go and
// cmainstallprogression). Refs with an empty
// or reserved name are ignored, as OCM ignores them.
func Merge(layers ...[]Ref) []Ref {
	byGR := map[GroupResource][]Ref{}
	for _, layer := range layers {
		seen := map[GroupResource]bool{}
		for _, r := range layer {
			if r.Name == "" || r.Name == ReservedNoDefault {
				continue
			}
			if !seen[r.GroupResource] {
				seen[r.GroupResource] = true
				byGR[r.GroupResource] = nil
			}
			if !slices.Contains(byGR[r.GroupResource], r) {
				byGR[r.GroupResource] = append(byGR[r.GroupResource], r)
			}
		}
	}
	grs := make([]GroupResource, 0, len(byGR))
	for gr := range byGR {
		grs = append(grs, gr)
	}
	slices.SortFunc(grs, func(a, b GroupResource) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Resource, b.Resource))
	})
	var out []Ref
	for _, gr := range grs {
		out = append(out, byGR[gr]...)
	}
	return out
}

// First returns the first reference of the given group/resource in a merged list: the config OCM's
// add-on framework uses when a kind may have only one effective config (AddOnTemplate, and the
// AddOnDeploymentConfig a template add-on renders with).
func First(refs []Ref, gr GroupResource) (Ref, bool) {
	for _, r := range refs {
		if r.GroupResource == gr {
			return r, true
		}
	}
	return Ref{}, false
}

// Validate reports what is wrong with a reference found at path, or nil.
func (r Ref) Validate(path string) error {
	switch {
	case r.Resource == "":
		return fmt.Errorf("%s: config reference has no resource: set the plural resource name, e.g. resource: addondeploymentconfigs", path)
	case r.Name == "":
		return fmt.Errorf("%s: config reference %s has no name", path, r.GroupResource)
	}
	return nil
}
