package main

import (
	"encoding/json"
	"fmt"
	"strings"

	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/krmfn"
	"github.com/addonops/addonops/internal/render"
)

const (
	localConfigAnnotation = "config.kubernetes.io/local-config"
	// PreviewClusterAnnotation and PreviewTemplateAnnotation mark the objects a preview emits: for
	// which cluster and from which AddOnTemplate. A preview replaces earlier preview objects.
	PreviewClusterAnnotation  = "addonops.io/preview-cluster"
	PreviewTemplateAnnotation = "addonops.io/preview-template"

	addOnTemplateKind         = "AddOnTemplate"
	addOnDeploymentConfigKind = "AddOnDeploymentConfig"
)

func isKind(n *yaml.RNode, kind string) bool {
	return n.GetKind() == kind && configref.GroupOf(n.GetApiVersion()) == configref.AddonGroup
}

// isOCM tells whether an object belongs to an Open Cluster Management API group.
func isOCM(n *yaml.RNode) bool {
	g := configref.GroupOf(n.GetApiVersion())
	return g == "open-cluster-management.io" || strings.HasSuffix(g, ".open-cluster-management.io")
}

func isLocalConfig(n *yaml.RNode) bool {
	return n.GetAnnotations()[localConfigAnnotation] == "true"
}

func isPreviewObject(n *yaml.RNode) bool {
	_, ok := n.GetAnnotations()[PreviewClusterAnnotation]
	return ok
}

// orchestratorAnnotation tells whether an annotation is bookkeeping of kustomize, kpt or the KRM
// function runtime rather than part of the object.
func orchestratorAnnotation(key string) bool {
	switch key {
	case kioutil.LegacyIndexAnnotation, kioutil.LegacyPathAnnotation, kioutil.LegacyIdAnnotation,
		"kustomize.config.k8s.io/id", "kustomize.config.k8s.io/needs-hash", "kustomize.config.k8s.io/behavior":
		return true
	}
	return strings.HasPrefix(key, "internal.config.kubernetes.io/")
}

// template is an AddOnTemplate of the input, decoded as the hub stores it (CRD defaults applied).
type template struct {
	node *yaml.RNode
	obj  *addonv1alpha1.AddOnTemplate
}

// deploymentConfig is an AddOnDeploymentConfig of the input, decoded as the hub stores it (CRD
// defaults applied: agentInstallNamespace left out is open-cluster-management-agent-addon).
type deploymentConfig struct {
	node *yaml.RNode
	obj  *addonv1alpha1.AddOnDeploymentConfig
	// valid tells whether it passed its CRD schema (reported otherwise): validate renders only
	// with valid ones.
	valid bool
}

func (d deploymentConfig) ref() ObjectRef {
	return ObjectRef{Namespace: d.node.GetNamespace(), Name: d.node.GetName()}
}

// cleanJSON is an object's JSON without orchestrator annotations.
func cleanJSON(n *yaml.RNode) ([]byte, error) {
	c := n.Copy()
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
	return c.MarshalJSON()
}

// decodeInputs checks the AddOnTemplates and AddOnDeploymentConfigs of the input (previews of
// earlier runs aside) against their CRD schemas and decodes them as the hub would store them,
// reporting an error result for each schema violation and for each object that does not decode.
// An object that fails its schema is still returned when it decodes (an ADC marked invalid), so
// that validate can report what else is wrong with it; one that does not decode is left out.
func decodeInputs(req *krmfn.Request) ([]template, []deploymentConfig) {
	var tpls []template
	var adcs []deploymentConfig
	for _, it := range req.Items {
		if isPreviewObject(it) {
			continue
		}
		isTemplate, isADC := isKind(it, addOnTemplateKind), isKind(it, addOnDeploymentConfigKind)
		if !isTemplate && !isADC {
			continue
		}
		if !checkPlaceholders(req, it, "") {
			continue
		}
		m, valid := checkSchema(req, it)
		if m == nil {
			continue
		}
		j, err := json.Marshal(m)
		if err == nil {
			if isTemplate {
				var t *addonv1alpha1.AddOnTemplate
				if t, err = render.DecodeAddOnTemplate(j); err == nil {
					tpls = append(tpls, template{node: it, obj: t})
					continue
				}
			} else {
				var adc *addonv1alpha1.AddOnDeploymentConfig
				if adc, err = render.DecodeAddOnDeploymentConfig(j); err == nil {
					adcs = append(adcs, deploymentConfig{node: it, obj: adc, valid: valid})
					continue
				}
			}
		}
		if valid {
			// What fails its schema does not decode for the same reason: said once is enough.
			req.Errorf(it, "", "%s: %v", krmfn.Describe(it), err)
		}
	}
	return tpls, adcs
}

// manifestField is the path of a field inside a template's manifest.
func manifestField(index int, field string) string {
	p := fmt.Sprintf("spec.agentSpec.workload.manifests[%d]", index)
	switch {
	case field == "":
		return p
	case strings.HasPrefix(field, "["):
		return p + field
	default:
		return p + "." + field
	}
}

// checkPlaceholders records an error for an unquoted {{VAR}} in n, telling where and how to fix it.
func checkPlaceholders(req *krmfn.Request, n *yaml.RNode, prefix string) bool {
	field, text := unquotedPlaceholder(n)
	if field == "" {
		return true
	}
	req.Errorf(n, field, "%s%s: unquoted %s at %s: YAML reads it as a map, not as a variable; quote it, e.g. \"%s\"",
		prefix, krmfn.Describe(n), text, field, strings.TrimSuffix(text, " (as a key)"))
	return false
}

// unquotedPlaceholder finds a {{VAR}} written without quotes, which YAML reads as a flow mapping
// whose only key is itself the mapping {VAR: null} (e.g. `image: {{IMAGE}}`): such an object has
// no JSON form, and the YAML library's error ("invalid map key") says neither where nor why. It
// returns the field path and the placeholder as written, or "" when there is none.
func unquotedPlaceholder(n *yaml.RNode) (field, text string) {
	return findPlaceholder(n.YNode(), "")
}

func findPlaceholder(n *yaml.Node, at string) (string, string) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if f, t := findPlaceholder(c, at); f != "" {
				return f, t
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if f, t := findPlaceholder(c, fmt.Sprintf("%s[%d]", at, i)); f != "" {
				return f, t
			}
		}
	case yaml.MappingNode:
		if t := placeholderText(n); t != "" {
			return orRoot(at), t
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, value := n.Content[i], n.Content[i+1]
			if key.Kind != yaml.ScalarNode {
				text := placeholderText(key)
				if text == "" {
					text = "{...}"
				}
				return orRoot(at), text + " (as a key)"
			}
			child := key.Value
			if at != "" {
				child = at + "." + key.Value
			}
			if f, t := findPlaceholder(value, child); f != "" {
				return f, t
			}
		}
	}
	return "", ""
}

// placeholderText tells whether a mapping node is what YAML makes of an unquoted {{VAR}}: one
// entry whose key is a mapping with one null-valued scalar key, and whose value is null. kpt
// passes the nulls on as empty quoted strings.
func placeholderText(n *yaml.Node) string {
	if n.Kind != yaml.MappingNode || len(n.Content) != 2 {
		return ""
	}
	key, value := n.Content[0], n.Content[1]
	if key.Kind != yaml.MappingNode || len(key.Content) != 2 || !nullish(value) {
		return ""
	}
	if key.Content[0].Kind != yaml.ScalarNode || !nullish(key.Content[1]) {
		return ""
	}
	return "{{" + key.Content[0].Value + "}}"
}

func nullish(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && (n.Tag == yaml.NodeTagNull || n.Value == "")
}

func orRoot(field string) string {
	if field == "" {
		return "the object's top level"
	}
	return field
}
