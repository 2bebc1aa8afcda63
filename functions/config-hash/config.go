package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/addonops/addonops/internal/configref"
)

// The typed functionConfig: apiVersion addonops.io/v1alpha1, kind ConfigHash.
const (
	ConfigAPIVersion = "addonops.io/v1alpha1"
	ConfigKind       = "ConfigHash"
)

// Config is the spec of a ConfigHash functionConfig. Every field is optional; the zero Config
// hashes AddOnDeploymentConfigs and AddOnTemplates with prune protection on.
type Config struct {
	// Kinds are hashed in addition to AddOnDeploymentConfig and AddOnTemplate.
	Kinds []KindRef `json:"kinds,omitempty"`
	// Resources give the plural resource name and scope of kinds whose CustomResourceDefinition
	// is not in the input, so references to them can be matched.
	Resources []ResourceMapping `json:"resources,omitempty"`
	// NameLimits lower or raise the longest name a kind accepts (253 by default).
	NameLimits []NameLimit `json:"nameLimits,omitempty"`
	// PruneProtection stamps Argo CD's and Flux's "do not prune" annotations on hashed configs
	// (default true): clusters that have not rolled out yet still read the superseded version.
	PruneProtection *bool `json:"pruneProtection,omitempty"`
	// Strict makes every reference that resolves to no object of the input an error: a stale
	// reference (one that names a config this run renames but does not resolve to it), a reference
	// to a config that is not in the input, and one without the namespace its kind needs. For CI,
	// when every config the add-ons use lives in Git.
	Strict bool `json:"strict,omitempty"`
}

// KindRef names a kind by API group ("" for the core group) and kind.
type KindRef struct {
	Group *string `json:"group"`
	Kind  string  `json:"kind"`
}

// ResourceMapping maps a kind to its plural resource name and scope.
type ResourceMapping struct {
	Group    *string `json:"group"`
	Kind     string  `json:"kind"`
	Resource string  `json:"resource"`
	// Scope is Namespaced or Cluster, as in a CustomResourceDefinition.
	Scope string `json:"scope"`
}

// NameLimit is the longest metadata.name objects of a kind accept.
type NameLimit struct {
	Group     *string `json:"group"`
	Kind      string  `json:"kind"`
	MaxLength int     `json:"maxLength"`
}

// DefaultMaxNameLength is the DNS-subdomain limit that custom resources, ConfigMaps and Secrets
// share.
const DefaultMaxNameLength = 253

// settings is a validated Config in the form the function uses.
type settings struct {
	hashKinds       map[groupKind]bool
	resources       []configref.Kind
	resourceSources []string
	nameLimits      map[groupKind]int
	pruneProtection bool
	strict          bool
}

type groupKind struct{ group, kind string }

func (gk groupKind) String() string {
	if gk.group == "" {
		return gk.kind
	}
	return gk.kind + "." + gk.group
}

// parseConfig reads the functionConfig: nil (defaults), a ConfigHash, or a ConfigMap whose data
// keys are ConfigHash spec fields holding YAML values. Unknown fields are errors, because a
// misspelt option that is silently ignored changes what gets deployed.
func parseConfig(fc *yaml.RNode) (settings, error) {
	var cfg Config
	if fc != nil && !fc.IsNilOrEmpty() {
		apiVersion, kind := fc.GetApiVersion(), fc.GetKind()
		switch {
		case apiVersion == ConfigAPIVersion && kind == ConfigKind:
			if err := checkTopLevel(fc, "spec"); err != nil {
				return settings{}, err
			}
			if spec := fc.Field("spec"); spec != nil && !spec.Value.IsNilOrEmpty() {
				if err := decodeStrict(spec.Value, "spec", &cfg); err != nil {
					return settings{}, err
				}
			}
		case apiVersion == "v1" && kind == "ConfigMap":
			if err := checkTopLevel(fc, "data"); err != nil {
				return settings{}, err
			}
			if err := decodeConfigMap(fc, &cfg); err != nil {
				return settings{}, err
			}
		default:
			return settings{}, fmt.Errorf("functionConfig must be %s %s or v1 ConfigMap, got %s %s",
				ConfigAPIVersion, ConfigKind, apiVersion, kind)
		}
	}
	return cfg.validate()
}

func checkTopLevel(fc *yaml.RNode, body string) error {
	if fc.YNode().Kind != yaml.MappingNode {
		return fmt.Errorf("functionConfig must be a mapping")
	}
	allowed := []string{"apiVersion", "kind", "metadata", body}
	keys, err := fc.Fields()
	if err != nil {
		return fmt.Errorf("functionConfig: %w", err)
	}
	for _, key := range keys {
		if !slices.Contains(allowed, key) {
			return fmt.Errorf("functionConfig %s: unknown field %q (known fields: %s)", fc.GetKind(), key, strings.Join(allowed, ", "))
		}
	}
	return nil
}

// decodeConfigMap fills cfg from ConfigMap data, whose keys are Config fields and whose values
// are those fields in YAML, e.g. pruneProtection: "false" (what `kpt fn eval -- key=value` makes).
func decodeConfigMap(fc *yaml.RNode, cfg *Config) error {
	data := fc.Field("data")
	if data == nil || data.Value.IsNilOrEmpty() {
		return nil
	}
	if data.Value.YNode().Kind != yaml.MappingNode {
		return fmt.Errorf("functionConfig ConfigMap: data must be a mapping")
	}
	spec := yaml.NewMapRNode(nil)
	keys, err := data.Value.Fields()
	if err != nil {
		return fmt.Errorf("functionConfig ConfigMap data: %w", err)
	}
	for _, key := range keys {
		path := "data." + key
		if _, ok := jsonFields(reflect.TypeOf(Config{}))[key]; !ok {
			return unknownField("data", key, reflect.TypeOf(Config{}))
		}
		raw := yaml.GetValue(data.Value.Field(key).Value)
		if strings.TrimSpace(raw) == "" {
			continue
		}
		value, err := yaml.Parse(raw)
		if err != nil {
			return fmt.Errorf("functionConfig ConfigMap %s: not valid YAML: %w", path, err)
		}
		if err := spec.PipeE(yaml.SetField(key, value)); err != nil {
			return fmt.Errorf("functionConfig ConfigMap %s: %w", path, err)
		}
	}
	return decodeStrict(spec, "data", cfg)
}

// decodeStrict decodes node into out after checking that every field it holds exists in out's
// type, so that the error names the exact path of a misspelt field.
func decodeStrict(node *yaml.RNode, path string, out any) error {
	if err := checkFields(node.YNode(), reflect.TypeOf(out).Elem(), path); err != nil {
		return err
	}
	b, err := node.MarshalJSON()
	if err != nil {
		return fmt.Errorf("functionConfig %s: %w", path, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("functionConfig %s: %w", path, err)
	}
	return nil
}

func checkFields(n *yaml.Node, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("functionConfig %s: must be a mapping", path)
		}
		fields := jsonFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i].Value
			ft, ok := fields[key]
			if !ok {
				return unknownField(path, key, t)
			}
			if err := checkFields(n.Content[i+1], ft, path+"."+key); err != nil {
				return err
			}
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			if n.Tag == yaml.NodeTagNull {
				return nil
			}
			return fmt.Errorf("functionConfig %s: must be a list", path)
		}
		for i, item := range n.Content {
			if err := checkFields(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func jsonFields(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		fields[name] = f.Type
	}
	return fields
}

func unknownField(path, key string, t reflect.Type) error {
	var known []string
	for name := range jsonFields(t) {
		known = append(known, name)
	}
	slices.Sort(known)
	return fmt.Errorf("functionConfig %s: unknown field %q (known fields: %s)", path, key, strings.Join(known, ", "))
}

func (cfg Config) validate() (settings, error) {
	s := settings{hashKinds: map[groupKind]bool{}, nameLimits: map[groupKind]int{}, pruneProtection: true, strict: cfg.Strict}
	if cfg.PruneProtection != nil {
		s.pruneProtection = *cfg.PruneProtection
	}
	for i, k := range cfg.Kinds {
		gk, err := kindOf(k.Group, k.Kind, fmt.Sprintf("spec.kinds[%d]", i))
		if err != nil {
			return settings{}, err
		}
		s.hashKinds[gk] = true
	}
	for i, r := range cfg.Resources {
		path := fmt.Sprintf("spec.resources[%d]", i)
		gk, err := kindOf(r.Group, r.Kind, path)
		if err != nil {
			return settings{}, err
		}
		if r.Resource == "" {
			return settings{}, fmt.Errorf("functionConfig %s: resource is required: the lowercase plural, e.g. %ss", path, strings.ToLower(r.Kind))
		}
		if r.Scope != "Namespaced" && r.Scope != "Cluster" {
			return settings{}, fmt.Errorf("functionConfig %s: scope must be Namespaced or Cluster, got %q", path, r.Scope)
		}
		s.resources = append(s.resources, configref.Kind{Group: gk.group, Kind: gk.kind, Resource: r.Resource, Namespaced: r.Scope == "Namespaced"})
		s.resourceSources = append(s.resourceSources, "functionConfig "+path)
	}
	for i, l := range cfg.NameLimits {
		path := fmt.Sprintf("spec.nameLimits[%d]", i)
		gk, err := kindOf(l.Group, l.Kind, path)
		if err != nil {
			return settings{}, err
		}
		// The suffix alone takes 11 characters; a limit that leaves no room for a name is a typo.
		if l.MaxLength <= suffixLen+1 || l.MaxLength > DefaultMaxNameLength {
			return settings{}, fmt.Errorf("functionConfig %s: maxLength must be between %d and %d, got %d", path, suffixLen+2, DefaultMaxNameLength, l.MaxLength)
		}
		if old, ok := s.nameLimits[gk]; ok && old != l.MaxLength {
			return settings{}, fmt.Errorf("functionConfig %s: a second, different limit for %s", path, gk)
		}
		s.nameLimits[gk] = l.MaxLength
	}
	return s, nil
}

func kindOf(group *string, kind, path string) (groupKind, error) {
	if group == nil {
		return groupKind{}, fmt.Errorf("functionConfig %s: group is required (write group: \"\" for the core API group)", path)
	}
	if kind == "" {
		return groupKind{}, fmt.Errorf("functionConfig %s: kind is required", path)
	}
	return groupKind{group: *group, kind: kind}, nil
}
