package verification

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/addonops/addonops/internal/canary"
)

func TestParseContinuous(t *testing.T) {
	refs, err := ParseValue(`[{"placement": "*", "template": "smoke", "continuous": {"template": "error-rate", "interval": "2m", "args": {"threshold": "0.1"}}},
		{"placement": "default/canary", "template": "smoke", "continuous": {"template": "bg", "kind": "ClusterAnalysisTemplate"}},
		{"placement": "default/plain", "template": "smoke"}]`)
	if err != nil {
		t.Fatal(err)
	}
	prod := canary.PlacementKey{Namespace: "team", Name: "prod"}
	r := refs.For(prod)
	if r == nil || r.Continuous == nil || r.Continuous.Every() != 2*time.Minute {
		t.Fatalf("prod: %+v", r)
	}
	cr := r.Continuous.Ref(*r)
	if cr.TemplateKey(prod) != (TemplateKey{Kind: KindAnalysisTemplate, Namespace: "team", Name: "error-rate"}) || cr.Args["threshold"] != "0.1" || cr.Continuous != nil {
		t.Fatalf("prod's continuous reference: %+v", cr)
	}
	c := refs.For(canary.PlacementKey{Namespace: "default", Name: "canary"})
	if got := c.Continuous.Ref(*c).TemplateKey(canary.PlacementKey{Namespace: "default", Name: "canary"}); got != (TemplateKey{Kind: KindClusterAnalysisTemplate, Name: "bg"}) || c.Continuous.Every() != DefaultContinuousInterval {
		t.Fatalf("canary: %+v every %s", got, c.Continuous.Every())
	}
	// An annotation written before continuous existed keeps its meaning.
	if p := refs.For(canary.PlacementKey{Namespace: "default", Name: "plain"}); p.Continuous != nil || (*Continuous)(nil).Every() != DefaultContinuousInterval {
		t.Fatalf("plain: %+v", p)
	}
	for raw, want := range map[string]string{
		`[{"placement": "*", "template": "t", "continuous": {}}]`:                                                                     "continuous.template is empty",
		`[{"placement": "*", "template": "t", "continuous": {"template": "u", "interval": "often"}}]`:                                 `continuous.interval "often"`,
		`[{"placement": "*", "template": "t", "continuous": {"template": "u", "interval": "-1m"}}]`:                                   `continuous.interval "-1m"`,
		`[{"placement": "*", "template": "t", "continuous": {"template": "u", "interval": "0s"}}]`:                                    `continuous.interval "0s"`,
		`[{"placement": "*", "template": "t", "continuous": {"template": "u", "kind": "Job"}}]`:                                       `continuous.kind "Job"`,
		`[{"placement": "*", "template": "t", "continuous": {"template": "u", "args": {"clusters": "x"}}}]`:                           "continuous.args.clusters",
		`[{"placement": "*", "template": "t", "continuous": {"template": "u", "count": 3}}]`:                                          "unknown field",
		`[{"placement": "*", "template": "t", "continuous": {"template": "u", "kind": "ClusterAnalysisTemplate", "namespace": "x"}}]`: "drop continuous.namespace",
		`[{"placement": "*", "continuous": {"template": "u"}}]`:                                                                       "template is empty",
	} {
		if _, err := ParseValue(raw); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseValue(%s) = %v, want an error containing %q", raw, err, want)
		}
	}
}

// A continuous run is one run whatever clusters a decision asks it for: the clusters told the
// version grow while it runs. Its key differs from every batch's, and from the next run's.
func TestContinuousBatchKey(t *testing.T) {
	a := NewContinuousBatch("addon", "default/p", "v1", 3, []string{"c2", "c1"})
	b := NewContinuousBatch("addon", "default/p", "v1", 3, []string{"c1", "c2", "c3"})
	if a.Key() != b.Key() {
		t.Fatalf("run 3 over more clusters is another run: %s, %s", a.Key(), b.Key())
	}
	for _, other := range []Batch{
		NewContinuousBatch("addon", "default/p", "v1", 4, a.Clusters),
		NewContinuousBatch("addon", "default/p", "v2", 3, a.Clusters),
		NewContinuousBatch("addon", "default/q", "v1", 3, a.Clusters),
		NewBatch("addon", "default/p", "v1", 0, a.Clusters),
		NewBatch("addon", "default/p", "v1", 3, a.Clusters),
	} {
		if other.Key() == a.Key() {
			t.Errorf("%+v has the key of %+v", other, a)
		}
	}
	if got := a.BuiltinArgs(); got[ArgClusters] != "c1|c2" || got[ArgBatch] != "0" {
		t.Fatalf("args %v", got)
	}
	// The webhook body tells a continuous run from a batch's.
	data, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"continuous":3`) {
		t.Fatalf("body %s", data)
	}
	if data, _ := json.Marshal(NewBatch("addon", "default/p", "v1", 1, nil)); strings.Contains(string(data), "continuous") {
		t.Fatalf("a batch's body names continuous: %s", data)
	}
}
