// Package stepcheck judges how a rollout step ended: what a step must show (a plain rollout, a
// bad version stopped at the canary, its revert taken as a rollback, a pause that holds, gates and
// a maintenance window that hold), judged from what the step's placements reported and from the
// recorded ManagedClusterAddOn changes (internal/testing/harness's MCAState recording). The judges
// are pure: the demo and the end-to-end suite run the same ones over what they saw.
package stepcheck

import (
	"fmt"
	"strings"
	"time"
)

// Result is how a step ended.
type Result string

const (
	Succeeded Result = "Succeeded"
	// Failed: a placement's rollout failed (clusters failed, maxFailures breached) or is held by a
	// failed canary. The demo moves on to the next step, as a GitOps user pushes the next commit.
	Failed Result = "Failed"
	// TimedOut: the step did not end within --step-timeout.
	TimedOut Result = "TimedOut"
	// Interrupted: Ctrl-C (or SIGTERM) while the step ran.
	Interrupted Result = "Interrupted"
	// Error: the step's objects could not be applied or its placements decided.
	Error Result = "Error"
)

// Expect decides whether a step ended as it should have. Without injected failures every step
// must succeed. With them, a step must fail, and only through injected clusters: every cluster
// reported failed is one the simulated work agent was told to fail, and at least one is (injected
// clusters fail every version, and every step reaches every cluster, so a step that succeeds
// although failures were injected means a failure went unnoticed).
func Expect(r Result, failed []string, injected map[string]bool) (bool, string) {
	switch r {
	case TimedOut:
		return false, "did not end within --step-timeout"
	case Interrupted:
		return false, "interrupted"
	case Error:
		return false, "could not be applied"
	}
	var unexpected []string
	for _, c := range failed {
		if !injected[c] {
			unexpected = append(unexpected, c)
		}
	}
	switch {
	case len(unexpected) > 0:
		return false, fmt.Sprintf("clusters failed that should not have: %s", Names(unexpected, 5))
	case len(injected) == 0 && r != Succeeded:
		return false, "failed although no failure was injected"
	case len(injected) > 0 && r == Succeeded:
		return false, "succeeded although failures were injected: the failures went unnoticed"
	case len(injected) > 0 && len(failed) == 0:
		return false, "failed, but reported no failed cluster"
	}
	return true, ""
}

// Names names a few clusters: "cluster-01, cluster-02" or "cluster-01, cluster-02, ... (40)".
func Names(names []string, most int) string {
	if len(names) == 0 {
		return "none"
	}
	if len(names) <= most {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s, ... (%d)", strings.Join(names[:most], ", "), len(names))
}

// Seconds formats a duration as "12.3s" (or "2m03s" from two minutes on).
func Seconds(d time.Duration) string {
	if d < 2*time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}

// Count counts things for people: "1 cluster", "3 clusters".
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
