package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// The typed functionConfig: apiVersion addonops.io/v1alpha1, kind AddOnTemplateFunction.
const (
	ConfigAPIVersion = "addonops.io/v1alpha1"
	ConfigKind       = "AddOnTemplateFunction"
)

// Modes.
const (
	ModeGenerate = "generate"
	ModeValidate = "validate"
	ModePreview  = "preview"
)

// Preview outputs.
const (
	OutputManifests    = "Manifests"
	OutputManifestWork = "ManifestWork"
)

// Config is the spec of an AddOnTemplateFunction.
type Config struct {
	// Mode is generate, validate or preview.
	Mode string `json:"mode"`

	// generate: build one AddOnTemplate from the plain agent manifests in the input.

	// AddonName is the add-on the template belongs to (spec.addonName). Required for generate.
	AddonName string `json:"addonName,omitempty"`
	// TemplateName is the AddOnTemplate's name; default: AddonName.
	TemplateName string `json:"templateName,omitempty"`
	// Selector picks the agent manifests; default: every object that is not an OCM object and not
	// local configuration.
	Selector *Selector `json:"selector,omitempty"`
	// Registration becomes the template's spec.registration.
	Registration []addonv1alpha1.RegistrationSpec `json:"registration,omitempty"`
	// ManifestConfigs become the template's spec.agentSpec.manifestConfigs.
	ManifestConfigs []workv1.ManifestConfigOption `json:"manifestConfigs,omitempty"`

	// preview: emit what clusters get.

	// Clusters to preview: names, or objects with per-cluster inputs. Required for preview.
	Clusters []ClusterConfig `json:"clusters,omitempty"`
	// DeploymentConfigs are the AddOnDeploymentConfigs (from the input) clusters render with, in
	// ManagedClusterAddOn status order, unless a cluster names its own. Default: the one
	// AddOnDeploymentConfig in the input, if there is exactly one.
	DeploymentConfigs []ObjectRef `json:"deploymentConfigs,omitempty"`
	// Templates limits the preview to these AddOnTemplates (by name); default: all in the input.
	Templates []string `json:"templates,omitempty"`
	// Output is Manifests (default) or ManifestWork.
	Output string `json:"output,omitempty"`
}

// Selector selects objects by labels and annotations, each a Kubernetes label selector
// expression (e.g. "app.kubernetes.io/part-of=hello,tier!=test"). Both must match when both
// are set.
type Selector struct {
	Labels      string `json:"labels,omitempty"`
	Annotations string `json:"annotations,omitempty"`
}

// ClusterConfig is one cluster to preview. In YAML a plain string is a cluster name.
type ClusterConfig struct {
	Name string `json:"name"`
	// ImageRegistries is the ManagedCluster's open-cluster-management.io/image-registries
	// annotation: the annotation's JSON text, or the same as an object ({registries: [...]}).
	ImageRegistries string `json:"imageRegistries,omitempty"`
	// DeploymentConfigs override the top-level DeploymentConfigs for this cluster.
	DeploymentConfigs []ObjectRef `json:"deploymentConfigs,omitempty"`
}

// UnmarshalJSON accepts a cluster name or an object.
func (c *ClusterConfig) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &c.Name)
	}
	var raw struct {
		Name              string          `json:"name"`
		ImageRegistries   json.RawMessage `json:"imageRegistries,omitempty"`
		DeploymentConfigs []ObjectRef     `json:"deploymentConfigs,omitempty"`
	}
	strict, err := sigsjson.UnmarshalStrict(b, &raw)
	if err != nil {
		return err
	}
	if len(strict) > 0 {
		return strict[0]
	}
	c.Name, c.DeploymentConfigs = raw.Name, raw.DeploymentConfigs
	if reg := bytes.TrimSpace(raw.ImageRegistries); len(reg) > 0 && !bytes.Equal(reg, []byte("null")) {
		if reg[0] == '"' {
			return json.Unmarshal(reg, &c.ImageRegistries)
		}
		var ann struct {
			Registries []addonv1alpha1.ImageMirror `json:"registries"`
		}
		if strict, err := sigsjson.UnmarshalStrict(reg, &ann); err != nil || len(strict) > 0 {
			return fmt.Errorf("imageRegistries of cluster %q must be {registries: [{mirror: ..., source: ...}]}: %v", c.Name, firstErr(err, strict))
		}
		out, err := json.Marshal(ann)
		if err != nil {
			return err
		}
		c.ImageRegistries = string(out)
	}
	return nil
}

// ObjectRef names a namespaced object of the input. In YAML "namespace/name" is accepted too.
type ObjectRef struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

func (r ObjectRef) String() string {
	if r.Namespace == "" {
		return r.Name
	}
	return r.Namespace + "/" + r.Name
}

// UnmarshalJSON accepts "namespace/name" or an object.
func (r *ObjectRef) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		ns, name, found := strings.Cut(s, "/")
		if !found {
			ns, name = "", s
		}
		r.Namespace, r.Name = ns, name
		return nil
	}
	type plain ObjectRef
	var p plain
	strict, err := sigsjson.UnmarshalStrict(b, &p)
	if err != nil {
		return err
	}
	if len(strict) > 0 {
		return strict[0]
	}
	*r = ObjectRef(p)
	return nil
}

func firstErr(err error, strict []error) error {
	if err != nil {
		return err
	}
	if len(strict) > 0 {
		return strict[0]
	}
	return nil
}

// settings is a validated Config.
type settings struct {
	Config
	labelSel, annotationSel labels.Selector
}

// parseConfig reads the functionConfig: an AddOnTemplateFunction, or a ConfigMap whose data keys
// are spec fields holding YAML values (what `kpt fn eval -- mode=validate` makes). Unknown fields
// are errors: a misspelt option that is silently ignored changes what gets deployed.
func parseConfig(fc *yaml.RNode) (*settings, error) {
	if fc == nil || fc.IsNilOrEmpty() {
		// Said only when none came: --config together with a ResourceList, which used to drop the
		// file and land here, is refused by krmfn before.
		return nil, fmt.Errorf("no functionConfig: give an %s %s (or a ConfigMap) with spec.mode generate, validate or preview "+
			"(standalone: --config FILE; kpt fn eval: --fn-config FILE, or -- mode=validate)", ConfigAPIVersion, ConfigKind)
	}
	var specJSON []byte
	apiVersion, kind := fc.GetApiVersion(), fc.GetKind()
	switch {
	case apiVersion == ConfigAPIVersion && kind == ConfigKind:
		if err := checkTopLevel(fc, "spec"); err != nil {
			return nil, err
		}
		spec := fc.Field("spec")
		if spec == nil || spec.Value.IsNilOrEmpty() {
			return nil, fmt.Errorf("functionConfig %s has no spec: set spec.mode to generate, validate or preview", ConfigKind)
		}
		b, err := spec.Value.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("functionConfig spec: %w", err)
		}
		specJSON = b
	case apiVersion == "v1" && kind == "ConfigMap":
		if err := checkTopLevel(fc, "data"); err != nil {
			return nil, err
		}
		b, err := configMapSpec(fc)
		if err != nil {
			return nil, err
		}
		specJSON = b
	default:
		return nil, fmt.Errorf("functionConfig must be %s %s or v1 ConfigMap, got %q %q", ConfigAPIVersion, ConfigKind, apiVersion, kind)
	}
	var cfg Config
	strict, err := sigsjson.UnmarshalStrict(specJSON, &cfg)
	if err != nil {
		return nil, fmt.Errorf("functionConfig spec: %w", err)
	}
	if len(strict) > 0 {
		return nil, fmt.Errorf("functionConfig spec: %v (see the functionConfig reference in the addon-template README)", joinErrs(strict))
	}
	return cfg.validate()
}

func joinErrs(errs []error) string {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = strings.Replace(e.Error(), `unknown field "`, `unknown field "spec.`, 1)
	}
	return strings.Join(msgs, "; ")
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

// listFields accept a comma-separated string in a ConfigMap, e.g. clusters: cluster1,cluster2.
var listFields = map[string]bool{"clusters": true, "templates": true, "deploymentConfigs": true}

// configMapSpec turns ConfigMap data into spec JSON: each value is parsed as YAML.
func configMapSpec(fc *yaml.RNode) ([]byte, error) {
	spec := map[string]any{}
	data := fc.Field("data")
	if data == nil || data.Value.IsNilOrEmpty() {
		return json.Marshal(spec)
	}
	m, err := data.Value.Map()
	if err != nil {
		return nil, fmt.Errorf("functionConfig ConfigMap data: %w", err)
	}
	for key, raw := range m {
		s, ok := raw.(string)
		if !ok {
			spec[key] = raw
			continue
		}
		var v any
		if err := yaml.Unmarshal([]byte(s), &v); err != nil {
			return nil, fmt.Errorf("functionConfig ConfigMap data.%s is not valid YAML: %w", key, err)
		}
		if str, isStr := v.(string); isStr && listFields[key] {
			var items []any
			for _, part := range strings.Split(str, ",") {
				if part = strings.TrimSpace(part); part != "" {
					items = append(items, part)
				}
			}
			v = items
		}
		spec[key] = v
	}
	return json.Marshal(spec)
}

func (c Config) validate() (*settings, error) {
	s := &settings{Config: c}
	mode := strings.ToLower(c.Mode)
	switch mode {
	case ModeGenerate, ModeValidate, ModePreview:
		s.Mode = mode
	case "":
		return nil, fmt.Errorf("functionConfig spec.mode is not set: use generate, validate or preview")
	default:
		return nil, fmt.Errorf("functionConfig spec.mode %q is not one of generate, validate, preview", c.Mode)
	}
	var wrong []string
	only := func(set bool, field, m string) {
		if set && s.Mode != m {
			wrong = append(wrong, fmt.Sprintf("spec.%s is only used in %s mode", field, m))
		}
	}
	only(c.AddonName != "", "addonName", ModeGenerate)
	only(c.TemplateName != "", "templateName", ModeGenerate)
	only(c.Selector != nil, "selector", ModeGenerate)
	only(c.Registration != nil, "registration", ModeGenerate)
	only(c.ManifestConfigs != nil, "manifestConfigs", ModeGenerate)
	only(c.Clusters != nil, "clusters", ModePreview)
	only(c.DeploymentConfigs != nil, "deploymentConfigs", ModePreview)
	only(c.Templates != nil, "templates", ModePreview)
	only(c.Output != "", "output", ModePreview)
	if len(wrong) > 0 {
		return nil, fmt.Errorf("functionConfig (mode %s): %s", s.Mode, strings.Join(wrong, "; "))
	}

	switch s.Mode {
	case ModeGenerate:
		if c.AddonName == "" {
			return nil, fmt.Errorf("functionConfig spec.addonName is required in generate mode")
		}
		if s.TemplateName == "" {
			s.TemplateName = c.AddonName
		}
		if c.Selector != nil {
			var err error
			if s.labelSel, err = labels.Parse(c.Selector.Labels); err != nil {
				return nil, fmt.Errorf("functionConfig spec.selector.labels: %w", err)
			}
			if s.annotationSel, err = labels.Parse(c.Selector.Annotations); err != nil {
				return nil, fmt.Errorf("functionConfig spec.selector.annotations: %w", err)
			}
		}
	case ModePreview:
		if len(c.Clusters) == 0 {
			return nil, fmt.Errorf("functionConfig spec.clusters is required in preview mode: list the cluster names to preview")
		}
		seen := map[string]bool{}
		for i, cl := range c.Clusters {
			if cl.Name == "" {
				return nil, fmt.Errorf("functionConfig spec.clusters[%d] has no name", i)
			}
			// ManagedCluster names are DNS-1123 labels (the cluster namespace on the hub bears it); a
			// preview for a name no cluster can have would pass a review and deploy nowhere.
			if msgs := validation.IsDNS1123Label(cl.Name); len(msgs) > 0 {
				return nil, fmt.Errorf("functionConfig spec.clusters[%d]: %q is not a valid ManagedCluster name (a DNS-1123 label): %s", i, cl.Name, strings.Join(msgs, "; "))
			}
			if seen[cl.Name] {
				return nil, fmt.Errorf("functionConfig spec.clusters lists %q twice", cl.Name)
			}
			seen[cl.Name] = true
		}
		switch strings.ToLower(c.Output) {
		case "", "manifests":
			s.Output = OutputManifests
		case "manifestwork", "manifestworks":
			s.Output = OutputManifestWork
		default:
			return nil, fmt.Errorf("functionConfig spec.output %q is not Manifests or ManifestWork", c.Output)
		}
	}
	return s, nil
}
