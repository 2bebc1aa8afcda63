package stepcheck

import (
	"strings"
	"testing"
	"time"

	"github.com/addonops/addonops/internal/notify"
)

func TestExpectGates(t *testing.T) {
	s := time.Second
	good := func() *GatesResult {
		return &GatesResult{Version: "v2", VersionID: "abc", Gated: "d/global", Canary: "d/canary",
			Clusters: map[string][]string{"d/canary": {"c1"}, "d/global": {"c2", "c3"}},
			Decided:  map[string][]string{"d/canary": {"c1"}, "d/global": {"c1", "c2", "c3"}},
			Batches: []GateBatch{{Placement: "d/canary", Index: 1, Version: "abc", Clusters: []string{"c1"}, Arrived: 2 * s, Answered: 3 * s, Verdict: "pass"},
				{Placement: "d/global", Index: 1, Version: "abc", Clusters: []string{"c2"}, Arrived: 12 * s, Answered: 13 * s, Verdict: "pass"},
				{Placement: "d/global", Index: 2, Version: "abc", Clusters: []string{"c3"}, Arrived: 16 * s, Answered: 17 * s, Verdict: "pass"}},
			Told:     map[string]map[string]time.Duration{"d/canary": {"c1": s}, "d/global": {"c2": 10 * s, "c3": 14 * s}},
			WindowAt: 4 * s, OverrideAt: 9 * s, WindowMessage: "waiting for a maintenance window: ...; the next window opens at 2026-03-04T12:29:00Z (in 2h)",
			Notifications: []Notification{
				{Trigger: notify.OnRolloutStarted, Placement: "d/canary", VersionID: "abc", Clusters: []string{"c1"}},
				{Trigger: notify.OnRolloutCompleted, Placement: "d/canary", VersionID: "abc", Clusters: []string{"c1"}},
				{Trigger: notify.OnCanaryPassed, Placement: "d/global", VersionID: "abc", Clusters: []string{"c1", "c2", "c3"}},
				{Trigger: notify.OnRolloutStarted, Placement: "d/global", VersionID: "abc", Clusters: []string{"c2", "c3"}},
				{Trigger: notify.OnRolloutCompleted, Placement: "d/global", VersionID: "abc", Clusters: []string{"c2", "c3"}},
			}}
	}
	with := func(f func(g *GatesResult)) *GatesResult {
		g := good()
		f(g)
		return g
	}
	for _, tc := range []struct {
		name string
		r    Result
		g    *GatesResult
		ok   bool
		why  string
	}{
		{"gated, held, overridden, notified", Succeeded, good(), true, ""},
		{"the rollout failed", Failed, good(), false, "failed although"},
		{"no gates", Succeeded, nil, false, "did not run"},
		{"a batch started before the verdict", Succeeded, with(func(g *GatesResult) { g.Told["d/global"]["c3"] = 12 * s }), false,
			"c3 of batch 2 of d/global was told the version at 12.0s, before the verdict on batch 1 (13.0s)"},
		{"a verdict never given", Succeeded, with(func(g *GatesResult) { g.Batches[2].Verdict, g.Batches[2].Answered = "", -1 }), false, "batch 2 of d/global got no verdict"},
		{"a cluster never verified", Succeeded, with(func(g *GatesResult) { g.Batches = g.Batches[:2] }), false, "c3 of d/global was in no batch"},
		{"the window never held", Succeeded, with(func(g *GatesResult) { g.WindowAt = 0 }), false, "never waited for its maintenance window"},
		{"no opening time", Succeeded, with(func(g *GatesResult) { g.WindowMessage = "waiting" }), false, "does not say when it opens"},
		{"told through the closed window", Succeeded, with(func(g *GatesResult) { g.ToldBeforeOverride = []string{"c2"} }), false, "let clusters of d/global start: c2"},
		{"told before the override", Succeeded, with(func(g *GatesResult) { g.Told["d/global"]["c2"] = 8 * s }), false, "before the override"},
		{"no override", Succeeded, with(func(g *GatesResult) { g.OverrideAt = 0 }), false, "override-window` did not run"},
		{"a notification missing", Succeeded, with(func(g *GatesResult) { g.Notifications = g.Notifications[:4] }), false,
			"notifications not received: on-rollout-completed d/global"},
		{"a notification twice", Succeeded, with(func(g *GatesResult) { g.Notifications = append(g.Notifications, g.Notifications[0]) }), false, "received twice"},
		{"a notification without a cluster", Succeeded, with(func(g *GatesResult) { g.Notifications[3].Clusters = []string{"c2"} }), false, "does not name c3"},
		{"a problem", Succeeded, with(func(g *GatesResult) { g.Problem = "boom" }), false, "boom"},
		{"injected failures: the window still holds", Failed, with(func(g *GatesResult) { g.ToldBeforeOverride = []string{"c2"} }), false, "let clusters"},
	} {
		var failed []string
		var injected map[string]bool
		if strings.HasPrefix(tc.name, "injected") {
			failed, injected = []string{"c3"}, map[string]bool{"c3": true}
		}
		ok, why := Gates(tc.r, failed, injected, tc.g)
		if ok != tc.ok || !strings.Contains(why, tc.why) {
			t.Errorf("%s: (%v, %q), want (%v, …%q…)", tc.name, ok, why, tc.ok, tc.why)
		}
	}
	d := DescribeGates(good())
	for _, want := range []string{"webhook gate: 3 batches verified (d/canary 1 batch, d/global 2 batches)", "the deny window held d/global from 4.0s, overridden at 9.0s",
		"5 notifications received (on-canary-passed x1, on-rollout-completed x2, on-rollout-started x2)"} {
		if !strings.Contains(d, want) {
			t.Errorf("DescribeGates: %s; want %q", d, want)
		}
	}
}
