package exampletest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/restmapper"

	"github.com/addonops/addonops/internal/testing/localhub"
)

// FieldManager is the server-side apply field manager of the examples' tests.
const FieldManager = "addonops-examples-test"

// ApplyToHub server-side applies objects to the package's real test hub (kube-apiserver and etcd
// with OCM's CRDs), the way `make demo`, Argo CD and Flux apply an example's output: the CRDs'
// schemas (enums, patterns, required fields) must accept every object, and the server must keep
// every field the example sets (a structural schema prunes unknown fields silently).
func ApplyToHub(t *testing.T, objs []Object) {
	t.Helper()
	hub := localhub.ForTest(t)
	ctx := context.Background()
	groups, err := restmapper.GetAPIGroupResources(hub.Clients.Kube.Discovery())
	if err != nil {
		t.Fatalf("discovering the hub's API resources: %v", err)
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	for _, o := range objs {
		gvk := schema.FromAPIVersionAndKind(o.APIVersion(), o.Kind())
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s: the hub does not serve %s: %v", o, gvk, err)
		}
		res := hub.Clients.Dynamic.Resource(mapping.Resource)
		data, err := json.Marshal(o.Map)
		if err != nil {
			t.Fatal(err)
		}
		force := true
		opts := metav1.PatchOptions{FieldManager: FieldManager, Force: &force}
		var stored map[string]any
		if mapping.Scope.Name() == "namespace" {
			u, err := res.Namespace(o.Namespace()).Patch(ctx, o.Name(), types.ApplyPatchType, data, opts)
			if err != nil {
				t.Fatalf("server-side apply of %s: %v", o, err)
			}
			stored = u.Object
		} else {
			u, err := res.Patch(ctx, o.Name(), types.ApplyPatchType, data, opts)
			if err != nil {
				t.Fatalf("server-side apply of %s: %v", o, err)
			}
			stored = u.Object
		}
		if path, ok := contains(stored, o.Map, ""); !ok {
			t.Errorf("%s: the hub did not keep %s as applied (pruned by the CRD schema or changed)", o, path)
		}
	}
}

// contains tells whether every field of want is in got with the same value (got may hold more:
// server defaults, metadata), and otherwise the path of the first difference.
func contains(got, want any, path string) (string, bool) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return path, false
		}
		for k, wv := range w {
			if p, ok := contains(g[k], wv, path+"."+k); !ok {
				return p, false
			}
		}
		return "", true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return path, false
		}
		for i := range w {
			if p, ok := contains(g[i], w[i], fmt.Sprintf("%s[%d]", path, i)); !ok {
				return p, false
			}
		}
		return "", true
	case float64:
		// JSON numbers come back from the server as int64.
		if g, ok := got.(int64); ok {
			return path, float64(g) == w
		}
	}
	if reflect.DeepEqual(got, want) {
		return "", true
	}
	return path, false
}
