package stepcheck

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/addonops/addonops/internal/notify"
)

// A gates step rolls a version out behind a webhook verification gate, with notifications and a
// maintenance window in force on the gated placement: the receivers' records, the placements'
// reasons and the recorded MCA changes must show that each part acted.

// GatesResult is what the gates step saw. Times are since the step's start.
type GatesResult struct {
	Version string
	// VersionID is the version's id (as `addonops history` shows it), from the gated placement's
	// status.
	VersionID string
	Gated     string
	Canary    string
	// Clusters are the clusters each placement of the step rolls the version out to (a cluster
	// two placements select belongs to one, as canary.AssignOwners assigns it); Decided all
	// the clusters each placement selects.
	Clusters, Decided map[string][]string
	// Batches are the batches the gate was asked to verify, in order.
	Batches []GateBatch
	// Notifications are those received during the step.
	Notifications []Notification
	// Told is when each cluster of each placement was first told the version, from the recorded
	// MCA changes.
	Told map[string]map[string]time.Duration
	// WindowAt: the gated placement first reported WaitingForWindow, with WindowMessage;
	// OverrideAt: `addonops override-window` returned. ToldBeforeOverride are the gated
	// placement's clusters told the version before it (a closed window starts none).
	WindowAt, OverrideAt time.Duration
	WindowMessage        string
	ToldBeforeOverride   []string
	Override             []string // what the command printed
	Problem              string
}

// GateBatch is one verified batch.
type GateBatch struct {
	Placement         string
	Index             int
	Version           string
	Clusters          []string
	Arrived, Answered time.Duration
	Verdict           string
}

// Notification is one notification received.
type Notification struct {
	Trigger, Placement, VersionID, Kind string
	Clusters                            []string
	At                                  time.Duration
}

// Gates decides whether a gates step ended as it should: as any step, and each part
// acted. The gate: every cluster of every placement was in a batch the receiver was asked to
// verify, every verdict pass, and no cluster was told the version before the verdict on the batch
// before its own. The window: the gated placement waited for it (WaitingForWindow, saying when it
// opens), no cluster of it was told the version before the override, and the override ran. The
// notifications: each placement's rollout started and completed (and the gated one's canary
// passed) for the version, with its clusters, once each. With injected failures the rollout may
// stop early; what happened must still obey the gate and the window.
func Gates(r Result, failed []string, injected map[string]bool, g *GatesResult) (bool, string) {
	if ok, why := Expect(r, failed, injected); !ok {
		return false, why
	}
	if g == nil {
		return false, "the gates did not run"
	}
	if len(g.ToldBeforeOverride) > 0 {
		return false, fmt.Sprintf("the closed maintenance window let clusters of %s start: %s", g.Gated, Names(g.ToldBeforeOverride, 5))
	}
	if why := GateOrder(g); why != "" {
		return false, why
	}
	if len(injected) > 0 {
		return true, ""
	}
	switch {
	case g.Problem != "":
		return false, g.Problem
	case g.WindowAt == 0:
		return false, fmt.Sprintf("%s never waited for its maintenance window (WaitingForWindow)", g.Gated)
	case !strings.Contains(g.WindowMessage, "the next window opens at"):
		return false, fmt.Sprintf("%s waited for its window, but its message does not say when it opens: %q", g.Gated, g.WindowMessage)
	case g.OverrideAt == 0 || g.OverrideAt < g.WindowAt:
		return false, "`addonops override-window` did not run after the window held"
	}
	for _, p := range slices.Sorted(maps.Keys(g.Clusters)) {
		var in []string
		for _, b := range g.Batches {
			if b.Placement != p {
				continue
			}
			if b.Verdict != "pass" {
				return false, fmt.Sprintf("batch %d of %s got no verdict", b.Index, p)
			}
			if b.Version != g.VersionID {
				return false, fmt.Sprintf("batch %d of %s was verified for version %s, want %s", b.Index, p, b.Version, g.VersionID)
			}
			in = append(in, b.Clusters...)
		}
		for _, c := range g.Clusters[p] {
			if !slices.Contains(in, c) {
				return false, fmt.Sprintf("%s of %s was in no batch the gate verified", c, p)
			}
		}
		if len(g.Told[p]) != len(g.Clusters[p]) {
			return false, fmt.Sprintf("%d of the %d clusters of %s were told the version", len(g.Told[p]), len(g.Clusters[p]), p)
		}
	}
	for _, c := range g.Clusters[g.Gated] {
		if at := g.Told[g.Gated][c]; at < g.OverrideAt {
			return false, fmt.Sprintf("%s of %s was told the version at %s, before the override (%s)", c, g.Gated, Seconds(at), Seconds(g.OverrideAt))
		}
	}
	if missing := MissingNotifications(g.Clusters, g.Gated, g.Canary, g.VersionID, g.Notifications); len(missing) > 0 {
		return false, fmt.Sprintf("notifications not received: %s", strings.Join(missing, ", "))
	}
	seen := map[string]bool{}
	for _, n := range g.Notifications {
		if n.VersionID != g.VersionID {
			continue
		}
		k := n.Trigger + " " + n.Placement
		if seen[k] {
			return false, fmt.Sprintf("notification %s for version %s received twice", k, n.VersionID)
		}
		seen[k] = true
		for _, c := range g.Clusters[n.Placement] {
			if !slices.Contains(n.Clusters, c) {
				return false, fmt.Sprintf("notification %s does not name %s among its clusters %v", k, c, n.Clusters)
			}
		}
		for _, c := range n.Clusters {
			if !slices.Contains(g.Decided[n.Placement], c) {
				return false, fmt.Sprintf("notification %s names %s, which %s does not select", k, c, n.Placement)
			}
		}
	}
	return true, ""
}

// GateOrder checks that no batch started before the verdict on the batch before it: a cluster of
// batch k of a placement must be told the version after batch k-1's verdict.
func GateOrder(g *GatesResult) string {
	byPlacement := map[string][]GateBatch{}
	for _, b := range g.Batches {
		byPlacement[b.Placement] = append(byPlacement[b.Placement], b)
	}
	for p, bs := range byPlacement {
		sort.Slice(bs, func(i, j int) bool { return bs[i].Index < bs[j].Index })
		for i := 1; i < len(bs); i++ {
			prev := bs[i-1]
			for _, c := range bs[i].Clusters {
				at, ok := g.Told[p][c]
				if !ok {
					continue
				}
				if prev.Answered < 0 || at < prev.Answered {
					return fmt.Sprintf("%s of batch %d of %s was told the version at %s, before the verdict on batch %d (%s)",
						c, bs[i].Index, p, Seconds(at), prev.Index, answered(prev.Answered))
				}
			}
		}
	}
	return ""
}

func answered(d time.Duration) string {
	if d < 0 {
		return "never given"
	}
	return Seconds(d)
}

// DescribeGates says what the gates showed, for the step's last line and the summary.
func DescribeGates(g *GatesResult) string {
	if g == nil {
		return ""
	}
	var per []string
	for _, p := range slices.Sorted(maps.Keys(g.Clusters)) {
		n := 0
		for _, b := range g.Batches {
			if b.Placement == p {
				n++
			}
		}
		per = append(per, fmt.Sprintf("%s %s", p, batches(n)))
	}
	triggers := map[string]int{}
	for _, n := range g.Notifications {
		triggers[n.Trigger]++
	}
	var ts []string
	for _, t := range slices.Sorted(maps.Keys(triggers)) {
		ts = append(ts, fmt.Sprintf("%s x%d", t, triggers[t]))
	}
	window := "the window never held"
	if g.WindowAt > 0 {
		window = fmt.Sprintf("the deny window held %s from %s, overridden at %s (`addonops override-window`), %d of its clusters started before",
			g.Gated, Seconds(g.WindowAt), Seconds(g.OverrideAt), len(g.ToldBeforeOverride))
	}
	s := fmt.Sprintf("webhook gate: %s verified (%s), each next batch after its verdict; %s; %s received (%s)",
		batches(len(g.Batches)), strings.Join(per, ", "), window, Count(len(g.Notifications), "notification"), strings.Join(ts, ", "))
	if g.Problem != "" {
		s += "; " + g.Problem
	}
	return s
}

// WantTriggers are the notifications placement must send for the version: its rollout started
// and completed, and for the placement gated (a canary gates it), the canary passed.
func WantTriggers(placement, gated, canary string) []string {
	want := []string{notify.OnRolloutStarted, notify.OnRolloutCompleted}
	if placement == gated && canary != "" {
		want = append(want, notify.OnCanaryPassed)
	}
	return want
}

// MissingNotifications lists "<trigger> <placement>" not in got for the version versionID (""
// for any), for every placement of clusters (the clusters each placement rolls out to), sorted.
func MissingNotifications(clusters map[string][]string, gated, canary, versionID string, got []Notification) []string {
	var missing []string
	for _, p := range slices.Sorted(maps.Keys(clusters)) {
		for _, t := range WantTriggers(p, gated, canary) {
			if !slices.ContainsFunc(got, func(n Notification) bool {
				return n.Trigger == t && n.Placement == p && (versionID == "" || n.VersionID == versionID)
			}) {
				missing = append(missing, t+" "+p)
			}
		}
	}
	return missing
}

// batches counts batches for people.
func batches(n int) string {
	if n == 1 {
		return "1 batch"
	}
	return fmt.Sprintf("%d batches", n)
}
