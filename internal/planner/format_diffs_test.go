package planner

import (
	"strings"
	"testing"
)

func TestWithDiffSizes(t *testing.T) {
	rep := &Report{SchemaVersion: SchemaVersion, State: State{Source: "hub https://127.0.0.1:1", TakenAt: "2026-03-01T10:00:00Z"}}
	a := AddonPlan{Addon: "hello", Changed: true,
		Configs: []ConfigChange{{Config: "addondeploymentconfigs.addon.open-cluster-management.io default/cfg-v2", Action: "edit", Diff: "--- a\n+++ b\n@@ -1 +1 @@\n-  v: 1\n+  v: 2\n"}}}
	a.Placements = []PlacementPlan{{Placement: "default/main", Change: ChangeUpgrade, Strategy: Strategy{Type: "All", HealthSoak: "2s"},
		Manifests: []ManifestDiff{{Clusters: []string{"c1", "c2"}, Diff: "--- runs\n+++ target\n-image: a:1\n+image: a:2\n"}, {Clusters: []string{"c3"}}}}}
	rep.Addons = []AddonPlan{a}

	var b strings.Builder
	if err := rep.WithDiffSizes().Write(&b, FormatText); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{"    (a diff of 5 lines)", "    manifests of c1, c2: changed", "      (a diff of 4 lines)"} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("plan with diff sizes lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "image: a:2") || strings.Contains(text, "v: 2") || strings.Contains(text, "a diff of 0 lines") {
		t.Errorf("a diff is printed whole, or an empty one as a size:\n%s", text)
	}
	if rep.Addons[0].Configs[0].Diff == "" || !strings.Contains(rep.Addons[0].Placements[0].Manifests[0].Diff, "image: a:2") {
		t.Error("WithDiffSizes changed the report it was given")
	}
}
