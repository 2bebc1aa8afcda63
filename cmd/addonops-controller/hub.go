package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/addonops/addonops/internal/ocmkinds"
)

// Hub checks. client-go's informers retry a refused watch at verbosity 4 and a failing list
// through the rate-limited error handler, so a hub that goes away after start-up, or one without
// OCM's CRDs, left the controller silent or repeating client-go's words; the checkers make it loud
// (an error line at once and every 30 s while it lasts) and /readyz false with the reason.
const (
	hubCheckInterval = 5 * time.Second
	hubCheckTimeout  = 4 * time.Second
	hubErrorEvery    = 30 * time.Second
)

// hubChecker runs one check of the hub every interval and keeps its result for /readyz. A failure
// is logged at error level once, then every errorEvery while it lasts, and its end at info level: a
// lasting problem is visible without flooding the log. It runs on every replica, leader or not.
type hubChecker struct {
	host     string
	interval time.Duration
	timeout  time.Duration
	// errorEvery is how often a lasting failure is logged again, by clock.
	errorEvery time.Duration
	clock      clock.PassiveClock
	// probe is the check; an error wrapping errUnknown means it could not tell (the other check
	// reports why), and is neither logged nor replaces a known answer.
	probe func(ctx context.Context) error
	// msgs are the log messages: at the first failure, again while it lasts, when it is over.
	msgs checkMessages
	// passed is closed at the first successful check.
	passed     chan struct{}
	passedOnce sync.Once

	mu           sync.Mutex
	checked      bool
	err          error
	failingSince time.Time
	lastLogged   time.Time
}

type checkMessages struct{ failing, still, over string }

// errUnknown marks a check that could not be made.
var errUnknown = errors.New("not checked")

func newChecker(host string, probe func(context.Context) error, msgs checkMessages) *hubChecker {
	return &hubChecker{host: host, interval: hubCheckInterval, timeout: hubCheckTimeout, errorEvery: hubErrorEvery,
		clock: clock.RealClock{}, probe: probe, msgs: msgs, passed: make(chan struct{})}
}

// newHubChecker asks the hub's /readyz, authenticated with the controller's own credentials.
func newHubChecker(cfg *rest.Config) (*hubChecker, error) {
	rc, err := checkClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the hub reachability client: %w", err)
	}
	probe := func(ctx context.Context) error {
		body, err := rc.RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil {
			return nil
		}
		detail := strings.TrimSpace(string(body))
		if len(detail) > 300 {
			detail = detail[:300] + "..."
		}
		if detail != "" && !strings.Contains(err.Error(), detail) {
			err = fmt.Errorf("%w: %s", err, detail)
		}
		return fmt.Errorf("hub API server %s unreachable or not ready (GET /readyz with the controller's credentials): %w", cfg.Host, err)
	}
	return newChecker(cfg.Host, probe, checkMessages{
		failing: "Hub unreachable; the controller waits for it",
		still:   "Hub still unreachable",
		over:    "Hub reachable again",
	}), nil
}

// newKindsChecker asks the hub's discovery whether it serves the OCM kinds the controller reads
// (package ocmkinds). The controller's cache waits for its first success (passed): started
// without them it would only log client-go's "could not find the requested resource" and exit
// at the cache sync timeout, again and again.
func newKindsChecker(cfg *rest.Config, kinds []ocmkinds.Kind) (*hubChecker, error) {
	c, err := checkClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the hub discovery client: %w", err)
	}
	probe := func(context.Context) error {
		err := ocmkinds.Check(c, cfg.Host, kinds)
		var missing *ocmkinds.MissingError
		if err != nil && !errors.As(err, &missing) {
			// Unreachable or refused: the hub check says so.
			return fmt.Errorf("%w: %w", errUnknown, err)
		}
		return err
	}
	return newChecker(cfg.Host, probe, checkMessages{
		failing: "The hub lacks OCM's kinds; the controller waits for them",
		still:   "The hub still lacks OCM's kinds",
		over:    "The hub serves OCM's kinds now",
	}), nil
}

// checkClient is a discovery client with its own rate limiter (a busy controller must not delay a
// check into a false alarm) and the check's timeout (discovery takes no context).
func checkClient(cfg *rest.Config) (*discovery.DiscoveryClient, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 5, 5
	cfg.Timeout = hubCheckTimeout
	return discovery.NewDiscoveryClientForConfig(cfg)
}

// Start checks until ctx is done (manager.Runnable).
func (h *hubChecker) Start(ctx context.Context) error {
	t := time.NewTicker(h.interval)
	defer t.Stop()
	for {
		h.check(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// NeedLeaderElection is false: a standby replica reports the hub's state too.
func (h *hubChecker) NeedLeaderElection() bool { return false }

// Check is the /readyz check.
func (h *hubChecker) Check(*http.Request) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.checked {
		return errors.New("the hub has not been checked yet")
	}
	return h.err
}

// Passed is closed once a check has passed.
func (h *hubChecker) Passed() <-chan struct{} { return h.passed }

func (h *hubChecker) check(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, h.timeout)
	err := h.probe(cctx)
	cancel()
	if ctx.Err() != nil {
		return
	}
	logger := klog.FromContext(ctx)
	now := h.clock.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if errors.Is(err, errUnknown) {
		if !h.checked {
			h.err = err
		}
		return
	}
	wasFailing := h.checked && h.err != nil && !errors.Is(h.err, errUnknown)
	h.checked = true
	switch {
	case err != nil && !wasFailing:
		h.failingSince, h.lastLogged = now, now
		logger.Error(err, h.msgs.failing)
	case err != nil && now.Sub(h.lastLogged) >= h.errorEvery:
		h.lastLogged = now
		logger.Error(err, h.msgs.still, "for", now.Sub(h.failingSince).Round(time.Second).String())
	case err == nil && wasFailing:
		logger.Info(h.msgs.over, "after", now.Sub(h.failingSince).Round(time.Second).String())
	}
	h.err = err
	if err == nil {
		h.passedOnce.Do(func() { close(h.passed) })
	}
}
