package configref

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// The versions of ClusterManagementAddOn and ManagedClusterAddOn an OCM v1.3 hub serves
// (open-cluster-management.io/api v1.3.0, what go.mod pins): v1alpha1, the version it stores, and
// v1beta1, which its cluster-manager converts through OCM's webhook (docs/v1beta1.md).
const (
	V1alpha1 = AddonGroup + "/v1alpha1"
	V1beta1  = AddonGroup + "/v1beta1"
)

// InstallNamespaceAnnotation is where a v1beta1 ManagedClusterAddOn keeps v1alpha1's
// spec.installNamespace: OCM's conversion webhook stores the annotation's value as that field
// (open-cluster-management.io/api addon/v1beta1 InstallNamespaceAnnotation).
const InstallNamespaceAnnotation = "addon.open-cluster-management.io/v1alpha1-install-namespace"

// VersionProblem is a field of a ClusterManagementAddOn or ManagedClusterAddOn written for the
// other API version than the object's apiVersion: the hub's API server refuses the object (strict
// field validation, server-side apply) or drops the field in silence, with the config references
// it holds.
type VersionProblem struct {
	// Path is the field, e.g. spec.supportedConfigs.
	Path string
	// Message says what is wrong, what the hub would do and how to migrate; it does not repeat Path.
	Message string
}

// Covers tells whether a field path (as API server field errors give it) is Path or inside it.
func (p VersionProblem) Covers(path string) bool {
	return path == p.Path || strings.HasPrefix(path, p.Path+".") || strings.HasPrefix(path, p.Path+"[")
}

// VersionProblems returns the fields of obj that belong to the other add-on API version, in a
// fixed order: in a v1beta1 ClusterManagementAddOn spec.supportedConfigs and
// spec.addOnConfiguration, in a v1alpha1 one spec.defaultConfigs, in a v1beta1
// ManagedClusterAddOn spec.installNamespace. Other objects, and other versions, have none here
// (a version OCM does not serve is the CRD schema check's to report).
func VersionProblems(obj *yaml.RNode) []VersionProblem {
	if obj == nil || obj.YNode().Kind != yaml.MappingNode {
		return nil
	}
	spec := obj.Field("spec")
	if spec == nil || spec.Value.YNode().Kind != yaml.MappingNode {
		return nil
	}
	has := func(f string) *yaml.RNode {
		if n := spec.Value.Field(f); n != nil && n.Value.YNode().Tag != yaml.NodeTagNull {
			return n.Value
		}
		return nil
	}
	var out []VersionProblem
	switch kind, v := obj.GetKind(), obj.GetApiVersion(); {
	case kind == "ClusterManagementAddOn" && v == V1beta1:
		if sc := has("supportedConfigs"); sc != nil {
			out = append(out, VersionProblem{Path: "spec.supportedConfigs", Message: fmt.Sprintf(
				"a field of ClusterManagementAddOn v1alpha1 that v1beta1 does not have: the hub refuses the object (strict field validation, server-side apply) "+
					"or drops the field and every default config in it. In v1beta1 each default config is an entry of spec.defaultConfigs, "+
					"the defaultConfig's namespace and name beside its group and resource%s; an entry without a defaultConfig "+
					"becomes name %s, as OCM's conversion writes it. Or keep apiVersion %s (docs/v1beta1.md)",
				suggestDefaultConfigs(sc), ReservedNoDefault, V1alpha1)})
		}
		if has("addOnConfiguration") != nil {
			out = append(out, VersionProblem{Path: "spec.addOnConfiguration", Message: "deprecated in ClusterManagementAddOn v1alpha1 and removed in v1beta1 " +
				"(no OCM controller reads it): remove it; the add-on's configs go in spec.defaultConfigs (docs/v1beta1.md)"})
		}
	case kind == "ClusterManagementAddOn" && v == V1alpha1:
		if has("defaultConfigs") != nil {
			out = append(out, VersionProblem{Path: "spec.defaultConfigs", Message: fmt.Sprintf(
				"a field of ClusterManagementAddOn v1beta1 that v1alpha1 does not have: the hub refuses the object (strict field validation, server-side apply) "+
					"or drops the field and every default config in it. Set apiVersion: %s (an OCM v1.3 hub serves it through OCM's conversion webhook), "+
					"or write each entry as spec.supportedConfigs[] {group, resource, defaultConfig: {namespace, name}} (docs/v1beta1.md)", V1beta1)})
		}
	case kind == "ManagedClusterAddOn" && v == V1beta1:
		if has("installNamespace") != nil {
			out = append(out, VersionProblem{Path: "spec.installNamespace", Message: fmt.Sprintf(
				"removed from ManagedClusterAddOn in v1beta1: the hub refuses the object (strict field validation, server-side apply) or drops the field. "+
					"Put the namespace in the annotation %s, which OCM's conversion webhook stores as spec.installNamespace, "+
					"or in spec.agentInstallNamespace of the add-on's AddOnDeploymentConfig; or keep apiVersion %s (docs/v1beta1.md)",
				InstallNamespaceAnnotation, V1alpha1)})
		}
	}
	return out
}

// DropCovered returns errs without the field errors at or inside a field of probs: a CRD schema
// check reports such a field as unknown, which the VersionProblem's message says better.
func DropCovered(errs field.ErrorList, probs []VersionProblem) field.ErrorList {
	if len(probs) == 0 {
		return errs
	}
	var out field.ErrorList
	for _, e := range errs {
		covered := false
		for _, p := range probs {
			covered = covered || p.Covers(e.Field)
		}
		if !covered {
			out = append(out, e)
		}
	}
	return out
}

// VersionError is Sites' error for an object with VersionProblems.
type VersionError struct {
	Problems []VersionProblem
}

func (e *VersionError) Error() string {
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = p.Path + ": " + p.Message
	}
	return strings.Join(msgs, "; ")
}

// suggestDefaultConfigs renders the v1beta1 spec.defaultConfigs that v1alpha1 supportedConfigs sc
// convert to, as OCM's conversion does, for the message: " (here: spec.defaultConfigs: [...])".
// Entries it cannot read are left to the schema check; long lists are cut short.
func suggestDefaultConfigs(sc *yaml.RNode) string {
	if sc.YNode().Kind != yaml.SequenceNode {
		return ""
	}
	const shown = 3
	var items []string
	for i, e := range sc.Content() {
		if i == shown {
			items = append(items, fmt.Sprintf("and %d more", len(sc.Content())-shown))
			break
		}
		if e.Kind != yaml.MappingNode {
			return ""
		}
		item := yaml.NewRNode(e)
		parts := []string{"group: " + flow(stringField(item, "group")), "resource: " + flow(stringField(item, "resource"))}
		name, ns := ReservedNoDefault, ""
		if dc := item.Field("defaultConfig"); dc != nil && dc.Value.YNode().Kind == yaml.MappingNode {
			name, ns = stringField(dc.Value, "name"), stringField(dc.Value, "namespace")
		}
		if ns != "" {
			parts = append(parts, "namespace: "+flow(ns))
		}
		parts = append(parts, "name: "+flow(name))
		items = append(items, "{"+strings.Join(parts, ", ")+"}")
	}
	return " (here: spec.defaultConfigs: [" + strings.Join(items, ", ") + "])"
}

// flow quotes a scalar when YAML's flow style needs it.
func flow(s string) string {
	if s == "" || strings.ContainsAny(s, ":,[]{}#&*!|>'\"%@`") || s != strings.TrimSpace(s) {
		return fmt.Sprintf("%q", s)
	}
	return s
}
