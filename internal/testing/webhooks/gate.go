// Package webhooks holds the local HTTP receivers the controller's integration tests, verifyrun's
// tests and the demo point addonops at: a verification gate's web provider (GateReceiver: records
// each run POSTed to it and answers a verdict, with the HTTP status and extra fields a test
// chooses) and a notification webhook service (NotificationReceiver: records each body the
// catalog's templates send), and the notification configuration (NotificationConfig: the shipped
// catalog with webhook services, and their Secret) that sends to the latter. They run on
// net/http/httptest on 127.0.0.1.
package webhooks

import (
	"encoding/json"
	"fmt"
	"maps"
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
	// Verdict is the verdict given ("" while none was), Status the HTTP status it was answered
	// with (0 while none was).
	Verdict string
	Status  int
}

// GateOptions configure a GateReceiver.
type GateOptions struct {
	// Verdict answers every run ("verdict" of the JSON answer) until Set changes it. Default
	// "pass".
	Verdict string
	// Delay is how long the receiver takes to answer, as smoke tests take some time.
	Delay time.Duration
	// Status is the HTTP status of every answer until SetStatus changes it (the verdict is
	// written all the same, as a provider answering an error may). Default 200.
	Status int
	// Fields are written into every answer beside "verdict" (which they cannot replace): a real
	// provider's answer carries more than the field the template's jsonPath picks.
	Fields map[string]any
	// OnArrive is called with each run as it arrives, OnAnswer with each run once its verdict is
	// recorded and before it is written (nothing the controller does on the verdict comes first).
	// Both are called in the order of the records, under the receiver's lock: they must not call
	// the receiver.
	OnArrive, OnAnswer func(GateRun)
}

// GateReceiver is a verification gate's endpoint (an AnalysisTemplate's web provider POSTing the
// batch, jsonPath {$.verdict}): it records each run and answers {"verdict": V} (and the Fields)
// with status S after a delay, V, S and the delay those in force when the run arrived. Batch runs
// arriving while it is held wait for Release; continuous runs are never held and may get a verdict
// of their own (SetContinuous).
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
	status     int
	delay      time.Duration
	hold       chan struct{} // nil: batch runs are answered without waiting
	runs       []GateRun
}

// NewGateReceiver starts a gate receiver on 127.0.0.1. Close stops it. Fields that JSON cannot
// encode are a mistake of the test: it panics, naming them.
func NewGateReceiver(o GateOptions) *GateReceiver {
	if _, err := json.Marshal(o.Fields); err != nil {
		panic(fmt.Sprintf("webhooks.NewGateReceiver: GateOptions.Fields cannot be written as JSON: %v", err))
	}
	o.Fields = maps.Clone(o.Fields)
	if o.Verdict == "" {
		o.Verdict = "pass"
	}
	if o.Status == 0 {
		o.Status = http.StatusOK
	}
	g := &GateReceiver{opts: o, verdict: o.Verdict, status: o.Status, delay: o.Delay, stop: make(chan struct{})}
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

// SetStatus changes the HTTP status of the answers to the runs that arrive from now on.
func (g *GateReceiver) SetStatus(code int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.status = code
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
	verdict, status, delay, hold := g.verdict, g.status, g.delay, g.hold
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
	answer := map[string]any{}
	maps.Copy(answer, g.opts.Fields)
	answer["verdict"] = verdict
	body, err := json.Marshal(answer)
	if err != nil {
		http.Error(w, fmt.Sprintf("gate receiver: encoding the answer: %v", err), http.StatusInternalServerError)
		return
	}
	g.mu.Lock()
	g.runs[i].Answered, g.runs[i].Verdict, g.runs[i].Status = time.Now(), verdict, status
	if g.opts.OnAnswer != nil {
		g.opts.OnAnswer(g.runs[i])
	}
	g.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
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
