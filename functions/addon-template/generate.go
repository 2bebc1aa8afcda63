package main

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/krmfn"
	"github.com/addonops/addonops/internal/render"
)

// generate replaces the plain agent manifests of the input with one AddOnTemplate holding them.
// Run again on its own output (no plain manifests left, the template present) it changes nothing.
func generate(req *krmfn.Request, s *settings) error {
	var selected, rest []*yaml.RNode
	firstSelected := -1
	replaced := -1
	for _, it := range req.Items {
		switch {
		case isKind(it, addOnTemplateKind) && it.GetName() == s.TemplateName:
			// An earlier generation: replaced when there are manifests, else kept as it is.
			replaced = len(rest)
			rest = append(rest, it)
		case agentManifest(it, s):
			if firstSelected < 0 {
				firstSelected = len(rest)
			}
			selected = append(selected, it)
		default:
			rest = append(rest, it)
		}
	}
	if len(selected) == 0 {
		if replaced >= 0 {
			return nil
		}
		what := "no agent manifests in the input (every object is an OCM object or local configuration)"
		if s.Selector != nil {
			what = fmt.Sprintf("no object of the input matches the selector (labels %q, annotations %q)", s.Selector.Labels, s.Selector.Annotations)
		}
		return fmt.Errorf("generate: %s; add the agent's Deployment, ServiceAccount, RBAC... to the input", what)
	}
	tmpl, err := buildTemplate(s, selected)
	if err != nil {
		return err
	}
	// Check what was built before anyone deploys it: the generated template must decode and pass
	// the checks that need no AddOnDeploymentConfig.
	j, err := tmpl.MarshalJSON()
	if err != nil {
		return err
	}
	obj, err := render.DecodeAddOnTemplate(j)
	if err != nil {
		return fmt.Errorf("generate: the generated AddOnTemplate does not decode: %w", err)
	}
	checkTemplate(req, template{node: tmpl, obj: obj}, nil, false)
	if req.HasErrors() {
		return nil
	}
	if p, _, _ := kioutil.GetFileAnnotations(selected[0]); p != "" {
		// kpt writes new objects where their path annotation says: next to the first manifest.
		file := path.Join(path.Dir(p), "addontemplate_"+s.TemplateName+".yaml")
		for _, a := range []string{kioutil.PathAnnotation, kioutil.LegacyPathAnnotation} {
			if err := tmpl.PipeE(yaml.SetAnnotation(a, file)); err != nil {
				return err
			}
		}
		for _, a := range []string{kioutil.IndexAnnotation, kioutil.LegacyIndexAnnotation} {
			if err := tmpl.PipeE(yaml.SetAnnotation(a, "0")); err != nil {
				return err
			}
		}
	}
	if replaced >= 0 {
		rest = append(rest[:replaced], rest[replaced+1:]...)
		if firstSelected > replaced {
			firstSelected--
		}
	}
	out := append([]*yaml.RNode{}, rest[:firstSelected]...)
	out = append(out, tmpl)
	req.Items = append(out, rest[firstSelected:]...)
	return nil
}

// agentManifest tells whether an input object is an agent manifest to put into the template.
func agentManifest(n *yaml.RNode, s *settings) bool {
	if isOCM(n) || isLocalConfig(n) || isPreviewObject(n) {
		return false
	}
	switch n.GetApiVersion() {
	case "kpt.dev/v1", "kpt.dev/v1alpha1", "kustomize.config.k8s.io/v1beta1", "kustomize.config.k8s.io/v1alpha1",
		"config.kubernetes.io/v1", "config.kubernetes.io/v1alpha1", ConfigAPIVersion:
		return false // package and pipeline configuration, never agent manifests
	}
	if s.labelSel != nil && !s.labelSel.Matches(labels.Set(n.GetLabels())) {
		return false
	}
	if s.annotationSel != nil && !s.annotationSel.Matches(labels.Set(n.GetAnnotations())) {
		return false
	}
	return true
}

// buildTemplate makes the AddOnTemplate. The manifests are the input objects themselves (field
// order and comments kept) without the orchestrators' bookkeeping annotations.
func buildTemplate(s *settings, manifests []*yaml.RNode) (*yaml.RNode, error) {
	tmpl, err := yaml.FromMap(map[string]any{
		"apiVersion": "addon.open-cluster-management.io/v1alpha1",
		"kind":       addOnTemplateKind,
		"metadata":   map[string]any{"name": s.TemplateName},
		"spec": map[string]any{
			"addonName": s.AddonName,
			"agentSpec": map[string]any{"workload": map[string]any{"manifests": []any{}}},
		},
	})
	if err != nil {
		return nil, err
	}
	seq, err := tmpl.Pipe(yaml.Lookup("spec", "agentSpec", "workload", "manifests"))
	if err != nil {
		return nil, err
	}
	seq.YNode().Style = 0
	for _, m := range manifests {
		c := m.Copy()
		for key := range c.GetAnnotations() {
			if orchestratorAnnotation(key) {
				if err := c.PipeE(yaml.ClearAnnotation(key)); err != nil {
					return nil, err
				}
			}
		}
		if meta := c.Field("metadata"); meta != nil {
			if a := meta.Value.Field("annotations"); a != nil && len(a.Value.Content()) == 0 {
				if err := meta.Value.PipeE(yaml.Clear("annotations")); err != nil {
					return nil, err
				}
			}
		}
		// A comment above the whole object (e.g. a file header) does not belong to a list item and
		// would move on every run; comments inside the object stay.
		c.YNode().HeadComment, c.YNode().FootComment = "", ""
		if content := c.YNode().Content; len(content) > 0 {
			content[0].HeadComment = ""
		}
		seq.YNode().Content = append(seq.YNode().Content, c.YNode())
	}
	if len(s.ManifestConfigs) > 0 {
		n, err := toNode(s.ManifestConfigs)
		if err != nil {
			return nil, fmt.Errorf("encoding manifestConfigs: %w", err)
		}
		if err := tmpl.PipeE(yaml.Lookup("spec", "agentSpec"), yaml.SetField("manifestConfigs", n)); err != nil {
			return nil, err
		}
	}
	if s.Registration != nil {
		n, err := toNode(s.Registration)
		if err != nil {
			return nil, fmt.Errorf("encoding registration: %w", err)
		}
		if err := tmpl.PipeE(yaml.Lookup("spec"), yaml.SetField("registration", n)); err != nil {
			return nil, err
		}
	}
	return tmpl, nil
}

// toNode encodes a typed value as YAML the way Kubernetes clients encode it (its JSON form).
func toNode(v any) (*yaml.RNode, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	y, err := sigsyaml.JSONToYAML(j)
	if err != nil {
		return nil, err
	}
	return yaml.Parse(strings.TrimSpace(string(y)))
}
