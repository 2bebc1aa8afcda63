package planner

import (
	"bytes"
	"strings"
	"testing"
)

// A canary whose clusters failed the version the change keeps stays failed in the plan (the
// controller tells a failed cluster the same version again only on a retry): the gated placement
// moves no cluster, ends waiting for its canary, and the plan warns that the canary does not pass.
// A new version is told to the failed clusters and goes on.
func TestFailedCanaryStaysFailed(t *testing.T) {
	canary := placementSpec{name: "canary", strategy: `{type: All}`, groups: [][]string{{"c1"}}}
	main := placementSpec{name: "main", strategy: `{type: All}`, groups: [][]string{{"c2", "c3"}}}
	ann := soak0 + `, addonops.io/canary-placements: '{"default/main": "default/canary"}'`
	base := snapshotOf(t, append(hubObjects(canary, main), cma(ann, "cfg-v1", canary, main), adc("cfg-v1", "1"))...)
	_, s1 := step(t, base)

	// v2 fails on the canary's cluster: the rollout stops there.
	rep, h, err := plan(s1, manifests(t, cma(ann, "cfg-v2", canary, main), adc("cfg-v2", "2")), Options{Now: s1.TakenAt.Time, Source: "test", failing: map[string]bool{"c1": true}})
	if err != nil {
		t.Fatal(err)
	}
	if c, m := placementOf(t, rep, "default/canary"), placementOf(t, rep, "default/main"); batches(c) != "c1" || c.Completes || len(m.Batches) != 0 {
		t.Fatalf("v2 failing on c1: canary %s (completes %t), main %s", batches(c), c.Completes, batches(m))
	}
	s2, err := h.snapshot(s1.HistoryNamespace, nil)
	if err != nil {
		t.Fatal(err)
	}

	// A change that keeps v2 (a new placement, other, without a canary), with c1 failed on v2:
	// other installs, the canary and main do not move.
	other := placementSpec{name: "other", strategy: `{type: All}`, groups: [][]string{{"c4"}}}
	s2.Objects = append(s2.Objects, objectsFrom(t, hubObjects(other))...)
	rep, _ = step(t, s2, cma(ann, "cfg-v2", canary, main, other), adc("cfg-v2", "2"))
	expect(t, rep, "default/other", ChangeInstall, "c4")
	c, m := placementOf(t, rep, "default/canary"), placementOf(t, rep, "default/main")
	var buf bytes.Buffer
	_ = rep.Write(&buf, FormatText)
	if len(c.Batches) != 0 || c.Completes || len(m.Batches) != 0 || m.Completes || m.Outcome != "WaitingForCanary" {
		t.Fatalf("with c1 failed on v2: canary %s, main %s (%s)\n%s", batches(c), batches(m), m.Outcome, buf.String())
	}
	if !strings.Contains(strings.Join(m.Warnings, "\n"), "the canary default/canary does not pass") ||
		!strings.Contains(strings.Join(rep.Addons[0].Warnings, "\n"), "1 cluster(s) failed their last change: c1") {
		t.Fatalf("warnings: %q, %q\n%s", m.Warnings, rep.Addons[0].Warnings, buf.String())
	}

	// A new version: c1 is told it, applies it, and main follows.
	rep, _ = step(t, s2, cma(ann, "cfg-v3", canary, main), adc("cfg-v3", "3"))
	expect(t, rep, "default/canary", ChangeUpgrade, "c1")
	expect(t, rep, "default/main", ChangeUpgrade, "c2,c3")
}

// objectsFrom decodes test objects written as YAML, as snapshotOf does.
func objectsFrom(t *testing.T, docs []string) []map[string]any {
	t.Helper()
	return snapshotOf(t, docs...).Objects
}
