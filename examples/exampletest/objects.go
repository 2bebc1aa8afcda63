package exampletest

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/kustomize/kyaml/kio"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/spechash"
)

// Object is one document of a multi-document YAML output.
type Object struct {
	YAML []byte         // the document as printed
	Map  map[string]any // as a client sends it to the API server (YAML read as JSON)
	Node *kyaml.RNode
}

// Parse splits a YAML stream into its objects.
func Parse(t testing.TB, data []byte) []Object {
	t.Helper()
	nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(data), OmitReaderAnnotations: true}).Read()
	if err != nil {
		t.Fatalf("parsing YAML output: %v", err)
	}
	objs := make([]Object, 0, len(nodes))
	for _, n := range nodes {
		doc, err := n.String()
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("decoding %s: %v", doc, err)
		}
		objs = append(objs, Object{YAML: []byte(doc), Map: m, Node: n})
	}
	return objs
}

func (o Object) APIVersion() string { return o.Node.GetApiVersion() }
func (o Object) Kind() string       { return o.Node.GetKind() }
func (o Object) Namespace() string  { return o.Node.GetNamespace() }
func (o Object) Name() string       { return o.Node.GetName() }
func (o Object) Group() string      { return configref.GroupOf(o.APIVersion()) }

// Annotations returns the object's annotations (never nil).
func (o Object) Annotations() map[string]string { return o.Node.GetAnnotations() }

// Labels returns the object's labels (never nil).
func (o Object) Labels() map[string]string { return o.Node.GetLabels() }

func (o Object) String() string {
	if o.Namespace() == "" {
		return fmt.Sprintf("%s %s", o.Kind(), o.Name())
	}
	return fmt.Sprintf("%s %s/%s", o.Kind(), o.Namespace(), o.Name())
}

// OfKind returns the objects of a kind, in output order.
func OfKind(objs []Object, kind string) []Object {
	var out []Object
	for _, o := range objs {
		if o.Kind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// One returns the only object of a kind, failing the test if there is not exactly one.
func One(t testing.TB, objs []Object, kind string) Object {
	t.Helper()
	of := OfKind(objs, kind)
	if len(of) != 1 {
		t.Fatalf("want exactly one %s in the output, got %d", kind, len(of))
	}
	return of[0]
}

// Find returns the object of the given group, kind, namespace and name.
func Find(objs []Object, group, kind, namespace, name string) (Object, bool) {
	for _, o := range objs {
		if o.Group() == group && o.Kind() == kind && o.Namespace() == namespace && o.Name() == name {
			return o, true
		}
	}
	return Object{}, false
}

// Typed decodes the object strictly into v (unknown or duplicate fields are errors).
func (o Object) Typed(t testing.TB, v any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(o.YAML, v); err != nil {
		t.Fatalf("%s does not decode as its API type: %v", o, err)
	}
}

// typed are the API types the examples' objects must decode into.
var typed = map[string]func() any{
	"addon.open-cluster-management.io/v1alpha1/ClusterManagementAddOn": func() any { return &addonv1alpha1.ClusterManagementAddOn{} },
	"addon.open-cluster-management.io/v1alpha1/AddOnDeploymentConfig":  func() any { return &addonv1alpha1.AddOnDeploymentConfig{} },
	"addon.open-cluster-management.io/v1alpha1/AddOnTemplate":          func() any { return &addonv1alpha1.AddOnTemplate{} },
	"cluster.open-cluster-management.io/v1beta1/Placement":             func() any { return &clusterv1beta1.Placement{} },
	"cluster.open-cluster-management.io/v1beta2/ManagedClusterSetBinding": func() any {
		return &clusterv1beta2.ManagedClusterSetBinding{}
	},
	"rbac.authorization.k8s.io/v1/ClusterRole":        func() any { return &rbacv1.ClusterRole{} },
	"rbac.authorization.k8s.io/v1/ClusterRoleBinding": func() any { return &rbacv1.ClusterRoleBinding{} },
	"rbac.authorization.k8s.io/v1/Role":               func() any { return &rbacv1.Role{} },
	"rbac.authorization.k8s.io/v1/RoleBinding":        func() any { return &rbacv1.RoleBinding{} },
	"apps/v1/Deployment":                              func() any { return &appsv1.Deployment{} },
	"v1/ServiceAccount":                               func() any { return &corev1.ServiceAccount{} },
}

// CheckTyped decodes every object strictly into its Kubernetes or OCM API type, and likewise every
// manifest inside an AddOnTemplate, so a misspelt or misplaced field fails here rather than on the
// hub. A kind without a known type is an error: add it to the table.
func CheckTyped(t testing.TB, objs []Object) {
	t.Helper()
	for _, o := range objs {
		newT, ok := typed[o.APIVersion()+"/"+o.Kind()]
		if !ok {
			t.Errorf("%s (%s): no API type to check it against; add one to exampletest's table", o, o.APIVersion())
			continue
		}
		o.Typed(t, newT())
		if o.Kind() != "AddOnTemplate" {
			continue
		}
		manifests, err := o.Node.Pipe(kyaml.Lookup("spec", "agentSpec", "workload", "manifests"))
		if err != nil || manifests == nil {
			t.Errorf("%s: no spec.agentSpec.workload.manifests", o)
			continue
		}
		elems, err := manifests.Elements()
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range elems {
			doc, err := m.String()
			if err != nil {
				t.Fatal(err)
			}
			inner := Object{YAML: []byte(doc), Node: m}
			newT, ok := typed[inner.APIVersion()+"/"+inner.Kind()]
			if !ok {
				t.Errorf("%s manifest %d (%s): no API type to check it against", o, i, inner)
				continue
			}
			if err := yaml.UnmarshalStrict(inner.YAML, newT()); err != nil {
				t.Errorf("%s manifest %d (%s) does not decode as its API type: %v", o, i, inner, err)
			}
		}
	}
}

// Annotations config-hash stamps on the configs it names.
const (
	BaseNameAnnotation    = configref.BaseNameAnnotation
	ContentHashAnnotation = configref.ContentHashAnnotation
)

// CheckHashedConfigs asserts that every AddOnDeploymentConfig and AddOnTemplate went through
// config-hash: it carries the annotations, its content hash is OCM's spec hash of its content as
// printed, and its name is its base name plus the suffix of that hash. It returns the configs by
// base name.
func CheckHashedConfigs(t testing.TB, objs []Object) map[string]Object {
	t.Helper()
	byBase := map[string]Object{}
	for _, o := range objs {
		if o.Group() != configref.AddonGroup || (o.Kind() != "AddOnDeploymentConfig" && o.Kind() != "AddOnTemplate") {
			continue
		}
		ann := o.Annotations()
		base, hash := ann[BaseNameAnnotation], ann[ContentHashAnnotation]
		if base == "" || hash == "" {
			t.Errorf("%s has no %s/%s annotations: config-hash did not run (was the build run with --enable-exec?)", o, BaseNameAnnotation, ContentHashAnnotation)
			continue
		}
		want, err := spechash.Of(o.Map)
		if err != nil {
			t.Fatal(err)
		}
		if hash != want {
			t.Errorf("%s: %s is %s, but OCM's spec hash of its content is %s", o, ContentHashAnnotation, hash, want)
		}
		suffix, err := spechash.Suffix(want)
		if err != nil {
			t.Fatal(err)
		}
		if o.Name() != base+"-"+suffix {
			t.Errorf("%s: name should be %s-%s (base name and content hash suffix)", o, base, suffix)
		}
		if other, dup := byBase[o.Kind()+"/"+base]; dup {
			t.Errorf("%s and %s are two versions of one config in one output", o, other)
		}
		byBase[o.Kind()+"/"+base] = o
	}
	return byBase
}

// Ref is a config reference found in the output, with the object it points at.
type Ref struct {
	Holder Object
	Site   configref.Site
	Target Object
}

// CheckReferences asserts that every config reference of every ClusterManagementAddOn and
// ManagedClusterAddOn points at an object of the output (by group, resource, namespace for
// namespaced kinds, and name), and returns them.
func CheckReferences(t testing.TB, objs []Object) []Ref {
	t.Helper()
	kinds := configref.NewKinds()
	var refs []Ref
	for _, o := range objs {
		if !configref.HoldsReferences(o.APIVersion(), o.Kind()) {
			continue
		}
		sites, err := configref.Sites(o.Node)
		if err != nil {
			t.Errorf("%s: %v", o, err)
			continue
		}
		for _, s := range sites {
			k, ok := kinds.ByResource(s.Ref.GroupResource)
			if !ok {
				t.Errorf("%s %s: unknown config kind %s", o, s.Path, s.Ref.GroupResource)
				continue
			}
			ns := ""
			if k.Namespaced {
				ns = s.Ref.Namespace
			}
			target, ok := Find(objs, k.Group, k.Kind, ns, s.Ref.Name)
			if !ok {
				t.Errorf("%s %s points at %s, which is not in the output", o, s.Path, s.Ref)
				continue
			}
			refs = append(refs, Ref{Holder: o, Site: s, Target: target})
		}
	}
	return refs
}

// CheckPlacements asserts that every placement of every ClusterManagementAddOn's install strategy
// is a Placement of the output, and that every cluster set the Placement selects from is bound to
// its namespace by a ManagedClusterSetBinding of the output (named after the set, as OCM
// requires). It returns the Placements by "<namespace>/<name>".
func CheckPlacements(t testing.TB, objs []Object) map[string]clusterv1beta1.Placement {
	t.Helper()
	bindings := map[string]bool{} // namespace/clusterSet
	for _, o := range OfKind(objs, "ManagedClusterSetBinding") {
		var b clusterv1beta2.ManagedClusterSetBinding
		o.Typed(t, &b)
		if b.Name != b.Spec.ClusterSet {
			t.Errorf("%s binds cluster set %q: OCM requires the binding to be named after the set", o, b.Spec.ClusterSet)
		}
		bindings[b.Namespace+"/"+b.Spec.ClusterSet] = true
	}
	placements := map[string]clusterv1beta1.Placement{}
	for _, o := range OfKind(objs, "Placement") {
		var p clusterv1beta1.Placement
		o.Typed(t, &p)
		if len(p.Spec.ClusterSets) == 0 {
			t.Errorf("%s selects from every bound cluster set: name them (spec.clusterSets) so the example does not depend on the hub's other bindings", o)
		}
		for _, set := range p.Spec.ClusterSets {
			if !bindings[p.Namespace+"/"+set] {
				t.Errorf("%s selects from cluster set %q, which no ManagedClusterSetBinding of the output binds to namespace %s", o, set, p.Namespace)
			}
		}
		placements[p.Namespace+"/"+p.Name] = p
	}
	for _, o := range OfKind(objs, "ClusterManagementAddOn") {
		var cma addonv1alpha1.ClusterManagementAddOn
		o.Typed(t, &cma)
		for i, ps := range cma.Spec.InstallStrategy.Placements {
			if _, ok := placements[ps.Namespace+"/"+ps.Name]; !ok {
				t.Errorf("%s spec.installStrategy.placements[%d] names Placement %s/%s, which is not in the output", o, i, ps.Namespace, ps.Name)
			}
		}
	}
	return placements
}

// CheckRendered asserts that a rendered agent (addon-template render) is complete: every object
// is marked as local configuration (never applied by accident) for the cluster, and no {{VARIABLE}}
// is left.
func CheckRendered(t testing.TB, objs []Object, cluster string) {
	t.Helper()
	if len(objs) == 0 {
		t.Fatal("the rendering is empty")
	}
	for _, o := range objs {
		ann := o.Annotations()
		if ann["config.kubernetes.io/local-config"] != "true" || ann["addonops.io/preview-cluster"] != cluster {
			t.Errorf("%s is not marked as the local-config preview for %s: %v", o, cluster, ann)
		}
		if strings.Contains(string(o.YAML), "{{") {
			t.Errorf("%s still holds a {{variable}}:\n%s", o, o.YAML)
		}
	}
}
