// Package verifyrun runs the verification of rollout batches (package verification): it reads the
// batch's AnalysisTemplate from the hub, takes the measurements (Prometheus instant queries through
// the Prometheus HTTP API, web requests) with Argo Rollouts' semantics, and keeps each run's
// result for the rollout decision (rolloutplan.Input.Verifications), which it asks to be taken
// again when a run ends. It is the I/O half of the verification gates; the decision is pure.
//
// Runs live in the controller's memory: a controller restarted during a run starts it again (the
// decision asks for the batch's run as long as the version history records no result for it).
package verifyrun

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/verification"
)

// TemplateReader reads a template object from the hub as unstructured data.
type TemplateReader func(ctx context.Context, key verification.TemplateKey) (map[string]any, error)

// Options configure a Runner.
type Options struct {
	// Templates reads the templates.
	Templates TemplateReader
	// Client sends the queries and web requests; nil: http.DefaultClient's transport.
	Client *http.Client
	// Timeout bounds a measurement whose metric sets none; 0: DefaultTimeout.
	Timeout time.Duration
	// Done is called with the add-on's name when one of its runs ended.
	Done func(addon string)
	// Sleep and Now are the runs' clock; nil: the wall clock.
	Sleep verification.Sleep
	Now   func() time.Time
	// Keep bounds the results kept in memory; 0: DefaultKeep.
	Keep int
}

// DefaultTimeout bounds a measurement whose metric sets no timeout.
const DefaultTimeout = 30 * time.Second

// DefaultKeep is how many run results a Runner keeps; the decision records a result in the version
// history at its next decision, after which it never asks for it again.
const DefaultKeep = 1000

// Runner runs verifications, one run per batch.
type Runner struct {
	opts Options

	mu      sync.Mutex
	ctx     context.Context
	running map[string]bool
	results map[string]verification.Result
	order   []string // result keys, oldest first
}

// New returns a runner.
func New(opts Options) *Runner {
	if opts.Client == nil {
		opts.Client = &http.Client{}
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Sleep == nil {
		opts.Sleep = verification.RealSleep
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Keep <= 0 {
		opts.Keep = DefaultKeep
	}
	return &Runner{opts: opts, running: map[string]bool{}, results: map[string]verification.Result{}}
}

// Loop gives the runner the controller's lifetime: runs stop when ctx is done. Run it as a loop of
// the controller (hubcache.Cache.AddLoop).
func (r *Runner) Loop(ctx context.Context) {
	r.mu.Lock()
	r.ctx = ctx
	r.mu.Unlock()
	<-ctx.Done()
}

// Lookup returns the result of the batch's run once it ended.
func (r *Runner) Lookup(b verification.Batch) (verification.Result, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res, ok := r.results[b.Key()]
	return res, ok
}

// Start starts the batch's run unless it runs or ended already.
func (r *Runner) Start(b verification.Batch, ref verification.Ref, key verification.TemplateKey) {
	k := b.Key()
	r.mu.Lock()
	if r.running[k] {
		r.mu.Unlock()
		return
	}
	if _, done := r.results[k]; done {
		r.mu.Unlock()
		return
	}
	r.running[k] = true
	ctx := r.ctx
	r.mu.Unlock()
	if ctx == nil {
		ctx = context.Background()
	}
	go func() {
		res := r.run(ctx, b, ref, key)
		if ctx.Err() != nil {
			// The controller stops: the next one runs the batch again.
			r.mu.Lock()
			delete(r.running, k)
			r.mu.Unlock()
			return
		}
		observe(b, res)
		r.mu.Lock()
		delete(r.running, k)
		r.results[k] = res
		r.order = append(r.order, k)
		for len(r.order) > r.opts.Keep {
			delete(r.results, r.order[0])
			r.order = r.order[1:]
		}
		r.mu.Unlock()
		if r.opts.Done != nil {
			r.opts.Done(b.Addon)
		}
	}()
}

// run reads the template and runs its metrics. A template that cannot be read, decoded or
// resolved makes the run Inconclusive: nobody knows whether the version is good, and a person
// fixes the template and promotes, or aborts.
func (r *Runner) run(ctx context.Context, b verification.Batch, ref verification.Ref, key verification.TemplateKey) verification.Result {
	started := r.opts.Now()
	inconclusive := func(format string, args ...any) verification.Result {
		return verification.Result{Phase: verification.Inconclusive, Message: fmt.Sprintf(format, args...), Started: started, Finished: r.opts.Now()}
	}
	obj, err := r.opts.Templates(ctx, key)
	if err != nil {
		return inconclusive("reading %s (annotation %s, entry %d): %v", key, verification.Annotation, ref.Index, err)
	}
	tmpl, err := verification.Decode(obj)
	if err != nil {
		return inconclusive("%v", err)
	}
	metrics, err := tmpl.Resolve(b.BuiltinArgs(), ref.Args)
	if err != nil {
		return inconclusive("%v", err)
	}
	m := measurer{client: r.opts.Client, timeout: r.opts.Timeout, batch: b, now: r.opts.Now}
	return verification.Run(ctx, metrics, m.measure, r.opts.Sleep, r.opts.Now)
}

var (
	runs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "addonops_verification_runs_total",
		Help: "Verification runs of rollout batches that ended, by phase (Successful, Failed, Inconclusive).",
	}, []string{"addon", "placement", "phase"})
	runDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "addonops_verification_run_duration_seconds",
		Help: "How long a verification run of a rollout batch took, by phase.",
		// 1 s to about 4.5 h.
		Buckets: prometheus.ExponentialBuckets(1, 2, 15),
	}, []string{"addon", "placement", "phase"})
)

func init() {
	crmetrics.Registry.MustRegister(runs, runDuration)
}

func observe(b verification.Batch, res verification.Result) {
	runs.WithLabelValues(b.Addon, b.Placement, string(res.Phase)).Inc()
	runDuration.WithLabelValues(b.Addon, b.Placement, string(res.Phase)).Observe(res.Finished.Sub(res.Started).Seconds())
}

// keyOf reads a batch's placement "namespace/name".
func keyOf(placement string) canary.PlacementKey {
	k, _ := canary.ParsePlacementKey(placement)
	return k
}
