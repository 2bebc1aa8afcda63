package e2e

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// perCluster gives an agent object the names the e2e overlays (testdata/*/per-cluster-agent)
// give it: suffix appended to the names of Deployments, their service account, ServiceAccounts,
// ClusterRoleBindings and the service accounts they bind. suffix is "-{{CLUSTER_NAME}}" for a
// template's manifests, "-<cluster>" for rendered objects.
func perCluster(o map[string]any, suffix string) {
	u := &unstructured.Unstructured{Object: o}
	switch u.GetKind() {
	case "Deployment":
		if sa, ok, _ := unstructured.NestedString(o, "spec", "template", "spec", "serviceAccountName"); ok {
			_ = unstructured.SetNestedField(o, sa+suffix, "spec", "template", "spec", "serviceAccountName")
		}
	case "ServiceAccount":
	case "ClusterRoleBinding":
		subjects, _, _ := unstructured.NestedSlice(o, "subjects")
		for _, s := range subjects {
			if m, ok := s.(map[string]any); ok && m["kind"] == "ServiceAccount" {
				m["name"] = fmt.Sprint(m["name"]) + suffix
			}
		}
		_ = unstructured.SetNestedSlice(o, subjects, "subjects")
	default:
		return
	}
	u.SetName(u.GetName() + suffix)
}
