package main

// `addonops status ADDON --watch`: the view follows the hub's watch events (internal/rolloutwatch);
// every change redraws, bursts coalesced, and while nothing changes the command makes no request
// at all.

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/addonops/addonops/internal/rolloutwatch"
)

const (
	// coalesceEvents merges a burst of events (a rollout step writes the CMA and several MCAs) into
	// one redraw.
	coalesceEvents = 100 * time.Millisecond
	// clockTick re-evaluates the cached objects for what depends on the clock alone (a cluster
	// that times out, ages); it reads no object from the hub.
	clockTick = time.Second
)

// waitChange returns when the hub changed (after coalescing a burst), the clock ticked, or ctx or
// deadline ended; it reports a list or watch error of the hub once per distinct message.
func waitChange(ctx context.Context, w *rolloutwatch.Watch, deadline <-chan time.Time, tick <-chan time.Time, prog string, stderr io.Writer, lastErr *string) (timedOut bool) {
	for {
		select {
		case <-ctx.Done():
			return false
		case <-deadline:
			return true
		case <-tick:
			return false
		case err := <-w.Errors():
			if msg := err.Error(); msg != *lastErr {
				*lastErr = msg
				fmt.Fprintf(stderr, "%s status: reading the hub (retrying): %v\n", prog, err)
			}
		case <-w.Changed():
			select {
			case <-time.After(coalesceEvents):
			case <-ctx.Done():
			}
			select {
			case <-w.Changed():
			default:
			}
			return false
		}
	}
}
