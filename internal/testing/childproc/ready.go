package childproc

import (
	"context"
	"fmt"
	"time"
)

// readyAttempt bounds one readiness check: a check may hang (someone else's listener on the
// port) and the next one should still run.
const readyAttempt = 5 * time.Second

// WaitReady polls ready every interval until it returns nil, the process exits or ctx ends. Each
// check has at most readyAttempt, and the process exiting ends it at once. The error completes a
// sentence that begins with the process's name, for the caller to add its log: "exited during
// start-up (exit status 1)", "not ready 31s after its start (last check: ...)".
func (p *Process) WaitReady(ctx context.Context, interval time.Duration, ready func(context.Context) error) error {
	// Checks run under alive, which ends when the process exits.
	alive, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		select {
		case <-p.done:
			stop()
		case <-alive.Done():
		}
	}()
	var last error
	for {
		if p.Exited() {
			return fmt.Errorf("exited during start-up (%v)", p.Err())
		}
		attempt, cancel := context.WithTimeout(alive, readyAttempt)
		last = ready(attempt)
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready %s after its start (last check: %v)", time.Since(p.Started).Round(time.Second), last)
		case <-p.done:
		case <-time.After(interval):
		}
	}
}
