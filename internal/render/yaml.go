package render

import (
	"bytes"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// YAMLStream writes objects as one YAML stream, in their order, each document after the first
// behind a "---" line: the rendered manifests as `addonops plan` shows them, and a rendered file
// a GitOps engine applies as it is (what hack/render.sh writes).
func YAMLStream(objs []*unstructured.Unstructured) ([]byte, error) {
	var b bytes.Buffer
	for i, o := range objs {
		data, err := yaml.Marshal(o.Object)
		if err != nil {
			return nil, fmt.Errorf("encoding object %d (%s) as YAML: %w", i, describe(o), err)
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(data)
	}
	return b.Bytes(), nil
}
