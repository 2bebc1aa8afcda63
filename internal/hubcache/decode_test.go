package hubcache

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterlistersv1beta1 "open-cluster-management.io/api/client/cluster/listers/cluster/v1beta1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
)

// The transform of an MCA that does not decode: a placeholder with its metadata, labels included,
// that the indexes and listers find, and the error.
func TestTransform(t *testing.T) {
	c := &Cache{undecodable: undecodable{byKey: map[string]map[string]*DecodeError{}, told: map[string]string{}}}
	var told []string
	c.OnUndecodable(func(e *DecodeError) { told = append(told, e.Error()) })
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "x", "namespace": "c1", "resourceVersion": "7", "uid": "u1", "labels": map[string]any{"team": "a"}},
		"status":   map[string]any{"conditions": []any{map[string]any{"type": "Applied", "status": "True", "reason": "R", "lastTransitionTime": "yesterday"}}},
	}}
	u.SetGroupVersionKind(kindMCA.gvk)
	transform := c.decode(kindMCA, nil, nil)
	for range 2 { // a relist decodes it again: told once
		obj, err := transform(u.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		mca, ok := obj.(*addonv1alpha1.ManagedClusterAddOn)
		if !ok || mca.Name != "x" || mca.Namespace != "c1" || mca.ResourceVersion != "7" || mca.Labels["team"] != "a" || len(mca.Status.Conditions) != 0 {
			t.Fatalf("placeholder %#v", obj)
		}
		if e := c.DecodeError(mca); e == nil || !strings.HasPrefix(e.Error(), "ManagedClusterAddOn c1/x cannot be decoded: ") {
			t.Fatalf("decode error %v", e)
		}
	}
	if len(told) != 1 {
		t.Fatalf("told %q, want once", told)
	}
	// Another version that leaves the cache is forgotten; the same object's next version is not
	// affected until it leaves.
	next := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "c1", ResourceVersion: "8", UID: "u1"}}
	c.undecodable.left(KindManagedClusterAddOn, &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "c1", ResourceVersion: "7", UID: "u1"}}, false)
	if c.DecodeError(next) != nil || len(c.undecodable.byKey) != 0 {
		t.Fatalf("not forgotten: %v", c.undecodable.byKey)
	}
}

// The decisions lister never hands out a placeholder: it names the decision that does not decode,
// so whoever lists a placement's decisions waits instead of taking its clusters as gone.
func TestDecisionLister(t *testing.T) {
	c := &Cache{undecodable: undecodable{byKey: map[string]map[string]*DecodeError{}, told: map[string]string{}}}
	transform := c.decode(kindDecision, nil, nil)
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for name, score := range map[string]any{"good": int64(1), "bad": "high"} {
		u := &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"name": name, "namespace": "ns", "resourceVersion": "1", "labels": map[string]any{clusterv1beta1.PlacementLabel: name}},
			"status":   map[string]any{"decisions": []any{map[string]any{"clusterName": "c1", "reason": "", "score": score}}},
		}}
		u.SetGroupVersionKind(kindDecision.gvk)
		obj, err := transform(u)
		if err != nil {
			t.Fatal(err)
		}
		if _, typed := obj.(*clusterv1beta1.PlacementDecision); !typed {
			t.Fatalf("%s: transformed into %T", name, obj)
		}
		if err := indexer.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	l := decisionLister{clusterlistersv1beta1.NewPlacementDecisionLister(indexer), c}
	sel := func(p string) labels.Selector {
		return labels.SelectorFromSet(labels.Set{clusterv1beta1.PlacementLabel: p})
	}
	if ds, err := l.PlacementDecisions("ns").List(sel("good")); err != nil || len(ds) != 1 || ds[0].Status.Decisions[0].ClusterName != "c1" {
		t.Errorf("good: %v, %v", ds, err)
	}
	var derr *DecodeError
	if _, err := l.PlacementDecisions("ns").List(sel("bad")); !errors.As(err, &derr) || derr.Key() != "ns/bad" {
		t.Errorf("bad: %v, want the decode error of ns/bad", err)
	}
	if _, err := l.List(labels.Everything()); !errors.As(err, &derr) {
		t.Errorf("all: %v, want a decode error", err)
	}
	if _, err := l.PlacementDecisions("ns").Get("bad"); !errors.As(err, &derr) {
		t.Errorf("get bad: %v, want a decode error", err)
	}
	// Typed objects (from a watch-list's temporary store) and tombstones pass through.
	typed := &clusterv1beta1.PlacementDecision{}
	if out, _ := transform(typed); out != typed {
		t.Errorf("a typed object was transformed")
	}
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/x", Obj: typed}
	if out, _ := transform(tomb); out != tomb {
		t.Errorf("a tombstone was transformed")
	}
}
