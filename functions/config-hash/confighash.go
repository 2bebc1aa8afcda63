package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/crdschema"
	"github.com/addonops/addonops/internal/krmfn"
	"github.com/addonops/addonops/internal/spechash"
)

// Annotations config-hash reads and writes.
const (
	// AnnotationHashSuffix opts an object in ("true") or out ("false").
	AnnotationHashSuffix = configref.HashSuffixAnnotation
	// AnnotationBaseName holds the name before suffixing; with it, re-runs recognise a hashed
	// object and derive a new name from the same base when the content changed in place.
	AnnotationBaseName = configref.BaseNameAnnotation
	// AnnotationContentHash holds the full content hash (OCM's spec hash of the object).
	AnnotationContentHash = configref.ContentHashAnnotation

	AnnotationArgoSyncOptions    = "argocd.argoproj.io/sync-options"
	AnnotationArgoCompareOptions = "argocd.argoproj.io/compare-options"
	AnnotationFluxPrune          = "kustomize.toolkit.fluxcd.io/prune"

	// The options prune protection stamps: Argo CD must neither delete a superseded version
	// (Prune=false) nor report the Application OutOfSync because of it (IgnoreExtraneous: a
	// version removed from Git stays on the hub until the controller collects it).
	argoNoPrune          = "Prune=false"
	argoIgnoreExtraneous = "IgnoreExtraneous"
	fluxPruneDisabled    = "disabled"

	annotationLocalConfig = "config.kubernetes.io/local-config"
	// Build annotations kustomize puts on objects while it builds (read, never written).
	kustomizeNeedsHashSuffix   = "internal.config.kubernetes.io/needsHashSuffix"
	kustomizePreviousNames     = "internal.config.kubernetes.io/previousNames"
	kustomizePreviousNamespace = "internal.config.kubernetes.io/previousNamespaces"
	kustomizePreviousKinds     = "internal.config.kubernetes.io/previousKinds"
)

const suffixLen = spechash.SuffixLen

// object is one input item as config-hash sees it.
type object struct {
	index                        int               // in the stream's items
	ref                          krmfn.Ref         // names it in results
	ann                          map[string]string // the annotations config-hash reads
	group, kind, namespace, name string            // as the input names it
	info                         configref.Kind    // valid when known
	known                        bool
	// Set for objects that get a suffix.
	hashed     bool
	base, hash string
	final      string // the name in the output
	// Worked out while scanning, when the object's YAML is at hand, and reported in their phase.
	hashVal string
	hashErr error
	// pending is the JSON of a candidate whose kind OCM's CRDs do not define, hashed by settle;
	// schemaErrs are what its schema check found.
	pending    map[string]any
	schemaErrs field.ErrorList
	// sameContent is the config of the same kind and content whose check this one shares: only
	// its metadata errors are its own.
	sameContent *object
	quoted      []yaml11Boolean
	sites       []siteRef
	sitesErr    error
}

// siteRef is a config reference found while scanning: configref.Site without its YAML.
type siteRef struct {
	Path string
	Ref  configref.Ref
}

// readAnnotations are the annotations config-hash decides with; an object keeps only these.
var readAnnotations = []string{AnnotationHashSuffix, AnnotationBaseName, AnnotationContentHash, AnnotationArgoSyncOptions,
	AnnotationArgoCompareOptions, AnnotationFluxPrune, annotationLocalConfig, kustomizeNeedsHashSuffix, kustomizePreviousNames,
	kustomizePreviousNamespace, kustomizePreviousKinds, kioutil.PathAnnotation}

// describe names the object as the input does, like krmfn.Describe.
func (o *object) describe() string {
	if o.namespace != "" {
		return o.kind + " " + o.namespace + "/" + o.name
	}
	return o.kind + " " + o.name
}

// scopedNamespace is the namespace that takes part in the object's identity: none for
// cluster-scoped kinds, even if a tool (kustomize's namespace: field) stamped one on it.
func (o *object) scopedNamespace() string {
	if o.known && !o.info.Namespaced {
		return ""
	}
	return o.namespace
}

// refKey is what a reference matches: group/resource, namespace for namespaced kinds, name.
type refKey struct {
	gr        configref.GroupResource
	namespace string
	name      string
}

// rewrite is one reference to point at a new name: the site of that index in its holder.
type rewrite struct {
	site int
	obj  *object
	name string
}

// run is one invocation's state.
type run struct {
	s        *krmfn.Stream
	settings settings
	kinds    *configref.Kinds
	grKinds  map[configref.GroupResource]*configref.Kind
	objects  []*object
	// current maps each object's current identity to it; aliases maps names it had before
	// (its base name, kustomize's previous names) to it; byName ignores the namespace, to explain
	// references that miss by namespace only.
	current map[refKey]*object
	aliases map[refKey][]*object
	byName  map[refKey][]*object
	// renamed maps every name a reference may still use for a config this run renames (its name in
	// the input, its base name) to the configs, whatever their group, resource and namespace: a
	// reference with such a name that resolves to nothing is stale.
	renamed map[string][]*object
	// rewrites are by the index of the holder's item.
	rewrites  map[int][]rewrite
	nRewrites int
	byIndex   []*object // by item index; nil for items that are not objects config-hash keeps
	// kindErrs are what learning kinds from CustomResourceDefinitions found while scanning;
	// schemaWarnings what taking their schemas did.
	kindErrs, schemaWarnings []kindErr
	// checks run the schema checks; inputSchemas are OCM's and the input's CRDs.
	checks       *checks
	inputSchemas *crdschema.Schemas
	checked      map[contentKey]*object
}

type kindErr struct {
	ref krmfn.Ref
	msg string
}

func (r *run) errorf(o *object, field, format string, args ...any) {
	r.s.Report(framework.Error, refOf(o), field, format, args...)
}

func (r *run) warningf(o *object, field, format string, args ...any) {
	r.s.Report(framework.Warning, refOf(o), field, format, args...)
}

func (r *run) infof(o *object, field, format string, args ...any) {
	r.s.Report(framework.Info, refOf(o), field, format, args...)
}

func refOf(o *object) krmfn.Ref {
	if o == nil {
		return krmfn.Ref{}
	}
	return o.ref
}

// process is the function: hash configs, rename them, rewrite references. It goes through the
// input once, keeping of each object only what it decides with, and returns the transform that
// applies its decisions while the output is written, one object at a time.
func process(st *krmfn.Stream) (krmfn.Transform, error) {
	if fc := st.FunctionConfig; fc != nil && !isObject(fc) && !fc.IsNilOrEmpty() {
		// Not passed to Errorf as the object: kyaml's accessors panic on non-mapping nodes.
		st.Errorf(nil, "", "functionConfig must be a %s %s or v1 ConfigMap object, got a YAML %s", ConfigAPIVersion, ConfigKind, kindName(fc.YNode().Kind))
		return nil, nil
	}
	s, err := parseConfig(st.FunctionConfig)
	if err != nil {
		st.Errorf(st.FunctionConfig, "", "%v", err)
		return nil, nil
	}
	r := &run{s: st, settings: s, kinds: configref.NewKinds(), grKinds: map[configref.GroupResource]*configref.Kind{},
		current: map[refKey]*object{}, aliases: map[refKey][]*object{}, byName: map[refKey][]*object{},
		renamed: map[string][]*object{}, rewrites: map[int][]rewrite{}, byIndex: make([]*object, len(st.Items)),
		checks: startChecks(), inputSchemas: crdschema.OCM(), checked: map[contentKey]*object{}}
	err = r.scan()
	r.checks.wait()
	if err != nil {
		return nil, err
	}
	// Each phase reports every problem it finds, and nothing is changed unless all phases pass.
	if r.learnKinds(); st.HasErrors() {
		return nil, nil
	}
	r.settle()
	if r.reportSchemaErrors(); st.HasErrors() {
		return nil, nil
	}
	if r.collect(); st.HasErrors() {
		return nil, nil
	}
	if r.hashAll(); st.HasErrors() {
		return nil, nil
	}
	if r.checkCollisions(); st.HasErrors() {
		return nil, nil
	}
	r.indexNames()
	if r.resolveReferences(); st.HasErrors() {
		return nil, nil
	}
	r.plan()
	return r.transform, nil
}

// scan parses every item once and keeps what the phases need: an object per KRM object with its
// identity and annotations, its hash if it may be hashed, its references if it holds any, and
// the kinds CustomResourceDefinitions define.
func (r *run) scan() error {
	for i, it := range r.s.Items {
		n, err := it.Node()
		if err != nil {
			return fmt.Errorf("reading item %d: %w", i, err)
		}
		if !isObject(n) {
			continue // not a KRM object; passed through untouched
		}
		if configref.GroupOf(n.GetApiVersion()) == "apiextensions.k8s.io" && n.GetKind() == "CustomResourceDefinition" {
			if m, err := n.Map(); err != nil {
				r.kindErrs = append(r.kindErrs, kindErr{krmfn.RefOf(n), fmt.Sprintf("%s: %v", krmfn.Describe(n), err)})
			} else {
				if err := r.kinds.AddCRD(m); err != nil {
					r.kindErrs = append(r.kindErrs, kindErr{krmfn.RefOf(n), err.Error()})
				}
				if with, err := r.inputSchemas.WithCRD(m); err != nil {
					r.schemaWarnings = append(r.schemaWarnings, kindErr{krmfn.RefOf(n), fmt.Sprintf("%s: its schema cannot be used to default and check objects of its kind, which are hashed as written: %v", krmfn.Describe(n), err)})
				} else {
					r.inputSchemas = with
				}
			}
		}
		if n.GetKind() == "" {
			continue
		}
		ref := krmfn.RefOf(n)
		o := &object{index: i, ref: ref, group: configref.GroupOf(ref.APIVersion), kind: ref.Kind, namespace: ref.Namespace, name: ref.Name}
		o.final = o.name
		all := n.GetAnnotations()
		for _, a := range readAnnotations {
			if v, ok := all[a]; ok {
				if o.ann == nil {
					o.ann = map[string]string{}
				}
				o.ann[a] = v
			}
		}
		if o.ann[annotationLocalConfig] != "true" {
			candidate := r.candidate(o)
			if candidate {
				o.quoted = quoteYAML11Booleans(n)
			}
			r.examine(o, n, candidate)
		}
		if configref.HoldsReferences(o.ref.APIVersion, o.kind) {
			sites, err := configref.Sites(n)
			o.sitesErr = err
			for _, site := range sites {
				o.sites = append(o.sites, siteRef{Path: site.Path, Ref: site.Ref})
			}
		}
		r.objects = append(r.objects, o)
		r.byIndex[i] = o
	}
	return nil
}

// candidate tells whether o may get a suffix, before the checks selected makes.
func (r *run) candidate(o *object) bool {
	v, opted := o.ann[AnnotationHashSuffix]
	return v == "true" || !opted && (o.group == configref.AddonGroup && (o.kind == "AddOnDeploymentConfig" || o.kind == "AddOnTemplate") ||
		r.settings.hashKinds[groupKind{o.group, o.kind}])
}

// isObject tells whether n is a mapping, the only kind of node kyaml's metadata accessors accept.
func isObject(n *yaml.RNode) bool {
	return n != nil && n.YNode() != nil && n.YNode().Kind == yaml.MappingNode
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return "scalar"
	case yaml.AliasNode:
		return "alias"
	}
	return "document"
}

// learnKinds reports what the CustomResourceDefinitions of the input (learnt while scanning)
// had wrong, and adds the kinds the functionConfig maps.
func (r *run) learnKinds() {
	for _, e := range r.kindErrs {
		r.s.Report(framework.Error, e.ref, "", "%s", e.msg)
	}
	for _, e := range r.schemaWarnings {
		r.s.Report(framework.Warning, e.ref, "", "%s", e.msg)
	}
	for i, k := range r.settings.resources {
		if err := r.kinds.Add(k, r.settings.resourceSources[i]); err != nil {
			r.s.Errorf(r.s.FunctionConfig, "", "%v", err)
		}
	}
}

// collect finds duplicates and decides which objects get a suffix.
func (r *run) collect() {
	seen := map[string]*object{}
	objects := r.objects
	r.objects = nil
	for _, o := range objects {
		o.info, o.known = r.kinds.Lookup(o.group, o.kind)
		ann := o.ann
		if ann[annotationLocalConfig] == "true" {
			// Never applied to a cluster (Kptfile, function configs): not a config, not a target.
			if ann[AnnotationHashSuffix] == "true" {
				r.errorf(o, "", "%s is local config (%s: \"true\"), which is never applied, so it cannot be hash-suffixed: remove %s",
					o.describe(), annotationLocalConfig, AnnotationHashSuffix)
			}
			r.byIndex[o.index] = nil
			continue
		}
		if o.name != "" {
			id := o.group + "/" + o.kind + "/" + o.scopedNamespace() + "/" + o.name
			if prev, dup := seen[id]; dup {
				r.errorf(o, "", "%s is in the input twice%s: an object may appear only once (same group, kind, namespace and name)",
					o.describe(), twiceWhere(prev.ann, ann))
				r.byIndex[o.index] = nil
				continue
			}
			seen[id] = o
		}
		r.objects = append(r.objects, o)
		sel, field, err := r.selected(o, ann)
		if err != nil {
			r.errorf(o, field, "%s: %v", o.describe(), err)
			continue
		}
		o.hashed = sel
	}
}

func twiceWhere(a, b map[string]string) string {
	pa, pb := a[kioutil.PathAnnotation], b[kioutil.PathAnnotation]
	if pa == "" || pb == "" {
		return ""
	}
	if pa == pb {
		return " (both in " + pa + ")"
	}
	return " (in " + pa + " and " + pb + ")"
}

// selected tells whether o gets a suffix and checks that it can get one; an error comes with the
// field it is about.
func (r *run) selected(o *object, ann map[string]string) (bool, string, error) {
	sel := o.group == configref.AddonGroup && (o.kind == "AddOnDeploymentConfig" || o.kind == "AddOnTemplate") ||
		r.settings.hashKinds[groupKind{o.group, o.kind}]
	if v, ok := ann[AnnotationHashSuffix]; ok {
		switch v {
		case "true":
			sel = true
		case "false":
			return false, "", nil
		default:
			return false, "metadata.annotations", fmt.Errorf("%s must be \"true\" or \"false\", got %q", AnnotationHashSuffix, v)
		}
	}
	if !sel {
		return false, "", nil
	}
	switch {
	case configref.HoldsReferences(o.ref.APIVersion, o.kind) && ann[AnnotationHashSuffix] == "true":
		return false, "metadata.annotations", fmt.Errorf("a %s's name is the add-on's name and cannot be hash-suffixed: remove %s", o.kind, AnnotationHashSuffix)
	case configref.HoldsReferences(o.ref.APIVersion, o.kind):
		// Selected by the functionConfig's spec.kinds: say so, not an annotation that is not there.
		return false, "", fmt.Errorf("a %s's name is the add-on's name and cannot be hash-suffixed: remove kind %s from the functionConfig's spec.kinds", o.kind, o.kind)
	case o.name == "":
		return false, "metadata.name", fmt.Errorf("has no metadata.name")
	case ann[kustomizeNeedsHashSuffix] == "enabled":
		return false, "", fmt.Errorf("kustomize already adds its own hash suffix to this generated object: set generatorOptions.disableNameSuffixHash: true (or options.disableNameSuffixHash on the generator) to let config-hash name it")
	case !o.known:
		return false, "", fmt.Errorf("cannot tell the plural resource name of kind %s (group %q), which references use: add its CustomResourceDefinition to the input, or map it in the functionConfig (spec.resources: [{group: %q, kind: %s, resource: <plural>, scope: Namespaced|Cluster}])",
			o.kind, o.group, o.group, o.kind)
	case o.info.Namespaced && o.namespace == "":
		return false, "metadata.namespace", fmt.Errorf("%s are namespaced but this object has no metadata.namespace, so config-hash cannot tell which references (they always name a namespace) point at it: "+
			"set metadata.namespace, or set namespace: in the kustomization that lists config-hash as a transformer (kustomize applies it before external transformers); "+
			"a namespace: set in a parent kustomization comes too late", o.info.Resource)
	}
	return true, "", nil
}

// hashAll computes the hash and the new name of every object that gets a suffix.
func (r *run) hashAll() {
	for _, o := range r.objects {
		if !o.hashed {
			continue
		}
		if err := r.hashOne(o); err != nil {
			r.errorf(o, "", "%s: %v", o.describe(), err)
		}
	}
}

func (r *run) hashOne(o *object) error {
	ann := o.ann
	base, hasBase := ann[AnnotationBaseName]
	_, hasHash := ann[AnnotationContentHash]
	switch {
	case !hasBase && hasHash:
		return fmt.Errorf("has %s but no %s, so config-hash cannot tell its base name: restore %s, or remove %s to hash it as a new config named from %q",
			AnnotationContentHash, AnnotationBaseName, AnnotationBaseName, AnnotationContentHash, o.name)
	case !hasBase:
		base = o.name
	case base == "":
		return fmt.Errorf("%s is empty", AnnotationBaseName)
	case o.name != base && !isSuffixed(o.name, base):
		return fmt.Errorf("metadata.name %q does not derive from %s %q (it should be %q or %q-<%d-character suffix>): the name was changed after hashing, "+
			"e.g. by namePrefix/nameSuffix in a kustomization above the one that ran config-hash, or by copying a hashed object; "+
			"run config-hash in the top-level kustomization only, or remove %s and %s to hash it as a new config named from %q",
			o.name, AnnotationBaseName, base, base, base, suffixLen, AnnotationBaseName, AnnotationContentHash, o.name)
	}
	for _, path := range o.quoted {
		r.warningf(o, path.field, "%s: %s: unquoted %s is the string %q to kustomize, kpt and config-hash (YAML 1.2) but a boolean to kubectl and other YAML 1.1 readers: "+
			"config-hash quotes it so that every tool gives this config the same content and name; write %q in the source (or true/false for a boolean)",
			o.describe(), path.field, path.value, path.value, path.value)
	}
	hash := o.hashVal
	if o.hashErr != nil {
		return o.hashErr
	}
	suffix, err := spechash.Suffix(hash)
	if err != nil {
		return err
	}
	o.base, o.hash, o.final = base, hash, base+"-"+suffix
	if stored := ann[AnnotationContentHash]; hasHash && stored != hash && o.final == o.name {
		// The content changed in place, yet the new hash begins like the old one: the new version
		// would keep the old version's name, and every cluster would read it at once, whatever the
		// rollout strategy says. An accident is ~1 in 10^12 per edit; crafted content is likelier.
		return fmt.Errorf("the content changed (content hash %s, was %s) but both hashes give the name suffix %q, so the new version would keep the old version's name %q "+
			"and reach every cluster at once instead of rolling out; give this config a new base name (metadata.name and %s, e.g. %q) so that it gets a new name",
			abbrev(hash), abbrev(stored), suffix, o.name, AnnotationBaseName, base+"-v2")
	}
	limit := DefaultMaxNameLength
	if l, ok := r.settings.nameLimits[groupKind{o.group, o.kind}]; ok {
		limit = l
	}
	if len(o.final) > limit {
		return fmt.Errorf("new name %q is %d characters, more than the %d allowed for %s names: shorten the name to at most %d characters",
			o.final, len(o.final), limit, o.kind, limit-suffixLen-1)
	}
	// Custom resources, ConfigMaps and Secrets all take DNS-1123 subdomains: the API server would
	// refuse any other name, after the references were rewritten to it.
	if errs := validation.IsDNS1123Subdomain(o.final); len(errs) > 0 {
		return fmt.Errorf("new name %q is not a valid object name, so the API server would refuse it: %s; change metadata.name", o.final, strings.Join(errs, "; "))
	}
	return nil
}

// abbrev shortens a content hash for messages: 16 hex digits tell two hashes apart.
func abbrev(hash string) string {
	if len(hash) > 16 {
		return hash[:16] + "…"
	}
	return hash
}

// isSuffixed tells whether name is base plus a suffix config-hash could have made.
func isSuffixed(name, base string) bool {
	suffix, ok := strings.CutPrefix(name, base+"-")
	if !ok || len(suffix) != suffixLen {
		return false
	}
	for _, c := range suffix {
		// The alphabet of spechash.Suffix: hex digits with 0,1,3,a,e replaced by g,h,k,m,t.
		if !strings.ContainsRune("2456789bcdfghkmt", c) {
			return false
		}
	}
	return true
}

// yaml11Boolean is an unquoted scalar that YAML 1.1 reads as a boolean and YAML 1.2 as a string.
type yaml11Boolean struct{ field, value string }

// quoteYAML11Booleans double-quotes every plain scalar of obj (outside metadata, which the hash
// leaves out) that YAML 1.2 reads as a string but YAML 1.1 as a boolean: y, yes, on, n, no, off in
// any of their cases, values and mapping keys alike. kustomize reads its resources as YAML 1.2 and
// hands them to the function quoted ("yes"); kpt and the standalone binary pass them as written,
// and kubectl (YAML 1.1) would send true. Quoting them before hashing is the one rule that gives a
// config the same content, hash and name under all three, and writing them quoted makes the output
// mean the same to every reader. It returns what it quoted.
func quoteYAML11Booleans(obj *yaml.RNode) []yaml11Boolean {
	var found []yaml11Boolean
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				key, value := n.Content[i], n.Content[i+1]
				field := key.Value
				if path != "" {
					field = path + "." + key.Value
				}
				if path == "" && key.Value == "metadata" {
					continue
				}
				if isYAML11Boolean(key) {
					key.Style = yaml.DoubleQuotedStyle
					found = append(found, yaml11Boolean{field: field + " (a key)", value: key.Value})
				}
				walk(value, field)
			}
		case yaml.SequenceNode:
			for i, item := range n.Content {
				walk(item, fmt.Sprintf("%s[%d]", path, i))
			}
		case yaml.ScalarNode:
			if isYAML11Boolean(n) {
				n.Style = yaml.DoubleQuotedStyle
				found = append(found, yaml11Boolean{field: path, value: n.Value})
			}
		}
	}
	walk(obj.YNode(), "")
	return found
}

// isYAML11Boolean tells whether n is a plain scalar YAML 1.2 reads as a string and YAML 1.1 as a
// boolean (the words gopkg.in/yaml.v3's encoder quotes for YAML 1.1 readers).
func isYAML11Boolean(n *yaml.Node) bool {
	if n.Kind != yaml.ScalarNode || n.Style != 0 || (n.Tag != "" && n.Tag != yaml.NodeTagString) {
		return false
	}
	switch n.Value {
	case "y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "n", "N", "no", "No", "NO", "off", "Off", "OFF":
		return true
	}
	return false
}

// checkCollisions makes sure no two objects end up with the same identity.
func (r *run) checkCollisions() {
	final := map[string]*object{}
	for _, o := range r.objects {
		if o.final == "" {
			continue
		}
		id := o.group + "/" + o.kind + "/" + o.scopedNamespace() + "/" + o.final
		other, taken := final[id]
		if !taken {
			final[id] = o
			continue
		}
		a, b := other, o
		if !a.hashed {
			a, b = b, a
		}
		switch {
		case b.hashed && a.hash != b.hash:
			// Two contents whose hashes share the suffix: one name for two versions.
			r.errorf(o, "", "%s and %s would both be named %q although their contents differ (content hashes %s and %s share the name suffix): give one of them another base name",
				a.describe(), b.describe(), o.final, abbrev(a.hash), abbrev(b.hash))
		case b.hashed:
			r.errorf(o, "", "%s and %s would both be named %q (same base name and same content): keep only one of them",
				a.describe(), b.describe(), o.final)
		default:
			r.errorf(o, "", "%s would be renamed %q, which %s already has: rename one of them", a.describe(), o.final, b.describe())
		}
	}
}

func (r *run) kindOf(gr configref.GroupResource) (configref.Kind, bool) {
	k, cached := r.grKinds[gr]
	if !cached {
		if found, ok := r.kinds.ByResource(gr); ok {
			k = &found
		}
		r.grKinds[gr] = k
	}
	if k == nil {
		return configref.Kind{}, false
	}
	return *k, true
}

// indexNames records every name a reference may use for an object.
func (r *run) indexNames() {
	addAlias := func(key refKey, o *object) {
		if !slices.Contains(r.aliases[key], o) {
			r.aliases[key] = append(r.aliases[key], o)
		}
	}
	for _, o := range r.objects {
		if !o.known || o.name == "" {
			continue
		}
		gr := o.info.GroupResource()
		if o.hashed {
			for _, name := range []string{o.name, o.base} {
				if name != o.final && !slices.Contains(r.renamed[name], o) {
					r.renamed[name] = append(r.renamed[name], o)
				}
			}
		}
		r.current[refKey{gr, o.scopedNamespace(), o.name}] = o
		r.byName[refKey{gr: gr, name: o.name}] = append(r.byName[refKey{gr: gr, name: o.name}], o)
		if o.hashed && o.base != o.name {
			addAlias(refKey{gr, o.scopedNamespace(), o.base}, o)
			r.byName[refKey{gr: gr, name: o.base}] = append(r.byName[refKey{gr: gr, name: o.base}], o)
		}
		// Names the object had earlier in this kustomize build (namePrefix, nameSuffix, namespace:):
		// references written against the source still mean it.
		for _, prev := range previousIDs(o) {
			addAlias(prev, o)
		}
	}
}

// previousIDs reads kustomize's record of the names and namespaces an object had before this
// build renamed or moved it.
func previousIDs(o *object) []refKey {
	ann := o.ann
	if ann[kustomizePreviousNames] == "" {
		return nil
	}
	names := strings.Split(ann[kustomizePreviousNames], ",")
	namespaces := strings.Split(ann[kustomizePreviousNamespace], ",")
	kinds := strings.Split(ann[kustomizePreviousKinds], ",")
	var ids []refKey
	for i, name := range names {
		if i >= len(namespaces) || i >= len(kinds) || kinds[i] != o.kind || name == "" {
			continue
		}
		ns := namespaces[i]
		if !o.info.Namespaced {
			ns = ""
		}
		ids = append(ids, refKey{o.info.GroupResource(), ns, name})
	}
	return ids
}

// resolveReferences decides, for every config reference in the input, what it points at.
func (r *run) resolveReferences() {
	for _, o := range r.objects {
		var versionErr *configref.VersionError
		if errors.As(o.sitesErr, &versionErr) {
			// A field of the other add-on API version: the hub would drop the references in it.
			for _, p := range versionErr.Problems {
				r.errorf(o, p.Path, "%s: %s: %s", o.describe(), p.Path, p.Message)
			}
			continue
		}
		if o.sitesErr != nil {
			r.errorf(o, "", "%s: %v", o.describe(), o.sitesErr)
			continue
		}
		for i, site := range o.sites {
			r.resolve(o, i, site)
		}
	}
}

func (r *run) resolve(holder *object, index int, site siteRef) {
	ref := site.Ref
	kind, ok := r.kindOf(ref.GroupResource)
	if !ok {
		if r.stale(holder, site, "") {
			return
		}
		r.missing(holder, site.Path, "%s: %s refers to %s, a resource config-hash knows no kind of (no CustomResourceDefinition in the input, no functionConfig mapping), so no object of the input matches it",
			holder.describe(), site.Path, ref)
		return
	}
	ns := ref.Namespace
	if !kind.Namespaced {
		ns = ""
	} else if ns == "" {
		if r.stale(holder, site, " (it has no namespace, but "+ref.Resource+" are namespaced)") {
			return
		}
		report, fix := r.warningf, "left as is (strict: true makes this an error)"
		if r.settings.strict {
			report, fix = r.errorf, "write the config's namespace in the reference"
		}
		report(holder, site.Path, "%s: %s refers to %s without a namespace, but %s are namespaced: OCM reads a reference without namespace as cluster-scoped and will not find it; %s",
			holder.describe(), site.Path, ref, ref.Resource, fix)
		return
	}
	key := refKey{ref.GroupResource, ns, ref.Name}
	if target, ok := r.current[key]; ok {
		if target.final != ref.Name {
			r.addRewrite(holder, index, target)
		}
		return
	}
	if targets := r.aliases[key]; len(targets) > 0 {
		if len(targets) > 1 {
			var names []string
			for _, t := range targets {
				names = append(names, t.describe())
			}
			r.errorf(holder, site.Path, "%s: %s refers to %s, which could mean any of %s: refer to one of them by its current name",
				holder.describe(), site.Path, ref, strings.Join(names, ", "))
			return
		}
		target := targets[0]
		if target.scopedNamespace() != ns {
			r.errorf(holder, site.Path, "%s: %s refers to %s, but kustomize moved that %s to namespace %q during this build (namespace: field) and does not update namespaces inside OCM config references: write namespace: %s in the reference",
				holder.describe(), site.Path, ref, target.kind, target.namespace, target.namespace)
			return
		}
		r.addRewrite(holder, index, target)
		return
	}
	if r.stale(holder, site, "") {
		return
	}
	if near := r.byName[refKey{gr: ref.GroupResource, name: ref.Name}]; len(near) > 0 {
		var names []string
		for _, t := range near {
			names = append(names, t.describe())
		}
		// Often deliberate (per-cluster configs of the same name kept elsewhere), so only an info
		// unless strict.
		r.missing(holder, site.Path, "%s: %s refers to %s, which is not in the input (the input has %s)",
			holder.describe(), site.Path, ref, strings.Join(names, " and "))
		return
	}
	r.missing(holder, site.Path, "%s: %s refers to %s, which is not in the input (it may exist only in the cluster)",
		holder.describe(), site.Path, ref)
}

// missing reports a reference to a config that is not in the input: an info, since the config
// may live only in the cluster, or under strict (every config in Git) an error, so that a
// misspelled or forgotten config fails the build, and kustomize, which shows no info, fails with it.
func (r *run) missing(holder *object, field, format string, args ...any) {
	if r.settings.strict {
		r.errorf(holder, field, format+": add the config to the input, correct the reference, or, if the config exists only in the cluster, turn strict off", args...)
		return
	}
	r.infof(holder, field, format+"; left as is", args...)
}

// stale reports a reference that resolves to nothing although its name is one a config of the
// input had before this run renamed it: almost certainly a mistyped group, resource or namespace,
// which would leave the reference on a name that no longer exists. A warning, an error under
// strict. It tells whether it reported.
func (r *run) stale(holder *object, site siteRef, hint string) bool {
	targets := r.renamed[site.Ref.Name]
	if len(targets) == 0 {
		return false
	}
	var names []string
	for _, t := range targets {
		names = append(names, fmt.Sprintf("%s (%s) to %s", t.describe(), t.info.GroupResource(), t.final))
	}
	report, fix := r.warningf, "left as is (strict: true makes this an error)"
	if r.settings.strict {
		report, fix = r.errorf, "or, if the config exists only in the cluster, turn strict off"
	}
	report(holder, site.Path, "%s: %s refers to %s%s, which is not in the input, but the input renames %s: "+
		"a stale reference if it means that config: correct its group, resource or namespace; %s",
		holder.describe(), site.Path, site.Ref, hint, strings.Join(names, " and "), fix)
	return true
}

func (r *run) addRewrite(holder *object, site int, target *object) {
	r.rewrites[holder.index] = append(r.rewrites[holder.index], rewrite{site, target, target.final})
	r.nRewrites++
}

// plan works out the annotation edits of every hashed object and reports what they replace,
// then sums up.
func (r *run) plan() {
	hashed, renamed := 0, 0
	for _, o := range r.objects {
		if !o.hashed {
			continue
		}
		hashed++
		if o.final != o.name {
			renamed++
		}
		_, warnings := protection(o.ann, r.settings.pruneProtection)
		// The warnings name the object as the output does.
		ref := o.ref
		ref.Name = o.final
		for _, w := range warnings {
			r.s.Report(framework.Warning, ref, "metadata.annotations", "%s: %s", o.describe(), w)
		}
	}
	r.infof(nil, "", "%d config(s) hashed, %d renamed, %d reference(s) rewritten", hashed, renamed, r.nRewrites)
}

// transform applies the decisions to the item of the given index as it is written: renames a
// hashed object and stamps its annotations, and rewrites references.
func (r *run) transform(index int, n *yaml.RNode) error {
	o := r.byIndex[index]
	if o == nil {
		return nil
	}
	if o.hashed {
		quoteYAML11Booleans(n)
		if o.final != o.name {
			if err := n.SetName(o.final); err != nil {
				return fmt.Errorf("%s: setting name: %w", o.describe(), err)
			}
		}
		if err := setAnnotation(n, AnnotationBaseName, o.base); err != nil {
			return fmt.Errorf("%s: %w", o.describe(), err)
		}
		if err := setAnnotation(n, AnnotationContentHash, o.hash); err != nil {
			return fmt.Errorf("%s: %w", o.describe(), err)
		}
		// The same edits plan worked out from the same annotations, worked out again rather than
		// kept for every object while the output is written.
		edits, _ := protection(n.GetAnnotations(), r.settings.pruneProtection)
		for _, e := range edits {
			if err := e.apply(n); err != nil {
				return fmt.Errorf("%s: %w", o.describe(), err)
			}
		}
	}
	if rewrites := r.rewrites[index]; len(rewrites) > 0 {
		sites, err := configref.Sites(n)
		if err != nil {
			return fmt.Errorf("%s: %w", o.describe(), err)
		}
		for _, rw := range rewrites {
			if rw.site >= len(sites) {
				return fmt.Errorf("%s: reference %d is gone", o.describe(), rw.site)
			}
			if err := sites[rw.site].SetName(rw.name); err != nil {
				return fmt.Errorf("rewriting reference to %s: %w", rw.obj.describe(), err)
			}
		}
	}
	return nil
}

// annotationEdit sets an annotation, or removes it.
type annotationEdit struct {
	key, value string
	remove     bool
}

func (e annotationEdit) apply(n *yaml.RNode) error {
	if !e.remove {
		return setAnnotation(n, e.key, e.value)
	}
	if err := n.PipeE(yaml.ClearAnnotation(e.key)); err != nil {
		return fmt.Errorf("removing annotation %s: %w", e.key, err)
	}
	return nil
}

// protection works out the annotation edits that keep Argo CD and Flux from pruning a superseded
// version that clusters still use, and Argo CD from reporting it OutOfSync once Git no longer has
// it (on), or that take back what an earlier run stamped (off), from an object's annotations. On:
// existing Argo CD options are kept, a Prune option other than false/confirm is replaced and a
// Flux prune other than disabled too, each with a warning. Off: Prune=false and IgnoreExtraneous
// leave the Argo CD option lists, which keep any other option the author wrote, and Flux's
// prune: disabled goes; an annotation left without options is removed.
func protection(ann map[string]string, on bool) ([]annotationEdit, []string) {
	var edits []annotationEdit
	var warnings []string
	if !on {
		for _, a := range []struct{ key, opt string }{
			{AnnotationArgoSyncOptions, argoNoPrune},
			{AnnotationArgoCompareOptions, argoIgnoreExtraneous},
			{AnnotationFluxPrune, fluxPruneDisabled},
		} {
			v, ok := ann[a.key]
			if !ok {
				continue
			}
			if rest := removeOption(v, a.opt); rest != v {
				edits = append(edits, annotationEdit{key: a.key, value: rest, remove: rest == ""})
			}
		}
		return edits, nil
	}
	opts := ann[AnnotationArgoSyncOptions]
	var kept []string
	protected, replaced := false, ""
	for _, opt := range strings.Split(opts, ",") {
		opt = strings.TrimSpace(opt)
		if opt == "" {
			continue
		}
		if k, v, _ := strings.Cut(opt, "="); k == "Prune" {
			if v == "false" || v == "confirm" {
				protected = true
			} else {
				replaced = opt
				continue
			}
		}
		kept = append(kept, opt)
	}
	if !protected {
		if replaced != "" {
			warnings = append(warnings, fmt.Sprintf("%s %q replaced by %s: clusters that have not rolled out keep using this version",
				AnnotationArgoSyncOptions, replaced, argoNoPrune))
		}
		value := strings.Join(append(kept, argoNoPrune), ",")
		if replaced == "" && len(kept) > 0 {
			value = strings.TrimRight(opts, ", ") + "," + argoNoPrune // keep the author's text as it is
		}
		edits = append(edits, annotationEdit{key: AnnotationArgoSyncOptions, value: value})
	}
	edits = append(edits, annotationEdit{key: AnnotationArgoCompareOptions, value: addOption(ann[AnnotationArgoCompareOptions], argoIgnoreExtraneous)})
	if v := ann[AnnotationFluxPrune]; v != fluxPruneDisabled {
		if v != "" {
			warnings = append(warnings, fmt.Sprintf("%s %q replaced by %q: clusters that have not rolled out keep using this version",
				AnnotationFluxPrune, v, fluxPruneDisabled))
		}
		edits = append(edits, annotationEdit{key: AnnotationFluxPrune, value: fluxPruneDisabled})
	}
	return edits, warnings
}

// addOption appends opt to a comma-separated Argo CD option list unless it is there already,
// keeping the author's text as it is.
func addOption(opts, opt string) string {
	for _, o := range strings.Split(opts, ",") {
		if strings.TrimSpace(o) == opt {
			return opts
		}
	}
	if strings.Trim(opts, ", ") == "" {
		return opt
	}
	return strings.TrimRight(opts, ", ") + "," + opt
}

// removeOption drops opt from a comma-separated option list; the other options keep their text
// and order. It returns opts unchanged when opt is not there.
func removeOption(opts, opt string) string {
	var kept []string
	found := false
	for _, o := range strings.Split(opts, ",") {
		if strings.TrimSpace(o) == opt {
			found = true
			continue
		}
		kept = append(kept, o)
	}
	if !found {
		return opts
	}
	return strings.Trim(strings.Join(kept, ","), ", ")
}

// setAnnotation sets an annotation unless it already has the value, so that re-runs leave the
// author's quoting and formatting alone.
func setAnnotation(node *yaml.RNode, key, value string) error {
	if v, ok := node.GetAnnotations()[key]; ok && v == value {
		return nil
	}
	if err := node.PipeE(yaml.SetAnnotation(key, value)); err != nil {
		return fmt.Errorf("setting annotation %s: %w", key, err)
	}
	return nil
}
