// Package verification is the model of an add-on's verification gates: the ClusterManagementAddOn
// annotation that names, per install placement, the Argo Rollouts AnalysisTemplate (or
// ClusterAnalysisTemplate) whose metrics must pass after each batch of a rollout before the next
// batch starts (and after a canary placement's last batch, before the placements it gates adopt
// the version); the subset of the template's fields addonops supports, read from the object as
// unstructured data; and the analysis semantics of Argo Rollouts: measurements every interval,
// count of them, failure and inconclusive limits, success and failure conditions evaluated with
// github.com/expr-lang/expr. The measurements themselves (Prometheus queries, web requests) are
// I/O and live in internal/verifyrun; this package decides what a run's measurements add up to.
//
//	addonops.io/verification: '[{"placement": "default/canary", "template": "error-rate",
//	  "args": {"threshold": "0.05"}}]'
//
// docs/guides/verification.md is the user's guide, docs/spec/verification.md the rules.
package verification

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/addonops/addonops/internal/canary"
)

// Annotation is the ClusterManagementAddOn annotation naming the verification of each placement.
const Annotation = "addonops.io/verification"

// Example is a valid annotation value, for error messages.
const Example = `[{"placement": "default/canary", "template": "error-rate", "args": {"threshold": "0.05"}}]`

// Kinds of template a reference may name: Argo Rollouts' kinds (group argoproj.io, version
// v1alpha1).
const (
	KindAnalysisTemplate        = "AnalysisTemplate"
	KindClusterAnalysisTemplate = "ClusterAnalysisTemplate"
	// Group and Version are the API group and version of both kinds.
	Group   = "argoproj.io"
	Version = "v1alpha1"
)

// AllPlacements is the placement value of a reference that applies to every install placement
// without one of its own.
const AllPlacements = "*"

// Ref is one entry of the annotation: the template that verifies a placement's batches.
type Ref struct {
	// Placement is "namespace/name" of an install placement, or "*" for every placement without
	// an entry of its own.
	Placement string `json:"placement"`
	// Template is the template's name.
	Template string `json:"template"`
	// Kind is AnalysisTemplate (default) or ClusterAnalysisTemplate.
	Kind string `json:"kind,omitempty"`
	// Namespace of an AnalysisTemplate; the placement's namespace when empty. A
	// ClusterAnalysisTemplate has none.
	Namespace string `json:"namespace,omitempty"`
	// Args are values for the template's spec.args, over the built-in ones (BuiltinArgs).
	Args map[string]string `json:"args,omitempty"`
	// Continuous, when set, is run over and over while the placement rolls out a version
	// (continuous.go).
	Continuous *Continuous `json:"continuous,omitempty"`

	// Index is the entry's position in the annotation (0-based), to name it in messages.
	Index int `json:"-"`
}

// TemplateKey names the template a reference resolves to for placement p.
func (r Ref) TemplateKey(p canary.PlacementKey) TemplateKey {
	if r.Kind == KindClusterAnalysisTemplate {
		return TemplateKey{Kind: r.Kind, Name: r.Template}
	}
	ns := r.Namespace
	if ns == "" {
		ns = p.Namespace
	}
	return TemplateKey{Kind: KindAnalysisTemplate, Namespace: ns, Name: r.Template}
}

// TemplateKey names a template object.
type TemplateKey struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

func (k TemplateKey) String() string {
	if k.Namespace == "" {
		return k.Kind + " " + k.Name
	}
	return k.Kind + " " + k.Namespace + "/" + k.Name
}

// Refs are an add-on's verification references.
type Refs []Ref

// Parse reads the annotation from an object's annotations. No annotation means no verification
// (nil, nil).
func Parse(annotations map[string]string) (Refs, error) {
	raw, ok := annotations[Annotation]
	if !ok {
		return nil, nil
	}
	return ParseValue(raw)
}

// ParseValue reads the annotation's value: a JSON list of references, each with a placement
// ("namespace/name" or "*", at most one entry per placement) and a template name.
func ParseValue(raw string) (Refs, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.DisallowUnknownFields()
	var refs Refs
	if err := dec.Decode(&refs); err != nil {
		return nil, fmt.Errorf("annotation %s: want a JSON list of verifications such as %s: %w", Annotation, Example, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("annotation %s: text after the JSON list; want a list such as %s", Annotation, Example)
	}
	var errs []string
	seen := map[string]int{}
	for i := range refs {
		r := &refs[i]
		r.Index = i
		if r.Kind == "" {
			r.Kind = KindAnalysisTemplate
		}
		var problems []string
		switch {
		case r.Placement == "":
			problems = append(problems, `placement is empty: want "namespace/name" or "*"`)
		case r.Placement != AllPlacements:
			if _, err := canary.ParsePlacementKey(r.Placement); err != nil {
				problems = append(problems, fmt.Sprintf(`placement %q: want "namespace/name" or "*"`, r.Placement))
			}
		}
		if j, dup := seen[r.Placement]; dup && r.Placement != "" {
			problems = append(problems, fmt.Sprintf("placement %s has another entry (%d): one verification per placement; list its metrics in one template", r.Placement, j))
		}
		seen[r.Placement] = i
		problems = append(problems, templateProblems(batchFields, r.Template, r.Kind, r.Namespace, r.Args)...)
		problems = append(problems, r.Continuous.normalize()...)
		if len(problems) > 0 {
			errs = append(errs, fmt.Sprintf("verification %d: %s", i, strings.Join(problems, "; ")))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("annotation %s: %s", Annotation, strings.Join(errs, "; "))
	}
	return refs, nil
}

// templateFields say how an entry's template fields are named in its problems: its own (the batch
// runs') or those under continuous.
type templateFields struct {
	prefix, drop, runs, namespaceProblem string
}

var (
	batchFields      = templateFields{runs: "batch", namespaceProblem: "a ClusterAnalysisTemplate has no namespace: drop namespace"}
	continuousFields = templateFields{prefix: "continuous.", drop: ", or drop continuous", runs: "run",
		namespaceProblem: "continuous: a ClusterAnalysisTemplate has no namespace: drop continuous.namespace"}
)

// templateProblems returns what is wrong with one template reference of an entry (kind already
// defaulted): the same rules for the batch runs' template and the continuous one.
func templateProblems(f templateFields, template, kind, namespace string, args map[string]string) []string {
	var problems []string
	if template == "" {
		problems = append(problems, f.prefix+"template is empty: name an AnalysisTemplate"+f.drop)
	}
	switch kind {
	case KindAnalysisTemplate:
	case KindClusterAnalysisTemplate:
		if namespace != "" {
			problems = append(problems, f.namespaceProblem)
		}
	default:
		problems = append(problems, fmt.Sprintf("%skind %q: want %s or %s", f.prefix, kind, KindAnalysisTemplate, KindClusterAnalysisTemplate))
	}
	for name := range args {
		if _, builtin := builtinArgNames[name]; builtin {
			problems = append(problems, fmt.Sprintf("%sargs.%s: the controller sets %s for every %s; drop it", f.prefix, name, name, f.runs))
		}
	}
	return problems
}

// For returns the reference that verifies placement p: its own entry, else the "*" entry; nil
// when none does.
func (rs Refs) For(p canary.PlacementKey) *Ref {
	var all *Ref
	for i := range rs {
		switch rs[i].Placement {
		case p.String():
			return &rs[i]
		case AllPlacements:
			all = &rs[i]
		}
	}
	return all
}

// Placements lists the placements the references name ("*" left out), to check them against the
// add-on's install placements.
func (rs Refs) Placements() []canary.PlacementKey {
	var out []canary.PlacementKey
	for _, r := range rs {
		if r.Placement == AllPlacements {
			continue
		}
		if k, err := canary.ParsePlacementKey(r.Placement); err == nil {
			out = append(out, k)
		}
	}
	return out
}
