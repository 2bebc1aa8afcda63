package hubcache

import (
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"
)

func TestSparseIndex(t *testing.T) {
	work := func(ns, name, addon string) *workv1.ManifestWork {
		w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if addon != "" {
			w.Labels = map[string]string{addonv1alpha1.AddonLabelKey: addon}
		}
		return w
	}
	binding := func(ns, name, cluster, addon string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: map[string]string{addonv1alpha1.AddonLabelKey: addon, ClusterNameLabel: cluster}}}
	}
	cases := []struct {
		name  string
		index sparseIndex
		objs  []metav1.Object
		value string
		want  []string // store keys found
		// indexed is how many index entries the objects take.
		indexed int
	}{
		{name: "deploy work 0 by key", index: worksByAddon,
			objs:  []metav1.Object{work("c1", "addon-a-deploy-0", "a"), work("c2", "addon-a-deploy-0", "a")},
			value: "c1/a", want: []string{"c1/addon-a-deploy-0"}},
		{name: "other works indexed", index: worksByAddon,
			objs: []metav1.Object{work("c1", "addon-a-deploy-0", "a"), work("c1", "addon-a-deploy-1", "a"),
				work("c1", "addon-a-pre-delete", "a"), work("c1", "mine", "a"), work("c1", "addon-b-deploy-0", "b")},
			value: "c1/a", want: []string{"c1/addon-a-deploy-0", "c1/addon-a-deploy-1", "c1/addon-a-pre-delete", "c1/mine"}, indexed: 3},
		{name: "deploy work 0 labelled for another add-on", index: worksByAddon,
			objs:  []metav1.Object{work("c1", "addon-a-deploy-0", "b")},
			value: "c1/a", want: nil, indexed: 1},
		{name: "found under its label", index: worksByAddon,
			objs:  []metav1.Object{work("c1", "addon-a-deploy-0", "b")},
			value: "c1/b", want: []string{"c1/addon-a-deploy-0"}, indexed: 1},
		{name: "no label, no add-on", index: worksByAddon,
			objs:  []metav1.Object{work("c1", "addon-a-deploy-0", "")},
			value: "c1/a", want: nil},
		{name: "hubPermission binding by key", index: bindingsByAddonCluster,
			objs:  []metav1.Object{binding("c1", ClusterBindingName("a"), "c1", "a"), binding("c2", ClusterBindingName("a"), "c2", "a")},
			value: "c1/a", want: []string{"c1/" + ClusterBindingName("a")}},
		{name: "bindings elsewhere indexed", index: bindingsByAddonCluster,
			objs: []metav1.Object{binding("c1", ClusterBindingName("a"), "c1", "a"), binding("agents", "one", "c1", "a"),
				binding("agents", "two", "c2", "a")},
			value: "c1/a", want: []string{"agents/one", "c1/" + ClusterBindingName("a")}, indexed: 2},
		{name: "binding in the cluster namespace labelled for another cluster", index: bindingsByAddonCluster,
			objs:  []metav1.Object{binding("c1", ClusterBindingName("a"), "c2", "a")},
			value: "c1/a", want: nil, indexed: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inf := cache.NewSharedIndexInformer(&cache.ListWatch{}, &workv1.ManifestWork{}, 0, cache.Indexers{})
			if err := inf.AddIndexers(tc.index.indexer()); err != nil {
				t.Fatal(err)
			}
			for _, o := range tc.objs {
				if err := inf.GetIndexer().Add(o); err != nil {
					t.Fatal(err)
				}
			}
			objs, err := tc.index.lookup(inf, tc.value)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range objs {
				m := o.(metav1.Object)
				got = append(got, m.GetNamespace()+"/"+m.GetName())
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("lookup %q = %v, want %v", tc.value, got, tc.want)
			}
			indexed := 0
			for _, v := range inf.GetIndexer().ListIndexFuncValues(tc.index.name) {
				keys, _ := inf.GetIndexer().IndexKeys(tc.index.name, v)
				indexed += len(keys)
			}
			if indexed != tc.indexed {
				t.Errorf("%d index entries, want %d", indexed, tc.indexed)
			}
		})
	}
}
