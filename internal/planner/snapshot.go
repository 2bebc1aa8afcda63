package planner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/history"
)

// SnapshotAPIVersion and SnapshotKind identify a snapshot document; a reader refuses any other
// version rather than guess what its fields mean.
const (
	SnapshotAPIVersion = "addonops.io/v1alpha1"
	SnapshotKind       = "HubSnapshot"
)

// Snapshot is the hub state a plan is taken on, as `addonops snapshot` writes it: the objects as
// the API server returned them (so that the plan decodes them as the controller's cache does, and
// an object that does not decode is reported, not fatal), trimmed to what the decision reads.
// It holds no Secret: a config kind "secrets" is refused, and ManifestWorks keep no manifests.
type Snapshot struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// TakenAt is when the hub was read: the plan says how old its state is.
	TakenAt metav1.Time `json:"takenAt"`
	// Server is the API server the hub was read from.
	Server string `json:"server,omitempty"`
	// HistoryNamespace is where the version histories were read (the controller's
	// --history-namespace).
	HistoryNamespace string `json:"historyNamespace"`
	// ConfigKinds are the config kinds the snapshot holds objects of: the rendered manifests'
	// objects are matched to them by group and kind.
	ConfigKinds []ConfigKind `json:"configKinds,omitempty"`
	// Objects are the hub's objects (ClusterManagementAddOns, ManagedClusterAddOns, Placements,
	// PlacementDecisions, ManagedClusters, version history ConfigMaps, ManifestWorks, configs).
	Objects []map[string]any `json:"objects"`
	// Problems are what could not be read (a config kind not served, a list refused).
	Problems []string `json:"problems,omitempty"`
}

// ConfigKind is a config kind: its group, version, kind, plural and scope.
type ConfigKind struct {
	Group      string `json:"group"`
	Version    string `json:"version"`
	Kind       string `json:"kind"`
	Resource   string `json:"resource"`
	Namespaced bool   `json:"namespaced"`
}

func (k ConfigKind) groupResource() configref.GroupResource {
	return configref.GroupResource{Group: k.Group, Resource: k.Resource}
}

// The kinds a snapshot reads besides the configs, as the controller reads them.
var (
	gvrCMA       = schema.GroupVersionResource{Group: configref.AddonGroup, Version: "v1alpha1", Resource: "clustermanagementaddons"}
	gvrMCA       = schema.GroupVersionResource{Group: configref.AddonGroup, Version: "v1alpha1", Resource: "managedclusteraddons"}
	gvrPlacement = schema.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1beta1", Resource: "placements"}
	gvrDecision  = schema.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1beta1", Resource: "placementdecisions"}
	gvrCluster   = schema.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1", Resource: "managedclusters"}
	gvrWork      = schema.GroupVersionResource{Group: "work.open-cluster-management.io", Version: "v1", Resource: "manifestworks"}
	gvrConfigMap = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

// addonNameLabel is the label OCM puts on an add-on's ManifestWorks (the controller's cache
// selects them by it too).
const addonNameLabel = addonv1alpha1.AddonLabelKey

// CollectOptions say how to read the hub.
type CollectOptions struct {
	Client dynamic.Interface
	// Mapper resolves the config kinds the add-ons reference to their served version and kind.
	Mapper meta.RESTMapper
	// HistoryNamespace is the controller's --history-namespace.
	HistoryNamespace string
	Server           string
	Now              time.Time
}

// Collect reads a snapshot from the hub. An error is returned only when a kind the plan cannot do
// without (CMAs, MCAs, Placements, PlacementDecisions) cannot be listed; the rest is recorded in
// Problems.
func Collect(ctx context.Context, o CollectOptions) (*Snapshot, error) {
	s := &Snapshot{APIVersion: SnapshotAPIVersion, Kind: SnapshotKind, TakenAt: metav1.NewTime(o.Now.UTC().Truncate(time.Second)),
		Server: o.Server, HistoryNamespace: o.HistoryNamespace}
	list := func(gvr schema.GroupVersionResource, namespace string, opts metav1.ListOptions) ([]unstructured.Unstructured, error) {
		l, err := o.Client.Resource(gvr).Namespace(namespace).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing %s on the hub %s: %w", gvr.GroupResource(), o.Server, err)
		}
		return l.Items, nil
	}
	var objs []unstructured.Unstructured
	for _, gvr := range []schema.GroupVersionResource{gvrCMA, gvrMCA, gvrPlacement, gvrDecision} {
		items, err := list(gvr, "", metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		objs = append(objs, items...)
	}
	for _, u := range objs {
		s.add(u.Object)
	}

	clusters, err := list(gvrCluster, "", metav1.ListOptions{})
	if err != nil {
		s.Problems = append(s.Problems, err.Error()+"; the plan cannot tell which selected clusters exist")
	}
	for _, u := range clusters {
		s.add(metadataOnly(u.Object, "labels", "annotations", "deletionTimestamp"))
	}

	if o.HistoryNamespace != "" {
		cms, err := list(gvrConfigMap, o.HistoryNamespace, metav1.ListOptions{LabelSelector: history.AddonLabel})
		if err != nil {
			s.Problems = append(s.Problems, err.Error()+"; the plan cannot recognise a rollback to a version only the history remembers")
		}
		for _, u := range cms {
			s.add(u.Object)
		}
	}

	works, err := list(gvrWork, "", metav1.ListOptions{LabelSelector: addonNameLabel})
	if err != nil {
		s.Problems = append(s.Problems, err.Error()+"; the plan sees no cluster's applied configs")
	}
	for _, u := range works {
		s.add(trimWork(u.Object))
	}

	for _, gr := range referencedKinds(objs) {
		kind, err := resolveKind(o.Mapper, gr)
		if err != nil {
			s.Problems = append(s.Problems, err.Error())
			continue
		}
		items, err := list(schema.GroupVersionResource{Group: kind.Group, Version: kind.Version, Resource: kind.Resource}, "", metav1.ListOptions{})
		if err != nil {
			s.Problems = append(s.Problems, err.Error())
			continue
		}
		s.ConfigKinds = append(s.ConfigKinds, kind)
		for _, u := range items {
			obj := u.Object
			unstructured.RemoveNestedField(obj, "metadata", "managedFields")
			s.add(obj)
		}
	}
	return s, nil
}

func (s *Snapshot) add(obj map[string]any) {
	unstructured.RemoveNestedField(obj, "metadata", "managedFields")
	s.Objects = append(s.Objects, obj)
}

// metadataOnly keeps apiVersion, kind, and of the metadata the name, namespace, uid and fields.
func metadataOnly(obj map[string]any, fields ...string) map[string]any {
	md, _ := obj["metadata"].(map[string]any)
	out := map[string]any{}
	for _, f := range append([]string{"name", "namespace", "uid", "generation", "resourceVersion"}, fields...) {
		if v, ok := md[f]; ok {
			out[f] = v
		}
	}
	return map[string]any{"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": out}
}

// trimWork keeps of a ManifestWork what the decision reads: its metadata (the config spec hash
// annotation among it) and status conditions; never the manifests, which may hold Secrets.
func trimWork(obj map[string]any) map[string]any {
	out := metadataOnly(obj, "labels", "annotations", "deletionTimestamp", "creationTimestamp")
	if conds, ok, _ := unstructured.NestedSlice(obj, "status", "conditions"); ok {
		out["status"] = map[string]any{"conditions": conds}
	}
	return out
}

// referencedKinds are the config group/resources the CMAs among objs declare or configure.
func referencedKinds(objs []unstructured.Unstructured) []configref.GroupResource {
	seen := map[configref.GroupResource]bool{}
	for _, u := range objs {
		if u.GetKind() != "ClusterManagementAddOn" {
			continue
		}
		scs, _, _ := unstructured.NestedSlice(u.Object, "spec", "supportedConfigs")
		for _, sc := range scs {
			m, _ := sc.(map[string]any)
			g, _ := m["group"].(string)
			r, _ := m["resource"].(string)
			seen[configref.GroupResource{Group: g, Resource: r}] = true
		}
		ps, _, _ := unstructured.NestedSlice(u.Object, "spec", "installStrategy", "placements")
		for _, p := range ps {
			pm, _ := p.(map[string]any)
			cfgs, _ := pm["configs"].([]any)
			for _, c := range cfgs {
				m, _ := c.(map[string]any)
				g, _ := m["group"].(string)
				r, _ := m["resource"].(string)
				seen[configref.GroupResource{Group: g, Resource: r}] = true
			}
		}
	}
	var out []configref.GroupResource
	for gr := range seen {
		if gr.Resource != "" {
			out = append(out, gr)
		}
	}
	slices.SortFunc(out, func(a, b configref.GroupResource) int {
		return strings.Compare(a.Group+"/"+a.Resource, b.Group+"/"+b.Resource)
	})
	return out
}

// resolveKind finds the served version and kind of a config group/resource. Secrets are refused:
// a snapshot is meant to be handed to CI.
func resolveKind(mapper meta.RESTMapper, gr configref.GroupResource) (ConfigKind, error) {
	if gr.Group == "" && gr.Resource == "secrets" {
		return ConfigKind{}, errors.New("config kind secrets is not read: a snapshot holds no Secret; the plan treats such configs as unknown")
	}
	gvr, err := mapper.ResourceFor(schema.GroupVersionResource{Group: gr.Group, Resource: gr.Resource})
	if err != nil {
		return ConfigKind{}, fmt.Errorf("config kind %s: not served by the hub (%w)", gr, err)
	}
	gvk, err := mapper.KindFor(gvr)
	if err != nil {
		return ConfigKind{}, fmt.Errorf("config kind %s: %w", gr, err)
	}
	scope, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return ConfigKind{}, fmt.Errorf("config kind %s: %w", gr, err)
	}
	return ConfigKind{Group: gr.Group, Version: gvr.Version, Kind: gvk.Kind, Resource: gr.Resource,
		Namespaced: scope.Scope.Name() == meta.RESTScopeNameNamespace}, nil
}

// Marshal writes the snapshot as YAML.
func (s *Snapshot) Marshal() ([]byte, error) {
	b, err := yaml.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encoding the snapshot: %w", err)
	}
	return b, nil
}

// ReadSnapshot reads a snapshot (YAML or JSON) written by Marshal.
func ReadSnapshot(data []byte) (*Snapshot, error) {
	var s Snapshot
	if err := yaml.UnmarshalStrict(data, &s); err != nil {
		return nil, fmt.Errorf("the snapshot is not a %s document: %w", SnapshotKind, err)
	}
	if s.APIVersion != SnapshotAPIVersion || s.Kind != SnapshotKind {
		return nil, fmt.Errorf("the snapshot is apiVersion %q kind %q; this addonops reads apiVersion %s kind %s (take it again with this version's `addonops snapshot`)",
			s.APIVersion, s.Kind, SnapshotAPIVersion, SnapshotKind)
	}
	return &s, nil
}
