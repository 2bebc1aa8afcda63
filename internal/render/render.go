package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	sigsjson "sigs.k8s.io/json"
)

// Cluster is what rendering depends on besides the template: which cluster, with which
// AddOnDeploymentConfigs, and the ManagedCluster's image mirrors.
type Cluster struct {
	// Name of the managed cluster (required).
	Name string
	// DeploymentConfigs are the AddOnDeploymentConfigs of the ManagedClusterAddOn's
	// status.configReferences, in that order, as stored by the API server (CRD defaults applied;
	// use DecodeAddOnDeploymentConfig for objects read from files). OCM renders with the first
	// only; more than one gives a warning.
	DeploymentConfigs []*addonv1alpha1.AddOnDeploymentConfig
	// ImageRegistries is the value of the ManagedCluster's open-cluster-management.io/image-registries
	// annotation, "" when it has none.
	ImageRegistries string
}

// Result is one cluster's rendering.
type Result struct {
	// Objects are the agent manifests as OCM puts them into ManifestWorks: the template's
	// manifests in template order, then the objects OCM injects (the proxy CA ConfigMap).
	Objects []*unstructured.Unstructured
	// Warnings are things OCM does silently that a reviewer should know about.
	Warnings []string
}

// Error is a rendering problem, located as precisely as possible in the template.
type Error struct {
	// Manifest is the index in spec.agentSpec.workload.manifests, or -1 when the problem is not
	// about one manifest (values, registration).
	Manifest int
	// Object names the manifest as written in the template ("Deployment ns/name"), "" if unknown.
	Object string
	// Field is a path inside the manifest (or inside the template when Manifest is -1), "" if none.
	Field   string
	Message string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Manifest >= 0 {
		fmt.Fprintf(&b, "manifest %d", e.Manifest)
		if e.Object != "" {
			fmt.Fprintf(&b, " (%s)", e.Object)
		}
		if e.Field != "" && !strings.Contains(e.Message, e.Field) {
			fmt.Fprintf(&b, " field %s", e.Field)
		}
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	return b.String()
}

// Renderer renders one AddOnTemplate for any number of clusters. Compile it once; Render is safe
// for concurrent use.
type Renderer struct {
	template  *addonv1alpha1.AddOnTemplate
	addonName string
	manifests []*manifest
	warnings  []string
}

type manifest struct {
	index int
	desc  string // "Kind ns/name" as written in the template
	tree  any    // compiled tree (see substitute.go), a map at the top
	uses  []VariableUse
	// kind of workload OCM decorates: "deployments", "daemonsets" or "".
	workload string
}

// Compile parses the template's manifests and finds their variables. It fails on a manifest
// that is not a JSON object with a kind (OCM fails on those too) and on an unterminated "{{".
func Compile(t *addonv1alpha1.AddOnTemplate) (*Renderer, error) {
	if t == nil {
		return nil, errors.New("AddOnTemplate is nil")
	}
	if t.Spec.AddonName == "" {
		return nil, &Error{Manifest: -1, Field: "spec.addonName", Message: fmt.Sprintf("AddOnTemplate %s has no spec.addonName", t.Name)}
	}
	r := &Renderer{template: t, addonName: t.Spec.AddonName}
	var errs []error
	for i, m := range t.Spec.AgentSpec.Workload.Manifests {
		raw := m.Raw
		if len(raw) == 0 && m.Object != nil {
			b, err := json.Marshal(m.Object)
			if err != nil {
				errs = append(errs, &Error{Manifest: i, Message: fmt.Sprintf("cannot encode manifest: %v", err)})
				continue
			}
			raw = b
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			errs = append(errs, &Error{Manifest: i, Message: fmt.Sprintf("not a Kubernetes object: %v", err)})
			continue
		}
		mf := &manifest{index: i, desc: describe(u)}
		tree, err := compileTree(u.Object, "", &mf.uses)
		if err != nil {
			var re *Error
			if errors.As(err, &re) {
				re.Manifest, re.Object = i, mf.desc
			}
			errs = append(errs, err)
			continue
		}
		mf.tree = tree
		gvk := u.GroupVersionKind()
		if gvk.Group == appsv1.GroupName && (gvk.Kind == "Deployment" || gvk.Kind == "DaemonSet") {
			mf.workload = strings.ToLower(gvk.Kind) + "s"
			r.warnings = append(r.warnings, unknownFieldWarnings(mf)...)
		}
		r.manifests = append(r.manifests, mf)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return r, nil
}

// unknownFieldWarnings reports fields of a Deployment or DaemonSet that are not part of the
// apps/v1 type: OCM decodes workloads into the typed object to decorate them, which drops such
// fields without a word. Strings holding variables are left out of the check (a "{{REPLICAS}}"
// where an integer goes is a type error Render reports with the substituted value).
func unknownFieldWarnings(mf *manifest) []string {
	probe, err := json.Marshal(withoutTags(mf.tree))
	if err != nil {
		return nil
	}
	var target any = &appsv1.Deployment{}
	if mf.workload == "daemonsets" {
		target = &appsv1.DaemonSet{}
	}
	strict, _ := sigsjson.UnmarshalStrict(probe, target)
	var out []string
	for _, e := range strict {
		out = append(out, fmt.Sprintf("manifest %d (%s): %v: the field is not part of apps/v1 and is dropped, as OCM drops it", mf.index, mf.desc, e))
	}
	return out
}

// withoutTags is a compiled tree with every string holding a variable replaced by null and every
// map entry whose key holds one left out.
func withoutTags(v any) any {
	switch x := v.(type) {
	case *tmplString:
		return nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = withoutTags(e)
		}
		return out
	case *tmplMap:
		out := make(map[string]any, len(x.keys))
		for i, k := range x.keys {
			if key, ok := k.(string); ok {
				out[key] = withoutTags(x.values[i])
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = withoutTags(e)
		}
		return out
	default:
		return x
	}
}

// Variables lists every {{VAR}} use of every manifest, by manifest index.
func (r *Renderer) Variables() map[int][]VariableUse {
	out := map[int][]VariableUse{}
	for _, m := range r.manifests {
		if len(m.uses) > 0 {
			out[m.index] = append([]VariableUse(nil), m.uses...)
		}
	}
	return out
}

// Warnings are the template's own warnings, independent of any cluster.
func (r *Renderer) Warnings() []string { return append([]string(nil), r.warnings...) }

// Render renders the template for a cluster.
func Render(t *addonv1alpha1.AddOnTemplate, c Cluster) (*Result, error) {
	r, err := Compile(t)
	if err != nil {
		return nil, err
	}
	return r.Render(c)
}

// Render renders the template for one cluster: what OCM's template agent would put into the
// cluster's ManifestWorks. It never returns a partial result: on error Result is nil.
func (r *Renderer) Render(c Cluster) (*Result, error) {
	if c.Name == "" {
		return nil, errors.New("cluster name is empty")
	}
	v, warnings, err := computeValues(r.template, c)
	if err != nil {
		return nil, err
	}
	if err := r.checkVariables(v, c); err != nil {
		return nil, err
	}
	res := &Result{Warnings: append(append([]string(nil), r.warnings...), warnings...)}
	var errs []error
	for _, m := range r.manifests {
		tree, err := instantiate(m.tree, v.vars)
		if err != nil {
			errs = append(errs, locate(err, m))
			continue
		}
		obj := &unstructured.Unstructured{Object: tree.(map[string]any)}
		if m.workload != "" {
			obj, err = r.decorateWorkload(obj, m, v)
			if err != nil {
				errs = append(errs, locate(err, m))
				continue
			}
		}
		if err := setInstallNamespace(obj, v.installNamespace); err != nil {
			errs = append(errs, locate(err, m))
			continue
		}
		res.Objects = append(res.Objects, obj)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if v.proxy != nil && len(v.proxy.CABundle) > 0 {
		cm, err := r.proxyCAConfigMap(v.proxy.CABundle)
		if err != nil {
			return nil, err
		}
		if err := setInstallNamespace(cm, v.installNamespace); err != nil {
			return nil, err
		}
		res.Objects = append(res.Objects, cm)
	}
	if err := r.checkUnique(res.Objects, v.installNamespace); err != nil {
		return nil, err
	}
	return res, nil
}

// checkUnique fails when two rendered objects are the same object (API group, kind, namespace,
// name): written twice, moved into one install namespace, or named alike by variables. A cluster
// holds it once; OCM's work builder keeps one of them without a word. objects are the manifests
// in template order, then the injected proxy CA ConfigMap.
func (r *Renderer) checkUnique(objects []*unstructured.Unstructured, installNamespace string) error {
	type key struct{ group, kind, namespace, name string }
	seen := map[key]int{}
	var errs []error
	where := func(i int) (int, string) {
		if i < len(r.manifests) {
			return r.manifests[i].index, r.manifests[i].desc
		}
		return -1, "the proxy CA ConfigMap OCM injects"
	}
	for i, o := range objects {
		gvk := o.GroupVersionKind()
		k := key{gvk.Group, gvk.Kind, o.GetNamespace(), o.GetName()}
		first, dup := seen[k]
		if !dup {
			seen[k] = i
			continue
		}
		firstIndex, firstDesc := where(first)
		index, desc := where(i)
		other := fmt.Sprintf("manifest %d (%s)", firstIndex, firstDesc)
		if firstIndex < 0 {
			other = firstDesc
		}
		msg := fmt.Sprintf("renders to %s, as %s does: a cluster holds an object only once (OCM would deploy one of them)", describe(o), other)
		if installNamespace != "" && index >= 0 && firstIndex >= 0 && firstDesc != desc {
			msg += fmt.Sprintf("; the AddOnDeploymentConfig's agentInstallNamespace %q moves every namespaced object into it", installNamespace)
		}
		if index < 0 {
			errs = append(errs, &Error{Manifest: -1, Message: "the proxy CA ConfigMap OCM injects " + msg})
			continue
		}
		errs = append(errs, &Error{Manifest: index, Object: desc, Message: msg})
	}
	return errors.Join(errs...)
}

// checkVariables fails on variables no layer defines. OCM renders them as "" without a word.
func (r *Renderer) checkVariables(v *values, c Cluster) error {
	undefined := map[string][]string{}
	var names []string
	for _, m := range r.manifests {
		for _, u := range m.uses {
			value, ok := v.vars[u.Name]
			if ok {
				if err := checkUTF8(u.Name, value); err != nil {
					return err
				}
				continue
			}
			if _, seen := undefined[u.Name]; !seen {
				names = append(names, u.Name)
			}
			undefined[u.Name] = append(undefined[u.Name], fmt.Sprintf("manifest %d (%s) %s", m.index, m.desc, orRoot(u.Field)))
		}
	}
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "undefined variable")
	if len(names) > 1 {
		b.WriteString("s")
	}
	for i, n := range names {
		if i > 0 {
			b.WriteString(";")
		}
		fmt.Fprintf(&b, " %s (used in %s)", strconv.Quote(n), strings.Join(undefined[n], ", "))
	}
	fmt.Fprintf(&b, " for cluster %s: %s", c.Name, definedHint(names, r.template))
	return &Error{Manifest: -1, Message: b.String()}
}

func definedHint(names []string, t *addonv1alpha1.AddOnTemplate) string {
	var hints []string
	for _, n := range names {
		switch {
		case n == VarHubKubeconfig && t.Spec.Registration == nil:
			hints = append(hints, "HUB_KUBECONFIG is only defined when the template has spec.registration")
		case n == VarInstallNamespace:
			hints = append(hints, "INSTALL_NAMESPACE is only defined when the AddOnDeploymentConfig sets spec.agentInstallNamespace")
		case !IsIdentifier(n):
			hints = append(hints, fmt.Sprintf("%q is not a variable name (names are C identifiers, the text between {{ and }} is taken literally)", n))
		}
	}
	hints = append(hints, "define the variables in spec.customizedVariables of the AddOnDeploymentConfig")
	return strings.Join(hints, "; ")
}

func locate(err error, m *manifest) error {
	var re *Error
	if errors.As(err, &re) {
		re.Manifest, re.Object = m.index, m.desc
		return re
	}
	var pe *podError
	if errors.As(err, &pe) {
		return &Error{Manifest: m.index, Object: m.desc, Field: "spec.template." + pe.field, Message: pe.msg}
	}
	return &Error{Manifest: m.index, Object: m.desc, Message: err.Error()}
}

// decorateWorkload converts a Deployment or DaemonSet to its typed form, decorates its pod template
// and converts it back, exactly the round trip OCM does (so the output carries the same defaults
// the typed form adds, e.g. creationTimestamp: null, status: {}). OCM leaves a workload that does
// not decode untouched, without its hub kubeconfig; here that is an error.
func (r *Renderer) decorateWorkload(obj *unstructured.Unstructured, m *manifest, v *values) (*unstructured.Unstructured, error) {
	var typed runtime.Object
	var pod *corev1.PodTemplateSpec
	switch m.workload {
	case "deployments":
		d := &appsv1.Deployment{}
		typed, pod = d, &d.Spec.Template
	case "daemonsets":
		d := &appsv1.DaemonSet{}
		typed, pod = d, &d.Spec.Template
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, typed); err != nil {
		return nil, fmt.Errorf("does not decode as apps/v1 %s after substitution (OCM would deploy it without its env, volumes and node placement): %v",
			obj.GetKind(), decodeError(obj, typed, err))
	}
	name := typed.(metav1.Object).GetName()
	if err := r.decorate(v, workload{resource: m.workload, name: name, pod: pod}); err != nil {
		return nil, err
	}
	out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		return nil, fmt.Errorf("encoding decorated %s: %v", obj.GetKind(), err)
	}
	return &unstructured.Unstructured{Object: out}, nil
}

// decodeError explains why an object does not decode into typed: the converter's messages do not
// name the field ("unrecognized type: int32"), encoding/json's do.
func decodeError(obj *unstructured.Unstructured, typed runtime.Object, convErr error) error {
	b, err := json.Marshal(obj.Object)
	if err != nil {
		return convErr
	}
	fresh := typed.DeepCopyObject()
	if err := json.Unmarshal(b, fresh); err != nil {
		return err
	}
	return convErr
}

// namespacedFields are the fields the install namespace is written to besides metadata.namespace.
var namespacedFields = map[string][]string{
	"ClusterRoleBinding": {"subjects", "namespace"},
	"RoleBinding":        {"subjects", "namespace"},
	"Namespace":          {"metadata", "name"},
}

// setInstallNamespace is OCM's namespace decorator: with an install namespace from the ADC, every
// namespaced object (one with metadata.namespace set) moves to it, (Cluster)RoleBinding subjects
// get it, and a Namespace object is renamed to it.
func setInstallNamespace(obj *unstructured.Unstructured, ns string) error {
	if ns == "" {
		return nil
	}
	if obj.GetNamespace() != "" {
		obj.SetNamespace(ns)
	}
	path, ok := namespacedFields[obj.GetKind()]
	if !ok {
		return nil
	}
	return setNested(obj.Object, ns, path, "")
}

func setNested(obj any, val string, path []string, at string) error {
	switch f := obj.(type) {
	case []any:
		for i, item := range f {
			if err := setNested(item, val, path, at+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	case map[string]any:
		if len(path) == 1 {
			f[path[0]] = val
			return nil
		}
		next, ok := f[path[0]]
		if !ok {
			return &Error{Field: joinField(at, path[0]), Message: fmt.Sprintf(
				"has no %s, which OCM needs to set the install namespace %q (OCM fails the same way)", joinField(at, path[0]), val)}
		}
		return setNested(next, val, path[1:], joinField(at, path[0]))
	}
	return nil
}

func (r *Renderer) proxyCAConfigMap(caBundle []byte) (*unstructured.Unstructured, error) {
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: ProxyCAConfigMapName(r.addonName), Namespace: DefaultAgentInstallNamespace},
		Data:       map[string]string{proxyCADataKey: string(caBundle)},
	}
	out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cm)
	if err != nil {
		return nil, fmt.Errorf("encoding the proxy CA ConfigMap: %w", err)
	}
	return &unstructured.Unstructured{Object: out}, nil
}

func describe(u *unstructured.Unstructured) string {
	kind := u.GetKind()
	if ns := u.GetNamespace(); ns != "" {
		return kind + " " + ns + "/" + u.GetName()
	}
	return kind + " " + u.GetName()
}
