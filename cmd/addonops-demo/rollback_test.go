package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/addonops/addonops/internal/testing/stepcheck"
)

func TestPlacementPlans(t *testing.T) {
	plans := stepcheck.PlacementPlans(lastExample(t).Objects)
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
		p     stepcheck.PlacementPlan
		total int
		want  int
	}{
		{g, 20, 5}, {g, 6, 2}, {g, 1, 1},
		{stepcheck.PlacementPlan{Strategy: "All"}, 20, 0},
		{stepcheck.PlacementPlan{Strategy: "ProgressivePerGroup"}, 20, 0},
		{stepcheck.PlacementPlan{Strategy: "Progressive"}, 20, 0}, // no maxConcurrency: all at once
	} {
		if got := tc.p.Limit(tc.total); got != tc.want {
			t.Errorf("limit(%+v, %d) = %d, want %d", tc.p, tc.total, got, tc.want)
		}
	}
	note := rollbackNote(stepcheck.PlacementPlans(lastExample(t).Objects)[0], "01-fresh-install", "v0.10.0")
	if !strings.Contains(note, "default/global-placement goes back to v0.10.0, which the add-on ran to completion in 01-fresh-install") ||
		!strings.Contains(note, "not gated by the canary default/canary-placement, paced by maxConcurrency 25%") {
		t.Errorf("rollbackNote: %s", note)
	}
}

func TestSnapshotOwned(t *testing.T) {
	s := snapshot{Order: []string{"ns/global", "ns/canary"}, Clusters: map[string][]string{"ns/global": {"c3", "c1", "c2"}, "ns/canary": {"c1"}}}
	if got := s.owned("ns/global"); !slices.Equal(got, []string{"c2", "c3"}) {
		t.Errorf("owned(global) = %v, want [c2 c3]: the canary, listed last, owns c1", got)
	}
	if got := s.owned("ns/canary"); !slices.Equal(got, []string{"c1"}) {
		t.Errorf("owned(canary) = %v, want [c1]", got)
	}
}
