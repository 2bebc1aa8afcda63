package main

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/addonops/addonops/functions/config-hash/internal/benchgen"
	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/krmfn"
	"github.com/addonops/addonops/internal/spechash"
)

// Building blocks for inputs.
func adc(ns, name, agentNS string, extraMeta ...string) string {
	meta := ""
	for _, m := range extraMeta {
		meta += "\n  " + m
	}
	return fmt.Sprintf(`apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnDeploymentConfig
metadata:
  name: %s
  namespace: %s%s
spec:
  agentInstallNamespace: %s
`, name, ns, meta, agentNS)
}

func template(name, addon string, extraMeta ...string) string {
	meta := ""
	for _, m := range extraMeta {
		meta += "\n  " + m
	}
	return fmt.Sprintf(`apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnTemplate
metadata:
  name: %s%s
spec:
  addonName: %s
  agentSpec: {workload: {manifests: []}}
`, name, meta, addon)
}

// cma is a v1beta1 ClusterManagementAddOn whose defaultConfigs are refs given as
// "resource ns/name" or "resource name".
func cma(name string, refs ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: addon.open-cluster-management.io/v1beta1\nkind: ClusterManagementAddOn\nmetadata:\n  name: %s\nspec:\n  defaultConfigs:\n", name)
	for _, r := range refs {
		b.WriteString(refEntry("  ", r))
	}
	return b.String()
}

func mca(ns, name string, refs ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: ManagedClusterAddOn\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  configs:\n", name, ns)
	for _, r := range refs {
		b.WriteString(refEntry("  ", r))
	}
	return b.String()
}

func refEntry(indent, r string) string {
	resource, target, _ := strings.Cut(r, " ")
	group := configref.AddonGroup
	if g, res, ok := strings.Cut(resource, "."); ok {
		resource, group = g, res
	}
	if resource == "configmaps" {
		group = ""
	}
	ns, name, ok := strings.Cut(target, "/")
	if !ok {
		ns, name = "", target
	}
	s := fmt.Sprintf("%s- group: %q\n%s  resource: %s\n%s  name: %s\n", indent, group, indent, resource, indent, name)
	if ns != "" {
		s += fmt.Sprintf("%s  namespace: %s\n", indent, ns)
	}
	return s
}

func docs(d ...string) string { return strings.Join(d, "---\n") }

// output is a parsed function output.
type output struct {
	t     *testing.T
	items []*yaml.RNode
}

func parseOutput(t *testing.T, s string) output {
	t.Helper()
	items, err := (&kio.ByteReader{Reader: strings.NewReader(s)}).Read()
	if err != nil {
		t.Fatalf("output does not parse: %v\n%s", err, s)
	}
	return output{t, items}
}

// get finds an object by kind, namespace and base name (its name before hashing).
func (o output) get(kind, ns, base string) *yaml.RNode {
	o.t.Helper()
	for _, it := range o.items {
		b := it.GetAnnotations()[AnnotationBaseName]
		if b == "" {
			b = it.GetName()
		}
		if it.GetKind() == kind && it.GetNamespace() == ns && b == base {
			return it
		}
	}
	o.t.Fatalf("no %s %s/%s in the output", kind, ns, base)
	return nil
}

// refs lists the references held by an object as "resource ns/name".
func (o output) refs(kind, ns, name string) []string {
	o.t.Helper()
	sites, err := configref.Sites(o.get(kind, ns, name))
	if err != nil {
		o.t.Fatal(err)
	}
	var out []string
	for _, s := range sites {
		r := s.Ref.Resource + " "
		if s.Ref.Namespace != "" {
			r += s.Ref.Namespace + "/"
		}
		out = append(out, r+s.Ref.Name)
	}
	return out
}

// hashedName is the name config-hash must give an object, computed independently of process.
func hashedName(t *testing.T, doc, base string) string {
	t.Helper()
	h := mustHash(t, doc)
	s, err := spechash.Suffix(h)
	if err != nil {
		t.Fatal(err)
	}
	return base + "-" + s
}

// suffixCollision returns two AddOnDeploymentConfigs hub/cfg whose contents differ only in a
// LOG_LEVEL value and whose spec hashes share the name suffix.
func suffixCollision(t *testing.T) (string, string) {
	t.Helper()
	with := func(level string) string {
		return adc("hub", "cfg", "hello-agent") + "  customizedVariables:\n  - name: LOG_LEVEL\n    value: " + level + "\n"
	}
	a, b := with("v25747"), with("v1302689")
	ha, hb := mustHash(t, a), mustHash(t, b)
	if ha == hb || ha[:suffixLen] != hb[:suffixLen] {
		t.Fatalf("not a suffix collision: %s and %s", ha, hb)
	}
	return a, b
}

func wantResult(t *testing.T, results []string, want string) {
	t.Helper()
	for _, r := range results {
		if strings.Contains(r, want) {
			return
		}
	}
	t.Fatalf("no result contains %q; results:\n%s", want, strings.Join(results, "\n"))
}

func wantError(t *testing.T, results []string, want string) {
	t.Helper()
	for _, r := range results {
		if strings.HasPrefix(r, "error: ") && strings.Contains(r, want) {
			return
		}
	}
	t.Fatalf("no error result contains %q; results:\n%s", want, strings.Join(results, "\n"))
}

func TestSameNameTemplateAndADC(t *testing.T) {
	a, tpl := adc("hub", "hello", "agents"), template("hello", "hello")
	in := docs(tpl, a, cma("hello", "addontemplates hello", "addondeploymentconfigs hub/hello"))
	out, results, code := transform(t, in, "")
	if code != 0 {
		t.Fatalf("exit %d: %v", code, results)
	}
	o := parseOutput(t, out)
	tplName, adcName := hashedName(t, tpl, "hello"), hashedName(t, a, "hello")
	if tplName == adcName {
		t.Fatal("different content gave the same name")
	}
	if got := o.get("AddOnTemplate", "", "hello").GetName(); got != tplName {
		t.Errorf("template name %s, want %s", got, tplName)
	}
	if got := o.get("AddOnDeploymentConfig", "hub", "hello").GetName(); got != adcName {
		t.Errorf("ADC name %s, want %s", got, adcName)
	}
	// Each reference gets the new name of its own group/resource, never the other's.
	want := []string{"addontemplates " + tplName, "addondeploymentconfigs hub/" + adcName}
	if got := o.refs("ClusterManagementAddOn", "", "hello"); !slices.Equal(got, want) {
		t.Fatalf("refs %v, want %v", got, want)
	}
	wantResult(t, results, "info: 2 config(s) hashed, 2 renamed, 2 reference(s) rewritten")
}

func TestAnnotations(t *testing.T) {
	a := adc("hub", "hello", "agents")
	out, results, code := transform(t, a, "")
	if code != 0 {
		t.Fatalf("exit %d: %v", code, results)
	}
	got := parseOutput(t, out).get("AddOnDeploymentConfig", "hub", "hello").GetAnnotations()
	want := map[string]string{
		AnnotationBaseName:           "hello",
		AnnotationContentHash:        mustHash(t, a),
		AnnotationArgoSyncOptions:    "Prune=false",
		AnnotationArgoCompareOptions: "IgnoreExtraneous",
		AnnotationFluxPrune:          "disabled",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, got[k], v)
		}
	}
}

// Inputs may use HASHED (the hub ADC as config-hash writes it) and NAME (its hashed name). Every
// successful case runs the function on its own output afterwards and expects the same bytes.
func TestProcess(t *testing.T) {
	hub := adc("hub", "cfg", "agents")
	hubName := func(t *testing.T) string { return hashedName(t, hub, "cfg") }
	hashedHub := func(t *testing.T) string {
		return adc("hub", hashedName(t, hub, "cfg"), "agents", "annotations:", "  addonops.io/base-name: cfg",
			"  addonops.io/content-hash: "+mustHash(t, hub))
	}
	crd := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets}
  versions: [{name: v1, served: true, storage: true}]
`
	widgetCRD := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
              color: {type: string, default: blue}
`
	widget := "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: hub}\nspec: {size: 1}\n"
	strict := "apiVersion: addonops.io/v1alpha1\nkind: ConfigHash\nmetadata: {name: x}\nspec: {strict: true}\n"
	cases := []struct {
		name, input, config string
		edit                func(string) string // applied to the input after placeholders are filled
		wantErr             string              // an error result containing this; exit 1, no output
		check               func(t *testing.T, o output, results []string)
	}{
		{name: "MCA in a cluster namespace refers to an ADC in another namespace",
			input: docs(hub, mca("cluster1", "hello", "addondeploymentconfigs hub/cfg", "addondeploymentconfigs cluster1/cfg")),
			check: func(t *testing.T, o output, results []string) {
				want := []string{"addondeploymentconfigs hub/" + hubName(t), "addondeploymentconfigs cluster1/cfg"}
				if got := o.refs("ManagedClusterAddOn", "cluster1", "hello"); !slices.Equal(got, want) {
					t.Fatalf("refs %v, want %v", got, want)
				}
				// Same name as a renamed config, other namespace: a mistyped namespace unless the config
				// lives only in the cluster, so a warning (kustomize shows only stderr).
				wantResult(t, results, "warning: ManagedClusterAddOn cluster1/hello: spec.configs[1] refers to addondeploymentconfigs.addon.open-cluster-management.io cluster1/cfg, which is not in the input, but the input renames AddOnDeploymentConfig hub/cfg (addondeploymentconfigs.addon.open-cluster-management.io) to "+hubName(t)+": a stale reference if it means that config: correct its group, resource or namespace; left as is (strict: true makes this an error)")
			}},
		{name: "reference to a config only in the cluster",
			input: docs(hub, cma("hello", "addondeploymentconfigs other/x", "configmaps other/cm", "gadgets.example.com g")),
			check: func(t *testing.T, o output, results []string) {
				want := []string{"addondeploymentconfigs other/x", "configmaps other/cm", "gadgets g"}
				if got := o.refs("ClusterManagementAddOn", "", "hello"); !slices.Equal(got, want) {
					t.Fatalf("refs %v, want %v", got, want)
				}
				wantResult(t, results, "info: ClusterManagementAddOn hello: spec.defaultConfigs[0] refers to addondeploymentconfigs.addon.open-cluster-management.io other/x, which is not in the input (it may exist only in the cluster); left as is")
				wantResult(t, results, "info: ClusterManagementAddOn hello: spec.defaultConfigs[2] refers to gadgets.example.com g, a resource config-hash knows no kind of")
			}},
		{name: "reference without namespace to a namespaced kind",
			input: docs(hub, cma("hello", "addondeploymentconfigs other")),
			check: func(t *testing.T, o output, results []string) {
				if got := o.refs("ClusterManagementAddOn", "", "hello"); !slices.Equal(got, []string{"addondeploymentconfigs other"}) {
					t.Fatalf("refs %v", got)
				}
				wantResult(t, results, "warning: ClusterManagementAddOn hello: spec.defaultConfigs[0] refers to addondeploymentconfigs.addon.open-cluster-management.io other without a namespace")
			}},
		{name: "strict: reference without namespace to a namespaced kind is an error", config: strict,
			input:   docs(hub, cma("hello", "addondeploymentconfigs other")),
			wantErr: "refers to addondeploymentconfigs.addon.open-cluster-management.io other without a namespace, but addondeploymentconfigs are namespaced: OCM reads a reference without namespace as cluster-scoped and will not find it; write the config's namespace in the reference"},
		{name: "reference without namespace to a renamed config is stale",
			input: docs(hub, cma("hello", "addondeploymentconfigs cfg")),
			check: func(t *testing.T, o output, results []string) {
				wantResult(t, results, "warning: ClusterManagementAddOn hello: spec.defaultConfigs[0] refers to addondeploymentconfigs.addon.open-cluster-management.io cfg (it has no namespace, but addondeploymentconfigs are namespaced), which is not in the input, but the input renames AddOnDeploymentConfig hub/cfg")
			}},
		{name: "stale reference: mistyped resource",
			input: docs(hub, cma("hello", "addondeploymentconfig hub/cfg")),
			check: func(t *testing.T, o output, results []string) {
				if got := o.refs("ClusterManagementAddOn", "", "hello"); !slices.Equal(got, []string{"addondeploymentconfig hub/cfg"}) {
					t.Fatalf("refs %v", got)
				}
				wantResult(t, results, "warning: ClusterManagementAddOn hello: spec.defaultConfigs[0] refers to addondeploymentconfig.addon.open-cluster-management.io hub/cfg, which is not in the input, but the input renames AddOnDeploymentConfig hub/cfg (addondeploymentconfigs.addon.open-cluster-management.io) to "+hubName(t))
			}},
		{name: "stale reference: mistyped group",
			input: docs(hub, cma("hello", "addondeploymentconfigs.addon.open-cluster-management hub/cfg")),
			check: func(t *testing.T, o output, results []string) {
				wantResult(t, results, "warning: ClusterManagementAddOn hello: spec.defaultConfigs[0] refers to addondeploymentconfigs.addon.open-cluster-management hub/cfg, which is not in the input, but the input renames AddOnDeploymentConfig hub/cfg")
			}},
		{name: "stale reference to a hashed base name of another kind",
			input: docs(template("cfg", "a"), cma("hello", "configmaps hub/cfg")),
			check: func(t *testing.T, o output, results []string) {
				wantResult(t, results, "warning: ClusterManagementAddOn hello: spec.defaultConfigs[0] refers to configmaps hub/cfg, which is not in the input, but the input renames AddOnTemplate cfg (addontemplates.addon.open-cluster-management.io) to cfg-")
			}},
		{name: "strict: a stale reference is an error", config: strict,
			input:   docs(hub, cma("hello", "addondeploymentconfigs elsewhere/cfg")),
			wantErr: "ClusterManagementAddOn hello: spec.defaultConfigs[0] refers to addondeploymentconfigs.addon.open-cluster-management.io elsewhere/cfg, which is not in the input, but the input renames AddOnDeploymentConfig hub/cfg (addondeploymentconfigs.addon.open-cluster-management.io) to NAME: a stale reference if it means that config: correct its group, resource or namespace; or, if the config exists only in the cluster, turn strict off"},
		// Two contents whose hashes share the 10 hex digits of the suffix (a9e7b22d05), found by a
		// birthday search over LOG_LEVEL values in about a second (see suffixCollision).
		{name: "suffix collision: an in-place edit that would keep the old version's name is refused",
			input: func() string {
				old, edited := suffixCollision(t)
				return adc("hub", hashedName(t, old, "cfg"), "hello-agent", "annotations:", "  addonops.io/base-name: cfg",
					"  addonops.io/content-hash: "+mustHash(t, old)) + strings.TrimPrefix(edited, adc("hub", "cfg", "hello-agent"))
			}(),
			wantErr: "the content changed (content hash "},
		{name: "suffix collision: two versions in one input that would share a name are refused",
			input: func() string {
				a, b := suffixCollision(t)
				// b as an earlier run named it, a as a new source of the same base name.
				named := adc("hub", hashedName(t, b, "cfg"), "hello-agent", "annotations:", "  addonops.io/base-name: cfg",
					"  addonops.io/content-hash: "+mustHash(t, b)) + strings.TrimPrefix(b, adc("hub", "cfg", "hello-agent"))
				return docs(a, named)
			}(),
			wantErr: "although their contents differ (content hashes "},
		// An OCM kind's schema refuses the name as the API server would; a kind without schema
		// (here an opted-in ConfigMap) is caught by config-hash's own check of the name it makes.
		{name: "a name that is not a DNS subdomain is refused",
			input:   adc("hub", "Hello World", "agents"),
			wantErr: `AddOnDeploymentConfig hub/Hello World: metadata.name: Invalid value: "Hello World": a lowercase RFC 1123 subdomain`},
		{name: "a new name that is not a DNS subdomain is refused",
			input:   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Hello World/../x\n  namespace: hub\n  annotations: {addonops.io/hash-suffix: 'true'}\ndata: {k: v}\n",
			wantErr: `new name "Hello World/../x-`},
		{name: "a reference to a config only in the cluster is an info",
			input: docs(hub, cma("hello", "addondeploymentconfigs other/x", "gadgets.example.com g")),
			check: func(t *testing.T, o output, results []string) {
				wantResult(t, results, "info: ClusterManagementAddOn hello: spec.defaultConfigs[0] refers to addondeploymentconfigs.addon.open-cluster-management.io other/x, which is not in the input (it may exist only in the cluster); left as is")
			}},
		{name: "strict: a reference to a config not in the input is an error", config: strict,
			input:   docs(hub, cma("hello", "addondeploymentconfigs other/x")),
			wantErr: "spec.defaultConfigs[0] refers to addondeploymentconfigs.addon.open-cluster-management.io other/x, which is not in the input (it may exist only in the cluster): add the config to the input"},
		{name: "strict: a reference to a resource of no known kind is an error", config: strict,
			input:   docs(hub, cma("hello", "addondeploymentconfigs hub/cfg", "gadgets.example.com g")),
			wantErr: "spec.defaultConfigs[1] refers to gadgets.example.com g, a resource config-hash knows no kind of"},
		{name: "reserved no-default name is not a reference",
			input: docs(template("t", "a"), cma("hello", "addontemplates __reserved_no_default__")),
			check: func(t *testing.T, o output, results []string) {
				if strings.Contains(strings.Join(results, "\n"), "__reserved") {
					t.Fatalf("reserved name reported: %v", results)
				}
			}},
		{name: "opt out and opt in",
			input: docs(adc("hub", "keep", "agents", "annotations: {addonops.io/hash-suffix: 'false'}"),
				"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: hub\n  annotations: {addonops.io/hash-suffix: 'true'}\ndata: {k: v}\n",
				mca("c1", "hello", "addondeploymentconfigs hub/keep", "configmaps hub/cm")),
			check: func(t *testing.T, o output, results []string) {
				kept := o.get("AddOnDeploymentConfig", "hub", "keep")
				if kept.GetName() != "keep" || kept.GetAnnotations()[AnnotationContentHash] != "" || kept.GetAnnotations()[AnnotationFluxPrune] != "" {
					t.Fatalf("opted-out object changed:\n%s", kept.MustString())
				}
				cm := o.get("ConfigMap", "hub", "cm")
				if !isSuffixed(cm.GetName(), "cm") {
					t.Fatalf("opted-in ConfigMap not hashed: %s", cm.GetName())
				}
				want := []string{"addondeploymentconfigs hub/keep", "configmaps hub/" + cm.GetName()}
				if got := o.refs("ManagedClusterAddOn", "c1", "hello"); !slices.Equal(got, want) {
					t.Fatalf("refs %v, want %v", got, want)
				}
			}},
		{name: "bad opt value", input: adc("hub", "a", "x", "annotations: {addonops.io/hash-suffix: 'yes'}"),
			wantErr: `AddOnDeploymentConfig hub/a: addonops.io/hash-suffix must be "true" or "false", got "yes"`},
		{name: "add-on objects cannot be hashed",
			input:   "apiVersion: addon.open-cluster-management.io/v1beta1\nkind: ClusterManagementAddOn\nmetadata: {name: a, annotations: {addonops.io/hash-suffix: 'true'}}\nspec: {}\n",
			wantErr: "ClusterManagementAddOn a: a ClusterManagementAddOn's name is the add-on's name and cannot be hash-suffixed: remove addonops.io/hash-suffix"},
		{name: "add-on kinds in spec.kinds are blamed on spec.kinds, not on an annotation",
			config:  "apiVersion: addonops.io/v1alpha1\nkind: ConfigHash\nspec: {kinds: [{group: addon.open-cluster-management.io, kind: ClusterManagementAddOn}]}\n",
			input:   "apiVersion: addon.open-cluster-management.io/v1beta1\nkind: ClusterManagementAddOn\nmetadata: {name: a}\nspec: {}\n",
			wantErr: "ClusterManagementAddOn a: a ClusterManagementAddOn's name is the add-on's name and cannot be hash-suffixed: remove kind ClusterManagementAddOn from the functionConfig's spec.kinds"},
		{name: "namespaced config without namespace",
			input:   "apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: AddOnDeploymentConfig\nmetadata: {name: a}\nspec: {}\n",
			wantErr: "AddOnDeploymentConfig a: addondeploymentconfigs are namespaced but this object has no metadata.namespace"},
		{name: "unknown plural", input: strings.Replace(widget, "name: w,", "name: w, annotations: {addonops.io/hash-suffix: 'true'},", 1),
			wantErr: `Widget hub/w: cannot tell the plural resource name of kind Widget (group "example.com")`},
		{name: "plural from the CRD in the input",
			config: "apiVersion: addonops.io/v1alpha1\nkind: ConfigHash\nspec: {kinds: [{group: example.com, kind: Widget}]}\n",
			input:  docs(crd, widget, mca("c1", "a", "widgets.example.com hub/w")),
			check: func(t *testing.T, o output, results []string) {
				name := hashedName(t, widget, "w")
				if got := o.refs("ManagedClusterAddOn", "c1", "a"); !slices.Equal(got, []string{"widgets hub/" + name}) {
					t.Fatalf("refs %v, want %s", got, name)
				}
			}},
		{name: "a CRD in the input gives its defaults to the hash and checks its objects",
			config: "apiVersion: addonops.io/v1alpha1\nkind: ConfigHash\nspec: {kinds: [{group: example.com, kind: Widget}]}\n",
			input:  docs(widgetCRD, widget, mca("c1", "a", "widgets.example.com hub/w")),
			check: func(t *testing.T, o output, results []string) {
				// As the hub stores it: spec.color defaulted.
				name := hashedName(t, strings.Replace(widget, "spec: {size: 1}", "spec: {size: 1, color: blue}", 1), "w")
				if got := o.refs("ManagedClusterAddOn", "c1", "a"); !slices.Equal(got, []string{"widgets hub/" + name}) {
					t.Fatalf("refs %v, want %s (hashed with the CRD's default)", got, name)
				}
			}},
		{name: "an object its input CRD's schema refuses",
			config:  "apiVersion: addonops.io/v1alpha1\nkind: ConfigHash\nspec: {kinds: [{group: example.com, kind: Widget}]}\n",
			input:   docs(widgetCRD, strings.Replace(widget, "size: 1", "size: big", 1)),
			wantErr: `Widget hub/w: spec.size: Invalid value: "string": spec.size in body must be of type integer: "string" (the hub's API server would refuse it)`},
		{name: "a Secret is hashed as the API server stores it",
			input: "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: hub, annotations: {addonops.io/hash-suffix: 'true'}}\nstringData: {token: abc}\ndata: {other: eA==}\n",
			check: func(t *testing.T, o output, results []string) {
				want := hashedName(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: hub}\ntype: Opaque\ndata: {other: eA==, token: YWJj}\n", "s")
				if got := o.get("Secret", "hub", "s").GetName(); got != want {
					t.Fatalf("Secret named %s, want %s (type defaulted, stringData merged into data)", got, want)
				}
			}},
		{name: "plural from the functionConfig",
			config: "apiVersion: addonops.io/v1alpha1\nkind: ConfigHash\nspec: {kinds: [{group: example.com, kind: Widget}], resources: [{group: example.com, kind: Widget, resource: widgets, scope: Namespaced}]}\n",
			input:  docs(widget, mca("c1", "a", "widgets.example.com hub/w")),
			check: func(t *testing.T, o output, results []string) {
				if got := o.refs("ManagedClusterAddOn", "c1", "a"); !slices.Equal(got, []string{"widgets hub/" + hashedName(t, widget, "w")}) {
					t.Fatalf("refs %v", got)
				}
			}},
		{name: "functionConfig plural contradicts the CRD",
			config:  "apiVersion: addonops.io/v1alpha1\nkind: ConfigHash\nspec: {resources: [{group: example.com, kind: Widget, resource: widgetz, scope: Namespaced}]}\n",
			input:   docs(crd, widget),
			wantErr: "CustomResourceDefinition widgets.example.com",
		},
		{name: "cluster-scoped custom kind ignores a stamped namespace",
			config: "apiVersion: addonops.io/v1alpha1\nkind: ConfigHash\nspec: {kinds: [{group: example.com, kind: Widget}], resources: [{group: example.com, kind: Widget, resource: widgets, scope: Cluster}]}\n",
			input:  docs(widget, cma("a", "widgets.example.com w")),
			check: func(t *testing.T, o output, results []string) {
				if got := o.refs("ClusterManagementAddOn", "", "a"); !slices.Equal(got, []string{"widgets " + hashedName(t, widget, "w")}) {
					t.Fatalf("refs %v", got)
				}
			}},
		{name: "duplicate", input: docs(hub, hub), wantErr: "AddOnDeploymentConfig hub/cfg is in the input twice"},
		{name: "duplicate across API versions", input: docs(hub, strings.Replace(hub, "v1alpha1", "v1beta1", 1)),
			wantErr: "AddOnDeploymentConfig hub/cfg is in the input twice"},
		{name: "cluster-scoped duplicate with stamped namespaces",
			input:   docs(template("t", "a", "namespace: x1"), template("t", "b", "namespace: x2")),
			wantErr: "AddOnTemplate x2/t is in the input twice"},
		{name: "local config is skipped",
			input: docs("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: {name: p, annotations: {config.kubernetes.io/local-config: 'true'}}\n",
				"apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: {name: p, annotations: {config.kubernetes.io/local-config: 'true'}}\n", hub),
			check: func(t *testing.T, o output, results []string) {}},
		{name: "local config cannot be hashed",
			input:   adc("hub", "a", "x", "annotations: {config.kubernetes.io/local-config: 'true', addonops.io/hash-suffix: 'true'}"),
			wantErr: "AddOnDeploymentConfig hub/a is local config"},
		{name: "kustomize-generated object",
			input:   adc("hub", "a", "x", "annotations: {internal.config.kubernetes.io/needsHashSuffix: enabled}"),
			wantErr: "kustomize already adds its own hash suffix"},
		{name: "source and its hashed version collide", input: docs(hub, "HASHED"),
			wantErr: "would both be named"},
		{name: "new name taken by an opted-out object",
			input:   docs(hub, adc("hub", "NAME", "other", "annotations: {addonops.io/hash-suffix: 'false'}")),
			wantErr: "AddOnDeploymentConfig hub/cfg would be renamed"},
		{name: "re-run keeps a hashed object and its references",
			input: docs("HASHED", cma("a", "addondeploymentconfigs hub/NAME"), mca("cluster1", "a", "addondeploymentconfigs hub/cfg")),
			check: func(t *testing.T, o output, results []string) {
				want := []string{"addondeploymentconfigs hub/" + hubName(t)}
				if got := o.refs("ClusterManagementAddOn", "", "a"); !slices.Equal(got, want) {
					t.Fatalf("CMA refs %v, want %v", got, want)
				}
				if got := o.refs("ManagedClusterAddOn", "cluster1", "a"); !slices.Equal(got, want) {
					t.Fatalf("MCA refs %v, want %v", got, want)
				}
				wantResult(t, results, "info: 1 config(s) hashed, 0 renamed, 1 reference(s) rewritten")
			}},
		{name: "content edited in place gets a new name from its base",
			input: docs("HASHED", cma("a", "addondeploymentconfigs hub/NAME")),
			edit: func(in string) string {
				return strings.Replace(in, "agentInstallNamespace: agents", "agentInstallNamespace: edited", 1)
			},
			check: func(t *testing.T, o output, results []string) {
				edited := adc("hub", "cfg", "edited")
				name := hashedName(t, edited, "cfg")
				obj := o.get("AddOnDeploymentConfig", "hub", "cfg")
				if obj.GetName() != name || obj.GetAnnotations()[AnnotationContentHash] != mustHash(t, edited) {
					t.Fatalf("edited object:\n%s\nwant name %s", obj.MustString(), name)
				}
				if got := o.refs("ClusterManagementAddOn", "", "a"); !slices.Equal(got, []string{"addondeploymentconfigs hub/" + name}) {
					t.Fatalf("reference to the old hashed name not rewritten: %v", got)
				}
			}},
		{name: "name no longer derives from base-name",
			input:   adc("hub", "p-cfg-5d7b6k8mf9", "agents", "annotations: {addonops.io/base-name: cfg}"),
			wantErr: `AddOnDeploymentConfig hub/p-cfg-5d7b6k8mf9: metadata.name "p-cfg-5d7b6k8mf9" does not derive from addonops.io/base-name "cfg"`},
		{name: "content-hash without base-name",
			input:   adc("hub", "cfg", "agents", "annotations: {addonops.io/content-hash: abc}"),
			wantErr: "has addonops.io/content-hash but no addonops.io/base-name"},
		{name: "name too long", input: adc("hub", strings.Repeat("n", 243), "x"),
			wantErr: "characters, more than the 253 allowed for AddOnDeploymentConfig names: shorten the name to at most 242 characters"},
		{name: "name limit from the functionConfig",
			config:  "apiVersion: addonops.io/v1alpha1\nkind: ConfigHash\nspec: {nameLimits: [{group: addon.open-cluster-management.io, kind: AddOnTemplate, maxLength: 20}]}\n",
			input:   template("a-long-template", "a"),
			wantErr: "is 26 characters, more than the 20 allowed for AddOnTemplate names",
		},
		{name: "two versions make the base name ambiguous",
			input: docs(adc("hub", "cfg-gggggggggg", "one", "annotations: {addonops.io/base-name: cfg}"),
				adc("hub", "cfg-hhhhhhhhhh", "two", "annotations: {addonops.io/base-name: cfg}"),
				cma("a", "addondeploymentconfigs hub/cfg")),
			wantErr: "ClusterManagementAddOn a: spec.defaultConfigs[0] refers to addondeploymentconfigs.addon.open-cluster-management.io hub/cfg, which could mean any of"},
		{name: "kustomize previous names are followed",
			input: docs(adc("hub", "p-cfg", "agents", "annotations:",
				"  internal.config.kubernetes.io/previousNames: cfg", "  internal.config.kubernetes.io/previousNamespaces: hub",
				"  internal.config.kubernetes.io/previousKinds: AddOnDeploymentConfig"),
				cma("a", "addondeploymentconfigs hub/cfg")),
			check: func(t *testing.T, o output, results []string) {
				got := o.refs("ClusterManagementAddOn", "", "a")
				if len(got) != 1 || !isSuffixed(strings.TrimPrefix(got[0], "addondeploymentconfigs hub/"), "p-cfg") {
					t.Fatalf("refs %v", got)
				}
			}},
		{name: "kustomize moved the config to another namespace",
			input: docs(adc("moved", "cfg", "agents", "annotations:",
				"  internal.config.kubernetes.io/previousNames: cfg", "  internal.config.kubernetes.io/previousNamespaces: hub",
				"  internal.config.kubernetes.io/previousKinds: AddOnDeploymentConfig"),
				cma("a", "addondeploymentconfigs hub/cfg")),
			wantErr: `but kustomize moved that AddOnDeploymentConfig to namespace "moved" during this build`},
		{name: "reference without group is in the core group, as OCM defaults it",
			input: docs(hub, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: hub\n  annotations: {addonops.io/hash-suffix: 'true'}\ndata: {k: v}\n",
				"apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: ManagedClusterAddOn\nmetadata: {name: a, namespace: c}\nspec:\n  configs:\n  - {resource: configmaps, namespace: hub, name: cm}\n  - {resource: addondeploymentconfigs, namespace: hub, name: cfg}\n"),
			check: func(t *testing.T, o output, results []string) {
				cm := o.get("ConfigMap", "hub", "cm").GetName()
				if got, want := o.refs("ManagedClusterAddOn", "c", "a"), []string{"configmaps hub/" + cm, "addondeploymentconfigs hub/cfg"}; !slices.Equal(got, want) {
					t.Fatalf("refs %v, want %v", got, want)
				}
				wantResult(t, results, "warning: ManagedClusterAddOn c/a: spec.configs[1] refers to addondeploymentconfigs hub/cfg, which is not in the input, but the input renames AddOnDeploymentConfig hub/cfg")
			}},
		{name: "reference without resource",
			input:   docs(hub, "apiVersion: addon.open-cluster-management.io/v1beta1\nkind: ClusterManagementAddOn\nmetadata: {name: a}\nspec:\n  defaultConfigs:\n  - {group: addon.open-cluster-management.io, namespace: hub, name: cfg}\n"),
			wantErr: "ClusterManagementAddOn a: spec.defaultConfigs[0]: config reference has no resource"},
		{name: "prune protection merges with existing options",
			input: docs(adc("hub", "a", "x", "annotations: {argocd.argoproj.io/sync-options: 'ServerSideApply=true, Validate=false'}"),
				adc("hub", "b", "x", "annotations: {argocd.argoproj.io/sync-options: 'Prune=confirm'}"),
				adc("hub", "c", "x", "annotations: {argocd.argoproj.io/sync-options: 'Prune=true,ServerSideApply=true', kustomize.toolkit.fluxcd.io/prune: enabled}"),
				adc("hub", "d", "x", "annotations: {argocd.argoproj.io/sync-options: 'Validate=false, '}"),
				adc("hub", "e", "x", "annotations: {argocd.argoproj.io/sync-options: ' , ', argocd.argoproj.io/compare-options: 'ServerSideDiff=true'}"),
				adc("hub", "f", "x", "annotations: {argocd.argoproj.io/compare-options: 'IgnoreExtraneous, ServerSideDiff=true'}")),
			check: func(t *testing.T, o output, results []string) {
				for base, want := range map[string]string{"a": "IgnoreExtraneous", "e": "ServerSideDiff=true,IgnoreExtraneous",
					"f": "IgnoreExtraneous, ServerSideDiff=true"} {
					if got := o.get("AddOnDeploymentConfig", "hub", base).GetAnnotations()[AnnotationArgoCompareOptions]; got != want {
						t.Errorf("%s: compare-options %q, want %q", base, got, want)
					}
				}
				for base, want := range map[string]string{"a": "ServerSideApply=true, Validate=false,Prune=false", "b": "Prune=confirm",
					"c": "ServerSideApply=true,Prune=false", "d": "Validate=false,Prune=false", "e": "Prune=false"} {
					if got := o.get("AddOnDeploymentConfig", "hub", base).GetAnnotations()[AnnotationArgoSyncOptions]; got != want {
						t.Errorf("%s: sync-options %q, want %q", base, got, want)
					}
					if got := o.get("AddOnDeploymentConfig", "hub", base).GetAnnotations()[AnnotationFluxPrune]; got != "disabled" {
						t.Errorf("%s: flux prune %q", base, got)
					}
				}
				wantResult(t, results, `warning: AddOnDeploymentConfig hub/c: argocd.argoproj.io/sync-options "Prune=true" replaced by Prune=false`)
				wantResult(t, results, `warning: AddOnDeploymentConfig hub/c: kustomize.toolkit.fluxcd.io/prune "enabled" replaced by "disabled"`)
			}},
		{name: "prune protection off",
			config: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {pruneProtection: 'false'}\n",
			input:  hub,
			check: func(t *testing.T, o output, results []string) {
				ann := o.get("AddOnDeploymentConfig", "hub", "cfg").GetAnnotations()
				for _, a := range []string{AnnotationArgoSyncOptions, AnnotationArgoCompareOptions, AnnotationFluxPrune} {
					if _, ok := ann[a]; ok {
						t.Fatalf("annotation %s in %v", a, ann)
					}
				}
			}},
		{name: "prune protection turned off removes what an earlier run stamped, and only that",
			config: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {pruneProtection: 'false'}\n",
			input: docs(adc("hub", "a", "x", "annotations: {argocd.argoproj.io/sync-options: 'Prune=false', argocd.argoproj.io/compare-options: IgnoreExtraneous, kustomize.toolkit.fluxcd.io/prune: disabled}"),
				adc("hub", "b", "x", "annotations: {argocd.argoproj.io/sync-options: 'ServerSideApply=true, Prune=false,Validate=false', argocd.argoproj.io/compare-options: 'ServerSideDiff=true,IgnoreExtraneous'}"),
				adc("hub", "c", "x", "annotations: {argocd.argoproj.io/sync-options: 'Prune=confirm', addonops.io/hash-suffix: 'true'}"),
				adc("hub", "keep", "x", "annotations: {argocd.argoproj.io/sync-options: 'Prune=false', addonops.io/hash-suffix: 'false'}")),
			check: func(t *testing.T, o output, results []string) {
				want := map[string]map[string]string{
					"a":    {},
					"b":    {AnnotationArgoSyncOptions: "ServerSideApply=true,Validate=false", AnnotationArgoCompareOptions: "ServerSideDiff=true"},
					"c":    {AnnotationArgoSyncOptions: "Prune=confirm"},
					"keep": {AnnotationArgoSyncOptions: "Prune=false"}, // not a versioned config: not ours to change
				}
				for base, w := range want {
					ann := o.get("AddOnDeploymentConfig", "hub", base).GetAnnotations()
					for _, a := range []string{AnnotationArgoSyncOptions, AnnotationArgoCompareOptions, AnnotationFluxPrune} {
						if got, ok := ann[a]; got != w[a] || ok != (w[a] != "") {
							t.Errorf("%s: %s = %q (set %t), want %q", base, a, got, ok, w[a])
						}
					}
				}
			}},
		{name: "bad functionConfig", config: "apiVersion: addonops.io/v1alpha1\nkind: ConfigHash\nspec: {typo: 1}\n", input: hub,
			wantErr: `functionConfig spec: unknown field "typo"`},
		{name: "non-KRM documents pass through", input: docs("just: data\n", hub),
			check: func(t *testing.T, o output, results []string) {
				if len(o.items) != 2 {
					t.Fatalf("items: %d", len(o.items))
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := strings.ReplaceAll(tc.input, "HASHED", hashedHub(t))
			in = strings.ReplaceAll(in, "NAME", hubName(t))
			if tc.edit != nil {
				in = tc.edit(in)
			}
			out, results, code := transform(t, in, tc.config)
			if tc.wantErr != "" {
				if code != 1 || out != "" {
					t.Fatalf("exit %d, output %q; want an error", code, out)
				}
				wantError(t, results, strings.ReplaceAll(tc.wantErr, "NAME", hubName(t)))
				return
			}
			if code != 0 {
				t.Fatalf("exit %d: %v", code, results)
			}
			tc.check(t, parseOutput(t, out), results)
			again, results2, code := transform(t, out, tc.config)
			if code != 0 || again != out {
				t.Fatalf("second run changed the output (exit %d, %v):\n%s\nfirst:\n%s", code, results2, again, out)
			}
		})
	}
}

// The benchmark's generated package is valid input: every reference is rewritten to an object in
// the output, and nothing is reported missing.
func TestGeneratedPackage(t *testing.T) {
	out, results, code := transform(t, benchgen.Stream(200, 20), "")
	if code != 0 {
		t.Fatalf("exit %d: %v", code, results)
	}
	if !slices.Equal(results, []string{"info: 200 config(s) hashed, 200 renamed, 200 reference(s) rewritten"}) {
		t.Fatalf("results: %v", results)
	}
	o := parseOutput(t, out)
	names := map[string]bool{}
	for _, it := range o.items {
		names[it.GetNamespace()+"/"+it.GetName()] = true
	}
	refs := 0
	for _, it := range o.items {
		sites, err := configref.Sites(it)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range sites {
			refs++
			if !names[s.Ref.Namespace+"/"+s.Ref.Name] {
				t.Fatalf("%s: reference %s points at nothing in the output", it.GetName(), s.Ref)
			}
		}
	}
	if refs != 200 {
		t.Fatalf("%d references, want 200", refs)
	}
}

// BenchmarkProcess measures the function in-process (no YAML parsing of stdin, no process start);
// `make bench-config-hash` measures the binary as kustomize runs it.
func BenchmarkProcess(b *testing.B) {
	for _, n := range []int{200, 2000, 20000} {
		b.Run(fmt.Sprintf("configs=%d", n), func(b *testing.B) {
			input := benchgen.ResourceList(n, n/10) // what kustomize and kpt send
			for b.Loop() {
				var out, errw bytes.Buffer
				if code := krmfn.ExecuteStream("config-hash", krmfn.Input{Stdin: strings.NewReader(input)}, process, &out, &errw); code != 0 {
					b.Fatal(errw.String())
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(n), "µs/config")
		})
	}
}
