// Package webhooks holds the local HTTP receivers the controller's integration tests and the demo
// point addonops at: a verification gate's web provider (GateReceiver: records each run POSTed to
// it and answers a verdict) and a notification webhook service (NotificationReceiver: records each
// body the catalog's templates send), and the notification configuration (NotificationConfig: the
// shipped catalog with webhook services, and their Secret) that sends to the latter. They run on
// net/http/httptest on 127.0.0.1.
package webhooks

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"time"

	"github.com/addonops/addonops/internal/verification"
)

// GateRun is one verification run POSTed to the gate: the batch (or continuous run) the
// controller sent, when it arrived, and when and how it was answered.
type GateRun struct {
	verification.Batch
	// Arrived is when the run was received; Answered when its verdict was recorded, just before
	// it was written (zero while none was, or when none will be: the receiver closed or the
	// controller gave up).
	Arrived, Answered time.Time
	// Verdict is the verdict given ("" while none was).
	Verdict string
}

// GateOptions configure a GateReceiver.
type GateOptions struct {
	// Verdict answers every run ("verdict" of the JSON answer) until Set changes it. Default
	// "pass".
	Verdict string
	// Delay is how long the receiver takes to answer, as smoke tests take some time.
	Delay time.Duration
	// OnArrive is called with each run as it arrives, OnAnswer with each run once its verdict is
	// recorded and before it is written (nothing the controller does on the verdict comes first).
	// Both are called in the order of the records, under the receiver's lock: they must not call
	// the receiver.
	OnArrive, OnAnswer func(GateRun)
}

// GateReceiver is a verification gate's endpoint (an AnalysisTemplate's web provider POSTing the
// batch, jsonPath {$.verdict}): it records each run and answers {"verdict": V} after a delay, V
// and the delay those in force when the run arrived. Batch runs arriving while it is held wait for
// Release; continuous runs are never held and may get a verdict of their own (SetContinuous).
type GateReceiver struct {
	// URL is the receiver's base URL: every path answers.
	URL string

	srv      *httptest.Server
	stop     chan struct{}
	stopOnce sync.Once
	opts     GateOptions

	mu         sync.Mutex
	verdict    string
	continuous string // "" : verdict
	delay      time.Duration
	hold       chan struct{} // nil: batch runs are answered without waiting
	runs       []GateRun
}

// NewGateReceiver starts a gate receiver on 127.0.0.1. Close stops it.
func NewGateReceiver(o GateOptions) *GateReceiver {
	if o.Verdict == "" {
		o.Verdict = "pass"
	}
	g := &GateReceiver{opts: o, verdict: o.Verdict, delay: o.Delay, stop: make(chan struct{})}
	g.srv = httptest.NewServer(g)
	g.URL = g.srv.URL
	return g
}

// Set changes the verdict and the delay of the runs that arrive from now on.
func (g *GateReceiver) Set(verdict string, delay time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.verdict, g.delay = verdict, delay
}

// SetContinuous gives continuous runs (Batch.Continuous > 0) arriving from now on a verdict of
// their own ("": the batch runs' verdict again).
func (g *GateReceiver) SetContinuous(verdict string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.continuous = verdict
}

// Hold makes the batch runs that arrive from now on wait for Release before their delay starts.
func (g *GateReceiver) Hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.hold == nil {
		g.hold = make(chan struct{})
	}
}

// Release lets the held runs go on, and the next ones not wait. Releasing twice, or with nothing
// held, does nothing.
func (g *GateReceiver) Release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.hold != nil {
		close(g.hold)
		g.hold = nil
	}
}

// Runs returns the runs received so far, in order of arrival.
func (g *GateReceiver) Runs() []GateRun {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.runs)
}

// ContinuousRuns returns the continuous runs received so far for version.
func (g *GateReceiver) ContinuousRuns(version string) []GateRun {
	return slices.DeleteFunc(g.Runs(), func(r GateRun) bool { return r.Continuous == 0 || r.Version != version })
}

// Close stops the receiver: a run still waiting for its verdict gets none (its connection is
// closed without an answer).
func (g *GateReceiver) Close() {
	g.stopOnce.Do(func() { close(g.stop) })
	g.srv.Close()
}

func (g *GateReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var b verification.Batch
	if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
		http.Error(w, "want the batch as JSON (verification.Batch): "+err.Error(), http.StatusBadRequest)
		return
	}
	g.mu.Lock()
	i := len(g.runs)
	g.runs = append(g.runs, GateRun{Batch: b, Arrived: time.Now()})
	verdict, delay, hold := g.verdict, g.delay, g.hold
	if b.Continuous > 0 {
		hold = nil
		if g.continuous != "" {
			verdict = g.continuous
		}
	}
	if g.opts.OnArrive != nil {
		g.opts.OnArrive(g.runs[i])
	}
	g.mu.Unlock()
	if hold != nil && !wait(g, r, hold) {
		return
	}
	if delay > 0 && !wait(g, r, time.After(delay)) {
		return
	}
	g.mu.Lock()
	g.runs[i].Answered, g.runs[i].Verdict = time.Now(), verdict
	if g.opts.OnAnswer != nil {
		g.opts.OnAnswer(g.runs[i])
	}
	g.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"verdict": %q}`, verdict)
}

// wait waits for c; false when the controller gave up on the request first, or the receiver
// closed (then the connection is aborted: no verdict).
func wait[T any](g *GateReceiver, r *http.Request, c <-chan T) bool {
	select {
	case <-c:
		return true
	case <-r.Context().Done():
		return false
	case <-g.stop:
		panic(http.ErrAbortHandler)
	}
}
