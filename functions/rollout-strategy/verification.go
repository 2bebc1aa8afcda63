package main

import (
	"maps"
	"slices"
	"strings"

	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/verification"
)

// verificationField is the field path of the verification annotation in messages.
const verificationField = "metadata.annotations[" + verification.Annotation + "]"

// templateKeyOf names a template object of the input; ok is false for any other object.
func templateKeyOf(it *yaml.RNode) (verification.TemplateKey, bool) {
	if it.GetApiVersion() != verification.Group+"/"+verification.Version {
		return verification.TemplateKey{}, false
	}
	switch it.GetKind() {
	case verification.KindAnalysisTemplate:
		return verification.TemplateKey{Kind: verification.KindAnalysisTemplate, Namespace: it.GetNamespace(), Name: it.GetName()}, true
	case verification.KindClusterAnalysisTemplate:
		return verification.TemplateKey{Kind: verification.KindClusterAnalysisTemplate, Name: it.GetName()}, true
	}
	return verification.TemplateKey{}, false
}

// checkVerification checks the add-on's verification gates as the controller will run them: the
// annotation parses and names install placements; every template it references for a placement
// is in the input (shipped with the add-on), decodes with the fields the controller supports, takes
// the arguments the reference gives, and each Prometheus query, its arguments filled with sample
// values, parses with Prometheus' own PromQL parser. A gate that would be invalid on the hub holds
// every rollout of the add-on there (or makes a batch inconclusive), so the build refuses it.
func checkVerification(cma *yaml.RNode, install map[canary.PlacementKey]int, templates map[verification.TemplateKey]*yaml.RNode) []problem {
	refs, err := verification.Parse(cma.GetAnnotations())
	if err != nil {
		return []problem{problemf(verificationField, "%v", err)}
	}
	if len(refs) == 0 {
		return nil
	}
	keys := slices.SortedFunc(maps.Keys(install), canary.Compare)
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.String()
	}
	var probs []problem
	for _, k := range refs.Placements() {
		if _, ok := install[k]; !ok {
			probs = append(probs, problemf(verificationField, "placement %s is not an install placement of this add-on (spec.installStrategy.placements: %s); name one of them, or \"*\"",
				k, strings.Join(names, ", ")))
		}
	}
	checked := map[checkedTemplate]bool{}
	for _, p := range keys {
		ref := refs.For(p)
		if ref == nil {
			continue
		}
		// The batch runs' template, and the continuous one (continuous.go) with its own args.
		for _, r := range runsOf(*ref) {
			key := r.ref.TemplateKey(p)
			if checked[checkedTemplate{key, r.continuous}] {
				continue
			}
			checked[checkedTemplate{key, r.continuous}] = true
			obj, ok := templates[key]
			if !ok {
				probs = append(probs, problemf(verificationField, "verification %d: %s%s (for placement %s) is not in the input: ship the template with the add-on, or fix the reference",
					ref.Index, r.what, key, p))
				continue
			}
			probs = append(probs, checkTemplate(obj, r.ref, p)...)
		}
	}
	return probs
}

// checkTemplate decodes a template and resolves it as a run for a sample batch of placement p
// would, and parses its Prometheus queries.
func checkTemplate(obj *yaml.RNode, ref verification.Ref, p canary.PlacementKey) []problem {
	var m map[string]any
	if err := obj.YNode().Decode(&m); err != nil {
		return []problem{problemf(verificationField, "verification %d: reading the template: %v", ref.Index, err)}
	}
	tmpl, err := verification.Decode(m)
	if err != nil {
		return []problem{problemf(verificationField, "verification %d: %v", ref.Index, err)}
	}
	sample := verification.NewBatch("addon", p.String(), "0123456789", 1, []string{"cluster1", "cluster2"})
	metrics, err := tmpl.Resolve(sample.BuiltinArgs(), ref.Args)
	if err != nil {
		return []problem{problemf(verificationField, "verification %d: %v", ref.Index, err)}
	}
	var probs []problem
	for _, mt := range metrics {
		if mt.Prometheus == nil {
			continue
		}
		if _, err := parser.ParseExpr(mt.Prometheus.Query); err != nil {
			probs = append(probs, problemf(verificationField, "verification %d: %s: metric %s: the query does not parse as PromQL (with the arguments of a sample batch): %v",
				ref.Index, tmpl.Key, mt.Name, err))
		}
	}
	return probs
}

// verificationTemplates indexes the template objects of the input.
func verificationTemplates(items []*yaml.RNode) map[verification.TemplateKey]*yaml.RNode {
	out := map[verification.TemplateKey]*yaml.RNode{}
	for _, it := range items {
		if k, ok := templateKeyOf(it); ok {
			out[k] = it
		}
	}
	return out
}
