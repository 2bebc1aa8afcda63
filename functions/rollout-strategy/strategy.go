package main

import (
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/rolloutrules"
)

// The two vocabularies of spec.installStrategy.placements[].rolloutStrategy.type.
const (
	// The add-on lifecycle design's types
	// (docs/design/lifecycle.md#the-vocabulary-of-rollout-strategies).
	seedUpdateAll               = "UpdateAll"
	seedRollingUpdate           = "RollingUpdate"
	seedRollingUpdateWithCanary = "RollingUpdateWithCanary"
	// OCM's (open-cluster-management.io/api cluster/v1alpha1 RolloutType).
	ocmAll                 = "All"
	ocmProgressive         = "Progressive"
	ocmProgressivePerGroup = "ProgressivePerGroup"
)

// defaultMaxConcurrency is the design's default of rollingUpdate.maxConcurrentlyUpdating.
const defaultMaxConcurrency = "25%"

// problem is one finding about a field.
type problem struct {
	field, msg string
}

func problemf(field, format string, args ...any) problem {
	return problem{field: field, msg: fmt.Sprintf(format, args...)}
}

// translation is what translateStrategy did to one rollout strategy.
type translation struct {
	// from is the design type translated, "" when the strategy was already OCM's (or had problems).
	from string
	// canary is the canary placement of a RollingUpdateWithCanary, at canaryField.
	canary      *canary.PlacementKey
	canaryField string
}

// translateStrategy rewrites one rollout strategy (the node at path) from the design's vocabulary
// into OCM's in place, keeping its comments and key order: UpdateAll becomes All; RollingUpdate
// and RollingUpdateWithCanary become Progressive with maxConcurrency (the design's
// maxConcurrentlyUpdating, default 25%), and the canary placement is returned for the annotation.
// A strategy in OCM's vocabulary is left as it is. On problems the node may be half rewritten:
// the caller writes nothing then.
func translateStrategy(rs *yaml.RNode, path string) (translation, []problem) {
	if rs.YNode().Kind != yaml.MappingNode {
		return translation{}, []problem{problemf(path, "must be a mapping with a type")}
	}
	typ, p := stringField(rs, "type", path)
	if p != nil {
		return translation{}, []problem{*p}
	}
	seedFields := map[string]string{"rollingUpdate": seedRollingUpdate, "rollingUpdateWithCanary": seedRollingUpdateWithCanary}
	var probs []problem
	switch typ {
	case "", ocmAll, ocmProgressive, ocmProgressivePerGroup:
		for _, f := range []string{"rollingUpdate", "rollingUpdateWithCanary"} {
			if rs.Field(f) != nil {
				probs = append(probs, problemf(path+"."+f, "belongs to the seed's type %s, not to %s; write type: %s (translated to OCM's Progressive) or drop %s",
					seedFields[f], typeName(typ), seedFields[f], f))
			}
		}
		return translation{}, probs
	case seedUpdateAll, seedRollingUpdate, seedRollingUpdateWithCanary:
	default:
		return translation{}, []problem{problemf(path+".type", "%q is not a rollout type: use OCM's %s, %s or %s, or the seed's %s, %s or %s",
			typ, ocmAll, ocmProgressive, ocmProgressivePerGroup, seedUpdateAll, seedRollingUpdate, seedRollingUpdateWithCanary)}
	}

	// A design type: only its own settings may be there.
	allowed := map[string][]string{
		seedUpdateAll:               {"type"},
		seedRollingUpdate:           {"type", "rollingUpdate"},
		seedRollingUpdateWithCanary: {"type", "rollingUpdateWithCanary"},
	}[typ]
	for _, f := range fieldNames(rs) {
		if slices.Contains(allowed, f) {
			continue
		}
		if owner, ok := seedFields[f]; ok {
			probs = append(probs, problemf(path+"."+f, "belongs to type %s, but type is %s", owner, typ))
		} else {
			probs = append(probs, problemf(path+"."+f, "type %s is the seed's vocabulary and takes %s; %q is OCM's or unknown: write the whole strategy in one vocabulary",
				typ, strings.Join(allowed, " and "), f))
		}
	}
	if len(probs) > 0 {
		return translation{}, probs
	}

	tr := translation{from: typ}
	switch typ {
	case seedUpdateAll:
		setString(rs, "type", ocmAll)
		return tr, nil
	case seedRollingUpdate:
		f := rs.Field("rollingUpdate")
		if f == nil {
			setString(rs, "type", ocmProgressive)
			appendField(rs, "progressive", maxConcurrencyNode())
			return tr, nil
		}
		if f.Value.IsNilOrEmpty() {
			setString(rs, "type", ocmProgressive)
			f.Key.YNode().Value = "progressive"
			f.Value.SetYNode(maxConcurrencyNode().YNode())
			return tr, nil
		}
		if probs := rollingUpdate(f.Value, path+".rollingUpdate", nil); len(probs) > 0 {
			return translation{}, probs
		}
		setString(rs, "type", ocmProgressive)
		f.Key.YNode().Value = "progressive"
		return tr, nil
	default: // RollingUpdateWithCanary
		f := rs.Field("rollingUpdateWithCanary")
		fpath := path + ".rollingUpdateWithCanary"
		if f == nil || f.Value.IsNilOrEmpty() {
			return translation{}, []problem{problemf(fpath, "is required by type %s: placement {name, namespace} of the canary, and optionally maxConcurrentlyUpdating (default %s)", typ, defaultMaxConcurrency)}
		}
		if probs := rollingUpdate(f.Value, fpath, []string{"placement"}); len(probs) > 0 {
			return translation{}, probs
		}
		key, probs := placementRef(f.Value.Field("placement"), fpath+".placement")
		if len(probs) > 0 {
			return translation{}, probs
		}
		tr.canary, tr.canaryField = &key, fpath+".placement"
		setString(rs, "type", ocmProgressive)
		f.Key.YNode().Value = "progressive"
		_, _ = f.Value.Pipe(yaml.Clear("placement"))
		return tr, nil
	}
}

func typeName(typ string) string { return rolloutrules.TypeName(typ) }

// rollingUpdate checks the design's rollingUpdate settings (maxConcurrentlyUpdating, plus extra
// fields) and renames maxConcurrentlyUpdating to OCM's maxConcurrency, adding the design's default
// when it is unset.
func rollingUpdate(ru *yaml.RNode, path string, extra []string) []problem {
	if ru.YNode().Kind != yaml.MappingNode {
		return []problem{problemf(path, "must be a mapping")}
	}
	known := append([]string{"maxConcurrentlyUpdating"}, extra...)
	if probs := unknownFields(ru, path, known); len(probs) > 0 {
		return probs
	}
	f := ru.Field("maxConcurrentlyUpdating")
	if f == nil || f.Value.YNode().Tag == yaml.NodeTagNull {
		_, _ = ru.Pipe(yaml.Clear("maxConcurrentlyUpdating"))
		appendField(ru, "maxConcurrency", yaml.NewStringRNode(defaultMaxConcurrency))
		return nil
	}
	if msg := rolloutrules.MaxConcurrency(valueOf(f.Value)); msg != "" {
		return []problem{problemf(path+".maxConcurrentlyUpdating", "%s", msg)}
	}
	f.Key.YNode().Value = "maxConcurrency"
	return nil
}

// maxConcurrencyNode is {maxConcurrency: 25%}, the design's default.
func maxConcurrencyNode() *yaml.RNode {
	n := yaml.NewMapRNode(nil)
	appendField(n, "maxConcurrency", yaml.NewStringRNode(defaultMaxConcurrency))
	return n
}

// placementRef reads the design's PlacementRef {name, namespace}, both required.
func placementRef(f *yaml.MapNode, path string) (canary.PlacementKey, []problem) {
	if f == nil || f.Value.IsNilOrEmpty() {
		return canary.PlacementKey{}, []problem{problemf(path, "is required: the canary Placement's name and namespace")}
	}
	if f.Value.YNode().Kind != yaml.MappingNode {
		return canary.PlacementKey{}, []problem{problemf(path, "must be a mapping {name, namespace}")}
	}
	probs := unknownFields(f.Value, path, []string{"name", "namespace"})
	key, keyProbs := placementKey(f.Value, path)
	return key, append(probs, keyProbs...)
}

// placementKey reads the name and namespace of a placement reference (the design's PlacementRef, or
// an install placement), both required.
func placementKey(m *yaml.RNode, path string) (canary.PlacementKey, []problem) {
	var probs []problem
	var key canary.PlacementKey
	for _, field := range []struct {
		name string
		to   *string
	}{{"name", &key.Name}, {"namespace", &key.Namespace}} {
		v, p := stringField(m, field.name, path)
		switch {
		case p != nil:
			probs = append(probs, *p)
		case v == "":
			probs = append(probs, problemf(path+"."+field.name, "is required"))
		case strings.Contains(v, "/"):
			probs = append(probs, problemf(path+"."+field.name, "%q must not contain /", v))
		}
		*field.to = v
	}
	return key, probs
}

// validateStrategy checks a rollout strategy in OCM's vocabulary (the node at path): the fields
// each type takes (unknown fields, which the API server would prune, are this function's), and the
// values package rolloutrules accepts, the rules the controller applies at run time too.
func validateStrategy(rs *yaml.RNode, path string) []problem {
	if rs.YNode().Kind != yaml.MappingNode {
		return []problem{problemf(path, "must be a mapping with a type")}
	}
	probs := unknownFields(rs, path, append([]string{"type"}, rolloutrules.SettingsFields...))
	var typ string
	if f := rs.Field("type"); f != nil && f.Value.YNode().Tag != yaml.NodeTagNull {
		if msg := rolloutrules.Type(valueOf(f.Value)); msg != "" {
			return append(probs, problemf(path+".type", "%s", msg))
		}
		typ = f.Value.YNode().Value
	}
	own, _ := rolloutrules.SettingsField(typ)
	for _, f := range rolloutrules.SettingsFields {
		sf := rs.Field(f)
		if sf == nil {
			continue
		}
		fpath := path + "." + f
		if f != own {
			probs = append(probs, problemf(fpath, "%s", rolloutrules.OtherSettings(f, typ)))
			continue
		}
		if sf.Value.IsNilOrEmpty() {
			continue
		}
		if sf.Value.YNode().Kind != yaml.MappingNode {
			probs = append(probs, problemf(fpath, "must be a mapping"))
			continue
		}
		probs = append(probs, unknownFields(sf.Value, fpath, rolloutrules.ConfigFields(f))...)
		probs = append(probs, rolloutConfig(sf.Value, fpath)...)
	}
	return probs
}

func rolloutConfig(rc *yaml.RNode, path string) []problem {
	var probs []problem
	check := func(field string, rule func(rolloutrules.Value) string) {
		if v := rc.Field(field); v != nil {
			if msg := rule(valueOf(v.Value)); msg != "" {
				probs = append(probs, problemf(path+"."+field, "%s", msg))
			}
		}
	}
	check("maxConcurrency", rolloutrules.MaxConcurrency)
	check("maxFailures", rolloutrules.MaxFailures)
	check("progressDeadline", rolloutrules.ProgressDeadline)
	check("minSuccessTime", rolloutrules.MinSuccessTime)
	if v := rc.Field("mandatoryDecisionGroups"); v != nil && !v.Value.IsNilOrEmpty() {
		fpath := path + ".mandatoryDecisionGroups"
		if v.Value.YNode().Kind != yaml.SequenceNode {
			return append(probs, problemf(fpath, "must be a list of {groupName} or {groupIndex}"))
		}
		for i, g := range v.Value.YNode().Content {
			gpath := fmt.Sprintf("%s[%d]", fpath, i)
			gn := yaml.NewRNode(g)
			if g.Kind != yaml.MappingNode {
				probs = append(probs, problemf(gpath, "must be a mapping {groupName} or {groupIndex}"))
				continue
			}
			probs = append(probs, unknownFields(gn, gpath, []string{"groupName", "groupIndex"})...)
			for _, c := range []struct {
				field string
				rule  func(rolloutrules.Value) string
			}{{"groupName", rolloutrules.GroupName}, {"groupIndex", rolloutrules.GroupIndex}} {
				if f := gn.Field(c.field); f != nil {
					if msg := c.rule(valueOf(f.Value)); msg != "" {
						probs = append(probs, problemf(gpath+"."+c.field, "%s", msg))
					}
				}
			}
		}
	}
	return probs
}

// valueOf is the value of a YAML node for package rolloutrules, as written: its tag says whether
// it is an integer or a string (a quoted number is a string), and the text is the node's own.
func valueOf(n *yaml.RNode) rolloutrules.Value {
	y := n.YNode()
	switch {
	case y.Kind == yaml.ScalarNode && y.Tag == yaml.NodeTagInt:
		return rolloutrules.Value{Kind: rolloutrules.Int, Text: y.Value}
	case y.Kind == yaml.ScalarNode && y.Tag == yaml.NodeTagString:
		return rolloutrules.Value{Kind: rolloutrules.String, Text: y.Value}
	case y.Kind == yaml.ScalarNode:
		return rolloutrules.Value{Kind: rolloutrules.Scalar, Text: y.Value}
	}
	return rolloutrules.Value{Kind: rolloutrules.Structure, Text: strings.TrimSpace(n.MustString())}
}

// stringField returns the string value of the field name of m ("" when absent).
func stringField(m *yaml.RNode, name, path string) (string, *problem) {
	f := m.Field(name)
	if f == nil || f.Value.YNode().Tag == yaml.NodeTagNull {
		return "", nil
	}
	return scalarString(f.Value, path+"."+name, "a string")
}

func scalarString(n *yaml.RNode, path, want string) (string, *problem) {
	y := n.YNode()
	if y.Kind != yaml.ScalarNode || y.Tag != yaml.NodeTagString {
		v := y.Value
		if y.Kind != yaml.ScalarNode {
			v = strings.TrimSpace(n.MustString())
		}
		p := problemf(path, "%q is not %s", v, want)
		if y.Kind == yaml.ScalarNode {
			p.msg += "; quote it"
		}
		return "", &p
	}
	return y.Value, nil
}

func unknownFields(m *yaml.RNode, path string, known []string) []problem {
	var probs []problem
	for _, f := range fieldNames(m) {
		if !slices.Contains(known, f) {
			probs = append(probs, problemf(path+"."+f, "unknown field (known fields: %s)", strings.Join(known, ", ")))
		}
	}
	return probs
}

func fieldNames(m *yaml.RNode) []string {
	var names []string
	c := m.YNode().Content
	for i := 0; i+1 < len(c); i += 2 {
		names = append(names, c[i].Value)
	}
	return names
}

func setString(m *yaml.RNode, name, value string) {
	m.Field(name).Value.YNode().Value = value
}

// appendField adds name: value as the last field of the mapping m.
func appendField(m *yaml.RNode, name string, value *yaml.RNode) {
	m.YNode().Content = append(m.YNode().Content, yaml.NewScalarRNode(name).YNode(), value.YNode())
}
