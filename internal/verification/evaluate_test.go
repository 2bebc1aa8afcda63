package verification

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"
)

// The expectations of Argo Rollouts' evaluate tests (utils/evaluate) and analysis tests
// (analysis/analysis_test.go): the same results judge the same way here.
func TestEvaluateResult(t *testing.T) {
	cases := []struct {
		name             string
		result           any
		success, failure string
		want             Phase
	}{
		{"no condition passes", 1.0, "", "", Successful},
		{"success condition true", []float64{0.01}, "result[0] < 0.05", "", Successful},
		{"success condition false fails without a failure condition", []float64{0.2}, "result[0] < 0.05", "", Failed},
		{"failure condition true", []float64{0.2}, "", "result[0] >= 0.05", Failed},
		{"failure condition false passes without a success condition", []float64{0.01}, "", "result[0] >= 0.05", Successful},
		{"both false is inconclusive", 0.5, "result > 0.9", "result < 0.1", Inconclusive},
		{"failure wins over success", 0.5, "result > 0.1", "result < 0.9", Failed},
		{"empty vector: the condition cannot apply", []float64{}, "result[0] < 0.05", "", Error},
		{"undefined variable", 1.0, "a == true", "", Error},
		{"not a boolean", 1.0, "result + 1", "", Error},
		{"asInt on a string", "12", "asInt(result) == 12", "", Successful},
		{"asFloat on a string", "0.5", "asFloat(result) > 0.4", "", Successful},
		{"isNaN", math.NaN(), "", "isNaN(result)", Failed},
		{"isInf", math.Inf(1), "", "isInf(result)", Failed},
		{"web verdict string", "pass", `result == "pass"`, `result == "fail"`, Successful},
		{"web verdict fail", "fail", `result == "pass"`, `result == "fail"`, Failed},
		{"web verdict unknown", "maybe", `result == "pass"`, `result == "fail"`, Inconclusive},
		{"default of nil", nil, "default(result, 0) == 0", "", Successful},
		{"bad asInt panics into an error", "x", "asInt(result) == 1", "", Error},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EvaluateResult(tc.result, Metric{SuccessCondition: tc.success, FailureCondition: tc.failure})
			if got != tc.want {
				t.Errorf("EvaluateResult(%v, %q, %q) = %s (%v), want %s", tc.result, tc.success, tc.failure, got, err, tc.want)
			}
			if (got == Error) != (err != nil) {
				t.Errorf("error %v with phase %s", err, got)
			}
		})
	}
}

func TestAssessMetric(t *testing.T) {
	m := func(count, failureLimit, inconclusiveLimit, errLimit int) Metric {
		return Metric{Count: count, FailureLimit: failureLimit, InconclusiveLimit: inconclusiveLimit, ConsecutiveErrorLimit: errLimit}
	}
	cases := []struct {
		name   string
		metric Metric
		phases []Phase
		want   Phase
	}{
		{"one success of one", m(1, 0, 0, 4), []Phase{Successful}, Successful},
		{"running until count", m(3, 0, 0, 4), []Phase{Successful, Successful}, Running},
		{"count reached", m(3, 0, 0, 4), []Phase{Successful, Successful, Successful}, Successful},
		{"one failure over limit 0", m(3, 0, 0, 4), []Phase{Successful, Failed}, Failed},
		{"failures within limit finish successful", m(3, 1, 0, 4), []Phase{Failed, Successful, Successful}, Successful},
		{"failures over limit", m(5, 1, 0, 4), []Phase{Failed, Successful, Failed}, Failed},
		{"failureLimit -1 never fails", m(3, -1, 0, 4), []Phase{Failed, Failed, Failed}, Successful},
		{"inconclusive over limit", m(3, 0, 0, 4), []Phase{Inconclusive}, Inconclusive},
		{"inconclusive within limit", m(2, 0, 1, 4), []Phase{Inconclusive, Successful}, Successful},
		// Errors do not count toward count; more than consecutiveErrorLimit in a row end it.
		{"errors do not count", m(1, 0, 0, 4), []Phase{Error, Error, Error, Error}, Running},
		{"five errors in a row exceed the default limit", m(1, 0, 0, 4), []Phase{Error, Error, Error, Error, Error}, Error},
		{"an error limit of 0 ends at the first error", m(1, 0, 0, 0), []Phase{Error}, Error},
		{"a success resets the error run", m(3, 0, 0, 1), []Phase{Error, Successful, Error, Successful}, Running},
		{"failure is judged before count", m(1, 0, 0, 4), []Phase{Failed}, Failed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var r MetricResult
			for _, p := range tc.phases {
				r.Record(Measurement{Phase: p})
			}
			if got := AssessMetric(tc.metric, r); got != tc.want {
				t.Errorf("AssessMetric after %v = %s, want %s", tc.phases, got, tc.want)
			}
		})
	}
}

func TestAssessRun(t *testing.T) {
	cases := []struct {
		phases []Phase
		want   Phase
	}{
		{[]Phase{Successful, Successful}, Successful},
		{[]Phase{Successful, Running}, Running},
		{[]Phase{Successful, Inconclusive}, Inconclusive},
		{[]Phase{Inconclusive, Error}, Error},
		{[]Phase{Error, Failed, Inconclusive}, Failed},
	}
	for _, tc := range cases {
		if got := AssessRun(tc.phases); got != tc.want {
			t.Errorf("AssessRun(%v) = %s, want %s", tc.phases, got, tc.want)
		}
	}
}

// fakeClock is a clock that sleeps by advancing itself, so runs of many intervals take no time.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return nil
}

func TestRun(t *testing.T) {
	errRate := func(count, failureLimit int) Metric {
		return Metric{Name: "error-rate", Interval: time.Minute, Count: count, FailureLimit: failureLimit, ConsecutiveErrorLimit: 4,
			SuccessCondition: "result[0] < 0.05", Prometheus: &Prometheus{Address: "http://p", Query: "q"}}
	}
	series := func(values ...any) Measure {
		var mu sync.Mutex
		i := 0
		return func(context.Context, Metric) (any, string, error) {
			mu.Lock()
			defer mu.Unlock()
			v := values[min(i, len(values)-1)]
			i++
			if err, ok := v.(error); ok {
				return nil, "", err
			}
			return []float64{v.(float64)}, "", nil
		}
	}
	down := errors.New("dial tcp: connection refused")
	cases := []struct {
		name     string
		metrics  []Metric
		measure  Measure
		want     Phase
		measured int
		took     time.Duration
	}{
		{"healthy series passes after count", []Metric{errRate(3, 0)}, series(0.01), Successful, 3, 2 * time.Minute},
		{"rising series fails at the first failure", []Metric{errRate(5, 0)}, series(0.01, 0.2), Failed, 2, time.Minute},
		{"failure limit tolerates one", []Metric{errRate(3, 1)}, series(0.2, 0.01), Successful, 3, 2 * time.Minute},
		// Prometheus unreachable: 5 errors (limit 4) with the interval between them: Error, which
		// addonops acts on as Inconclusive.
		{"unreachable is inconclusive", []Metric{errRate(3, 0)}, series(down), Inconclusive, 0, 4 * time.Minute},
		{"recovers from errors", []Metric{errRate(2, 0)}, series(down, down, 0.01), Successful, 2, 3 * time.Minute},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			res := Run(context.Background(), tc.metrics, tc.measure, clk.Sleep, clk.Now)
			if res.Phase != tc.want {
				t.Fatalf("phase %s (%s), want %s", res.Phase, res.Message, tc.want)
			}
			if got := res.Metrics[0].Count; got != tc.measured {
				t.Errorf("measured %d, want %d", got, tc.measured)
			}
			if got := res.Finished.Sub(res.Started); got != tc.took {
				t.Errorf("took %s of the run's clock, want %s", got, tc.took)
			}
			if res.Phase != Successful && res.Message == "" {
				t.Errorf("no message")
			}
		})
	}
}

// A failing metric stops the others, as Argo Rollouts terminates the run.
func TestRunFailureStopsOtherMetrics(t *testing.T) {
	slow := Metric{Name: "slow", Interval: time.Hour, Count: 100, ConsecutiveErrorLimit: 4, Web: &Web{URL: "http://w"}}
	bad := Metric{Name: "bad", Count: 1, ConsecutiveErrorLimit: 4, SuccessCondition: "result < 1", Web: &Web{URL: "http://w"}}
	measure := func(ctx context.Context, m Metric) (any, string, error) {
		if m.Name == "bad" {
			return 5.0, "5", nil
		}
		return 0.0, "0", nil
	}
	sleep := func(ctx context.Context, d time.Duration) error {
		if d == 0 {
			return ctx.Err()
		}
		<-ctx.Done() // the slow metric waits its hour until the run is terminated
		return ctx.Err()
	}
	res := Run(context.Background(), []Metric{slow, bad}, measure, sleep, time.Now)
	if res.Phase != Failed {
		t.Fatalf("phase %s, want Failed: %s", res.Phase, res.Message)
	}
	if res.Metrics[0].Phase != Successful || res.Metrics[1].Phase != Failed {
		t.Errorf("metric phases %s, %s; want Successful (terminated), Failed", res.Metrics[0].Phase, res.Metrics[1].Phase)
	}
}

func TestJSONPathValue(t *testing.T) {
	doc := map[string]any{"verdict": "pass", "rate": 0.01, "items": []any{map[string]any{"v": 3.0}}}
	for path, want := range map[string]any{"{$.verdict}": "pass", "{$.rate}": 0.01, "{$.items[0].v}": 3.0} {
		got, err := JSONPathValue(doc, path)
		if err != nil || got != want {
			t.Errorf("JSONPathValue(%s) = %v, %v; want %v", path, got, err, want)
		}
	}
	if _, err := JSONPathValue(doc, "{$.missing}"); err == nil {
		t.Errorf("a missing key selected something")
	}
}
