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

	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/krmfn"
	"github.com/addonops/addonops/internal/render"
)

// generate replaces the plain agent manifests of the input with one AddOnTemplate holding them.
// Hub-side objects (see hubSide) stay out, Secrets going in get a warning, and an object in the
// input twice is an error. Run again on its own output (no plain manifests left, the template
// present, possibly renamed by config-hash) it changes nothing.
func generate(req *krmfn.Request, s *settings) error {
	roles, secrets := hubSideRefs(s.Registration)
	inputRoles := map[objectID]bool{}
	for _, it := range req.Items {
		for _, r := range roles {
			if idOf(it) == r.id {
				inputRoles[r.id] = true
			}
		}
	}
	var selected, rest, earlier []*yaml.RNode
	var positions []string
	type hubNote struct {
		obj *yaml.RNode
		why string
	}
	var hubNotes []hubNote
	firstSelected := -1
	replaced := -1
	for i, it := range req.Items {
		choice, err := agentManifest(it, s)
		if err != nil {
			return err
		}
		why := ""
		if choice == pickDefault {
			why = hubSide(it, roles, secrets, inputRoles)
		}
		switch {
		case earlierGeneration(it, s):
			// An earlier generation: replaced when there are manifests, else kept as it is.
			replaced = len(rest)
			earlier = append(earlier, it)
			rest = append(rest, it)
		case why != "":
			hubNotes = append(hubNotes, hubNote{it, why})
			rest = append(rest, it)
		case choice != pickNo:
			if firstSelected < 0 {
				firstSelected = len(rest)
			}
			if choice == pickDefault && idOf(it).group == "" && it.GetKind() == "Secret" {
				req.Warningf(it, "", "%s goes into AddOnTemplate %s, a cluster-scoped hub object: whoever may read AddOnTemplates on the hub reads its data "+
					"(data is only base64, stringData is in clear), and it is copied into the ManifestWork of every cluster of the add-on; "+
					"deliver credentials another way (e.g. a secret store on the managed cluster), or annotate it %s: \"true\" to confirm",
					krmfn.Describe(it), s.TemplateName, TemplateManifestAnnotation)
			}
			selected = append(selected, it)
			positions = append(positions, inputPosition(it, i))
		default:
			rest = append(rest, it)
		}
	}
	if len(selected) == 0 && replaced >= 0 {
		return nil // its own output: nothing to do, nothing to say
	}
	for _, n := range hubNotes {
		req.Infof(n.obj, "", "%s stays out of AddOnTemplate %s, in the output for the hub: %s; annotate it %s: \"true\" to put it into the template",
			krmfn.Describe(n.obj), s.TemplateName, n.why, TemplateManifestAnnotation)
	}
	if len(selected) == 0 {
		what := "no agent manifests in the input (every object is an OCM object, local configuration or hub-side)"
		if s.Selector != nil {
			what = fmt.Sprintf("no object of the input matches the selector (labels %q, annotations %q)", s.Selector.Labels, s.Selector.Annotations)
		}
		return fmt.Errorf("generate: %s; add the agent's Deployment, ServiceAccount, RBAC... to the input", what)
	}
	if len(earlier) > 1 {
		var names []string
		for _, e := range earlier {
			names = append(names, krmfn.Describe(e))
		}
		return fmt.Errorf("generate: the input holds %d earlier generations of AddOnTemplate %s (%s) and new agent manifests; keep one (or none) so it is clear which one the new template replaces",
			len(earlier), s.TemplateName, strings.Join(names, ", "))
	}
	// The same object twice would be deployed twice (or one copy silently dropped): name both.
	seen := map[objectID]int{}
	for i, it := range selected {
		id := idOf(it)
		if first, dup := seen[id]; dup {
			req.Errorf(it, "", "generate: %s is in the input twice, at %s and at %s: a cluster can hold it only once; remove one or give them distinct names",
				id, positions[first], positions[i])
			continue
		}
		seen[id] = i
	}
	for _, it := range selected {
		checkPlaceholders(req, it, "generate: ")
	}
	if req.HasErrors() {
		return nil
	}
	tmpl, err := buildTemplate(s, selected)
	if err != nil {
		return err
	}
	// Check what was built before anyone deploys it: the generated template must pass its CRD
	// schema (the functionConfig's registration and manifestConfigs go into it as written), decode,
	// and pass the checks that need no AddOnDeploymentConfig.
	if _, valid := checkSchema(req, tmpl); !valid {
		return nil
	}
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

// earlierGeneration tells whether an input object is an AddOnTemplate this generate made before:
// named spec.templateName, or renamed from it by config-hash (annotation addonops.io/base-name,
// e.g. hello-template-bm6b5hbf74 from hello-template). Recognising it keeps a
// pipeline "addon-template generate, then config-hash" stable when it runs again on its own
// output, as kpt fn render does.
func earlierGeneration(n *yaml.RNode, s *settings) bool {
	if !isKind(n, addOnTemplateKind) {
		return false
	}
	return n.GetName() == s.TemplateName || n.GetAnnotations()[configref.BaseNameAnnotation] == s.TemplateName
}

// How agentManifest picks an object.
type pick int

const (
	pickNo      pick = iota // not an agent manifest
	pickDefault             // picked by the default rules or the selector
	pickForced              // annotated addonops.io/template-manifest: "true"
)

// agentManifest tells whether an input object is a candidate agent manifest for the template.
// Package and pipeline configuration, local configuration and previews never are; otherwise the
// annotation addonops.io/template-manifest decides when set, else OCM objects are not, and a
// selector must match. Hub-side objects are left out by the caller (see hubSide).
func agentManifest(n *yaml.RNode, s *settings) (pick, error) {
	if isLocalConfig(n) || isPreviewObject(n) {
		return pickNo, nil
	}
	switch n.GetApiVersion() {
	case "kpt.dev/v1", "kpt.dev/v1alpha1", "kustomize.config.k8s.io/v1beta1", "kustomize.config.k8s.io/v1alpha1",
		"config.kubernetes.io/v1", "config.kubernetes.io/v1alpha1", ConfigAPIVersion:
		return pickNo, nil // package and pipeline configuration, never agent manifests
	}
	if v, set := n.GetAnnotations()[TemplateManifestAnnotation]; set {
		switch v {
		case "true":
			return pickForced, nil
		case "false":
			return pickNo, nil
		default:
			return pickNo, fmt.Errorf("generate: %s: annotation %s must be \"true\" or \"false\", got %q", krmfn.Describe(n), TemplateManifestAnnotation, v)
		}
	}
	if isOCM(n) {
		return pickNo, nil
	}
	if s.labelSel != nil && !s.labelSel.Matches(labels.Set(n.GetLabels())) {
		return pickNo, nil
	}
	if s.annotationSel != nil && !s.annotationSel.Matches(labels.Set(n.GetAnnotations())) {
		return pickNo, nil
	}
	return pickDefault, nil
}

// inputPosition says where an input object is, for messages naming two of them: its file and
// index when the reader recorded them, else its place in the input.
func inputPosition(n *yaml.RNode, i int) string {
	if p, index, _ := kioutil.GetFileAnnotations(n); p != "" {
		if index == "" {
			index = "0"
		}
		return fmt.Sprintf("object %s of %s", index, p)
	}
	return fmt.Sprintf("input object %d", i)
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
			if orchestratorAnnotation(key) || key == TemplateManifestAnnotation {
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
