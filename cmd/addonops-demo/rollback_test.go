package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/addonops/addonops/internal/testing/stepcheck"
)

func TestRollbackNote(t *testing.T) {
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
