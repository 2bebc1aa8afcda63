//go:build integration

package hubcache

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/localhub"
)

// On a real API server, objects the API server accepts but the Go types cannot hold: the cache
// syncs, holds a placeholder (metadata only) for each, records why, tells it once, and forgets it
// when a version that decodes replaces it or the object goes. (OCM v1.3.0's ManagedClusterAddOn and
// PlacementDecision schemas let nothing through that does not decode: TestTransform covers them.)
func TestDecodePerObject(t *testing.T) {
	hub := localhub.ForTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const ns = "decode-per-object"
	if err := localhub.EnsureNamespace(ctx, hub.Clients.Kube, ns); err != nil {
		t.Fatal(err)
	}
	dyn := hub.Clients.Dynamic
	resource := func(k decodedKind, namespace string) dynamic.ResourceInterface {
		if namespace == "" {
			return dyn.Resource(k.gvr)
		}
		return dyn.Resource(k.gvr).Namespace(namespace)
	}
	create := func(k decodedKind, obj map[string]any, status map[string]any) {
		t.Helper()
		u := &unstructured.Unstructured{Object: obj}
		u.SetGroupVersionKind(k.gvk)
		got, err := resource(k, u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("the API server refused %s %s: %v", k.gvk.Kind, u.GetName(), err)
		}
		if status != nil {
			got.Object["status"] = status
			if _, err := resource(k, u.GetNamespace()).UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("the API server refused the status of %s %s: %v", k.gvk.Kind, u.GetName(), err)
			}
		}
		t.Cleanup(func() {
			_ = resource(k, u.GetNamespace()).Delete(context.Background(), u.GetName(), metav1.DeleteOptions{})
		})
	}
	addonLabel := map[string]any{addonv1alpha1.AddonLabelKey: "x"}
	create(kindCMA, map[string]any{"metadata": map[string]any{"name": ns + "-cma"}, "spec": map[string]any{"installStrategy": map[string]any{"type": "Placements",
		"placements": []any{map[string]any{"name": "p", "namespace": ns, "rolloutStrategy": map[string]any{"type": "Progressive", "progressive": map[string]any{"minSuccessTime": "forever"}}}}}}}, nil)
	create(kindCluster, map[string]any{"metadata": map[string]any{"name": ns + "-cluster"}, "spec": map[string]any{"hubAcceptsClient": true, "leaseDurationSeconds": int64(1) << 40}}, nil)
	create(kindPlacement, map[string]any{"metadata": map[string]any{"name": "p", "namespace": ns},
		"spec": map[string]any{"decisionStrategy": map[string]any{"groupStrategy": map[string]any{"clustersPerDecisionGroup": int64(1) << 40}}}}, nil)
	// A work's ordinal is an int32 of its status; the cache keeps it only when it keeps the works'
	// manifests (DeployTemplates).
	create(kindWork, map[string]any{"metadata": map[string]any{"name": "w", "namespace": ns, "labels": addonLabel}, "spec": map[string]any{}},
		map[string]any{"resourceStatus": map[string]any{"manifests": []any{map[string]any{"resourceMeta": map[string]any{"ordinal": int64(1) << 40}, "conditions": []any{}}}}})

	c, err := New(hub.Config, Options{Addons: AddonsAll, DeployTemplates: true})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	told := map[string]int{}
	c.OnUndecodable(func(e *DecodeError) {
		mu.Lock()
		defer mu.Unlock()
		if e.Namespace == ns || strings.HasPrefix(e.Name, ns) {
			told[e.GVK.Kind+" "+e.Key()]++
		}
	})
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		harness.EventuallyTrue(t, 30*time.Second, what, cond, harness.Every(20*time.Millisecond))
	}
	waitFor("the cache to sync", c.Synced)

	// Each is cached as its Go type with its metadata, and says why it is only that.
	for _, tc := range []struct {
		inf  cache.SharedIndexInformer
		key  string
		kind string
		want string
	}{
		{c.CMAInformer, ns + "-cma", KindClusterManagementAddOn, `time: invalid duration "forever"`},
		{c.ClusterInformer, ns + "-cluster", KindManagedCluster, "1099511627776"},
		{c.PlacementInformer, ns + "/p", KindPlacement, "1099511627776"},
		{c.WorkInformer, ns + "/w", KindManifestWork, "1099511627776"},
	} {
		obj, ok, _ := tc.inf.GetIndexer().GetByKey(tc.key)
		if !ok {
			t.Fatalf("%s %s is not cached", tc.kind, tc.key)
		}
		e := c.DecodeError(obj)
		if e == nil || !strings.Contains(e.Error(), tc.want) || !strings.HasPrefix(e.Error(), tc.kind+" "+tc.key+" cannot be decoded: ") {
			t.Errorf("%s %s: decode error %v, want one naming it and containing %q", tc.kind, tc.key, e, tc.want)
		}
		if e != nil && (e.Object == nil || e.Object.GetName() == "") {
			t.Errorf("%s %s: the object as the API server returned it is not kept", tc.kind, tc.key)
		}
		if m := obj.(metav1.Object); m.GetResourceVersion() == "" || m.GetUID() == "" {
			t.Errorf("%s %s: placeholder without metadata: %+v", tc.kind, tc.key, obj)
		}
		if got := c.Undecodable(tc.kind); !slices.ContainsFunc(got, func(d *DecodeError) bool { return d.Key() == tc.key }) {
			t.Errorf("Undecodable(%s) = %v, want %s in it", tc.kind, got, tc.key)
		}
	}
	if works := c.AddonWorks(ns, "x"); len(works) != 1 {
		t.Errorf("the work placeholder is not indexed: %v", works)
	}

	// A version that decodes replaces the placeholder and clears the error; so does a deletion.
	p, err := resource(kindPlacement, ns).Get(ctx, "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(p.Object, "50%", "spec", "decisionStrategy", "groupStrategy", "clustersPerDecisionGroup")
	if _, err := resource(kindPlacement, ns).Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := resource(kindCluster, "").Delete(ctx, ns+"-cluster", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the fixed Placement and the deleted cluster to leave the errors", func() bool {
		placement, err := c.Placements.Placements(ns).Get("p")
		return err == nil && c.DecodeError(placement) == nil && placement.Spec.DecisionStrategy.GroupStrategy.ClustersPerDecisionGroup.StrVal == "50%" &&
			len(c.Undecodable(KindPlacement)) == 0 && len(c.Undecodable(KindManagedCluster)) == 0
	})
	c.undecodable.mu.Lock()
	for key := range c.undecodable.byKey {
		if strings.HasPrefix(key, KindPlacement+"/") || strings.HasPrefix(key, KindManagedCluster+"/") {
			t.Errorf("%s is still recorded", key)
		}
	}
	c.undecodable.mu.Unlock()

	// A status change of an object that still does not decode is not told again.
	cma, err := resource(kindCMA, "").Get(ctx, ns+"-cma", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cma.Object["status"] = map[string]any{"installProgressions": []any{}}
	_ = unstructured.SetNestedField(cma.Object, map[string]any{}, "status")
	if _, err := resource(kindCMA, "").UpdateStatus(ctx, cma, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	keys := []string{"ClusterManagementAddOn " + ns + "-cma", "ManagedCluster " + ns + "-cluster", "Placement " + ns + "/p", "ManifestWork " + ns + "/w"}
	harness.Consistently(t, 500*time.Millisecond, "each object told once", func() string {
		mu.Lock()
		defer mu.Unlock()
		for _, k := range keys {
			if told[k] > 1 {
				return fmt.Sprintf("%s told %d times, want once", k, told[k])
			}
		}
		return ""
	})
	mu.Lock()
	for _, k := range []string{"ClusterManagementAddOn " + ns + "-cma", "ManagedCluster " + ns + "-cluster", "Placement " + ns + "/p", "ManifestWork " + ns + "/w"} {
		if told[k] != 1 {
			t.Errorf("%s told %d times, want once", k, told[k])
		}
	}
	mu.Unlock()

	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
