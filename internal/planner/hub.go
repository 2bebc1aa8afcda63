package planner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/crdschema"
	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/hubcache"
	"github.com/addonops/addonops/internal/rolloutplan"
	"github.com/addonops/addonops/internal/spechash"
)

// hub is the hub in memory: the snapshot's objects decoded as the controller's cache decodes
// them, with the change applied, and the simulation's writes.
type hub struct {
	// now is the hub's clock: the snapshot's time, then the simulation's.
	now  time.Time
	cmas map[string]*addonv1alpha1.ClusterManagementAddOn
	// strategies are the CMAs' rollout strategies as the API server (or the manifest) has them
	// (rolloutplan.Raw.RolloutStrategy).
	strategies map[string][]map[string]any
	// undecodable says why an object (by objKey) is a placeholder.
	undecodable map[string]string
	mcas        map[string]map[string]*addonv1alpha1.ManagedClusterAddOn // addon -> namespace -> MCA
	placements  map[rolloutplan.PlacementKey]*clusterv1beta1.Placement
	// rawPlacements are the Placements as the snapshot or the manifests hold them.
	rawPlacements map[rolloutplan.PlacementKey]map[string]any
	decisions     []*clusterv1beta1.PlacementDecision
	clusters      map[string]*clusterv1.ManagedCluster
	works         map[string][]*workv1.ManifestWork // namespace -> works
	configs       map[configref.Ref]*unstructured.Unstructured
	histories     map[string]*corev1.ConfigMap // by name
	kinds         *configref.Kinds
	// problems are what the plan could not read (undecodable objects, ...), for its warnings.
	problems []string
}

func objKey(kind, namespace, name string) string { return kind + " " + namespace + "/" + name }

func newHub(s *Snapshot) (*hub, error) {
	h := &hub{cmas: map[string]*addonv1alpha1.ClusterManagementAddOn{}, strategies: map[string][]map[string]any{},
		undecodable: map[string]string{}, mcas: map[string]map[string]*addonv1alpha1.ManagedClusterAddOn{},
		placements: map[rolloutplan.PlacementKey]*clusterv1beta1.Placement{}, rawPlacements: map[rolloutplan.PlacementKey]map[string]any{}, clusters: map[string]*clusterv1.ManagedCluster{},
		works: map[string][]*workv1.ManifestWork{}, configs: map[configref.Ref]*unstructured.Unstructured{},
		histories: map[string]*corev1.ConfigMap{}, kinds: configref.NewKinds()}
	h.now = s.TakenAt.Time
	for _, k := range s.ConfigKinds {
		if err := h.kinds.Add(configref.Kind{Group: k.Group, Kind: k.Kind, Resource: k.Resource, Namespaced: k.Namespaced}, "the snapshot's configKinds"); err != nil {
			return nil, err
		}
	}
	for _, obj := range s.Objects {
		if err := h.put(&unstructured.Unstructured{Object: obj}, false); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// decode decodes u into typed as the controller's cache does; an object that does not decode is
// kept as a placeholder with its metadata and reported.
func (h *hub) decode(u *unstructured.Unstructured, typed runtime.Object) {
	if err := hubcache.Decode(u, typed); err != nil {
		reason := err.Error()
		h.undecodable[objKey(u.GetKind(), u.GetNamespace(), u.GetName())] = reason
		h.problems = append(h.problems, fmt.Sprintf("%s %s does not decode (%v): the controller holds its metadata only, and what depends on it waits",
			u.GetKind(), nsName(u.GetNamespace(), u.GetName()), err))
		meta := &unstructured.Unstructured{Object: map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "metadata": u.Object["metadata"]}}
		_ = hubcache.Decode(meta, typed)
		return
	}
	delete(h.undecodable, objKey(u.GetKind(), u.GetNamespace(), u.GetName()))
}

func nsName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// put adds or replaces an object. fromChange marks an object of the rendered manifests: it
// replaces the hub's spec but keeps what the hub's controllers write (status, uid) and the labels
// and annotations others set, as a GitOps tool's server-side apply does. It returns an error only
// for an object it cannot identify.
func (h *hub) put(u *unstructured.Unstructured, fromChange bool) error {
	if u.GetKind() == "" || u.GetAPIVersion() == "" {
		return fmt.Errorf("an object without apiVersion or kind (name %q)", u.GetName())
	}
	group := configref.GroupOf(u.GetAPIVersion())
	switch {
	case group == configref.AddonGroup && u.GetKind() == "ClusterManagementAddOn":
		cma := &addonv1alpha1.ClusterManagementAddOn{}
		h.decode(u, cma)
		if old := h.cmas[cma.Name]; old != nil && fromChange {
			cma.Status, cma.UID = old.Status, old.UID
			cma.Annotations = merged(old.Annotations, cma.Annotations)
			cma.Labels = merged(old.Labels, cma.Labels)
		}
		h.cmas[cma.Name] = cma
		ps, _, _ := unstructured.NestedSlice(u.Object, "spec", "installStrategy", "placements")
		list := make([]map[string]any, len(ps))
		for i, p := range ps {
			if m, ok := p.(map[string]any); ok {
				list[i], _ = m["rolloutStrategy"].(map[string]any)
			}
		}
		h.strategies[cma.Name] = list
	case group == configref.AddonGroup && u.GetKind() == "ManagedClusterAddOn":
		m := &addonv1alpha1.ManagedClusterAddOn{}
		h.decode(u, m)
		if h.mcas[m.Name] == nil {
			h.mcas[m.Name] = map[string]*addonv1alpha1.ManagedClusterAddOn{}
		}
		if old := h.mcas[m.Name][m.Namespace]; old != nil && fromChange {
			m.Status, m.UID = old.Status, old.UID
			m.Annotations = merged(old.Annotations, m.Annotations)
			m.Labels = merged(old.Labels, m.Labels)
		}
		h.mcas[m.Name][m.Namespace] = m
	case group == "cluster.open-cluster-management.io" && u.GetKind() == "Placement":
		p := &clusterv1beta1.Placement{}
		h.decode(u, p)
		k := rolloutplan.PlacementKey{Namespace: p.Namespace, Name: p.Name}
		if old := h.placements[k]; old != nil && fromChange {
			p.Status, p.UID = old.Status, old.UID
		}
		h.placements[k] = p
		h.rawPlacements[k] = u.Object
	case group == "cluster.open-cluster-management.io" && u.GetKind() == "PlacementDecision":
		d := &clusterv1beta1.PlacementDecision{}
		h.decode(u, d)
		h.decisions = slices.DeleteFunc(h.decisions, func(o *clusterv1beta1.PlacementDecision) bool { return o.Namespace == d.Namespace && o.Name == d.Name })
		h.decisions = append(h.decisions, d)
	case group == "cluster.open-cluster-management.io" && u.GetKind() == "ManagedCluster":
		c := &clusterv1.ManagedCluster{}
		h.decode(u, c)
		if old := h.clusters[c.Name]; old != nil && fromChange {
			c.Annotations = merged(old.Annotations, c.Annotations)
			c.Labels = merged(old.Labels, c.Labels)
		}
		h.clusters[c.Name] = c
	case group == "work.open-cluster-management.io" && u.GetKind() == "ManifestWork":
		if fromChange {
			return nil // the add-on's works are the deployer's, never Git's
		}
		w := &workv1.ManifestWork{}
		h.decode(u, w)
		h.works[w.Namespace] = append(h.works[w.Namespace], w)
	case !fromChange && group == "" && u.GetKind() == "ConfigMap" && u.GetLabels()[history.AddonLabel] != "":
		cm := &corev1.ConfigMap{}
		h.decode(u, cm)
		h.histories[cm.Name] = cm
	default:
		k, ok := h.kinds.Lookup(group, u.GetKind())
		if !ok || (k.Group == "" && k.Resource == "secrets") {
			return errUnknownKind
		}
		ref := configref.Ref{GroupResource: k.GroupResource(), Namespace: u.GetNamespace(), Name: u.GetName()}
		if !k.Namespaced {
			ref.Namespace = ""
		}
		if old := h.configs[ref]; old != nil && fromChange {
			u = u.DeepCopy()
			u.SetUID(old.GetUID())
			// A spec change moves the generation, as the API server does.
			if oldHash, _ := spechash.Of(old.Object); oldHash != mustHash(u) {
				u.SetGeneration(old.GetGeneration() + 1)
			} else {
				u.SetGeneration(old.GetGeneration())
			}
		} else if fromChange {
			u = u.DeepCopy()
			u.SetGeneration(1)
		}
		h.configs[ref] = u
	}
	return nil
}

func mustHash(u *unstructured.Unstructured) string {
	s, _ := spechash.Of(u.Object)
	return s
}

// errUnknownKind is an object of a kind the plan does not read.
var errUnknownKind = errors.New("a kind the plan does not read")

func merged(base, over map[string]string) map[string]string {
	if base == nil && over == nil {
		return nil
	}
	out := maps.Clone(base)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, over)
	return out
}

// ReadManifests reads the rendered manifests (YAML documents or JSON, List kinds expanded).
func ReadManifests(r io.Reader) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var out []*unstructured.Unstructured
	for i := 1; ; i++ {
		var obj map[string]any
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading the rendered manifests, document %d: %w", i, err)
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.IsList() {
			err := u.EachListItem(func(o runtime.Object) error {
				out = append(out, o.(*unstructured.Unstructured))
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("reading the rendered manifests, document %d (a List): %w", i, err)
			}
			continue
		}
		if u.GetKind() == "" || u.GetAPIVersion() == "" {
			return nil, fmt.Errorf("reading the rendered manifests, document %d: no apiVersion or kind", i)
		}
		out = append(out, u)
	}
}

// change applies the rendered manifests to the hub and returns what it replaced, for the
// config diffs, and the objects it did not read.
type change struct {
	// oldConfigs are the configs the change replaced or added (nil: added).
	oldConfigs map[configref.Ref]*unstructured.Unstructured
	newConfigs map[configref.Ref]*unstructured.Unstructured
	// placementsChanged are placements whose spec the change replaced: their decisions are the
	// current ones until OCM's placement controller decides again.
	placementsChanged []rolloutplan.PlacementKey
	ignored           []string
	// oldCMAs are the CMAs as they were before the change.
	oldCMAs map[string]*addonv1alpha1.ClusterManagementAddOn
	// renderedKinds are "group/kind namespace" of the configs the change holds.
	renderedKinds map[string]bool
	// addons are the ClusterManagementAddOns the change holds.
	addons []string
}

func (h *hub) apply(objs []*unstructured.Unstructured) (*change, error) {
	c := &change{oldConfigs: map[configref.Ref]*unstructured.Unstructured{}, newConfigs: map[configref.Ref]*unstructured.Unstructured{},
		oldCMAs: map[string]*addonv1alpha1.ClusterManagementAddOn{}, renderedKinds: map[string]bool{}}
	for name, cma := range h.cmas {
		c.oldCMAs[name] = cma.DeepCopy()
	}
	// CRDs of the change teach the kinds of its configs.
	for _, u := range objs {
		if u.GetKind() == "CustomResourceDefinition" {
			if err := h.kinds.AddCRD(u.Object); err != nil {
				return nil, fmt.Errorf("the rendered manifests: %w", err)
			}
		}
	}
	for _, u := range objs {
		group := configref.GroupOf(u.GetAPIVersion())
		var before *unstructured.Unstructured
		var ref configref.Ref
		k, isConfig := h.kinds.Lookup(group, u.GetKind())
		isConfig = isConfig && !builtinNonConfig(group, u.GetKind())
		if isConfig {
			ref = configref.Ref{GroupResource: k.GroupResource(), Namespace: u.GetNamespace(), Name: u.GetName()}
			if !k.Namespaced {
				ref.Namespace = ""
			}
			before = h.configs[ref]
		}
		var oldPlacement *clusterv1beta1.Placement
		var oldRaw map[string]any
		if group == "cluster.open-cluster-management.io" && u.GetKind() == "Placement" {
			oldPlacement = h.placements[rolloutplan.PlacementKey{Namespace: u.GetNamespace(), Name: u.GetName()}]
			oldRaw = h.rawPlacements[rolloutplan.PlacementKey{Namespace: u.GetNamespace(), Name: u.GetName()}]
		}
		err := h.put(u, true)
		if errors.Is(err, errUnknownKind) {
			c.ignored = append(c.ignored, fmt.Sprintf("%s %s", u.GetKind(), nsName(u.GetNamespace(), u.GetName())))
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("the rendered manifests: %w", err)
		}
		if group == configref.AddonGroup && u.GetKind() == "ClusterManagementAddOn" {
			c.addons = append(c.addons, u.GetName())
		}
		if isConfig {
			c.oldConfigs[ref] = before
			c.newConfigs[ref] = h.configs[ref]
			c.renderedKinds[ref.GroupResource.String()+" "+ref.Namespace] = true
		}
		if oldPlacement != nil {
			k := rolloutplan.PlacementKey{Namespace: u.GetNamespace(), Name: u.GetName()}
			if placementEdited(oldRaw, u.Object) {
				c.placementsChanged = append(c.placementsChanged, k)
			}
		}
	}
	return c, nil
}

// builtinNonConfig are the built-in kinds that configref.Kinds knows but that are no config.
func builtinNonConfig(group, kind string) bool {
	switch {
	case group == configref.AddonGroup && (kind == "ClusterManagementAddOn" || kind == "ManagedClusterAddOn"):
		return true
	case group == "cluster.open-cluster-management.io", group == "work.open-cluster-management.io":
		return true
	case group == "" && kind == "Secret":
		return true
	}
	return false
}

func equalJSON(a, b any) bool {
	ab, _ := jsonMarshal(a)
	bb, _ := jsonMarshal(b)
	return bytes.Equal(ab, bb)
}

// rawFor is what the add-on's objects say beyond their Go types (rolloutplan.Raw), as the
// controller's cache tells it.
func (h *hub) rawFor(addon string) rolloutplan.Raw { return raw{h: h, addon: addon} }

type raw struct {
	h     *hub
	addon string
}

func (r raw) Undecodable(obj metav1.Object) string {
	kind := ""
	switch obj.(type) {
	case *addonv1alpha1.ManagedClusterAddOn:
		kind = "ManagedClusterAddOn"
	case *clusterv1beta1.Placement:
		kind = "Placement"
	case *addonv1alpha1.ClusterManagementAddOn:
		kind = "ClusterManagementAddOn"
	}
	return r.h.undecodable[objKey(kind, obj.GetNamespace(), obj.GetName())]
}

func (r raw) RolloutStrategy(index int) (map[string]any, bool) {
	list, ok := r.h.strategies[r.addon]
	if !ok || index >= len(list) {
		return nil, false
	}
	return list[index], true
}

// List implements sdk-go's PlacementDecisionGetter.
func (h *hub) List(selector labels.Selector, namespace string) ([]*clusterv1beta1.PlacementDecision, error) {
	var out []*clusterv1beta1.PlacementDecision
	for _, d := range h.decisions {
		if d.Namespace == namespace && selector.Matches(labels.Set(d.Labels)) {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b *clusterv1beta1.PlacementDecision) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// lookup resolves a config reference to its spec hash, as hubcache.Configs.Lookup does.
func (h *hub) lookup(ref configref.Ref) (string, error) {
	u, ok := h.configs[ref]
	if !ok {
		return "", fmt.Errorf("config %s not found", ref)
	}
	return spechash.Of(u.Object)
}

func (h *hub) generation(ref configref.Ref) (int64, bool) {
	u, ok := h.configs[ref]
	if !ok {
		return 0, false
	}
	return u.GetGeneration(), true
}

// addonWorks are the add-on's works in a cluster namespace, as hubcache.Cache.AddonWorks.
func (h *hub) addonWorks(ns, addon string) []*workv1.ManifestWork {
	var out []*workv1.ManifestWork
	for _, w := range h.works[ns] {
		if w.Labels[addonNameLabel] == addon {
			out = append(out, w)
		}
	}
	slices.SortFunc(out, func(a, b *workv1.ManifestWork) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// readHistory reads the add-on's version history as the rollout reconciler does: nil when none,
// ok false (and a problem) when the ConfigMap is not this add-on's record.
func (h *hub) readHistory(cma *addonv1alpha1.ClusterManagementAddOn) (*history.Record, bool) {
	cm := h.histories[history.ConfigMapName(cma.Name)]
	if cm == nil {
		return nil, true
	}
	if err := history.CheckOwner(cm.OwnerReferences, cma.Name, cma.UID); err != nil {
		h.problems = append(h.problems, fmt.Sprintf("ConfigMap %s/%s is not the version history of add-on %s: %v", cm.Namespace, cm.Name, cma.Name, err))
		return nil, false
	}
	rec, err := history.Decode(cm.Data[history.DataKey])
	if err != nil {
		h.problems = append(h.problems, fmt.Sprintf("ConfigMap %s/%s: %v", cm.Namespace, cm.Name, err))
		return nil, false
	}
	return rec, true
}

// placementEdited tells whether the manifests' Placement (raw) changes the spec of the hub's (old):
// their specs differ with the defaults of OCM's CRD applied, as the API server stores them (a
// Placement read from the hub carries them, the same Placement in the manifests does not), read
// through the Go type as the controller reads them. A Placement the plan's own simulation wrote
// (a snapshot of a simulated hub) comes from the Go type, with zero values where the server has
// nothing: those are compared after a first pass through the Go type too.
func placementEdited(old, raw map[string]any) bool {
	return !equalJSON(defaultedSpec(old, false), defaultedSpec(raw, false)) &&
		!equalJSON(defaultedSpec(old, true), defaultedSpec(raw, true))
}

// defaultedSpec is the spec of Placement obj with the CRD's defaults applied, read through the Go
// type; typedFirst reads it through the Go type before the defaults too.
func defaultedSpec(obj map[string]any, typedFirst bool) any {
	m, err := normalized(obj)
	if err != nil {
		return obj["spec"]
	}
	if typedFirst {
		p := &clusterv1beta1.Placement{}
		if err := hubcache.Decode(&unstructured.Unstructured{Object: m}, p); err != nil {
			return obj["spec"]
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
		if err != nil {
			return obj["spec"]
		}
		if m, err = normalized(u); err != nil {
			return obj["spec"]
		}
	}
	if k, ok := crdschema.OCM().Lookup(clusterv1beta1.GroupVersion.String(), "Placement"); ok {
		k.Default(m)
	}
	p := &clusterv1beta1.Placement{}
	if err := hubcache.Decode(&unstructured.Unstructured{Object: m}, p); err != nil {
		return m["spec"]
	}
	return p.Spec
}

// normalized is obj with numbers as the API server decodes them (int64, float64).
func normalized(obj map[string]any) (map[string]any, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := utiljson.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return m, nil
}
