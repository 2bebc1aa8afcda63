// Package addonwork builds the ManifestWorks that carry an add-on's rendered agent manifests to a
// managed cluster, the way OCM's add-on framework does for a template add-on (addon-framework
// agentdeploy and the work builder, and OCM's templateagent): names, labels,
// owner, the config-spec-hash annotation, status feedback rules, deletion orphaning, the pre-delete
// hook work and the size-based split into several works. The controller applies what Build
// returns; the addon-template function's preview shows it. Build is a pure function.
//
// Deliberate differences from OCM, also listed in the addon-template README:
//
//  1. The split is deterministic. OCM collects new manifests in a Go map and sorts them by size, so
//     manifests of equal size land in works in random order; here ties keep the rendering order.
//     Existing works are considered in index order.
//  2. The same object (group, kind, namespace, name) rendered twice is an error; OCM keeps one of
//     them silently.
//  3. No empty work is ever created (OCM creates an empty "-deploy-<i>" when the first new manifest
//     alone exceeds the limit), and a new work never takes the name of an existing one (OCM numbers
//     new works from len(existing), which collides when existing indexes have gaps).
//  4. A template manifestConfig that merges into a generated feedback entry keeps its
//     conditionRules and feedbackScrapeType (OCM merges only feedback rules and updateStrategy and
//     drops the rest).
package addonwork

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/manifesthead"
)

const (
	// DefaultManifestLimit is the manifests size OCM's add-on framework configures
	// (WithManifestsLimit(500*1024)); works are filled to Threshold of it.
	DefaultManifestLimit = 500 * 1024
	// Threshold is the share of the limit a work is filled to.
	Threshold = 0.8

	// AddonLabel names the add-on a work belongs to.
	AddonLabel = addonv1alpha1.AddonLabelKey
	// AddonNamespaceLabel is set when the work is not in the ManagedClusterAddOn's namespace.
	AddonNamespaceLabel = addonv1alpha1.AddonNamespaceLabelKey
	// ConfigSpecHashAnnotation records the spec hashes of the configs a work was built from.
	ConfigSpecHashAnnotation = workv1.ManifestConfigSpecHashAnnotationKey

	preDeleteHookLabel      = addonv1alpha1.AddonPreDeleteHookLabelKey
	preDeleteHookAnnotation = addonv1alpha1.AddonPreDeleteHookAnnotationKey
	deletionOrphan          = addonv1alpha1.DeletionOrphanAnnotationKey
)

// DeployWorkName is the name of an add-on's index-th deploy work.
func DeployWorkName(addonName string, index int) string {
	return deployWorkPrefix(addonName) + strconv.Itoa(index)
}

func deployWorkPrefix(addonName string) string { return "addon-" + addonName + "-deploy-" }

// DeployWorkIndex reports whether name is one of the add-on's deploy work names
// ("addon-<addon>-deploy-<index>", index written without leading zeros) and its index. Hosting
// works ("-deploy-hosting-...") and the pre-delete work are not deploy works.
func DeployWorkIndex(addonName, name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, deployWorkPrefix(addonName))
	if !ok {
		return 0, false
	}
	idx, err := strconv.Atoi(rest)
	if err != nil || idx < 0 || strconv.Itoa(idx) != rest {
		return 0, false
	}
	return idx, true
}

// PreDeleteWorkName is the name of an add-on's pre-delete hook work.
func PreDeleteWorkName(addonName string) string { return "addon-" + addonName + "-pre-delete" }

// ConfigReference is one entry of a ManagedClusterAddOn's status.configReferences.
type ConfigReference struct {
	configref.GroupResource
	// Desired is the entry's desiredConfig; nil when it has none.
	Desired *DesiredConfig
}

// DesiredConfig is the config an entry points at and its spec hash.
type DesiredConfig struct {
	Namespace string
	Name      string
	SpecHash  string
}

// ConfigReferencesFromV1alpha1 converts a v1alpha1 ManagedClusterAddOn status list.
func ConfigReferencesFromV1alpha1(refs []addonv1alpha1.ConfigReference) []ConfigReference {
	out := make([]ConfigReference, 0, len(refs))
	for _, r := range refs {
		cr := ConfigReference{GroupResource: configref.GroupResource{Group: r.Group, Resource: r.Resource}}
		if r.DesiredConfig != nil {
			cr.Desired = &DesiredConfig{Namespace: r.DesiredConfig.Namespace, Name: r.DesiredConfig.Name, SpecHash: r.DesiredConfig.SpecHash}
		}
		out = append(out, cr)
	}
	return out
}

// ConfigSpecHash is the value of the config-spec-hash annotation for the given status entries:
// JSON of {"<resource>[.<group>]/<namespace>/<name>": "<specHash>"} over the entries that have a
// desiredConfig. ok is false when there are no entries at all: then a work has no annotations.
func ConfigSpecHash(refs []ConfigReference) (value string, ok bool, err error) {
	if len(refs) == 0 {
		return "", false, nil
	}
	m := ConfigSpecHashes(refs)
	if m == nil {
		m = map[string]string{}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", false, fmt.Errorf("encoding the config-spec-hash annotation: %w", err)
	}
	return string(b), true, nil
}

// ConfigSpecHashes is the map the config-spec-hash annotation holds for refs: key
// "<resource>[.<group>]/<namespace>/<name>" (empty namespace segment for cluster-scoped configs),
// value the desired spec hash. It is nil when no ref has a desired config. Every writer and reader
// of the annotation (the deployer, the progress tracker, the simulated add-on manager) uses it.
func ConfigSpecHashes(refs []ConfigReference) map[string]string {
	var m map[string]string
	for _, r := range refs {
		if r.Desired == nil {
			continue
		}
		if m == nil {
			m = make(map[string]string, len(refs))
		}
		m[r.GroupResource.String()+"/"+r.Desired.Namespace+"/"+r.Desired.Name] = r.Desired.SpecHash
	}
	return m
}

// Options are the add-on and cluster facts a build needs besides the rendered objects.
type Options struct {
	// AddonName is the ManagedClusterAddOn's name (the template's spec.addonName).
	AddonName string
	// ClusterName is the managed cluster: the namespace of the works.
	ClusterName string
	// AddonNamespace is the ManagedClusterAddOn's namespace; "" means ClusterName.
	AddonNamespace string
	// Owner, when set, becomes the works' ownerReference (OCM: a controller reference to the
	// ManagedClusterAddOn). Deploy works get it only when they are in the add-on's namespace.
	Owner *metav1.OwnerReference
	// ConfigReferences are the add-on's status.configReferences; they make the config-spec-hash
	// annotation.
	ConfigReferences []ConfigReference
	// ManifestConfigs are the template's spec.agentSpec.manifestConfigs. (OCM takes them from the
	// ClusterManagementAddOn's default template, which is the same template unless a rollout
	// points some clusters at another one.)
	ManifestConfigs []workv1.ManifestConfigOption
	// Existing are the add-on's current deploy works. A manifest stays in the work that holds it.
	Existing []workv1.ManifestWork
	// ManifestLimit is the manifests size limit in bytes before Threshold; 0 means
	// DefaultManifestLimit.
	ManifestLimit int
}

// Works is what to apply and delete.
type Works struct {
	// Deploy are the deploy works to create or update, in index order.
	Deploy []*workv1.ManifestWork
	// Delete are existing deploy works that no longer hold any manifest.
	Delete []*workv1.ManifestWork
	// PreDelete is the pre-delete hook work, nil when no object is a hook. OCM applies it only
	// once the ManagedClusterAddOn is being deleted.
	PreDelete *workv1.ManifestWork
}

type entry struct {
	key      string // group/kind/namespace/name: the object's identity on the cluster
	splitKey string // OCM's work builder key: apiVersion/kind/namespace/name
	desc     string
	manifest workv1.Manifest
	size     int
}

// Build turns one cluster's rendered objects into ManifestWorks.
func Build(objects []*unstructured.Unstructured, opts Options) (*Works, error) {
	if opts.AddonName == "" || opts.ClusterName == "" {
		return nil, fmt.Errorf("building ManifestWorks needs the add-on name and the cluster name (got %q, %q)", opts.AddonName, opts.ClusterName)
	}
	addonNS := cmp.Or(opts.AddonNamespace, opts.ClusterName)
	limit := int(float64(cmp.Or(opts.ManifestLimit, DefaultManifestLimit)) * Threshold)

	var deploy, hooks []entry
	var hookConfigs []workv1.ManifestConfigOption
	var orphaning []workv1.OrphaningRule
	seen := map[string]string{}
	for i, obj := range objects {
		gvk := obj.GroupVersionKind()
		if gvk.Kind == "" || gvk.Version == "" {
			return nil, fmt.Errorf("rendered object %d (%s) has no apiVersion or kind", i, describe(obj))
		}
		e, err := newEntry(obj)
		if err != nil {
			return nil, err
		}
		if first, dup := seen[e.key]; dup {
			return nil, fmt.Errorf("%s is rendered twice (objects %s and %d); a cluster can hold it only once", e.desc, first, i)
		}
		seen[e.key] = strconv.Itoa(i)
		if hookResource, ok := preDeleteHook(obj); ok {
			hooks = append(hooks, e)
			hookConfigs = append(hookConfigs, workv1.ManifestConfigOption{
				ResourceIdentifier: workv1.ResourceIdentifier{Group: gvk.Group, Resource: hookResource, Namespace: obj.GetNamespace(), Name: obj.GetName()},
				FeedbackRules:      []workv1.FeedbackRule{{Type: workv1.WellKnownStatusType}},
			})
			continue
		}
		if _, ok := obj.GetAnnotations()[deletionOrphan]; ok {
			plural, _ := meta.UnsafeGuessKindToResource(gvk)
			orphaning = append(orphaning, workv1.OrphaningRule{Group: plural.Group, Resource: plural.Resource, Namespace: obj.GetNamespace(), Name: obj.GetName()})
		}
		deploy = append(deploy, e)
	}

	annotations := map[string]string(nil)
	if v, ok, err := ConfigSpecHash(opts.ConfigReferences); err != nil {
		return nil, err
	} else if ok {
		annotations = map[string]string{ConfigSpecHashAnnotation: v}
	}
	var deleteOption *workv1.DeleteOption
	if len(orphaning) > 0 {
		deleteOption = &workv1.DeleteOption{
			PropagationPolicy: workv1.DeletePropagationPolicyTypeSelectivelyOrphan,
			SelectivelyOrphan: &workv1.SelectivelyOrphan{OrphaningRules: orphaning},
		}
	}
	manifestConfigs := ManifestConfigs(objects, opts.ManifestConfigs)

	newWork := func(name string) *workv1.ManifestWork {
		w := &workv1.ManifestWork{
			TypeMeta: metav1.TypeMeta{APIVersion: workv1.GroupVersion.String(), Kind: "ManifestWork"},
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Namespace:   opts.ClusterName,
				Labels:      map[string]string{AddonLabel: opts.AddonName},
				Annotations: copyMap(annotations),
			},
		}
		if addonNS != opts.ClusterName {
			w.Labels[AddonNamespaceLabel] = addonNS
		} else if opts.Owner != nil {
			w.OwnerReferences = []metav1.OwnerReference{*opts.Owner}
		}
		w.Spec.DeleteOption = deleteOption.DeepCopy()
		w.Spec.ManifestConfigs = deepCopyConfigs(manifestConfigs)
		return w
	}

	works := &Works{}
	// With nothing to deploy OCM builds no deploy work and leaves the existing ones alone.
	if len(deploy) > 0 {
		works.Deploy, works.Delete = split(deploy, opts, limit, newWork)
	}
	if len(hooks) > 0 {
		w := newWork(PreDeleteWorkName(opts.AddonName))
		w.Annotations = nil
		w.Spec.DeleteOption = nil
		w.Spec.ManifestConfigs = hookConfigs
		if opts.Owner != nil {
			// The hook work is always owned by the add-on (default install mode).
			w.OwnerReferences = []metav1.OwnerReference{*opts.Owner}
		}
		for _, h := range hooks {
			w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, h.manifest)
		}
		works.PreDelete = w
	}
	return works, nil
}

func newEntry(obj *unstructured.Unstructured) (entry, error) {
	// The same encoding OCM's work builder uses, so sizes and bytes match.
	raw, err := runtime.Encode(unstructured.UnstructuredJSONScheme, obj)
	if err != nil {
		return entry{}, fmt.Errorf("encoding %s: %w", describe(obj), err)
	}
	gvk := obj.GroupVersionKind()
	m := workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}}
	return entry{
		key:      strings.Join([]string{gvk.Group, gvk.Kind, obj.GetNamespace(), obj.GetName()}, "/"),
		splitKey: strings.Join([]string{gvk.GroupVersion().String(), gvk.Kind, obj.GetNamespace(), obj.GetName()}, "/"),
		desc:     describe(obj),
		manifest: m,
		size:     m.Size(),
	}, nil
}

// preDeleteHook tells whether obj is a pre-delete hook: a Job or Pod (of any group, as in OCM)
// with the hook annotation or the legacy hook label.
func preDeleteHook(obj *unstructured.Unstructured) (string, bool) {
	var resource string
	switch obj.GetKind() {
	case "Job":
		resource = "jobs"
	case "Pod":
		resource = "pods"
	default:
		return "", false
	}
	_, label := obj.GetLabels()[preDeleteHookLabel]
	_, annotation := obj.GetAnnotations()[preDeleteHookAnnotation]
	return resource, label || annotation
}

// Names of the rollout feedback (RolloutFeedback) the deploy works ask the work agent for, besides
// the WellKnownStatus values (ReadyReplicas, Replicas, AvailableReplicas of a Deployment;
// NumberReady, DesiredNumberScheduled, NumberAvailable of a DaemonSet).
const (
	FeedbackGeneration             = "Generation"
	FeedbackObservedGeneration     = "ObservedGeneration"
	FeedbackUpdatedReplicas        = "UpdatedReplicas"
	FeedbackUpdatedNumberScheduled = "UpdatedNumberScheduled"
)

// RolloutFeedback is the JSONPaths feedback rule that tells whether a Deployment ("deployments")
// or DaemonSet ("daemonsets") on the managed cluster has rolled out its current spec: its
// generation, the generation its controller observed, and how many of its pods run the current
// template. The work agent reports WellKnownStatus for a new work generation with the readiness of
// whatever pods run, the old version's included; these values let the health prober
// (internal/rolloutplan) tell. JSONPaths rules are part of the work API and every work agent
// evaluates them (OCM statusfeedback: integers need no feature gate).
func RolloutFeedback(resource string) workv1.FeedbackRule {
	updated := workv1.JsonPath{Name: FeedbackUpdatedReplicas, Path: ".status.updatedReplicas"}
	if resource == "daemonsets" {
		updated = workv1.JsonPath{Name: FeedbackUpdatedNumberScheduled, Path: ".status.updatedNumberScheduled"}
	}
	return workv1.FeedbackRule{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{
		{Name: FeedbackGeneration, Path: ".metadata.generation"},
		{Name: FeedbackObservedGeneration, Path: ".status.observedGeneration"},
		updated,
	}}
}

// ManifestConfigs is the spec.manifestConfigs of every deploy work: a WellKnownStatus feedback rule
// and the RolloutFeedback rule for every Deployment and DaemonSet (OCM's WorkloadAvailability
// health prober, and whether the ready pods are the current spec's), then the template's own
// entries, merged into a generated entry with the same resource identifier (feedback rules merged,
// WellKnownStatus once, JSONPaths once per name; updateStrategy replaced) or appended.
func ManifestConfigs(objects []*unstructured.Unstructured, template []workv1.ManifestConfigOption) []workv1.ManifestConfigOption {
	var out []workv1.ManifestConfigOption
	for _, obj := range objects {
		gvk := obj.GroupVersionKind()
		if gvk.Group != appsv1.GroupName {
			continue
		}
		var resource string
		switch {
		case gvk.Kind == "Deployment" && converts(obj, &appsv1.Deployment{}):
			resource = "deployments"
		case gvk.Kind == "DaemonSet" && converts(obj, &appsv1.DaemonSet{}):
			resource = "daemonsets"
		default:
			continue
		}
		out = append(out, workv1.ManifestConfigOption{
			ResourceIdentifier: workv1.ResourceIdentifier{Group: appsv1.GroupName, Resource: resource, Namespace: obj.GetNamespace(), Name: obj.GetName()},
			FeedbackRules:      []workv1.FeedbackRule{{Type: workv1.WellKnownStatusType}, RolloutFeedback(resource)},
		})
	}
	for _, mc := range template {
		mc := *mc.DeepCopy()
		i := slices.IndexFunc(out, func(o workv1.ManifestConfigOption) bool { return o.ResourceIdentifier == mc.ResourceIdentifier })
		if i < 0 {
			out = append(out, mc)
			continue
		}
		for _, rule := range mc.FeedbackRules {
			out[i].FeedbackRules = mergeFeedbackRule(out[i].FeedbackRules, rule)
		}
		if mc.UpdateStrategy != nil {
			out[i].UpdateStrategy = mc.UpdateStrategy
		}
		if mc.ConditionRules != nil && out[i].ConditionRules == nil {
			out[i].ConditionRules = mc.ConditionRules
		}
		if mc.FeedbackScrapeType != "" && out[i].FeedbackScrapeType == "" {
			out[i].FeedbackScrapeType = mc.FeedbackScrapeType
		}
	}
	return out
}

func converts(obj *unstructured.Unstructured, into any) bool {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, into) == nil
}

// mergeFeedbackRule is OCM's: a WellKnownStatus rule is added once; a JSONPaths rule adds the
// paths whose names are not there yet, as one more rule; any other rule is appended.
func mergeFeedbackRule(rules []workv1.FeedbackRule, rule workv1.FeedbackRule) []workv1.FeedbackRule {
	hasWellKnown := false
	var paths []workv1.JsonPath
	for _, r := range rules {
		switch r.Type {
		case workv1.WellKnownStatusType:
			hasWellKnown = true
		case workv1.JSONPathsType:
			paths = append(paths, r.JsonPaths...)
		}
	}
	switch rule.Type {
	case workv1.WellKnownStatusType:
		if !hasWellKnown {
			rules = append(rules, rule)
		}
		return rules
	case workv1.JSONPathsType:
		var add []workv1.JsonPath
		for _, p := range rule.JsonPaths {
			if !slices.ContainsFunc(paths, func(q workv1.JsonPath) bool { return q.Name == p.Name }) {
				add = append(add, p)
			}
		}
		if len(add) > 0 {
			rules = append(rules, workv1.FeedbackRule{Type: workv1.JSONPathsType, JsonPaths: add})
		}
		return rules
	}
	return append(rules, rule)
}

type workBuffer struct {
	work   *workv1.ManifestWork
	index  int
	buffer int
}

// split distributes the manifests over deploy works like OCM's work builder (sdk-go/api
// workbuilder): a manifest an existing work holds stays there (updated in place); new manifests,
// biggest first, go to the existing work with the most room left if they fit, else into new works
// filled up to the limit. Ties keep rendering order, so the result is deterministic.
func split(entries []entry, opts Options, limit int, newWork func(string) *workv1.ManifestWork) (deploy, deleted []*workv1.ManifestWork) {
	required := make(map[string]entry, len(entries))
	for _, e := range entries {
		required[e.splitKey] = e
	}
	type existingWork struct {
		index int
		work  *workv1.ManifestWork
	}
	var existing []existingWork
	for i := range opts.Existing {
		w := &opts.Existing[i]
		if w.Namespace != "" && w.Namespace != opts.ClusterName {
			continue
		}
		idx, ok := DeployWorkIndex(opts.AddonName, w.Name)
		if !ok {
			continue // not one of this add-on's deploy works (e.g. a hosting or pre-delete work)
		}
		existing = append(existing, existingWork{idx, w})
	}
	slices.SortFunc(existing, func(a, b existingWork) int { return cmp.Compare(a.index, b.index) })

	used := map[int]bool{}
	var buffers []*workBuffer
	for _, ex := range existing {
		used[ex.index] = true
		w := newWork(ex.work.Name)
		total := 0
		for _, m := range ex.work.Spec.Workload.Manifests {
			key, ok := manifestSplitKey(m)
			if !ok {
				continue
			}
			if e, ok := required[key]; ok {
				w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, e.manifest)
				total += e.size
				delete(required, key)
			}
		}
		buffer := limit - total
		if total > limit {
			buffer = 0
		}
		buffers = append(buffers, &workBuffer{work: w, index: ex.index, buffer: buffer})
	}

	var fresh []entry
	for _, e := range entries {
		if _, ok := required[e.splitKey]; ok {
			fresh = append(fresh, e)
		}
	}
	slices.SortStableFunc(fresh, func(a, b entry) int { return cmp.Compare(b.size, a.size) })

	var overflow []entry
	for _, e := range fresh {
		var best *workBuffer
		for _, b := range buffers {
			if best == nil || b.buffer > best.buffer {
				best = b
			}
		}
		if best != nil && best.buffer > 0 && e.size < best.buffer {
			best.work.Spec.Workload.Manifests = append(best.work.Spec.Workload.Manifests, e.manifest)
			best.buffer -= e.size
			continue
		}
		overflow = append(overflow, e)
	}

	next := len(existing)
	nextIndex := func() int {
		for used[next] {
			next++
		}
		used[next] = true
		return next
	}
	var current *workv1.ManifestWork
	total := 0
	for _, e := range overflow {
		// A new work starts when the manifest does not fit; unlike OCM, never with an empty work
		// before it when the first manifest alone is over the limit.
		if current == nil || total+e.size >= limit {
			idx := nextIndex()
			current = newWork(DeployWorkName(opts.AddonName, idx))
			buffers = append(buffers, &workBuffer{work: current, index: idx})
			total = 0
		}
		current.Spec.Workload.Manifests = append(current.Spec.Workload.Manifests, e.manifest)
		total += e.size
	}

	slices.SortFunc(buffers, func(a, b *workBuffer) int { return cmp.Compare(a.index, b.index) })
	for _, b := range buffers {
		if len(b.work.Spec.Workload.Manifests) == 0 {
			deleted = append(deleted, b.work)
			continue
		}
		deploy = append(deploy, b.work)
	}
	return deploy, deleted
}

func manifestSplitKey(m workv1.Manifest) (string, bool) {
	var gvk schema.GroupVersionKind
	var namespace, name string
	if m.Object != nil {
		gvk = m.Object.GetObjectKind().GroupVersionKind()
		acc, err := meta.Accessor(m.Object)
		if err != nil {
			return "", false
		}
		namespace, name = acc.GetNamespace(), acc.GetName()
	} else {
		// A work read from the hub: its manifests are JSON.
		h, err := manifesthead.Read(m.Raw)
		if err != nil {
			return "", false
		}
		gvk, namespace, name = h.GroupVersionKind(), h.Namespace, h.Name
	}
	if gvk.Kind == "" {
		return "", false
	}
	return strings.Join([]string{schema.GroupVersion{Group: gvk.Group, Version: gvk.Version}.String(), gvk.Kind, namespace, name}, "/"), true
}

func describe(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return obj.GetKind() + " " + ns + "/" + obj.GetName()
	}
	return obj.GetKind() + " " + obj.GetName()
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func deepCopyConfigs(in []workv1.ManifestConfigOption) []workv1.ManifestConfigOption {
	if in == nil {
		return nil
	}
	out := make([]workv1.ManifestConfigOption, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}
