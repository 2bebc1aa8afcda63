package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/addonops/addonops/internal/planner"
)

func TestCondensePlan(t *testing.T) {
	rep := &planner.Report{SchemaVersion: planner.SchemaVersion, State: planner.State{Source: "hub https://127.0.0.1:1", TakenAt: "2026-03-01T10:00:00Z"}}
	a := planner.AddonPlan{Addon: "hello", Changed: true,
		Configs: []planner.ConfigChange{{Config: "addondeploymentconfigs.addon.open-cluster-management.io default/cfg-v2", Action: "edit", Diff: "--- a\n+++ b\n@@ -1 +1 @@\n-  v: 1\n+  v: 2\n"}}}
	p := planner.PlacementPlan{Placement: "default/main", Change: planner.ChangeUpgrade, Strategy: planner.Strategy{Type: "All", HealthSoak: "2s"},
		Manifests: []planner.ManifestDiff{{Clusters: []string{"c1", "c2"}, Diff: "--- runs\n+++ target\n-image: a:1\n+image: a:2\n"}}}
	a.Placements = []planner.PlacementPlan{p}
	rep.Addons = []planner.AddonPlan{a}

	lines, err := condensePlan(rep, 40)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(lines, "\n")
	for _, want := range []string{"    (a diff of 5 lines)", "    manifests of c1, c2: changed", "      (a diff of 4 lines)"} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("condensed plan lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "image: a:2") || strings.Contains(text, "v: 2") {
		t.Errorf("a diff is printed whole:\n%s", text)
	}
	if rep.Addons[0].Configs[0].Diff == "" || !strings.Contains(rep.Addons[0].Placements[0].Manifests[0].Diff, "image: a:2") {
		t.Error("condensePlan changed the report it was given")
	}

	// Many placements: cut after the maximum, saying how much is left out.
	for i := range 20 {
		q := p
		q.Placement = fmt.Sprintf("default/p%d", i)
		rep.Addons[0].Placements = append(rep.Addons[0].Placements, q)
	}
	lines, err = condensePlan(rep, 40)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 41 || !strings.HasPrefix(lines[40], "... ") || !strings.HasSuffix(lines[40], " more line(s): `addonops plan` prints them all") {
		t.Fatalf("%d lines, the last %q", len(lines), lines[len(lines)-1])
	}
}
