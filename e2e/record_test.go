package e2e

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/stepcheck"
)

// The suite asserts sequences, not only end states: every change of the add-on's
// ManagedClusterAddOns (and of its ClusterManagementAddOn) is recorded from one watch, in the
// order the API server committed them, so "the canary finished before the others were told to
// move" is a fact about the server's history, not about when the test happened to poll.

// mcaSnap is what the suite follows of one ManagedClusterAddOn: the harness's MCAState, the
// snapshot the demo and the step checks record too, keyed by cluster.
type mcaSnap = harness.MCAState

// progSnap is what the suite follows of one install progression of a ClusterManagementAddOn.
type progSnap struct {
	Placement                       string // "<namespace>/<name>"
	Reason                          string // of the Progressing condition
	DesiredADC, AppliedADC, GoodADC string // desiredConfig, lastAppliedConfig, lastKnownGoodConfig
	DesiredTpl, AppliedTpl, GoodTpl string
}

func (p progSnap) Key() string { return p.Placement }

func (p progSnap) String() string {
	return fmt.Sprintf("%s: %s adc desired=%s applied=%s good=%s tpl desired=%s applied=%s good=%s", p.Placement, orDash(p.Reason),
		orDash(p.DesiredADC), orDash(p.AppliedADC), orDash(p.GoodADC), orDash(p.DesiredTpl), orDash(p.AppliedTpl), orDash(p.GoodTpl))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// --- Pure functions over recorded sequences (table-tested in sequences_test.go). ---

// reasonsOf is the sequence of distinct consecutive non-empty values field takes for key, starting
// with its state at the step's start.
func reasonsOf[T harness.Keyed](start map[string]T, events []T, key string, field func(T) string) []string {
	var out []string
	push := func(v string) {
		if v != "" && (len(out) == 0 || out[len(out)-1] != v) {
			out = append(out, v)
		}
	}
	if s, ok := start[key]; ok {
		push(field(s))
	}
	for _, e := range events {
		if e.Key() == key {
			push(field(e))
		}
	}
	return out
}

// onlyValues keeps the values in keep, in order, merging repeats that the removal made adjacent.
func onlyValues(seq []string, keep ...string) []string {
	var out []string
	for _, v := range seq {
		if slices.Contains(keep, v) && (len(out) == 0 || out[len(out)-1] != v) {
			out = append(out, v)
		}
	}
	return out
}

// inFlight is how many of clusters had been told to run adc without having applied it, at most,
// over the step (state at start, then after each event), and one moment with that many.
func inFlight(start map[string]mcaSnap, events []mcaSnap, clusters []string, adc string) (int, []string) {
	return harness.MaxInFlight(start, events, clusters, func(s mcaSnap) bool { return s.DesiredADC == adc && s.AppliedADC != adc })
}

// firstWhen returns the index of the first event after which pred holds for the state of all
// clusters (-1 for the state at the start, len(events) when never).
func firstWhen(start map[string]mcaSnap, events []mcaSnap, pred func(map[string]mcaSnap) bool) int {
	return harness.FirstWhen(start, events, pred)
}

// allApplied holds when every one of clusters last applied adc.
func allApplied(clusters []string, adc string) func(map[string]mcaSnap) bool {
	return func(state map[string]mcaSnap) bool {
		for _, c := range clusters {
			if state[c].AppliedADC != adc {
				return false
			}
		}
		return true
	}
}

// anyTold holds when one of clusters was told to run adc.
func anyTold(clusters []string, adc string) func(map[string]mcaSnap) bool {
	return func(state map[string]mcaSnap) bool {
		for _, c := range clusters {
			if state[c].DesiredADC == adc {
				return true
			}
		}
		return false
	}
}

// --- What the shared step checks (internal/testing/stepcheck, the demo's too) read from the
// recorded sequences. ---

// toldADC lists the clusters told to run adc in events, sorted.
func toldADC(events []mcaSnap, adc string) []string {
	var out []string
	for _, e := range events {
		if e.DesiredADC == adc && !slices.Contains(out, e.Cluster) {
			out = append(out, e.Cluster)
		}
	}
	slices.Sort(out)
	return out
}

// failedOf lists the clusters whose latest Progressing reason is a failure (InstallFailed,
// UpgradeFailed, RollbackFailed), sorted.
func failedOf(latest map[string]mcaSnap) []string {
	var out []string
	for c, m := range latest {
		if m.Failed() {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// movingInFlight is how many of clusters were moving to adc at most at one moment of the step, as
// the demo counts them (harness.Moving: told adc, not failed, and not applied or still busy), and
// one moment with that many.
func movingInFlight(start map[string]mcaSnap, events []mcaSnap, clusters []string, adc string) (int, []string) {
	return harness.MaxInFlight(start, events, clusters, func(s mcaSnap) bool { return harness.Moving(adc, s.DesiredADC, s.AppliedADC, s.Progressing) })
}

// rollbackCheck is what the shared rollback check (stepcheck.Rollbacks) judges of placement pl
// over a step that rolls it back to adc (completed on it in step since): its Progressing reason
// at the end and whether it reported WaitingForCanary during the step (its recorded install
// progression), and the most of owned (its clusters) moving at once (the recorded MCAs), against
// limit (what its strategy allows, stepcheck.PlacementPlan.Limit; 0: not checked). What only the
// demo's report says (when the first cluster moved, when the canary was done) is left unset.
func rollbackCheck(pl, canary, adc, since string, owned []string, limit int,
	mstart map[string]mcaSnap, mevents []mcaSnap, cstart map[string]progSnap, cevents []progSnap) stepcheck.RollbackCheck {
	c := stepcheck.RollbackCheck{Placement: pl, Canary: canary, Version: adc, Since: since, Reason: cstart[pl].Reason,
		Clusters: len(owned), Limit: limit}
	for _, e := range cevents {
		if e.Placement != pl {
			continue
		}
		c.Reason = e.Reason
		if e.Reason == waitingForCanary {
			c.WaitedForCanary = true
		}
	}
	c.MaxInFlight, _ = movingInFlight(mstart, mevents, owned, adc)
	return c
}

// watcherFunc adapts a watch call to client-go's WatcherWithContext.
type watcherFunc func(context.Context, metav1.ListOptions) (watch.Interface, error)

func (f watcherFunc) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return f(ctx, o)
}
