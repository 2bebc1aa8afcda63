package main

import (
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/addonops/addonops/internal/canary"
)

// The typed functionConfig: apiVersion addonops.io/v1alpha1, kind RolloutStrategyFunction.
const (
	ConfigAPIVersion = "addonops.io/v1alpha1"
	ConfigKind       = "RolloutStrategyFunction"
)

// settings is a validated functionConfig.
type settings struct {
	// external are Placements applied from outside the input (canary or install placements): they
	// need not be in it.
	external map[canary.PlacementKey]bool
	// strict makes an install placement whose Placement is not in the input (nor external) an
	// error. kustomize shows no result of a function, only its stderr and exit code, so a build
	// that must not pass with a misspelled placement needs an error, not a warning.
	strict bool
}

// parseConfig reads the functionConfig: none (defaults), a RolloutStrategyFunction with
// spec.externalPlacements (a list of "<namespace>/<name>") and spec.strict (a bool), or a
// ConfigMap whose data key externalPlacements holds that list in YAML or comma-separated and whose
// data key strict is "true" or "false" (what `kpt fn eval -- externalPlacements=ns/a,ns/b
// strict=true` makes). Unknown fields are errors: a misspelt option silently ignored would change
// what the build accepts.
func parseConfig(fc *yaml.RNode) (settings, error) {
	s := settings{external: map[canary.PlacementKey]bool{}}
	if fc == nil || fc.IsNilOrEmpty() {
		return s, nil
	}
	if fc.YNode().Kind != yaml.MappingNode {
		return s, fmt.Errorf("functionConfig must be a mapping")
	}
	var list *yaml.RNode
	var path string
	switch apiVersion, kind := fc.GetApiVersion(), fc.GetKind(); {
	case apiVersion == ConfigAPIVersion && kind == ConfigKind:
		if err := knownFields(fc, "functionConfig", "apiVersion", "kind", "metadata", "spec"); err != nil {
			return s, err
		}
		spec := fc.Field("spec")
		if spec == nil || spec.Value.IsNilOrEmpty() {
			return s, nil
		}
		if spec.Value.YNode().Kind != yaml.MappingNode {
			return s, fmt.Errorf("functionConfig spec: must be a mapping")
		}
		if err := knownFields(spec.Value, "functionConfig spec", "externalPlacements", "strict"); err != nil {
			return s, err
		}
		if f := spec.Value.Field("strict"); f != nil && f.Value.YNode().Tag != yaml.NodeTagNull {
			// A bool, not the string "true": the typed form is YAML, so a quoted value is a
			// mistake worth naming rather than guessing.
			if n := f.Value.YNode(); n.Kind != yaml.ScalarNode || n.Tag != yaml.NodeTagBool {
				return s, fmt.Errorf("functionConfig spec.strict: %q is not a bool (true or false)", yaml.GetValue(f.Value))
			}
			s.strict = yaml.GetValue(f.Value) == "true"
		}
		path = "spec.externalPlacements"
		if f := spec.Value.Field("externalPlacements"); f != nil {
			list = f.Value
		}
	case apiVersion == "v1" && kind == "ConfigMap":
		if err := knownFields(fc, "functionConfig", "apiVersion", "kind", "metadata", "data"); err != nil {
			return s, err
		}
		data := fc.Field("data")
		if data == nil || data.Value.IsNilOrEmpty() {
			return s, nil
		}
		if err := knownFields(data.Value, "functionConfig ConfigMap data", "externalPlacements", "strict"); err != nil {
			return s, err
		}
		if f := data.Value.Field("strict"); f != nil {
			// ConfigMap data are strings: `kpt fn eval -- strict=true` gives "true".
			switch v := strings.TrimSpace(yaml.GetValue(f.Value)); v {
			case "true", "false":
				s.strict = v == "true"
			default:
				return s, fmt.Errorf("functionConfig data.strict: %q is not true or false", v)
			}
		}
		path = "data.externalPlacements"
		f := data.Value.Field("externalPlacements")
		if f == nil {
			return s, nil
		}
		raw := yaml.GetValue(f.Value)
		if strings.HasPrefix(strings.TrimSpace(raw), "[") || strings.HasPrefix(strings.TrimSpace(raw), "-") {
			node, err := yaml.Parse(raw)
			if err != nil {
				return s, fmt.Errorf("functionConfig %s: not valid YAML: %w", path, err)
			}
			list = node
		} else {
			list = yaml.NewListRNode()
			for _, item := range strings.Split(raw, ",") {
				if item = strings.TrimSpace(item); item != "" {
					list.YNode().Content = append(list.YNode().Content, yaml.NewStringRNode(item).YNode())
				}
			}
		}
	default:
		return s, fmt.Errorf("functionConfig must be %s %s or v1 ConfigMap, got %s %s", ConfigAPIVersion, ConfigKind, apiVersion, kind)
	}
	if list == nil || list.IsNilOrEmpty() {
		return s, nil
	}
	if list.YNode().Kind != yaml.SequenceNode {
		return s, fmt.Errorf("functionConfig %s: must be a list of <namespace>/<placement>", path)
	}
	for i, item := range list.YNode().Content {
		if item.Kind != yaml.ScalarNode {
			return s, fmt.Errorf("functionConfig %s[%d]: must be a string <namespace>/<placement>", path, i)
		}
		k, err := canary.ParsePlacementKey(item.Value)
		if err != nil {
			return s, fmt.Errorf("functionConfig %s[%d]: %v", path, i, err)
		}
		s.external[k] = true
	}
	return s, nil
}

// knownFields fails on a field of the mapping n that is not among known.
func knownFields(n *yaml.RNode, where string, known ...string) error {
	keys, err := n.Fields()
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	for _, k := range keys {
		if !slices.Contains(known, k) {
			return fmt.Errorf("%s: unknown field %q (known fields: %s)", where, k, strings.Join(known, ", "))
		}
	}
	return nil
}
