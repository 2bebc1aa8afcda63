package hubcache

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/addonwork"
)

// A sparse index finds a cluster's objects of an add-on (its ManifestWorks, its RoleBindings)
// without an index entry for the one object nearly every cluster has at the name OCM gives it.
//
// client-go's indexer keeps a set per index value. Indexed by cluster and add-on, that is a set
// holding one key per cluster: at 5,000 clusters some 1.3 MB of the live heap per index, twice
// that in the process's RSS (the GC's goal is twice the live heap). The object at the
// conventional name (the deploy work "addon-<addon>-deploy-0" in the cluster namespace, the
// hubPermission RoleBinding "open-cluster-management:<addon>:clusterrole:agent" there) is looked
// up by key instead, and only the others (more deploy works, the pre-delete work, bindings in
// other namespaces) are indexed. A lookup reads both and gives what the full index would.
type sparseIndex struct {
	name string
	// value is the object's index value ("" for none).
	value func(metav1.Object) string
	// conventional is the store key ("<namespace>/<name>") of the object with that index value
	// that is looked up by key.
	conventional func(value string) string
}

// indexer is the index function client-go runs: the object's value unless it sits at the value's
// conventional key.
func (s sparseIndex) indexer() cache.Indexers {
	return cache.Indexers{s.name: func(obj any) ([]string, error) {
		m, ok := obj.(metav1.Object)
		if !ok {
			return nil, nil
		}
		v := s.value(m)
		if v == "" || s.conventional(v) == m.GetNamespace()+"/"+m.GetName() {
			return nil, nil
		}
		return []string{v}, nil
	}}
}

// lookup returns the objects of inf with index value v: the indexed ones and the one at v's
// conventional key, if its value is v.
func (s sparseIndex) lookup(inf cache.SharedIndexInformer, v string) ([]any, error) {
	indexer := inf.GetIndexer()
	objs, err := indexer.ByIndex(s.name, v)
	if err != nil {
		return nil, fmt.Errorf("looking up %s %q: %w", s.name, v, err)
	}
	obj, exists, err := indexer.GetByKey(s.conventional(v))
	if err != nil {
		return nil, fmt.Errorf("looking up %s %q: %w", s.name, v, err)
	}
	if exists {
		if m, ok := obj.(metav1.Object); ok && s.value(m) == v {
			objs = append(objs, obj)
		}
	}
	return objs, nil
}

// worksByAddon indexes add-on ManifestWorks by "<namespace>/<add-on label>"; the deploy work 0
// of each is looked up by key.
var worksByAddon = sparseIndex{
	name: IndexWorksByAddon,
	value: func(m metav1.Object) string {
		addon := m.GetLabels()[addonv1alpha1.AddonLabelKey]
		if addon == "" {
			return ""
		}
		return m.GetNamespace() + "/" + addon
	},
	conventional: func(v string) string {
		namespace, addon := splitValue(v)
		return namespace + "/" + addonwork.DeployWorkName(addon, 0)
	},
}

// byAddonCluster indexes objects by "<cluster>/<add-on>" from their labels (ClusterNameLabel and
// the add-on label).
func byAddonCluster(m metav1.Object) string {
	l := m.GetLabels()
	if l[ClusterNameLabel] == "" || l[addonv1alpha1.AddonLabelKey] == "" {
		return ""
	}
	return l[ClusterNameLabel] + "/" + l[addonv1alpha1.AddonLabelKey]
}

// bindingsByAddonCluster indexes add-on RoleBindings by cluster and add-on; the hubPermission
// binding in the cluster namespace (ClusterBindingName) is looked up by key.
var bindingsByAddonCluster = sparseIndex{
	name:  IndexByAddonCluster,
	value: byAddonCluster,
	conventional: func(v string) string {
		cluster, addon := splitValue(v)
		return cluster + "/" + ClusterBindingName(addon)
	},
}

// ClusterBindingName is OCM's name for the RoleBinding of an add-on's hubPermission in the
// cluster namespace.
func ClusterBindingName(addon string) string {
	return "open-cluster-management:" + addon + ":clusterrole:agent"
}

// splitValue splits "<namespace>/<add-on>": namespaces and add-on names hold no "/".
func splitValue(v string) (namespace, addon string) {
	namespace, addon, _ = strings.Cut(v, "/")
	return namespace, addon
}
