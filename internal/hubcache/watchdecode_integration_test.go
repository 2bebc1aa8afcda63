//go:build integration

package hubcache

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"github.com/addonops/addonops/internal/testing/localhub"
)

// On a real API server, through client-go's watch decoding: a ManagedCluster created while the
// typed watch runs arrives as its Go type, stripped; one that does not decode as a placeholder with
// its DecodeError; and a watch from a resourceVersion the API server no longer has ends with a 410
// the reflector recognises (it lists again), not with a decoding error.
func TestTypedWatchOnAPIServer(t *testing.T) {
	hub := localhub.ForTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := newTestCache()
	c.restConfig = hub.Config
	var err error
	if c.httpClient, err = rest.HTTPClientFor(hub.Config); err != nil {
		t.Fatal(err)
	}
	const label = "typed-watch"
	watchClusters, err := c.typedWatch(kindCluster, clusterStatusStripper.typed, c.decode(kindCluster, clusterStatusStripper.unstructured, nil))
	if err != nil {
		t.Fatal(err)
	}
	clusters := hub.Clients.Dynamic.Resource(kindCluster.gvr)
	list, err := clusters.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := watchClusters(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion(), LabelSelector: "test=" + label})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for i, lease := range []int64{60, 1 << 40} {
		u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": fmt.Sprintf("%s-%d", label, i), "labels": map[string]any{"test": label}},
			"spec":   map[string]any{"hubAcceptsClient": true, "leaseDurationSeconds": lease},
			"status": map[string]any{"conditions": []any{map[string]any{"type": "ManagedClusterConditionAvailable", "status": "True", "reason": "r", "message": "m", "lastTransitionTime": "2026-01-02T03:04:05Z"}}}}}
		u.SetGroupVersionKind(kindCluster.gvk)
		if _, err := clusters.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = clusters.Delete(context.Background(), u.GetName(), metav1.DeleteOptions{}) })
	}
	for i := range 2 {
		select {
		case ev := <-w.ResultChan():
			mc, ok := ev.Object.(*clusterv1.ManagedCluster)
			if ev.Type != watch.Added || !ok {
				t.Fatalf("event %d: %s %T, want an Added ManagedCluster", i, ev.Type, ev.Object)
			}
			if bad := c.DecodeError(mc) != nil; bad != (mc.Name == label+"-1") {
				t.Errorf("%s: DecodeError %v", mc.Name, c.DecodeError(mc))
			}
			if mc.Name == label+"-0" && (mc.Spec.LeaseDurationSeconds != 60 || len(mc.Status.Conditions) != 0 || mc.ResourceVersion == "") {
				t.Errorf("%s decoded as %+v, want its spec and resourceVersion, no status", mc.Name, mc)
			}
		case <-ctx.Done():
			t.Fatalf("event %d did not arrive", i)
		}
	}

	old, err := watchClusters(ctx, metav1.ListOptions{ResourceVersion: "1"})
	if err != nil {
		if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
			t.Fatalf("watch from resourceVersion 1: %v, want 410", err)
		}
		return
	}
	defer old.Stop()
	select {
	case ev := <-old.ResultChan():
		if err := apierrors.FromObject(ev.Object); ev.Type != watch.Error || (!apierrors.IsResourceExpired(err) && !apierrors.IsGone(err)) {
			t.Fatalf("watch from resourceVersion 1: %s %T %v, want an Error event with a 410", ev.Type, ev.Object, err)
		}
	case <-ctx.Done():
		t.Fatal("the watch from resourceVersion 1 neither failed nor ended")
	}
}
