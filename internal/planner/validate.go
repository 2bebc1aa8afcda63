package planner

// The rendered manifests are checked before anything is planned, with the rule packages the KRM
// functions and the controller share (the functions are main packages; what they add is the
// plumbing of YAML nodes and results): the OCM CRD schemas (internal/crdschema, what the hub's API
// server rejects, as rollout-strategy and addon-template validate check it), the fields of the
// other add-on API version (configref.VersionProblems), the rollout strategies
// (rolloutrules.Check, the rollout-strategy function's and the controller's rules), the canary and
// maintenance window annotations (packages canary and maintwindow), the AddOnTemplates (package
// render, which addon-template validate and the deployer compile them with), and the config
// references (configref.Sites, which config-hash resolves). A plan of manifests the hub or the
// controller would refuse would show a rollout that never happens.

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/crdschema"
	"github.com/addonops/addonops/internal/maintwindow"
	"github.com/addonops/addonops/internal/render"
	"github.com/addonops/addonops/internal/rolloutplan"
	"github.com/addonops/addonops/internal/rolloutrules"
	"github.com/addonops/addonops/internal/verification"
)

// Problem is one thing wrong with an object of the rendered manifests.
type Problem struct {
	// Object names it: "ClusterManagementAddOn hello", "AddOnDeploymentConfig default/cfg".
	Object string `json:"object"`
	// Field is the field's path in the object ("" for the object as a whole).
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

func (p Problem) String() string {
	if p.Field == "" {
		return p.Object + ": " + p.Message
	}
	return p.Object + ": " + p.Field + ": " + p.Message
}

// InvalidManifestsError is the rendered manifests failing the checks the functions and the
// controller apply: nothing is planned.
type InvalidManifestsError struct {
	Problems []Problem
}

func (e *InvalidManifestsError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the rendered manifests are invalid (%d problem(s)); the hub or the controller would refuse them, so nothing is planned. Fix the sources (the KRM functions rollout-strategy, addon-template validate and config-hash report the same):", len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

// Annotation fields in problems.
var (
	canaryField       = "metadata.annotations[" + canary.Annotation + "]"
	windowsField      = "metadata.annotations[" + maintwindow.Annotation + "]"
	verificationField = "metadata.annotations[" + verification.Annotation + "]"
)

// validate checks the rendered manifests; h is the hub with the change applied (its configs and
// placements are the manifests' and the hub's), complete the config kinds whose every object the
// hub state holds (a reference to another kind cannot be judged).
func validate(objs []*unstructured.Unstructured, h *hub, complete map[configref.GroupResource]bool) error {
	var probs []Problem
	for _, u := range objs {
		probs = append(probs, validateObject(u, h, complete)...)
	}
	if len(probs) > 0 {
		return &InvalidManifestsError{Problems: probs}
	}
	return nil
}

func describe(u *unstructured.Unstructured) string {
	return u.GetKind() + " " + nsName(u.GetNamespace(), u.GetName())
}

func validateObject(u *unstructured.Unstructured, h *hub, complete map[configref.GroupResource]bool) []Problem {
	obj := describe(u)
	var probs []Problem
	add := func(field, msg string) { probs = append(probs, Problem{Object: obj, Field: field, Message: msg}) }

	if err := crdschema.OCM().CheckVersion(u.GetAPIVersion(), u.GetKind()); err != nil {
		add("apiVersion", err.Error())
		return probs
	}
	k, isOCM := crdschema.OCM().Lookup(u.GetAPIVersion(), u.GetKind())
	if !isOCM {
		return nil
	}
	node, err := kyaml.FromMap(u.Object)
	if err != nil {
		add("", err.Error())
		return probs
	}
	// The object as the API server stores it: numbers as it decodes them, the CRD's defaults.
	b, err := json.Marshal(u.Object)
	if err != nil {
		add("", err.Error())
		return probs
	}
	var stored map[string]any
	if err := utiljson.Unmarshal(b, &stored); err != nil {
		add("", err.Error())
		return probs
	}
	k.Default(stored)
	version := configref.VersionProblems(node)
	for _, p := range version {
		add(p.Path, p.Message)
	}
	group := configref.GroupOf(u.GetAPIVersion())
	isCMA := group == configref.AddonGroup && u.GetKind() == "ClusterManagementAddOn"
	if isCMA {
		cma := validateCMA(obj, u, h)
		probs = append(probs, cma...)
		if len(cma) > 0 || len(version) > 0 {
			// As rollout-strategy does: the schema's view of a strategy or annotation already
			// reported would only say it again.
			return probs
		}
	}
	for _, e := range configref.DropCovered(k.Validate(stored), version) {
		add(e.Field, e.ErrorBody())
	}
	if group == configref.AddonGroup && u.GetKind() == "AddOnTemplate" {
		probs = append(probs, validateTemplate(obj, stored)...)
	}
	if len(version) == 0 && configref.HoldsReferences(u.GetAPIVersion(), u.GetKind()) {
		probs = append(probs, validateReferences(obj, node, h, complete)...)
	}
	return probs
}

// validateCMA checks an add-on's rollout strategies, canaries and maintenance windows.
func validateCMA(obj string, u *unstructured.Unstructured, h *hub) []Problem {
	var probs []Problem
	add := func(field, msg string) { probs = append(probs, Problem{Object: obj, Field: field, Message: msg}) }
	entries, _, _ := unstructured.NestedSlice(u.Object, "spec", "installStrategy", "placements")
	install := map[canary.PlacementKey]int{}
	for i, e := range entries {
		m, ok := e.(map[string]any)
		if !ok {
			continue // the schema said so
		}
		path := fmt.Sprintf("spec.installStrategy.placements[%d]", i)
		ns, _ := m["namespace"].(string)
		name, _ := m["name"].(string)
		key := canary.PlacementKey{Namespace: ns, Name: name}
		install[key] = i // a placement listed twice is the schema's to report
		if rs, ok := m["rolloutStrategy"].(map[string]any); ok {
			for _, p := range rolloutrules.Check(path+".rolloutStrategy", rs) {
				add(p.Field, p.Message)
			}
		}
	}
	installKeys := slices.SortedFunc(maps.Keys(install), canary.Compare)
	names := func() string {
		s := make([]string, len(installKeys))
		for i, k := range installKeys {
			s[i] = k.String()
		}
		return strings.Join(s, ", ")
	}
	canaries, err := canary.Parse(u.GetAnnotations())
	if err != nil {
		add(canaryField, err.Error())
	}
	for _, gated := range slices.SortedFunc(maps.Keys(canaries), canary.Compare) {
		c := canaries[gated]
		if _, ok := install[gated]; !ok {
			add(canaryField, fmt.Sprintf("gates placement %s, which is not an install placement of this add-on (spec.installStrategy.placements: %s): a canary gates only its own add-on's placements", gated, names()))
		}
		if h.placements[rolloutplan.PlacementKey(c)] == nil {
			add(canaryField, fmt.Sprintf("canary placement %s is neither in the manifests nor on the hub: the placement it gates would wait for it forever", c))
		}
	}
	if cyc := canary.Cycles(canaries); len(cyc) > 0 {
		s := make([]string, len(cyc))
		for i, k := range cyc {
			s[i] = k.String()
		}
		add(canaryField, fmt.Sprintf("the canary placements %s form a cycle (or are gated through one): no placement of it could ever roll out", strings.Join(s, ", ")))
	}
	refs, err := verification.Parse(u.GetAnnotations())
	if err != nil {
		add(verificationField, err.Error())
	}
	for _, k := range refs.Placements() {
		if _, ok := install[k]; !ok {
			add(verificationField, fmt.Sprintf("placement %s is not an install placement of this add-on (spec.installStrategy.placements: %s); name one of them, or \"*\" (the controller holds every rollout of the add-on until it is fixed)", k, names()))
		}
	}
	ws, err := maintwindow.Parse(u.GetAnnotations())
	if err != nil {
		add(windowsField, err.Error())
	}
	for _, w := range ws {
		for _, k := range w.Keys() {
			if _, ok := install[k]; !ok {
				add(windowsField, fmt.Sprintf("window %d names placement %s, which is not an install placement of this add-on (spec.installStrategy.placements: %s); name one of them, or leave placements out for every placement (the controller holds every rollout of the add-on until it is fixed)", w.Index, k, names()))
			}
		}
	}
	return probs
}

// validateTemplate compiles an AddOnTemplate as the deployer and addon-template validate do: its
// manifests are objects, its placeholders terminated, its spec.addonName set.
func validateTemplate(obj string, stored map[string]any) []Problem {
	var probs []Problem
	add := func(field, msg string) { probs = append(probs, Problem{Object: obj, Field: field, Message: msg}) }
	b, err := json.Marshal(stored)
	if err != nil {
		add("", err.Error())
		return probs
	}
	t, err := render.DecodeAddOnTemplate(b)
	if err != nil {
		add("", err.Error())
		return probs
	}
	_, err = render.Compile(t)
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, err := range errs {
		if err == nil {
			continue
		}
		field := ""
		var re *render.Error
		if errors.As(err, &re) {
			field = re.Field
			if re.Manifest >= 0 {
				field = fmt.Sprintf("spec.agentSpec.workload.manifests[%d]", re.Manifest)
			}
		}
		add(field, err.Error())
	}
	return probs
}

// validateReferences checks that every config an add-on or a ManagedClusterAddOn references is in
// the manifests or on the hub, for the kinds whose objects the hub state holds completely.
func validateReferences(obj string, node *kyaml.RNode, h *hub, complete map[configref.GroupResource]bool) []Problem {
	sites, err := configref.Sites(node)
	if err != nil {
		return []Problem{{Object: obj, Message: err.Error()}}
	}
	var probs []Problem
	for _, s := range sites {
		if !complete[s.Ref.GroupResource] {
			continue
		}
		if _, ok := h.configs[s.Ref]; ok {
			continue
		}
		probs = append(probs, Problem{Object: obj, Field: s.Path, Message: fmt.Sprintf(
			"refers to %s, which is neither in the manifests nor on the hub: the controller would hold this add-on's clusters on it; add the config, or correct the reference", s.Ref)})
	}
	return probs
}
