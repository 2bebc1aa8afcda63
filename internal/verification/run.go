package verification

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Measurement is one measurement of a metric.
type Measurement struct {
	Phase Phase `json:"phase"`
	// Value is the result as text ("[0.01,0.02]", "\"pass\""); Message says why an error or a
	// failure happened.
	Value   string    `json:"value,omitempty"`
	Message string    `json:"message,omitempty"`
	At      time.Time `json:"at"`
}

// MetricResult sums up a metric's measurements.
type MetricResult struct {
	Name  string `json:"name"`
	Phase Phase  `json:"phase"`
	// Counts of measurements by phase (Argo Rollouts: count excludes errors).
	Count            int `json:"count"`
	Successful       int `json:"successful,omitempty"`
	Failed           int `json:"failed,omitempty"`
	Inconclusive     int `json:"inconclusive,omitempty"`
	Error            int `json:"error,omitempty"`
	ConsecutiveError int `json:"-"`
	// Last is the last measurement.
	Last *Measurement `json:"last,omitempty"`
}

// AssessMetric is a metric's phase after its measurements so far (Argo Rollouts'
// assessMetricStatus): Failed once more than failureLimit failed (-1: never), Inconclusive once more
// than inconclusiveLimit were inconclusive, Error once more than consecutiveErrorLimit errors came in a
// row, Successful when count measurements were taken (errors do not count), else Running.
func AssessMetric(m Metric, r MetricResult) Phase {
	switch {
	case m.FailureLimit >= 0 && r.Failed > m.FailureLimit:
		return Failed
	case r.Inconclusive > m.InconclusiveLimit:
		return Inconclusive
	case r.ConsecutiveError > m.ConsecutiveErrorLimit:
		return Error
	case r.Count >= m.Count:
		return Successful
	}
	return Running
}

// Record adds a measurement to a metric's result.
func (r *MetricResult) Record(ms Measurement) {
	last := ms
	r.Last = &last
	switch ms.Phase {
	case Successful:
		r.Successful++
		r.Count++
		r.ConsecutiveError = 0
	case Failed:
		r.Failed++
		r.Count++
		r.ConsecutiveError = 0
	case Inconclusive:
		r.Inconclusive++
		r.Count++
		r.ConsecutiveError = 0
	case Error:
		r.Error++
		r.ConsecutiveError++
	}
}

// Result is the outcome of one verification run.
type Result struct {
	// Phase is Successful, Failed or Inconclusive (a run whose metrics ended in Error is
	// Inconclusive; the message says so).
	Phase    Phase          `json:"phase"`
	Message  string         `json:"message,omitempty"`
	Metrics  []MetricResult `json:"metrics,omitempty"`
	Started  time.Time      `json:"started"`
	Finished time.Time      `json:"finished"`
}

// AssessRun is the run's phase from its metrics' phases: Running while one runs, else the worst of
// them (Failed, Error, Inconclusive, Successful).
func AssessRun(phases []Phase) Phase {
	worst := Successful
	for _, p := range phases {
		if p == Running {
			return Running
		}
		if worse(p, worst) {
			worst = p
		}
	}
	return worst
}

// Measure takes one measurement of a metric: a value for its conditions, its text for messages,
// or an error (the metric's provider could not measure). Measurers are I/O (internal/verifyrun).
type Measure func(ctx context.Context, m Metric) (value any, text string, err error)

// Sleep waits d or until ctx is done (a test passes a clock of its own).
type Sleep func(ctx context.Context, d time.Duration) error

// RealSleep waits on the wall clock.
func RealSleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Run runs the metrics as Argo Rollouts runs an AnalysisRun: every metric in parallel, its first
// measurement after its initial delay, the next after its interval (after an error, the interval
// or DefaultErrorRetryInterval), until AssessMetric says it ended; once a metric ends otherwise than
// Successful the others stop measuring (Argo Rollouts terminates the run). now stamps measurements.
// A ctx done before the run ends makes it Inconclusive.
func Run(ctx context.Context, metrics []Metric, measure Measure, sleep Sleep, now func() time.Time) Result {
	res := Result{Started: now(), Metrics: make([]MetricResult, len(metrics))}
	stop := make(chan struct{})
	var once sync.Once
	terminate := func() { once.Do(func() { close(stop) }) }
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-runCtx.Done():
		}
	}()
	var wg sync.WaitGroup
	for i, m := range metrics {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := MetricResult{Name: m.Name, Phase: Running}
			defer func() { res.Metrics[i] = r }()
			if err := sleep(runCtx, m.InitialDelay); err != nil {
				r.Phase = terminated(ctx)
				return
			}
			for {
				v, text, err := measure(runCtx, m)
				ms := Measurement{At: now(), Value: text}
				switch {
				case err != nil && runCtx.Err() != nil && ctx.Err() == nil:
					// Another metric ended the run while this one measured.
					r.Phase = Successful
					return
				case err != nil:
					ms.Phase, ms.Message = Error, err.Error()
				default:
					ms.Phase, err = EvaluateResult(v, m)
					if err != nil {
						ms.Message = err.Error()
					}
				}
				r.Record(ms)
				if r.Phase = AssessMetric(m, r); r.Phase != Running {
					if r.Phase != Successful {
						terminate()
					}
					return
				}
				wait := m.Interval
				if ms.Phase == Error && wait == 0 {
					wait = DefaultErrorRetryInterval
				}
				if err := sleep(runCtx, wait); err != nil {
					r.Phase = terminated(ctx)
					return
				}
			}
		}()
	}
	wg.Wait()
	res.Finished = now()
	phases := make([]Phase, len(res.Metrics))
	for i, r := range res.Metrics {
		phases[i] = r.Phase
	}
	res.Phase, res.Message = summarize(AssessRun(phases), res.Metrics)
	return res
}

// terminated is the phase of a metric stopped before it ended: Successful when another metric
// ended the run (Argo Rollouts), Inconclusive when the run itself was cancelled.
func terminated(ctx context.Context) Phase {
	if ctx.Err() != nil {
		return Inconclusive
	}
	return Successful
}

// summarize turns a run's phase into the phase addonops acts on (Error is Inconclusive) and a
// message naming each metric that did not pass.
func summarize(p Phase, metrics []MetricResult) (Phase, string) {
	var parts []string
	for _, r := range metrics {
		if r.Phase == Successful {
			continue
		}
		s := fmt.Sprintf("metric %s %s (%d measured: %d successful, %d failed, %d inconclusive, %d errors)", r.Name, r.Phase, r.Count, r.Successful, r.Failed, r.Inconclusive, r.Error)
		if r.Last != nil {
			if r.Last.Value != "" {
				s += "; last value " + r.Last.Value
			}
			if r.Last.Message != "" {
				s += "; " + r.Last.Message
			}
		}
		parts = append(parts, s)
	}
	if p == Error {
		p = Inconclusive
	}
	if len(parts) == 0 {
		names := make([]string, len(metrics))
		for i, r := range metrics {
			names[i] = fmt.Sprintf("%s (%d measurements)", r.Name, r.Count)
		}
		return p, "every metric passed: " + strings.Join(names, ", ")
	}
	return p, strings.Join(parts, "; ")
}
