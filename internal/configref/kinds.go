package configref

import (
	"fmt"
	"sort"
	"strings"
)

// OCM API group and the group/resources of the configs OCM itself defines.
const AddonGroup = "addon.open-cluster-management.io"

var (
	AddOnDeploymentConfigs = GroupResource{Group: AddonGroup, Resource: "addondeploymentconfigs"}
	AddOnTemplates         = GroupResource{Group: AddonGroup, Resource: "addontemplates"}
)

// Kind describes a config kind: its group and kind, the plural resource references use, and
// whether objects of the kind live in a namespace (a namespaced config is only matched by a
// reference that names its namespace).
type Kind struct {
	Group      string
	Kind       string
	Resource   string
	Namespaced bool
}

func (k Kind) GroupResource() GroupResource {
	return GroupResource{Group: k.Group, Resource: k.Resource}
}

// builtinKinds are kinds whose plural and scope are fixed by their API: OCM's configs and the
// core kinds that OCM accepts as configs.
var builtinKinds = []Kind{
	{Group: AddonGroup, Kind: "AddOnDeploymentConfig", Resource: "addondeploymentconfigs", Namespaced: true},
	{Group: AddonGroup, Kind: "AddOnTemplate", Resource: "addontemplates", Namespaced: false},
	{Group: AddonGroup, Kind: "ClusterManagementAddOn", Resource: "clustermanagementaddons", Namespaced: false},
	{Group: AddonGroup, Kind: "ManagedClusterAddOn", Resource: "managedclusteraddons", Namespaced: true},
	{Group: "", Kind: "ConfigMap", Resource: "configmaps", Namespaced: true},
	{Group: "", Kind: "Secret", Resource: "secrets", Namespaced: true},
	{Group: "cluster.open-cluster-management.io", Kind: "Placement", Resource: "placements", Namespaced: true},
	{Group: "cluster.open-cluster-management.io", Kind: "ManagedCluster", Resource: "managedclusters", Namespaced: false},
	{Group: "work.open-cluster-management.io", Kind: "ManifestWork", Resource: "manifestworks", Namespaced: true},
}

// Kinds maps group/kind to Kind. It starts from the built-in table and learns kinds from
// CustomResourceDefinitions and from explicit mappings; conflicting definitions are errors, never
// silently resolved, because a wrong plural would make a reference point at nothing.
type Kinds struct {
	byGroupKind map[string]Kind
	source      map[string]string
}

// NewKinds returns a table holding the built-in kinds.
func NewKinds() *Kinds {
	ks := &Kinds{byGroupKind: map[string]Kind{}, source: map[string]string{}}
	for _, k := range builtinKinds {
		ks.byGroupKind[groupKindKey(k.Group, k.Kind)] = k
		ks.source[groupKindKey(k.Group, k.Kind)] = "built-in table"
	}
	return ks
}

func groupKindKey(group, kind string) string { return kind + "." + group }

// Add registers k, learnt from source (named in conflict errors). Registering the same definition
// twice is fine; a different plural or scope for a known group/kind is an error.
func (ks *Kinds) Add(k Kind, source string) error {
	if k.Kind == "" || k.Resource == "" {
		return fmt.Errorf("%s: kind mapping needs both kind and resource (got kind %q, resource %q)", source, k.Kind, k.Resource)
	}
	if strings.ToLower(k.Resource) != k.Resource {
		return fmt.Errorf("%s: resource %q for kind %s must be the lowercase plural", source, k.Resource, k.Kind)
	}
	key := groupKindKey(k.Group, k.Kind)
	if old, ok := ks.byGroupKind[key]; ok {
		if old != k {
			return fmt.Errorf("%s: kind %s maps to resource %q (namespaced=%t), but %s says %q (namespaced=%t)",
				source, key, k.Resource, k.Namespaced, ks.source[key], old.Resource, old.Namespaced)
		}
		return nil
	}
	ks.byGroupKind[key] = k
	ks.source[key] = source
	return nil
}

// AddCRD learns the kind of a CustomResourceDefinition given in its unstructured form.
func (ks *Kinds) AddCRD(crd map[string]any) error {
	name, _ := nested(crd, "metadata", "name").(string)
	source := "CustomResourceDefinition " + name
	spec, _ := crd["spec"].(map[string]any)
	names, _ := nested(crd, "spec", "names").(map[string]any)
	group, _ := spec["group"].(string)
	kind, _ := names["kind"].(string)
	plural, _ := names["plural"].(string)
	scope, _ := spec["scope"].(string)
	if group == "" || kind == "" || plural == "" {
		return fmt.Errorf("%s: spec.group, spec.names.kind and spec.names.plural are required to learn its resource name", source)
	}
	if scope != "Namespaced" && scope != "Cluster" {
		return fmt.Errorf("%s: spec.scope must be Namespaced or Cluster, got %q", source, scope)
	}
	return ks.Add(Kind{Group: group, Kind: kind, Resource: plural, Namespaced: scope == "Namespaced"}, source)
}

// Lookup returns the Kind registered for group and kind.
func (ks *Kinds) Lookup(group, kind string) (Kind, bool) {
	k, ok := ks.byGroupKind[groupKindKey(group, kind)]
	return k, ok
}

// ByResource returns the Kind registered for a group/resource.
func (ks *Kinds) ByResource(gr GroupResource) (Kind, bool) {
	keys := make([]string, 0, len(ks.byGroupKind))
	for key := range ks.byGroupKind {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		if k := ks.byGroupKind[key]; k.GroupResource() == gr {
			return k, true
		}
	}
	return Kind{}, false
}

// GroupOf splits an apiVersion into its group ("" for the core group).
func GroupOf(apiVersion string) string {
	if i := strings.LastIndex(apiVersion, "/"); i >= 0 {
		return apiVersion[:i]
	}
	return ""
}

func nested(obj map[string]any, fields ...string) any {
	var cur any = obj
	for _, f := range fields {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[f]
	}
	return cur
}

// Annotations that identify a config version. config-hash stamps them on every config it renames;
// the controller, the status command and the demo read them to link the versions of one config.
const (
	// HashSuffixAnnotation opts an object in ("true") or out ("false") of content-hash naming.
	HashSuffixAnnotation = "addonops.io/hash-suffix"
	// BaseNameAnnotation holds the name before the content-hash suffix.
	BaseNameAnnotation = "addonops.io/base-name"
	// ContentHashAnnotation holds the full content hash (internal/spechash) the suffix came from.
	ContentHashAnnotation = "addonops.io/content-hash"
)
