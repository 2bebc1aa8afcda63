package verifyrun

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/webhooks"
	"github.com/addonops/addonops/internal/verification"
)

// gate is the web provider's endpoint: the shared gate receiver, answering with a field besides
// the verdict, as a real smoke test's answer would (the template's jsonPath picks the verdict).
func gate(t *testing.T, verdict string, delay time.Duration) *webhooks.GateReceiver {
	t.Helper()
	g := webhooks.NewGateReceiver(webhooks.GateOptions{Verdict: verdict, Delay: delay, Fields: map[string]any{"errorRate": 0.01}})
	t.Cleanup(g.Close)
	return g
}

const webTemplate = `
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: webhook, namespace: default}
spec:
  args: [{name: version}]
  metrics:
  - name: webhook
    successCondition: result == "pass"
    failureCondition: result == "fail"
    consecutiveErrorLimit: 0
    provider:
      web:
        url: URL/verify?version={{args.version}}
        method: POST
        jsonPath: "{$.verdict}"
        timeoutSeconds: 1
`

func templates(src map[string]string) TemplateReader {
	return func(_ context.Context, key verification.TemplateKey) (map[string]any, error) {
		s, ok := src[key.Name]
		if !ok {
			return nil, errors.New(key.String() + " not found")
		}
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(s), &obj); err != nil {
			return nil, err
		}
		return obj, nil
	}
}

// runOnce starts a batch's run and waits for its result (Done is called when it ends).
func runOnce(t *testing.T, r *Runner, done chan string, b verification.Batch, ref verification.Ref) verification.Result {
	t.Helper()
	r.Start(b, ref, ref.TemplateKey(keyOf(b.Placement)))
	select {
	case addon := <-done:
		if addon != b.Addon {
			t.Fatalf("Done(%s), want %s", addon, b.Addon)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the run of %v did not end", b)
	}
	res, ok := r.Lookup(b)
	if !ok {
		t.Fatalf("no result after Done")
	}
	return res
}

func TestWebGate(t *testing.T) {
	g := gate(t, "pass", 0)
	done := make(chan string, 1)
	r := New(Options{Templates: templates(map[string]string{"webhook": strings.Replace(webTemplate, "URL", g.URL, 1)}),
		Done: func(a string) { done <- a }})
	ref := verification.Ref{Placement: "*", Template: "webhook", Kind: verification.KindAnalysisTemplate}
	cases := []struct {
		name    string
		verdict string
		status  int
		delay   time.Duration
		want    verification.Phase
		message string
	}{
		{"pass", "pass", http.StatusOK, 0, verification.Successful, "every metric passed"},
		{"fail", "fail", http.StatusOK, 0, verification.Failed, `last value "fail"`},
		{"unknown verdict", "maybe", http.StatusOK, 0, verification.Inconclusive, `last value "maybe"`},
		{"server error", "pass", http.StatusInternalServerError, 0, verification.Inconclusive, "HTTP 500"},
		{"times out", "pass", http.StatusOK, 3 * time.Second, verification.Inconclusive, "context deadline exceeded"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g.Set(tc.verdict, tc.delay)
			g.SetStatus(tc.status)
			b := verification.NewBatch("hello", "default/canary", "v1", i+1, []string{"c2", "c1"})
			start := time.Now()
			res := runOnce(t, r, done, b, ref)
			t.Logf("%s: %s in %s: %s", tc.name, res.Phase, time.Since(start).Round(time.Millisecond), res.Message)
			if res.Phase != tc.want || !strings.Contains(res.Message, tc.message) {
				t.Fatalf("result %s %q, want %s containing %q", res.Phase, res.Message, tc.want, tc.message)
			}
			runs := g.Runs()
			got := runs[len(runs)-1]
			if got.Addon != "hello" || got.Placement != "default/canary" || strings.Join(got.Clusters, ",") != "c1,c2" || got.Index != i+1 {
				t.Fatalf("the receiver got %+v, want the batch as JSON", got)
			}
		})
	}
	// A batch that ended is not run again.
	before := len(g.Runs())
	r.Start(verification.NewBatch("hello", "default/canary", "v1", 1, []string{"c1", "c2"}), ref, ref.TemplateKey(keyOf("default/canary")))
	harness.Consistently(t, 300*time.Millisecond, "a finished batch is not run again", func() string {
		if n := len(g.Runs()); n != before {
			return fmt.Sprintf("the receiver got %d runs, %d before", n, before)
		}
		return ""
	}, harness.Every(20*time.Millisecond))
}

const promTemplate = `
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: error-rate, namespace: default}
spec:
  args: [{name: clusters}]
  metrics:
  - name: error-rate
    successCondition: result[0] < 0.05
    consecutiveErrorLimit: 1
    interval: 100ms
    count: 1
    provider:
      prometheus:
        address: ADDRESS
        query: max(error_rate{cluster=~"{{args.clusters}}"})
`

// A Prometheus that cannot be reached is inconclusive, never passed.
func TestUnreachablePrometheusIsInconclusive(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := "http://" + l.Addr().String()
	_ = l.Close() // nothing listens there now
	done := make(chan string, 1)
	r := New(Options{Templates: templates(map[string]string{"error-rate": strings.Replace(promTemplate, "ADDRESS", addr, 1)}),
		Done: func(a string) { done <- a }})
	res := runOnce(t, r, done, verification.NewBatch("hello", "default/p", "v1", 1, []string{"c1"}),
		verification.Ref{Placement: "*", Template: "error-rate", Kind: verification.KindAnalysisTemplate})
	if res.Phase != verification.Inconclusive || !strings.Contains(res.Message, "connection refused") || res.Metrics[0].Error != 2 {
		t.Fatalf("result %s %q (%+v), want Inconclusive after 2 errors (consecutiveErrorLimit 1)", res.Phase, res.Message, res.Metrics)
	}
}

// A template that is missing or uses what addonops does not support is inconclusive, with the
// reason.
func TestTemplateProblemsAreInconclusive(t *testing.T) {
	done := make(chan string, 1)
	r := New(Options{Templates: templates(map[string]string{"job": strings.Replace(promTemplate, "prometheus:\n", "job:\n", 1)}), Done: func(a string) { done <- a }})
	for name, want := range map[string]string{"missing": "AnalysisTemplate default/missing not found", "job": "provider job is not supported"} {
		res := runOnce(t, r, done, verification.NewBatch("hello", "default/p", "v1", 1, []string{name}),
			verification.Ref{Placement: "*", Template: name, Kind: verification.KindAnalysisTemplate})
		if res.Phase != verification.Inconclusive || !strings.Contains(res.Message, want) {
			t.Errorf("%s: %s %q, want Inconclusive containing %q", name, res.Phase, res.Message, want)
		}
	}
}
