package hubcache

import (
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestTypedConfigsOncePerVersion(t *testing.T) {
	tpl := func(rv, image string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "addon.open-cluster-management.io/v1alpha1", "kind": "AddOnTemplate",
			"metadata": map[string]any{"name": "t", "uid": "u1", "resourceVersion": rv},
			"spec": map[string]any{"addonName": "a", "agentSpec": map[string]any{"workload": map[string]any{"manifests": []any{
				map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "ns"}, "data": map[string]any{"image": image}},
			}}}},
		}}
		return u
	}
	c := newTypedConfigs()
	first := c.template(tpl("1", "a"))
	if first.err != nil || first.compile != nil || first.renderer == nil {
		t.Fatalf("template: %+v", first)
	}
	if again := c.template(tpl("1", "a")); again != first {
		t.Fatal("the same version converted and compiled again")
	}
	if next := c.template(tpl("2", "b")); next == first || next.t.ResourceVersion != "2" {
		t.Fatal("a new version must be converted again")
	}
	d := Desired{Template: &Config{Object: tpl("3", "c")}, typed: c}
	r1, err := d.Renderer()
	if err != nil {
		t.Fatal(err)
	}
	if r2, _ := d.Renderer(); r1 != r2 {
		t.Fatal("Renderer compiled the same version twice")
	}
	for i := range typedLimit + 10 {
		c.adc(&unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "x", "uid": "u2", "resourceVersion": strconv.Itoa(i)}}})
	}
	if len(c.adcs) > typedLimit {
		t.Fatalf("%d ADC versions kept, limit %d", len(c.adcs), typedLimit)
	}
}
