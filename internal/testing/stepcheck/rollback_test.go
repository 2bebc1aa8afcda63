package stepcheck

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/addonops/addonops/internal/testing/ssapply"
)

// lastExample is kustomize-rollout-examples/04-rollback's committed output.
func lastExample(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	objs, err := ssapply.DecodeFile("kustomize-rollout-examples/04-rollback/expected/hub.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func TestPlacementPlans(t *testing.T) {
	plans := PlacementPlans(lastExample(t))
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
	for _, tc := range []struct {
		p     PlacementPlan
		total int
		want  int
	}{
		{g, 20, 5}, {g, 6, 2}, {g, 1, 1},
		{PlacementPlan{Strategy: "All"}, 20, 0},
		{PlacementPlan{Strategy: "ProgressivePerGroup"}, 20, 0},
		{PlacementPlan{Strategy: "Progressive"}, 20, 0}, // no maxConcurrency: all at once
	} {
		if got := tc.p.Limit(tc.total); got != tc.want {
			t.Errorf("Limit(%+v, %d) = %d, want %d", tc.p, tc.total, got, tc.want)
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
		got, why := Rollbacks(tc.checks, tc.injected)
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
		got := tc.c.Describe()
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("Describe() = %q, want …%q…", got, w)
			}
		}
	}
}
