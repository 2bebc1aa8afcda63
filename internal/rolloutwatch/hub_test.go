package rolloutwatch

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"

	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/rolloutview"
)

// BaseNamesFromHub reads a config's addonops.io/base-name from the hub once, whether it has one
// or not, and finds nothing for a config that is missing or of a kind the hub does not serve.
func TestBaseNamesFromHub(t *testing.T) {
	adc := schema.GroupVersionKind{Group: "addon.open-cluster-management.io", Version: "v1alpha1", Kind: "AddOnDeploymentConfig"}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(adc, meta.RESTScopeNamespace)
	config := func(name string, annotations map[string]string) *unstructured.Unstructured {
		o := &unstructured.Unstructured{}
		o.SetGroupVersionKind(adc)
		o.SetNamespace("default")
		o.SetName(name)
		o.SetAnnotations(annotations)
		return o
	}
	scheme := runtime.NewScheme()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme,
		map[schema.GroupVersionResource]string{adc.GroupVersion().WithResource("addondeploymentconfigs"): "AddOnDeploymentConfigList"},
		config("hello-config-7f9c2b", map[string]string{rolloutview.BaseNameAnnotation: "hello-config"}),
		config("plain", nil))
	gets := map[string]int{}
	dyn.PrependReactor("get", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		gets[a.(clienttesting.GetAction).GetName()]++
		return false, nil, nil
	})
	ref := func(resource, name string) configref.Ref {
		return configref.Ref{GroupResource: configref.GroupResource{Group: adc.Group, Resource: resource}, Namespace: "default", Name: name}
	}
	baseName := BaseNamesFromHub(dyn, mapper)
	for range 2 {
		for _, tc := range []struct {
			ref  configref.Ref
			want string
		}{
			{ref("addondeploymentconfigs", "hello-config-7f9c2b"), "hello-config"},
			{ref("addondeploymentconfigs", "plain"), ""},
			{ref("addondeploymentconfigs", "missing"), ""},
			{ref("nosuchkinds", "hello-config-7f9c2b"), ""},
		} {
			if b, ok := baseName(context.Background(), tc.ref); b != tc.want || ok != (tc.want != "") {
				t.Errorf("BaseName(%s) = %q, %v; want %q", tc.ref, b, ok, tc.want)
			}
		}
	}
	if want := map[string]int{"hello-config-7f9c2b": 1, "plain": 1, "missing": 1}; len(gets) != len(want) ||
		gets["hello-config-7f9c2b"] != 1 || gets["plain"] != 1 || gets["missing"] != 1 {
		t.Errorf("gets %v, want one per config the hub serves: %v", gets, want)
	}
}

// NewHub keeps the caller's base-name lookup, and reads base names from the hub without one.
func TestNewHub(t *testing.T) {
	cfg := &rest.Config{Host: "https://hub.example:6443"}
	called := false
	h, err := NewHub(cfg, func(context.Context, configref.Ref) (string, bool) { called = true; return "x", true })
	if err != nil {
		t.Fatal(err)
	}
	if h.Host != cfg.Host || h.Addon == nil || h.Cluster == nil || h.Discovery == nil {
		t.Errorf("hub %+v: want the host and the three clients", h)
	}
	if b, _ := h.BaseName(context.Background(), configref.Ref{}); b != "x" || !called {
		t.Errorf("the caller's BaseName was not kept")
	}
	h, err = NewHub(cfg, nil)
	if err != nil || h.BaseName == nil {
		t.Errorf("NewHub(cfg, nil): BaseName %v, err %v; want a lookup on the hub", h.BaseName != nil, err)
	}
}
