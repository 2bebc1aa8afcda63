package templatedeploy

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/yaml"
)

// Describe renders what the deployer decides of a work as YAML: name, namespace, labels, owner
// references, the config-spec-hash annotation and the spec with the ManifestWork CRD's defaults
// filled in and manifests as objects. The owner's UID and the spec hashes are replaced by
// placeholders, so a work built from files and one read back from an API server describe the same
// when they carry the same content (golden files, previews).
func Describe(w *workv1.ManifestWork) ([]byte, error) {
	out := &workv1.ManifestWork{TypeMeta: metav1.TypeMeta{APIVersion: workv1.GroupVersion.String(), Kind: "ManifestWork"}}
	out.Name, out.Namespace, out.Labels = w.Name, w.Namespace, w.Labels
	for _, o := range w.OwnerReferences {
		o.UID = "UID"
		out.OwnerReferences = append(out.OwnerReferences, o)
	}
	if raw, ok := w.Annotations[workv1.ManifestConfigSpecHashAnnotationKey]; ok {
		var m map[string]string
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			return nil, fmt.Errorf("work %s: annotation %s: %w", w.Name, workv1.ManifestConfigSpecHashAnnotationKey, err)
		}
		for k := range m {
			m[k] = "SPEC-HASH"
		}
		b, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		out.Annotations = map[string]string{workv1.ManifestConfigSpecHashAnnotationKey: string(b)}
	}
	out.Spec = normalize(w.Spec)
	manifests := make([]any, 0, len(out.Spec.Workload.Manifests))
	for i, m := range out.Spec.Workload.Manifests {
		v, err := manifestValue(m)
		if err != nil {
			return nil, fmt.Errorf("work %s: manifest %d: %w", w.Name, i, err)
		}
		manifests = append(manifests, v)
	}
	out.Spec.Workload.Manifests = nil
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	delete(doc, "status")
	delete(doc["metadata"].(map[string]any), "creationTimestamp")
	doc["spec"].(map[string]any)["workload"] = map[string]any{"manifests": manifests}
	return yaml.Marshal(doc)
}
