package planner

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/rolloutplan"
)

// keepHistory stores the add-on's history as the rollout reconciler writes it.
func (h *hub) keepHistory(cma *addonv1alpha1.ClusterManagementAddOn, rec *history.Record, namespace string) {
	data, err := rec.Encode()
	if err != nil {
		h.problems = append(h.problems, err.Error())
		return
	}
	name := history.ConfigMapName(cma.Name)
	h.histories[name] = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name,
		Labels:          map[string]string{history.AddonLabel: history.AddonLabelValue(cma.Name)},
		Annotations:     map[string]string{history.AddonAnnotation: cma.Name},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "addon.open-cluster-management.io/v1alpha1", Kind: "ClusterManagementAddOn", Name: cma.Name, UID: cma.UID}}},
		Data: map[string]string{history.DataKey: data}}
}

// snapshot is the hub as a snapshot taken at its clock: the state after a simulated rollout, on
// which the next change can be planned.
func (h *hub) snapshot(historyNamespace string, kinds []ConfigKind) (*Snapshot, error) {
	s := &Snapshot{APIVersion: SnapshotAPIVersion, Kind: SnapshotKind, TakenAt: metav1.NewTime(h.now), HistoryNamespace: historyNamespace, ConfigKinds: kinds}
	add := func(apiVersion, kind string, obj runtime.Object) error {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return fmt.Errorf("encoding %s: %w", kind, err)
		}
		u["apiVersion"], u["kind"] = apiVersion, kind
		s.Objects = append(s.Objects, u)
		return nil
	}
	var errs []error
	for _, name := range sortedKeys(h.cmas) {
		errs = append(errs, add("addon.open-cluster-management.io/v1alpha1", "ClusterManagementAddOn", h.cmas[name]))
	}
	for _, addon := range sortedKeys(h.mcas) {
		for _, ns := range sortedKeys(h.mcas[addon]) {
			errs = append(errs, add("addon.open-cluster-management.io/v1alpha1", "ManagedClusterAddOn", h.mcas[addon][ns]))
		}
	}
	keys := slices.Collect(maps.Keys(h.placements))
	slices.SortFunc(keys, func(a, b rolloutplan.PlacementKey) int { return strings.Compare(a.String(), b.String()) })
	for _, k := range keys {
		errs = append(errs, add("cluster.open-cluster-management.io/v1beta1", "Placement", h.placements[k]))
	}
	for _, d := range h.decisions {
		errs = append(errs, add("cluster.open-cluster-management.io/v1beta1", "PlacementDecision", d))
	}
	for _, name := range sortedKeys(h.clusters) {
		errs = append(errs, add("cluster.open-cluster-management.io/v1", "ManagedCluster", h.clusters[name]))
	}
	for _, ns := range sortedKeys(h.works) {
		for _, w := range h.works[ns] {
			errs = append(errs, add("work.open-cluster-management.io/v1", "ManifestWork", w))
		}
	}
	for _, name := range sortedKeys(h.histories) {
		errs = append(errs, add("v1", "ConfigMap", h.histories[name]))
	}
	// In a fixed order, as everything above: a snapshot written twice of the same hub is the same file.
	refs := slices.Collect(maps.Keys(h.configs))
	slices.SortFunc(refs, func(a, b configref.Ref) int { return strings.Compare(a.String(), b.String()) })
	for _, ref := range refs {
		s.Objects = append(s.Objects, h.configs[ref].DeepCopy().Object)
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return s, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, strings.Compare)
	return out
}
