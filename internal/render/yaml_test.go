package render

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

func TestYAMLStream(t *testing.T) {
	cm := func(ns, name string) *unstructured.Unstructured {
		o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"k": "v: with a colon"}}}
		o.SetNamespace(ns)
		o.SetName(name)
		return o
	}
	in := []*unstructured.Unstructured{cm("ns", "a"), cm("", "b"), cm("ns", "c")}
	got, err := YAMLStream(in)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(got), "---\n"); n != 2 || strings.HasPrefix(string(got), "---") {
		t.Errorf("%d separators in\n%s\nwant 2, none before the first document", n, got)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(got), 4096)
	for i, want := range in {
		var o unstructured.Unstructured
		if err := dec.Decode(&o.Object); err != nil {
			t.Fatalf("document %d of\n%s\ndoes not decode: %v", i, got, err)
		}
		if o.GetNamespace() != want.GetNamespace() || o.GetName() != want.GetName() || o.Object["data"].(map[string]any)["k"] != "v: with a colon" {
			t.Errorf("document %d decodes as %v, want %v", i, o.Object, want.Object)
		}
	}
	var extra map[string]any
	if err := dec.Decode(&extra); err != io.EOF {
		t.Errorf("after the 3 objects: %v, %v; want the end of the stream", extra, err)
	}
	if empty, err := YAMLStream(nil); err != nil || len(empty) != 0 {
		t.Errorf("no objects: %q, %v; want an empty stream", empty, err)
	}
	// JSON has no form for a channel: the error names the object.
	bad := cm("ns", "bad")
	bad.Object["data"] = map[string]any{"k": make(chan int)}
	if _, err := YAMLStream([]*unstructured.Unstructured{cm("ns", "a"), bad}); err == nil || !strings.Contains(err.Error(), "object 1 (ConfigMap ns/bad)") {
		t.Errorf("an object that cannot be encoded: %v, want an error naming object 1, ConfigMap ns/bad", err)
	}
}
