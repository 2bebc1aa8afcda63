package main

import (
	"strings"
	"testing"
)

// What the function outputs, and every Placement of the input, must pass OCM's CRD schemas.
func TestSchema(t *testing.T) {
	cma := `apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ClusterManagementAddOn
metadata:
  name: hello
spec:
  installStrategy:
    type: Placements
    placements:
    - name: prod
      namespace: ns
      rolloutStrategy:
        type: RollingUpdate
        rollingUpdate: {maxConcurrentlyUpdating: 5}
`
	placement := "---\napiVersion: cluster.open-cluster-management.io/v1beta1\nkind: Placement\nmetadata: {name: prod, namespace: ns}\nspec:\n  clusterSets: [global]\n"
	for _, tc := range []struct{ name, in, want string }{
		{"valid", cma + placement, ""},
		{"translated add-on with a field the schema refuses", cma + "  addOnMeta: {displayName: 3}\n",
			`ClusterManagementAddOn hello: spec.addOnMeta.displayName: Invalid value: "integer": spec.addOnMeta.displayName in body must be of type string: "integer"`},
		{"install strategy type", strings.Replace(cma, "type: Placements", "type: Sometimes", 1),
			`ClusterManagementAddOn hello: spec.installStrategy.type: Unsupported value: "Sometimes": supported values: "Manual", "Placements"`},
		{"unknown field", cma + "  supportedConfig: []\n",
			`ClusterManagementAddOn hello: spec.supportedConfig: Forbidden: unknown field`},
		{"add-on name", strings.Replace(cma, "name: hello", "name: Hello_World", 1),
			`ClusterManagementAddOn Hello_World: metadata.name: Invalid value: "Hello_World": a lowercase RFC 1123 subdomain`},
		{"placement", cma + strings.Replace(placement, "clusterSets: [global]", "tolerations: [{key: a, effect: Sometimes}]", 1),
			`Placement ns/prod: spec.tolerations[0].effect: Unsupported value: "Sometimes": supported values: "NoSelect", "PreferNoSelect", "NoSelectIfNew"`},
		{"placement version not served", cma + strings.Replace(placement, "v1beta1", "v1alpha1", 1),
			`Placement ns/prod: cluster.open-cluster-management.io/v1alpha1 is not served for Placement: CRD placements.cluster.open-cluster-management.io serves cluster.open-cluster-management.io/v1beta1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := run(t, tc.in, nil)
			if tc.want == "" {
				if code != 0 {
					t.Fatalf("exit %d: %s", code, stderr)
				}
				return
			}
			if code != 1 || out != "" || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %s; want exit 1, nothing written and %q", code, out, stderr, tc.want)
			}
		})
	}
}
