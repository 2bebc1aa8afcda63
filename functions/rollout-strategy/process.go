package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/crdschema"
	"github.com/addonops/addonops/internal/krmfn"
	"github.com/addonops/addonops/internal/maintwindow"
	"github.com/addonops/addonops/internal/verification"
)

const (
	addonGroup   = "addon.open-cluster-management.io"
	clusterGroup = "cluster.open-cluster-management.io"
	// annotationField is the field path of the canary annotation in messages.
	annotationField = "metadata.annotations[" + canary.Annotation + "]"
	// windowsField is the field path of the maintenance windows annotation in messages.
	windowsField = "metadata.annotations[" + maintwindow.Annotation + "]"
)

// addonVersions are the ClusterManagementAddOn versions whose install strategy this function
// knows; both have spec.installStrategy.placements[].rolloutStrategy.
var addonVersions = []string{"v1alpha1", "v1beta1"}

// process translates and validates every ClusterManagementAddOn of the request. Every problem of
// every add-on is reported; with any, nothing is written (krmfn's contract).
func process(req *krmfn.Request) error {
	cfg, err := parseConfig(req.FunctionConfig)
	if err != nil {
		return err
	}
	placements := map[canary.PlacementKey]bool{}
	for _, it := range req.Items {
		if group(it) == clusterGroup && it.GetKind() == "Placement" {
			placements[canary.PlacementKey{Namespace: it.GetNamespace(), Name: it.GetName()}] = true
		}
	}
	in := inputPlacements{all: placements, unused: maps.Clone(placements), templates: verificationTemplates(req.Items)}
	for k := range usedPlacements(req.Items) {
		delete(in.unused, k)
	}
	for _, it := range req.Items {
		switch {
		case group(it) == addonGroup && it.GetKind() == "ClusterManagementAddOn":
			before := len(req.Results)
			// A field of the other API version first: the hub would drop it (docs/v1beta1.md).
			for _, p := range configref.VersionProblems(it) {
				req.Errorf(it, p.Path, "ClusterManagementAddOn %s: %s: %s", it.GetName(), p.Path, p.Message)
			}
			processAddon(req, it, cfg, in)
			// The add-on as it goes out must be what the hub's API server accepts. Checked only
			// when its strategies and canaries are fine: a strategy still in the design's
			// vocabulary, or one already reported, would only be reported again.
			if !hasErrorSince(req, before) {
				checkSchema(req, it)
			}
		case group(it) == clusterGroup && it.GetKind() == "Placement":
			checkSchema(req, it)
		}
	}
	return nil
}

// inputPlacements are the Placement objects of the input.
type inputPlacements struct {
	all map[canary.PlacementKey]bool
	// unused are those no ClusterManagementAddOn of the input names, as an install placement or a
	// canary: where an install placement that is not in the input was most likely meant to point.
	unused map[canary.PlacementKey]bool
	// templates are the verification templates of the input (verification.go).
	templates map[verification.TemplateKey]*yaml.RNode
}

// usedPlacements returns the placements the ClusterManagementAddOns of the input name, as install
// placements or canaries (annotation or RollingUpdateWithCanary). It reads leniently and skips
// what is malformed: processAddon reports that.
func usedPlacements(items []*yaml.RNode) map[canary.PlacementKey]bool {
	used := map[canary.PlacementKey]bool{}
	add := func(n *yaml.RNode) {
		if n != nil && n.YNode().Kind == yaml.MappingNode {
			if k, probs := placementKey(n, ""); len(probs) == 0 {
				used[k] = true
			}
		}
	}
	for _, it := range items {
		if group(it) != addonGroup || it.GetKind() != "ClusterManagementAddOn" {
			continue
		}
		if m, err := canary.Parse(it.GetAnnotations()); err == nil {
			for _, c := range m {
				used[c] = true
			}
		}
		entries, _ := installPlacements(it)
		for _, e := range entries {
			ps := yaml.NewRNode(e)
			add(ps)
			if e.Kind == yaml.MappingNode {
				c, _ := ps.Pipe(yaml.Lookup("rolloutStrategy", "rollingUpdateWithCanary", "placement"))
				add(c)
			}
		}
	}
	return used
}

// checkSchema checks an object against its CRD schema in OCM's API (internal/crdschema), as the
// hub's API server would on create, reporting each field error on it. An apiVersion its CRD does
// not serve is an error.
func checkSchema(req *krmfn.Request, obj *yaml.RNode) {
	desc := krmfn.Describe(obj)
	if err := crdschema.OCM().CheckVersion(obj.GetApiVersion(), obj.GetKind()); err != nil {
		req.Errorf(obj, "apiVersion", "%s: %v", desc, err)
		return
	}
	k, ok := crdschema.OCM().Lookup(obj.GetApiVersion(), obj.GetKind())
	if !ok {
		return
	}
	j, err := obj.MarshalJSON()
	if err != nil {
		req.Errorf(obj, "", "%s: %v", desc, err)
		return
	}
	var m map[string]any
	if err := utiljson.Unmarshal(j, &m); err != nil {
		req.Errorf(obj, "", "%s: %v", desc, err)
		return
	}
	// A field of the other add-on API version is reported as such (process), not as unknown.
	req.FieldErrors(obj, "", configref.DropCovered(k.Validate(m), configref.VersionProblems(obj)))
}

func hasErrorSince(req *krmfn.Request, n int) bool {
	for _, r := range req.Results[n:] {
		if r.Severity == framework.Error {
			return true
		}
	}
	return false
}

func group(obj *yaml.RNode) string {
	g, _, ok := strings.Cut(obj.GetApiVersion(), "/")
	if !ok {
		return ""
	}
	return g
}

// processAddon translates the rollout strategies of one ClusterManagementAddOn and checks them and
// its canary annotation. The annotation is rewritten (merged, canonical form) only when a
// RollingUpdateWithCanary was translated, so an add-on already in OCM's vocabulary keeps its bytes.
func processAddon(req *krmfn.Request, cma *yaml.RNode, cfg settings, placements inputPlacements) {
	desc := "ClusterManagementAddOn " + cma.GetName()
	report := func(p problem) {
		req.Errorf(cma, p.field, "%s: %s: %s", desc, p.field, p.msg)
	}
	_, version, _ := strings.Cut(cma.GetApiVersion(), "/")
	if !slices.Contains(addonVersions, version) {
		report(problemf("apiVersion", "%s is not a version this function knows (%s/%s); its rollout strategies would go unchecked",
			cma.GetApiVersion(), addonGroup, strings.Join(addonVersions, ", "+addonGroup+"/")))
		return
	}

	existing, err := canary.Parse(cma.GetAnnotations())
	if err != nil {
		req.Errorf(cma, annotationField, "%s: %v", desc, err)
		return
	}

	entries, p := installPlacements(cma)
	if p != nil {
		report(*p)
		return
	}

	var probs []problem
	install := map[canary.PlacementKey]int{} // install placement → its index
	added := map[canary.PlacementKey]canary.PlacementKey{}
	addedAt := map[canary.PlacementKey]string{} // gated → field of its rollingUpdateWithCanary.placement
	var infos []problem                         // what was translated, said only when all is well
	for i, e := range entries {
		path := fmt.Sprintf("spec.installStrategy.placements[%d]", i)
		ps := yaml.NewRNode(e)
		if e.Kind != yaml.MappingNode {
			probs = append(probs, problemf(path, "must be a mapping {name, namespace, configs, rolloutStrategy}"))
			continue
		}
		key, keyProbs := placementKey(ps, path)
		probs = append(probs, keyProbs...)
		if len(keyProbs) == 0 {
			if j, dup := install[key]; dup {
				probs = append(probs, problemf(path, "placement %s is listed twice (also placements[%d]); OCM keeps one entry per placement", key, j))
			}
			install[key] = i
		}
		f := ps.Field("rolloutStrategy")
		if f == nil || f.Value.YNode().Tag == yaml.NodeTagNull {
			continue // OCM's default, All
		}
		rpath := path + ".rolloutStrategy"
		tr, trProbs := translateStrategy(f.Value, rpath)
		if len(trProbs) > 0 {
			probs = append(probs, trProbs...)
			continue
		}
		probs = append(probs, validateStrategy(f.Value, rpath)...)
		if tr.from != "" {
			infos = append(infos, problemf(rpath, "%s → %s", tr.from, yaml.GetValue(f.Value.Field("type").Value)))
		}
		if tr.canary == nil || len(keyProbs) > 0 {
			continue
		}
		switch c, ok := existing[key]; {
		case *tr.canary == key:
			probs = append(probs, problemf(tr.canaryField, "placement %s cannot be its own canary", key))
			continue
		case ok && c != *tr.canary:
			probs = append(probs, problemf(tr.canaryField, "names canary %s, but annotation %s already gives %s the canary %s; keep one",
				tr.canary, canary.Annotation, key, c))
			continue
		}
		added[key], addedAt[key] = *tr.canary, tr.canaryField
	}

	merged := maps.Clone(existing)
	if merged == nil {
		merged = map[canary.PlacementKey]canary.PlacementKey{}
	}
	maps.Copy(merged, added)
	probs = append(probs, checkCanaries(merged, addedAt, install, placements.all, cfg)...)
	missing, warns := checkInstallPlacements(install, placements, cfg)
	probs = append(probs, missing...)
	probs = append(probs, checkWindows(cma, install)...)
	probs = append(probs, checkVerification(cma, install, placements.templates)...)

	// Warnings are reported alongside errors too, so that one failed build shows all there is to fix.
	for _, w := range warns {
		req.Warningf(cma, w.field, "%s: %s: %s", desc, w.field, w.msg)
	}
	for _, p := range probs {
		if p.field == "" {
			p.field = annotationField
		}
		report(p)
	}
	if len(probs) > 0 {
		return
	}
	for _, in := range infos {
		req.Infof(cma, in.field, "%s: %s: %s", desc, in.field, in.msg)
	}
	if len(added) == 0 {
		return
	}
	if err := cma.PipeE(yaml.SetAnnotation(canary.Annotation, canary.Format(merged))); err != nil {
		req.Errorf(cma, annotationField, "%s: writing annotation %s: %v", desc, canary.Annotation, err)
	}
}

// checkCanaries checks the canary placements of one add-on (annotation and translated ones):
//   - a canary gates only a placement of its own add-on (an install placement of the same
//     ClusterManagementAddOn): the controller reads the annotation per add-on, so an entry for
//     another add-on's placement would gate nothing;
//   - the canary placement may be any Placement
//     (docs/design/lifecycle.md#the-canary-placement-is-a-reference): the controller judges it by
//     what its clusters' ManagedClusterAddOns run, whichever placement or MCA gave them the
//     configs;
//   - the canary Placement object is in the input, or listed in spec.externalPlacements;
//   - no canary cycle (a placement gated, directly or not, by itself).
//
// Problems without a field are about the annotation.
func checkCanaries(canaries map[canary.PlacementKey]canary.PlacementKey, addedAt map[canary.PlacementKey]string,
	install map[canary.PlacementKey]int, placements map[canary.PlacementKey]bool, cfg settings) []problem {
	var probs []problem
	for _, gated := range slices.SortedFunc(maps.Keys(canaries), canary.Compare) {
		c := canaries[gated]
		field := addedAt[gated] // "" for an entry of the annotation
		if _, ok := install[gated]; !ok {
			probs = append(probs, problemf(field, "gates placement %s, which is not an install placement of this add-on (spec.installStrategy.placements): a canary gates only its own add-on's placements; remove the entry or add the placement",
				gated))
		}
		if !placements[c] && !cfg.external[c] {
			probs = append(probs, problemf(field, "canary placement %s is not in the input: add its Placement to the package, correct the name or namespace, or list %q in the functionConfig's spec.externalPlacements if it is applied from elsewhere",
				c, c.String()))
		}
	}
	if cyc := canary.Cycles(canaries); len(cyc) > 0 {
		var names []string
		for _, k := range cyc {
			names = append(names, k.String())
		}
		probs = append(probs, problemf("", "the canary placements %s form a cycle (or are gated through one): no placement of it could ever roll out",
			strings.Join(names, ", ")))
	}
	return probs
}

// checkInstallPlacements checks that every install placement of one add-on names a Placement of the
// input (or one listed in spec.externalPlacements). OCM installs an add-on through a placement
// that does not exist on no cluster at all, and says so nowhere a build shows, so a missing one is
//   - under strict, an error: every Placement lives in Git;
//   - otherwise a warning when the input has a Placement that no add-on of it uses: the install
//     placement most likely misspells that one. A package that keeps only its canary Placement in
//     Git, its install placements on the hub, gets no warning;
//   - otherwise nothing: the Placement lives on the hub.
func checkInstallPlacements(install map[canary.PlacementKey]int, placements inputPlacements, cfg settings) (errs, warns []problem) {
	keys := slices.SortedFunc(maps.Keys(install), func(a, b canary.PlacementKey) int { return install[a] - install[b] })
	for _, key := range keys {
		if placements.all[key] || cfg.external[key] {
			continue
		}
		field := fmt.Sprintf("spec.installStrategy.placements[%d]", install[key])
		switch {
		case cfg.strict:
			in := "the input has no Placement"
			if len(placements.all) > 0 {
				in = "the input's Placements: " + describe(placements.all)
			}
			errs = append(errs, problemf(field, "placement %s is not in the input (%s; strict: true): add its Placement to the package, correct the name or namespace, list %q in the functionConfig's spec.externalPlacements if it is applied from elsewhere, or, if the Placements live only on the hub, turn strict off",
				key, in, key.String()))
		case len(placements.unused) > 0:
			warns = append(warns, problemf(field, "placement %s is not in the input, which has Placements no add-on uses (%s): a misspelled name or namespace? A placement that does not exist installs the add-on on no cluster; correct it, or list %q in the functionConfig's spec.externalPlacements if it is applied from elsewhere (strict: true makes this an error)",
				key, describe(placements.unused), key.String()))
		}
	}
	return errs, warns
}

// describe lists placements for a message, sorted, so that a misspelling shows next to the right
// name; a long list is cut short.
func describe(placements map[canary.PlacementKey]bool) string {
	const shown = 5
	var names []string
	for _, k := range slices.SortedFunc(maps.Keys(placements), canary.Compare) {
		if len(names) == shown {
			names = append(names, fmt.Sprintf("and %d more", len(placements)-shown))
			break
		}
		names = append(names, k.String())
	}
	return strings.Join(names, ", ")
}

// installPlacements returns the entries of spec.installStrategy.placements; absent or null
// anywhere on the way means none.
func installPlacements(cma *yaml.RNode) ([]*yaml.Node, *problem) {
	n := cma.YNode()
	path := ""
	for _, f := range []string{"spec", "installStrategy", "placements"} {
		if n.Kind != yaml.MappingNode {
			p := problemf(path, "must be a mapping")
			return nil, &p
		}
		v := yaml.NewRNode(n).Field(f)
		if v == nil || v.Value.YNode().Tag == yaml.NodeTagNull {
			return nil, nil
		}
		n = v.Value.YNode()
		path = strings.TrimPrefix(path+"."+f, ".")
	}
	if n.Kind != yaml.SequenceNode {
		p := problemf(path, "must be a list")
		return nil, &p
	}
	return n.Content, nil
}

// checkWindows checks the add-on's maintenance windows (package maintwindow) as the controller
// reads them: a window whose cron, duration or time zone does not parse, or that names a placement
// the add-on does not install, holds every rollout of the add-on on the hub (fail closed), so the
// build refuses it.
func checkWindows(cma *yaml.RNode, install map[canary.PlacementKey]int) []problem {
	ws, err := maintwindow.Parse(cma.GetAnnotations())
	if err != nil {
		return []problem{problemf(windowsField, "%v", err)}
	}
	var probs []problem
	for _, w := range ws {
		for _, k := range w.Keys() {
			if _, ok := install[k]; !ok {
				names := make([]string, 0, len(install))
				for _, ik := range slices.SortedFunc(maps.Keys(install), canary.Compare) {
					names = append(names, ik.String())
				}
				probs = append(probs, problemf(windowsField, "window %d names placement %s, which is not an install placement of this add-on (spec.installStrategy.placements: %s); name one of them, or leave placements out for every placement",
					w.Index, k, strings.Join(names, ", ")))
			}
		}
	}
	return probs
}
