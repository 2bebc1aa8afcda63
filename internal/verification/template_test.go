package verification

import (
	"os"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/canary"
)

const errorRate = `
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: error-rate
  namespace: default
spec:
  args:
  - name: clusters
  - name: addon
  - name: threshold
    value: "0.05"
  metrics:
  - name: error-rate
    interval: 30s
    count: "{{args.count}}"
    failureLimit: 1
    successCondition: result[0] < {{args.threshold}}
    provider:
      prometheus:
        address: http://prometheus:9090
        timeout: 10
        query: max(addon_error_rate{addon="{{args.addon}}", cluster=~"{{ args.clusters }}"})
`

func decodeYAML(t *testing.T, s string) (Template, error) {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(s), &obj); err != nil {
		t.Fatal(err)
	}
	return Decode(obj)
}

func TestDecodeAndResolve(t *testing.T) {
	src := strings.Replace(errorRate, "  - name: threshold", "  - name: count\n    value: \"3\"\n  - name: threshold", 1)
	tmpl, err := decodeYAML(t, src)
	if err != nil {
		t.Fatal(err)
	}
	b := NewBatch("observability", "default/canary", "abc123", 1, []string{"cluster2", "cluster1.eu"})
	ms, err := tmpl.Resolve(b.BuiltinArgs(), map[string]string{"threshold": "0.1"})
	if err != nil {
		t.Fatal(err)
	}
	m := ms[0]
	if m.Count != 3 || m.Interval != 30*time.Second || m.FailureLimit != 1 || m.ConsecutiveErrorLimit != DefaultConsecutiveErrorLimit {
		t.Errorf("metric %+v", m)
	}
	if want := `max(addon_error_rate{addon="observability", cluster=~"cluster1\.eu|cluster2"})`; m.Prometheus.Query != want {
		t.Errorf("query %s, want %s", m.Prometheus.Query, want)
	}
	if m.SuccessCondition != "result[0] < 0.1" {
		t.Errorf("the annotation's arg does not override the template's default: %s", m.SuccessCondition)
	}
	if m.Prometheus.Timeout != 10*time.Second {
		t.Errorf("timeout %s", m.Prometheus.Timeout)
	}
}

func TestDecodeRefusals(t *testing.T) {
	cases := []struct {
		name, from, to, want string
	}{
		{"job provider", "      prometheus:", "      job:", "provider job is not supported"},
		{"dryRun", "  metrics:", "  dryRun: [{metricName: error-rate}]\n  metrics:", "spec: dryRun not supported"},
		{"valueFrom", "    value: \"0.05\"", "    valueFrom: {secretKeyRef: {name: s, key: k}}", "valueFrom not supported"},
		{"unknown metric field", "    failureLimit: 1", "    failureLimit: 1\n    consecutiveSuccessLimit: 2", "consecutiveSuccessLimit not supported"},
		{"interval without count", `    count: "{{args.count}}"`, "", "measure for ever"},
		{"unknown arg", "{{args.threshold}}", "{{args.treshold}}", "{{args.treshold}} names no argument"},
		{"bad condition", "result[0] < {{args.threshold}}", "result[0] <", "successCondition"},
		{"bad address", "http://prometheus:9090", "prometheus:9090", "address"},
		{"wrong kind", "kind: AnalysisTemplate", "kind: AnalysisRun", "want apiVersion"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := errorRate
			if tc.name != "interval without count" {
				src = strings.Replace(src, "  - name: threshold", "  - name: count\n    value: \"3\"\n  - name: threshold", 1)
			}
			if !strings.Contains(src, tc.from) {
				t.Fatalf("fixture lacks %q", tc.from)
			}
			_, err := decodeYAML(t, strings.Replace(src, tc.from, tc.to, 1))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestResolveMissingArg(t *testing.T) {
	tmpl, err := decodeYAML(t, strings.Replace(errorRate, "  - name: threshold\n    value: \"0.05\"", "  - name: threshold\n  - name: count\n    value: \"1\"", 1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tmpl.Resolve(NewBatch("a", "default/p", "v", 1, []string{"c"}).BuiltinArgs(), nil); err == nil || !strings.Contains(err.Error(), "threshold have no value") {
		t.Errorf("error %v", err)
	}
	if _, err := tmpl.Resolve(NewBatch("a", "default/p", "v", 1, []string{"c"}).BuiltinArgs(), map[string]string{"threshold": "1", "other": "x"}); err == nil || !strings.Contains(err.Error(), "does not declare") {
		t.Errorf("an undeclared arg passed: %v", err)
	}
}

func TestParseAnnotation(t *testing.T) {
	refs, err := ParseValue(`[{"placement": "default/canary", "template": "error-rate", "args": {"threshold": "0.1"}},
		{"placement": "*", "template": "cluster-wide", "kind": "ClusterAnalysisTemplate"}]`)
	if err != nil {
		t.Fatal(err)
	}
	canaryKey := canary.PlacementKey{Namespace: "default", Name: "canary"}
	prod := canary.PlacementKey{Namespace: "default", Name: "prod"}
	if r := refs.For(canaryKey); r == nil || r.Template != "error-rate" || r.TemplateKey(canaryKey) != (TemplateKey{Kind: KindAnalysisTemplate, Namespace: "default", Name: "error-rate"}) {
		t.Errorf("canary: %+v", r)
	}
	if r := refs.For(prod); r == nil || r.TemplateKey(prod) != (TemplateKey{Kind: KindClusterAnalysisTemplate, Name: "cluster-wide"}) {
		t.Errorf("prod: %+v", r)
	}
	for raw, want := range map[string]string{
		`{"placement": "x"}`: "want a JSON list",
		`[{"placement": "default/p", "template": "t"}, {"placement": "default/p", "template": "u"}]`: "has another entry",
		`[{"placement": "p", "template": "t"}]`:                                                      `placement "p"`,
		`[{"placement": "*", "template": "t", "args": {"clusters": "x"}}]`:                           "the controller sets clusters",
		`[{"placement": "*", "template": "t", "kind": "Job"}]`:                                       `kind "Job"`,
		`[{"placement": "*", "template": "t", "job": {}}]`:                                           "unknown field",
		`[{"placement": "*", "template": ""}]`:                                                       "template is empty",
	} {
		if _, err := ParseValue(raw); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseValue(%s) = %v, want an error containing %q", raw, err, want)
		}
	}
	if refs, err := Parse(map[string]string{}); refs != nil || err != nil {
		t.Errorf("no annotation: %v, %v", refs, err)
	}
}

// The templates of docs/guides/verification.md decode and resolve.
func TestGuideTemplates(t *testing.T) {
	for _, f := range []string{"testdata/error-rate.yaml", "testdata/webhook.yaml"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tmpl, err := decodeYAML(t, string(data))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		ms, err := tmpl.Resolve(NewBatch("observability", "default/canary", "c77f2ce289", 1, []string{"cluster1", "cluster2"}).BuiltinArgs(), nil)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if f == "testdata/error-rate.yaml" && !strings.Contains(ms[0].Prometheus.Query, `cluster=~"cluster1|cluster2"`) {
			t.Fatalf("%s: query %s", f, ms[0].Prometheus.Query)
		}
	}
}
