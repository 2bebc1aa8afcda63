package planner

import (
	"bytes"
	"strings"
	"testing"
)

// An add-on on the hub that the manifests lack is left as is without --prune, and planned as a
// removal with it: its placements' clusters lose the agent at once, an MCA its CMA does not own
// stays, and the hub the plan leaves has neither the CMA nor the MCAs it owned.
func TestPruneRemovesAnAddonTheManifestsLack(t *testing.T) {
	main := placementSpec{name: "main", strategy: `{type: Progressive, progressive: {maxConcurrency: 1}}`, groups: [][]string{{"c1", "c2", "c3"}}}
	// c3's MCA was created by hand: no owner reference to the CMA, no created-by label.
	manual := `{apiVersion: addon.open-cluster-management.io/v1alpha1, kind: ManagedClusterAddOn, metadata: {namespace: c3, name: hello}, spec: {}}`
	base := snapshotOf(t, append(hubObjects(main), cma(soak0, "cfg-v1", main), adc("cfg-v1", "1"), manual)...)
	_, s1 := step(t, base, cma(soak0, "cfg-v1", main))
	world := strings.NewReplacer("name: hello, uid: uid-hello", "name: world").Replace(cma(soak0, "cfg-v1", main))

	for _, prune := range []bool{false, true} {
		rep, h, err := plan(s1, manifests(t, world), Options{Now: t0, Source: "test", Prune: prune})
		if err != nil {
			t.Fatal(err)
		}
		var text, md bytes.Buffer
		if err := rep.Write(&text, FormatText); err != nil {
			t.Fatal(err)
		}
		if err := rep.Write(&md, FormatMarkdown); err != nil {
			t.Fatal(err)
		}
		if len(rep.Addons) != 2 || rep.Addons[0].Addon != "hello" || rep.Addons[1].Addon != "world" {
			t.Fatalf("prune %t: add-ons %+v", prune, rep.Addons)
		}
		if w := rep.Addons[1].Placements[0]; w.Change != ChangeInstall || batches(w) != "c1 | c2 | c3" || !w.Completes {
			t.Fatalf("prune %t: world's placement %+v", prune, w)
		}
		hello := rep.Addons[0]
		if !prune {
			if !hello.NotInManifests || hello.Removal || hello.Changed || h.cmas["hello"] == nil {
				t.Fatalf("without --prune: %+v\n%s", hello, text.String())
			}
			for _, out := range []string{text.String(), md.String()} {
				if !strings.Contains(out, "hello: not in the manifests, left as is (--prune plans its removal)") && !strings.Contains(out, "| hello | | not in the manifests, left as is") {
					t.Errorf("without --prune, the output does not say hello is left as is:\n%s", out)
				}
			}
			continue
		}
		if !hello.Removal || hello.NotInManifests || !hello.Changed || strings.Join(hello.LoseAgent, ",") != "c1,c2" {
			t.Fatalf("with --prune: %+v\n%s", hello, text.String())
		}
		p := hello.Placements[0]
		if p.Placement != "default/main" || p.Change != ChangeRemoval || strings.Join(p.LoseAgent, ",") != "c1,c2" || p.FromVersion == "" {
			t.Fatalf("with --prune, placement %+v", p)
		}
		warnings := strings.Join(hello.Warnings, "\n")
		if !strings.Contains(warnings, "deletes its ClusterManagementAddOn: 2 cluster(s) lose the agent at once") || !strings.Contains(warnings, "not owned by its ClusterManagementAddOn and stay") || !strings.Contains(warnings, ": c3") {
			t.Fatalf("with --prune, warnings %q", hello.Warnings)
		}
		for _, out := range []string{text.String(), md.String()} {
			if !strings.Contains(out, "the add-on is deleted: 2 cluster(s) of the placement lose the agent at once: c1, c2") {
				t.Errorf("with --prune, the output does not list the clusters losing the agent:\n%s", out)
			}
		}
		if !strings.Contains(text.String(), "Add-on hello: removed (--prune: not in the manifests)") {
			t.Errorf("text:\n%s", text.String())
		}
		if h.cmas["hello"] != nil || h.mcas["hello"]["c1"] != nil || h.mcas["hello"]["c3"] == nil || len(h.addonWorks("c1", "hello")) != 0 {
			t.Fatalf("the hub after the removal keeps CMA %v, c1's MCA %v, c1's works %d; or lost c3's MCA", h.cmas["hello"] != nil, h.mcas["hello"]["c1"] != nil, len(h.addonWorks("c1", "hello")))
		}
	}
}
