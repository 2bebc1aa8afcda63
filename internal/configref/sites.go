package configref

import (
	"fmt"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Site is one config reference found inside a ClusterManagementAddOn or ManagedClusterAddOn,
// in its YAML form so that rewriting it keeps comments and formatting.
type Site struct {
	// Path is the field path of the reference, e.g. spec.installStrategy.placements[0].configs[1].
	Path string
	Ref  Ref
	// holder is the mapping that holds the reference's name field.
	holder *yaml.RNode
}

// SetName points the reference at another object of the same group/resource and namespace.
func (s Site) SetName(name string) error {
	if f := s.holder.Field("name"); f != nil && f.Value.YNode().Kind == yaml.ScalarNode {
		// Change the scalar in place so its comments and quoting stay as the author wrote them.
		f.Value.YNode().Value = name
		f.Value.YNode().Tag = yaml.NodeTagString
		return nil
	}
	if err := s.holder.PipeE(yaml.SetField("name", yaml.NewStringRNode(name))); err != nil {
		return fmt.Errorf("%s: setting name: %w", s.Path, err)
	}
	return nil
}

// HoldsReferences tells whether objects of this apiVersion/kind carry config references.
func HoldsReferences(apiVersion, kind string) bool {
	return GroupOf(apiVersion) == AddonGroup && (kind == "ClusterManagementAddOn" || kind == "ManagedClusterAddOn")
}

// Sites returns every config reference in obj, in document order: CMA v1alpha1
// spec.supportedConfigs[].defaultConfig, CMA v1beta1 spec.defaultConfigs[], CMA
// spec.installStrategy.placements[].configs[] and MCA spec.configs[]. Objects of other kinds have
// none. A reference without a group field is in the core API group, as OCM's API defaults it
// (group: ""). A reference without a resource or without a name is an error naming the field,
// because a guess would silently point it at the wrong config. So is a field of the other API
// version (VersionProblems, a *VersionError): the hub would drop the references it holds.
func Sites(obj *yaml.RNode) ([]Site, error) {
	if !HoldsReferences(obj.GetApiVersion(), obj.GetKind()) {
		return nil, nil
	}
	if probs := VersionProblems(obj); len(probs) > 0 {
		return nil, &VersionError{Problems: probs}
	}
	var sites []Site
	collect := func(path string, list *yaml.RNode, defaultConfig bool) error {
		if list == nil {
			return nil
		}
		if list.YNode().Kind != yaml.SequenceNode {
			return fmt.Errorf("%s must be a list", path)
		}
		for i, entry := range list.Content() {
			entryPath := fmt.Sprintf("%s[%d]", path, i)
			item := yaml.NewRNode(entry)
			if entry.Kind != yaml.MappingNode {
				return fmt.Errorf("%s must be a mapping with group, resource and name", entryPath)
			}
			gr, err := groupResource(item, entryPath)
			if err != nil {
				return err
			}
			holder, holderPath := item, entryPath
			if defaultConfig {
				// v1alpha1 supportedConfigs declare a supported kind; only defaultConfig refers to an object.
				dc := item.Field("defaultConfig")
				if dc == nil || dc.Value.IsNilOrEmpty() {
					continue
				}
				holder, holderPath = dc.Value, entryPath+".defaultConfig"
			}
			ref := Ref{GroupResource: gr, Namespace: stringField(holder, "namespace"), Name: stringField(holder, "name")}
			if ref.Name == ReservedNoDefault {
				continue
			}
			if err := ref.Validate(holderPath); err != nil {
				return err
			}
			sites = append(sites, Site{Path: holderPath, Ref: ref, holder: holder})
		}
		return nil
	}
	spec := obj.Field("spec")
	if spec == nil {
		return nil, nil
	}
	lookup := func(fields ...string) *yaml.RNode {
		n, err := spec.Value.Pipe(yaml.Lookup(fields...))
		if err != nil {
			return nil
		}
		return n
	}
	var err error
	switch obj.GetKind() {
	case "ClusterManagementAddOn":
		if err = collect("spec.supportedConfigs", lookup("supportedConfigs"), true); err != nil {
			return nil, err
		}
		if err = collect("spec.defaultConfigs", lookup("defaultConfigs"), false); err != nil {
			return nil, err
		}
		placements := lookup("installStrategy", "placements")
		if placements != nil {
			if placements.YNode().Kind != yaml.SequenceNode {
				return nil, fmt.Errorf("spec.installStrategy.placements must be a list")
			}
			for i, p := range placements.Content() {
				configs, _ := yaml.NewRNode(p).Pipe(yaml.Lookup("configs"))
				if err = collect(fmt.Sprintf("spec.installStrategy.placements[%d].configs", i), configs, false); err != nil {
					return nil, err
				}
			}
		}
	case "ManagedClusterAddOn":
		if err = collect("spec.configs", lookup("configs"), false); err != nil {
			return nil, err
		}
	}
	return sites, nil
}

func groupResource(item *yaml.RNode, path string) (GroupResource, error) {
	// No group field: "" (the core group), OCM's API default.
	gr := GroupResource{Group: stringField(item, "group"), Resource: stringField(item, "resource")}
	if gr.Resource == "" {
		return gr, fmt.Errorf("%s: config reference has no resource: set the plural resource name, e.g. resource: addondeploymentconfigs", path)
	}
	return gr, nil
}

func stringField(n *yaml.RNode, field string) string {
	f := n.Field(field)
	if f == nil || f.Value == nil {
		return ""
	}
	return yaml.GetValue(f.Value)
}
