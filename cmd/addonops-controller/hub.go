package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// Hub reachability. client-go's informers retry a refused watch at verbosity 4 and a failing list
// through the rate-limited error handler, so a hub that goes away after start-up left the
// controller silent; the checker makes it loud (an error line at once and every 30 s while it lasts)
// and /readyz false.
const (
	hubCheckInterval = 5 * time.Second
	hubCheckTimeout  = 4 * time.Second
	hubErrorEvery    = 30 * time.Second
)

// hubChecker asks the hub's /readyz, authenticated with the controller's own credentials, every
// hubCheckInterval. It runs on every replica, leader or not.
type hubChecker struct {
	host     string
	rc       rest.Interface
	interval time.Duration
	timeout  time.Duration
	// errorEvery is how often a lasting failure is logged again.
	errorEvery time.Duration

	mu           sync.Mutex
	checked      bool
	err          error
	failingSince time.Time
	lastLogged   time.Time
}

func newHubChecker(cfg *rest.Config) (*hubChecker, error) {
	cfg = rest.CopyConfig(cfg)
	// Its own rate limiter: a busy controller must not delay the check into a false alarm.
	cfg.QPS, cfg.Burst = 5, 5
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the hub reachability client: %w", err)
	}
	return &hubChecker{host: cfg.Host, rc: kube.Discovery().RESTClient(), interval: hubCheckInterval, timeout: hubCheckTimeout, errorEvery: hubErrorEvery}, nil
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

// NeedLeaderElection is false: a standby replica reports the hub's reachability too.
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

func (h *hubChecker) check(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, h.timeout)
	body, err := h.rc.Get().AbsPath("/readyz").DoRaw(cctx)
	cancel()
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		detail := strings.TrimSpace(string(body))
		if len(detail) > 300 {
			detail = detail[:300] + "..."
		}
		if detail != "" && !strings.Contains(err.Error(), detail) {
			err = fmt.Errorf("%w: %s", err, detail)
		}
		err = fmt.Errorf("hub API server %s unreachable or not ready (GET /readyz with the controller's credentials): %w", h.host, err)
	}
	logger := klog.FromContext(ctx)
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.checked = true
	switch {
	case err != nil && h.err == nil:
		h.failingSince, h.lastLogged = now, now
		logger.Error(err, "Hub unreachable; the controller waits for it")
	case err != nil && now.Sub(h.lastLogged) >= h.errorEvery:
		h.lastLogged = now
		logger.Error(err, "Hub still unreachable", "for", now.Sub(h.failingSince).Round(time.Second).String())
	case err == nil && h.err != nil:
		logger.Info("Hub reachable again", "after", now.Sub(h.failingSince).Round(time.Second).String())
	}
	h.err = err
}
