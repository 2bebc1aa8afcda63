package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPlacementPlans(t *testing.T) {
	plans := placementPlans(lastExample(t).Objects)
	if len(plans) != 2 {
		t.Fatalf("%d plans, want global-placement and canary-placement", len(plans))
	}
	g, c := plans[0], plans[1]
	if g.Key != "default/global-placement" || c.Key != "default/canary-placement" || g.Addon != "helloworld" {
		t.Fatalf("plans %+v, want global-placement then canary-placement of helloworld (spec order)", plans)
	}
	if g.Config != "default/helloworld-config-hfd2g92hfg" || g.Strategy != "Progressive" || g.MaxConcurrency.String() != "25%" ||
		g.Canary != "default/canary-placement" || c.Canary != "" {
		t.Errorf("global-placement %+v, canary-placement %+v", g, c)
	}
	// The version is the placement's configs and the add-on's default template, order-free.
	if want := "addondeploymentconfigs/default/helloworld-config-hfd2g92hfg,addontemplates//helloworld-b7kffm568m"; g.Version != want || c.Version != want {
		t.Errorf("versions %q, %q; want %q", g.Version, c.Version, want)
	}
	for _, tc := range []struct {
		p     placementPlan
		total int
		want  int
	}{
		{g, 20, 5}, {g, 6, 2}, {g, 1, 1},
		{placementPlan{Strategy: "All"}, 20, 0},
		{placementPlan{Strategy: "ProgressivePerGroup"}, 20, 0},
		{placementPlan{Strategy: "Progressive"}, 20, 0}, // no maxConcurrency: all at once
	} {
		if got := tc.p.limit(tc.total); got != tc.want {
			t.Errorf("limit(%+v, %d) = %d, want %d", tc.p, tc.total, got, tc.want)
		}
	}
}

func TestExpectRollbacks(t *testing.T) {
	ok := RollbackCheck{Placement: "default/g", Version: "v1", Since: "01", Reason: "RollbackSucceeded", Canary: "default/c",
		Clusters: 18, MaxInFlight: 5, Limit: 5}
	with := func(f func(c *RollbackCheck)) []RollbackCheck {
		c := ok
		f(&c)
		return []RollbackCheck{ok, c}
	}
	injected := map[string]bool{"c9": true}
	for _, tc := range []struct {
		name     string
		checks   []RollbackCheck
		injected map[string]bool
		ok       bool
		why      string
	}{
		{"none", nil, nil, true, ""},
		{"a rollback", []RollbackCheck{ok}, nil, true, ""},
		{"an upgrade instead", with(func(c *RollbackCheck) { c.Reason = "UpgradeSucceed" }), nil, false, "ended UpgradeSucceed, want RollbackSucceeded: v1 completed in 01"},
		{"gated by the canary", with(func(c *RollbackCheck) { c.WaitedForCanary = true }), nil, false, "waited for its canary default/c"},
		{"too many at once", with(func(c *RollbackCheck) { c.MaxInFlight = 6 }), nil, false, "moved 6 clusters at once"},
		{"unpaced strategy", with(func(c *RollbackCheck) { c.MaxInFlight, c.Limit = 18, 0 }), nil, true, ""},
		{"injected failures fail the rollback", with(func(c *RollbackCheck) { c.Reason = "RollbackFailed" }), injected, true, ""},
		{"injected failures do not excuse pacing", with(func(c *RollbackCheck) { c.MaxInFlight = 6 }), injected, false, "at once"},
	} {
		got, why := expectRollbacks(tc.checks, tc.injected)
		if got != tc.ok || !strings.Contains(why, tc.why) {
			t.Errorf("%s: (%v, %q), want (%v, …%q…)", tc.name, got, why, tc.ok, tc.why)
		}
	}
	s := time.Second
	for _, tc := range []struct {
		c    RollbackCheck
		want []string
	}{
		{RollbackCheck{Placement: "default/g", Reason: "RollbackSucceeded", Version: "v1", Since: "01", Canary: "default/c", FirstMoved: s / 10,
			CanaryDone: 7 * s, Clusters: 18, MaxInFlight: 5, Limit: 5},
			[]string{"default/g RollbackSucceeded (back to v1, completed in 01)", "not gated by its canary default/c: its first cluster moved at 0.1s, before the canary was done (7.0s)",
				"at most 5 of its 18 clusters moving at once (maxConcurrency allows 5)"}},
		{RollbackCheck{Placement: "default/g", Reason: "RollbackSucceeded", Version: "v1", Since: "05", Canary: "default/c", FirstMoved: -1, CanaryDone: -1, Clusters: 4},
			[]string{"never waiting for its canary default/c", "all 4 clusters already ran it: done at once"}},
	} {
		got := tc.c.describe()
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("describe() = %q, want …%q…", got, w)
			}
		}
	}
	note := rollbackNote(placementPlans(lastExample(t).Objects)[0], "01-fresh-install", "v0.10.0")
	if !strings.Contains(note, "default/global-placement goes back to v0.10.0, which the add-on ran to completion in 01-fresh-install") ||
		!strings.Contains(note, "not gated by the canary default/canary-placement, paced by maxConcurrency 25%") {
		t.Errorf("rollbackNote: %s", note)
	}
}

func TestRecordedChanges(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ev := func(ms int, cluster, desired, applied, reason string) mcaEvent {
		return mcaEvent{At: at(ms), mcaState: mcaState{Addon: "a", Cluster: cluster, Desired: desired, Applied: applied, Reason: reason}}
	}
	start := map[string]mcaState{
		"a/c1": {Addon: "a", Cluster: "c1", Desired: "ns/old", Applied: "ns/old", Reason: "UpgradeSucceed"},
		"a/c2": {Addon: "a", Cluster: "c2", Desired: "ns/old", Applied: "ns/old", Reason: "UpgradeSucceed"},
		"a/c3": {Addon: "a", Cluster: "c3", Desired: "ns/bad", Applied: "ns/new", Reason: "UpgradeFailed"},
		"b/c1": {Addon: "b", Cluster: "c1", Desired: "ns/new", Applied: "ns/x", Reason: "Upgrading"},
	}
	events := []mcaEvent{
		ev(1, "c1", "ns/new", "ns/old", "RollingBack"),
		ev(2, "c3", "ns/new", "ns/new", "RollingBack"), // never applied the bad version: busy all the same
		ev(3, "c1", "ns/new", "ns/new", "RollbackSucceeded"),
		ev(4, "c2", "ns/new", "ns/old", "RollingBack"),
		ev(5, "c3", "ns/new", "ns/new", "RollbackSucceeded"),
		ev(6, "c2", "ns/new", "ns/new", "RollbackSucceeded"),
	}
	clusters := []string{"c1", "c2", "c3"}
	if n, at := maxInFlight(start, events, "a", "ns/new", clusters); n != 2 || !slices.Equal(at, []string{"c1", "c3"}) {
		t.Errorf("maxInFlight = %d %v, want 2 [c1 c3] (add-on b's MCA does not count)", n, at)
	}
	told := firstTold(events, "a", "ns/new", []string{"c1", "c2"})
	if len(told) != 2 || !told["c1"].Equal(at(1)) || !told["c2"].Equal(at(4)) {
		t.Errorf("firstTold = %v, want c1 at 1ms and c2 at 4ms (c3 is not asked for)", told)
	}
	latest := latestOf(start, events, "a")
	if len(latest) != 3 || !latest["c2"].runs("ns/new") || latest["c3"].failed() {
		t.Errorf("latestOf = %+v", latest)
	}
	s := snapshot{Order: []string{"ns/global", "ns/canary"}, Clusters: map[string][]string{"ns/global": {"c3", "c1", "c2"}, "ns/canary": {"c1"}}}
	if got := s.owned("ns/global"); !slices.Equal(got, []string{"c2", "c3"}) {
		t.Errorf("owned(global) = %v, want [c2 c3]: the canary, listed last, owns c1", got)
	}
	if got := s.owned("ns/canary"); !slices.Equal(got, []string{"c1"}) {
		t.Errorf("owned(canary) = %v, want [c1]", got)
	}
}
