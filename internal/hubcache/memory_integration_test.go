//go:build integration

package hubcache

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"github.com/addonops/addonops/internal/statuswrite"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/localhub"
)

// On a real API server: the cache lists page by page, each page decoded as it arrives (an object
// that does not decode among them), and a status write from the cached (interned) MCA leaves every
// other status field and the API server's managedFields as they were.
func TestListPagesAndWriteBack(t *testing.T) {
	hub := localhub.ForTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const ns = "memory-pages"
	if err := localhub.EnsureNamespace(ctx, hub.Clients.Kube, ns); err != nil {
		t.Fatal(err)
	}
	clusters := hub.Clients.Dynamic.Resource(kindCluster.gvr)
	for i := range 5 {
		spec := map[string]any{"hubAcceptsClient": true}
		if i == 3 {
			spec["leaseDurationSeconds"] = int64(1) << 40
		}
		u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": fmt.Sprintf("%s-%d", ns, i), "labels": map[string]any{"test": ns}}, "spec": spec}}
		u.SetGroupVersionKind(kindCluster.gvk)
		if _, err := clusters.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = clusters.Delete(context.Background(), u.GetName(), metav1.DeleteOptions{}) })
	}

	// The reflector's first list: resourceVersion "0", which the watch cache would answer in one piece.
	c := newTestCache()
	transform := c.decode(kindCluster, stripCluster, nil)
	opts := metav1.ListOptions{ResourceVersion: "0", Limit: 2, LabelSelector: "test=" + ns}
	var names []string
	var lastRV string
	for pages := 1; ; pages++ {
		list, err := decodedList(ctx, clusters, opts, transform)
		if err != nil {
			t.Fatal(err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			t.Fatal(err)
		}
		if len(items) > 2 {
			t.Fatalf("page %d has %d objects, want at most 2: the list was not paged", pages, len(items))
		}
		for _, o := range items {
			mc, ok := o.(*clusterv1.ManagedCluster)
			if !ok {
				t.Fatalf("page %d holds a %T, want a decoded ManagedCluster", pages, o)
			}
			names = append(names, mc.Name)
			if undecodable := c.DecodeError(mc) != nil; undecodable != strings.HasSuffix(mc.Name, "-3") {
				t.Errorf("%s: decode error %v", mc.Name, c.DecodeError(mc))
			}
		}
		lm, _ := meta.ListAccessor(list)
		lastRV = lm.GetResourceVersion()
		if lm.GetContinue() == "" {
			if pages < 3 {
				t.Errorf("%d pages, want 3", pages)
			}
			break
		}
		opts.Continue = lm.GetContinue()
		opts.ResourceVersion = ""
	}
	if len(names) != 5 {
		t.Errorf("listed %v, want 5 clusters", names)
	}

	// A relist after a failed watch: the resourceVersion last seen and no page size, which the API
	// server would answer in one piece. It is asked for page by page and the pages are joined.
	defer func(size int64) { listPageSize = size }(listPageSize)
	listPageSize = 2
	counted := &countingLists{NamespaceableResourceInterface: clusters}
	list, err := decodedList(ctx, counted, metav1.ListOptions{ResourceVersion: lastRV, LabelSelector: "test=" + ns}, transform)
	if err != nil {
		t.Fatal(err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 5 || len(counted.calls) != 3 {
		t.Errorf("relist: %d objects in %d requests, want 5 in 3", len(items), len(counted.calls))
	}
	for i, o := range counted.calls {
		if o.Limit != 2 || i == 0 && (o.ResourceVersion != "" || o.Continue != "") || i > 0 && o.Continue == "" {
			t.Errorf("relist request %d: %+v, want pages of 2 of the latest version", i, o)
		}
	}
	if lm, _ := meta.ListAccessor(list); lm.GetContinue() != "" || lm.GetResourceVersion() == "" {
		t.Errorf("joined list: continue %q, resourceVersion %q", lm.GetContinue(), lm.GetResourceVersion())
	}
	for _, o := range items {
		if mc := o.(*clusterv1.ManagedCluster); (c.DecodeError(mc) != nil) != strings.HasSuffix(mc.Name, "-3") {
			t.Errorf("relist: %s: decode error %v", mc.Name, c.DecodeError(mc))
		}
	}

	// The write-back: through the cache as the controller runs it.
	mcas := hub.Clients.Addon.AddonV1alpha1().ManagedClusterAddOns(ns)
	created, err := mcas.Create(ctx, &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	full := &addonv1alpha1.ManagedClusterAddOn{}
	if err := Decode(fromJSON(t, kindMCA, mcaJSON(ns)), full); err != nil {
		t.Fatal(err)
	}
	created.Status = full.Status
	withStatus, err := mcas.UpdateStatus(ctx, created, metav1.UpdateOptions{FieldManager: "another-writer"})
	if err != nil {
		t.Fatal(err)
	}
	cache, err := New(hub.Config, Options{Addons: AddonsAll})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = cache.Run(ctx) }()
	var cached *addonv1alpha1.ManagedClusterAddOn
	harness.EventuallyTrue(t, 30*time.Second, "the cache to show the MCA", func() bool {
		cached, _ = cache.MCAs.ManagedClusterAddOns(ns).Get("hello")
		return cached != nil && cached.ResourceVersion == withStatus.ResourceVersion
	}, harness.Every(20*time.Millisecond))
	if len(cached.ManagedFields) != 0 {
		t.Errorf("the cache holds managedFields")
	}
	written, err := statuswrite.Status(ctx, hub.Clients.Addon, cached, func(m *addonv1alpha1.ManagedClusterAddOn) {
		meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: "Available", Status: metav1.ConditionTrue, Reason: "R", Message: "m"})
	})
	if err != nil || written == nil {
		t.Fatalf("writing the status: %v", err)
	}
	live, err := mcas.Get(ctx, "hello", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := full.Status.DeepCopy()
	meta.SetStatusCondition(&want.Conditions, metav1.Condition{Type: "Available", Status: metav1.ConditionTrue, Reason: "R", Message: "m"})
	if got := meta.FindStatusCondition(live.Status.Conditions, "Available"); got != nil { // the writer's clock
		meta.FindStatusCondition(want.Conditions, "Available").LastTransitionTime = got.LastTransitionTime
	}
	if !equality.Semantic.DeepEqual(live.Status, *want) {
		t.Errorf("the status write changed other fields:\n got %+v\nwant %+v", live.Status, *want)
	}
	managers := map[string]bool{}
	for _, f := range live.ManagedFields {
		managers[f.Manager] = true
	}
	if !managers["another-writer"] {
		t.Errorf("the API server's managedFields lost the other writer's entry: %v", managers)
	}

	// What the controller's writer keeps of a write (until the cache shows it) shares the cache's
	// strings and has no managedFields. The cache is behind (it shows the version before the write
	// above): the writer's first attempt conflicts and is applied again to the live object.
	kept, err := cache.MCAWriter.Status(ctx, cached, func(m *addonv1alpha1.ManagedClusterAddOn) {
		meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: "Available", Status: metav1.ConditionFalse, Reason: "R2", Message: "m2"})
	})
	if err != nil || kept == nil {
		t.Fatalf("writing through the cache's writer: %v", err)
	}
	if len(kept.ManagedFields) != 0 {
		t.Errorf("the writer keeps managedFields")
	}
	keptCond, cachedCond := meta.FindStatusCondition(kept.Status.Conditions, "Configured"), meta.FindStatusCondition(cached.Status.Conditions, "Configured")
	if keptCond == nil || cachedCond == nil || keptCond.Message != cachedCond.Message {
		t.Fatalf("Configured: kept %+v, cached %+v", keptCond, cachedCond)
	}
	if unsafe.StringData(keptCond.Message) != unsafe.StringData(cachedCond.Message) {
		t.Errorf("the kept write does not share the cache's strings")
	}
}
