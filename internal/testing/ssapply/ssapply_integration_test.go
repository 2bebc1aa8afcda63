//go:build integration

package ssapply_test

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/ssapply"
)

// TestApply applies built-in, cluster-scoped and custom (OCM) objects to a real API server.
func TestApply(t *testing.T) {
	hub := localhub.ForTest(t)
	ctx := context.Background()
	a, err := ssapply.New(hub.Clients.Dynamic, hub.Clients.Kube.Discovery(), "ssapply-test")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := ssapply.Decode(strings.NewReader(`apiVersion: v1
kind: Namespace
metadata: {name: ssapply-test}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm, namespace: ssapply-test}
data: {key: one}
---
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: p, namespace: ssapply-test}
spec:
  clusterSets: [default]
`))
	if err != nil {
		t.Fatal(err)
	}
	applied, err := a.ApplyAll(ctx, objs)
	if err != nil {
		t.Fatal(err)
	}
	if len(applied) != 3 {
		t.Fatalf("applied %d objects, want 3", len(applied))
	}
	if cs, _, _ := unstructured.NestedStringSlice(applied[2].Object, "spec", "clusterSets"); len(cs) != 1 || cs[0] != "default" {
		t.Errorf("Placement as stored: spec.clusterSets %v", cs)
	}

	// Idempotent: the same object again leaves the stored object as it was.
	again, err := a.Apply(ctx, objs[1])
	if err != nil {
		t.Fatal(err)
	}
	if again.GetResourceVersion() != applied[1].GetResourceVersion() {
		t.Errorf("re-applying an unchanged ConfigMap changed its resourceVersion %s -> %s", applied[1].GetResourceVersion(), again.GetResourceVersion())
	}

	// A field another manager owns is taken over, as a GitOps tool does.
	other := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"ssapply-test"},"data":{"key":"two"}}`
	force := true
	if _, err := hub.Clients.Dynamic.Resource(applied[1].GroupVersionKind().GroupVersion().WithResource("configmaps")).Namespace("ssapply-test").
		Patch(ctx, "cm", types.ApplyPatchType, []byte(other), metav1.PatchOptions{FieldManager: "someone-else", Force: &force}); err != nil {
		t.Fatal(err)
	}
	back, err := a.Apply(ctx, objs[1])
	if err != nil {
		t.Fatalf("applying over another manager's field: %v", err)
	}
	if v, _, _ := unstructured.NestedString(back.Object, "data", "key"); v != "one" {
		t.Errorf("data.key %q after re-applying, want one", v)
	}

	for _, tc := range []struct{ name, doc, err string }{
		{"unknown kind", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n", "does not serve example.com/v1"},
		{"namespaced without namespace", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", "ConfigMap x is namespaced but has no metadata.namespace"},
		{"rejected by the schema", "apiVersion: cluster.open-cluster-management.io/v1beta1\nkind: Placement\nmetadata: {name: bad, namespace: ssapply-test}\nspec: {clusterSets: notalist}\n",
			"server-side apply of Placement ssapply-test/bad"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := ssapply.Decode(strings.NewReader(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			_, err = a.Apply(ctx, objs[0])
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want one containing %q", err, tc.err)
			}
		})
	}
	if _, err := hub.Clients.Kube.CoreV1().ConfigMaps("ssapply-test").Get(ctx, "x", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a failed apply left ConfigMap x behind (err %v)", err)
	}
}
