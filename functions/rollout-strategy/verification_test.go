package main

import (
	"strings"
	"testing"
)

const verifiedAddon = `apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ClusterManagementAddOn
metadata:
  name: hello
  annotations:
    addonops.io/verification: 'VERIFICATION'
spec:
  installStrategy:
    type: Placements
    placements:
    - {name: prod, namespace: ns}
---
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: prod, namespace: ns}
spec: {}
---
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: error-rate, namespace: ns}
spec:
  args:
  - name: clusters
  - name: threshold
  metrics:
  - name: error-rate
    successCondition: result[0] < {{args.threshold}}
    provider:
      prometheus:
        address: http://prometheus:9090
        query: QUERY
`

// The build checks a verification as the controller will run it: the annotation, the placements
// it names, the template shipped with the add-on and what it supports, the args, and each query
// with Prometheus' own PromQL parser.
func TestVerificationChecks(t *testing.T) {
	good := `max(addon_error_rate{cluster=~"{{args.clusters}}"})`
	ref := `[{"placement": "ns/prod", "template": "error-rate", "args": {"threshold": "0.05"}}]`
	cases := []struct {
		name, verification, query, want string
	}{
		{"valid", ref, good, ""},
		{"every placement", `[{"placement": "*", "template": "error-rate", "args": {"threshold": "0.05"}}]`, good, ""},
		{"query does not parse", ref, `max(addon_error_rate{cluster=~"{{args.clusters}}"}`, "the query does not parse as PromQL"},
		{"bad function", ref, `maximum(addon_error_rate)`, `unknown function with name "maximum"`},
		{"template not in the input", strings.Replace(ref, "error-rate", "latency", 1), good, "AnalysisTemplate ns/latency (for placement ns/prod) is not in the input"},
		{"arg without value", `[{"placement": "ns/prod", "template": "error-rate"}]`, good, "spec.args threshold have no value"},
		{"undeclared arg", `[{"placement": "ns/prod", "template": "error-rate", "args": {"threshold": "1", "x": "y"}}]`, good, "args.x, which the template does not declare"},
		{"not an install placement", `[{"placement": "ns/other", "template": "error-rate"}]`, good, "placement ns/other is not an install placement"},
		{"does not parse", `[{"placement": "ns/prod"}]`, good, "template is empty"},
		{"continuous", `[{"placement": "ns/prod", "template": "error-rate", "args": {"threshold": "0.05"}, "continuous": {"template": "error-rate", "interval": "2m", "args": {"threshold": "0.1"}}}]`, good, ""},
		{"continuous template not in the input", `[{"placement": "ns/prod", "template": "error-rate", "args": {"threshold": "0.05"}, "continuous": {"template": "latency"}}]`, good, "continuous template AnalysisTemplate ns/latency (for placement ns/prod) is not in the input"},
		{"continuous arg without value", `[{"placement": "ns/prod", "template": "error-rate", "args": {"threshold": "0.05"}, "continuous": {"template": "error-rate"}}]`, good, "spec.args threshold have no value"},
		{"continuous interval", `[{"placement": "ns/prod", "template": "error-rate", "args": {"threshold": "0.05"}, "continuous": {"template": "error-rate", "interval": "soon"}}]`, good, `continuous.interval "soon"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := strings.NewReplacer("VERIFICATION", tc.verification, "QUERY", tc.query).Replace(verifiedAddon)
			_, stderr, code := run(t, in, nil)
			if tc.want == "" {
				if code != 0 {
					t.Fatalf("exit %d: %s", code, stderr)
				}
				return
			}
			if code != 1 || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "metadata.annotations[addonops.io/verification]") {
				t.Fatalf("exit %d, stderr %s; want an error containing %q", code, stderr, tc.want)
			}
		})
	}
	// A provider the controller does not run is refused at build time too.
	in := strings.NewReplacer("VERIFICATION", ref, "QUERY", good, "prometheus:\n", "job:\n").Replace(verifiedAddon)
	if _, stderr, code := run(t, in, nil); code != 1 || !strings.Contains(stderr, "provider job is not supported") {
		t.Fatalf("job provider: exit %d, stderr %s", code, stderr)
	}
}
