package addonrollout

import (
	"slices"
	"testing"
	"time"
)

func TestCreatedMCAs(t *testing.T) {
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	c := newCreatedMCAs()
	c.add("a", "c1", now)
	c.add("a", "c2", now)
	c.add("b", "c1", now)

	got := c.notCached("a", map[string]bool{"c1": true}, now.Add(time.Second))
	if !slices.Equal(got, []string{"c2"}) {
		t.Fatalf("not cached %v, want [c2]", got)
	}
	if got := c.notCached("a", nil, now.Add(time.Second)); !slices.Equal(got, []string{"c2"}) {
		t.Fatalf("c1, once cached, must be forgotten (caches only move forward): %v", got)
	}
	c.forget("a", "c2") // its delete event
	if got := c.notCached("a", nil, now.Add(time.Second)); len(got) != 0 {
		t.Fatalf("forgotten MCA still counted: %v", got)
	}
	if got := c.notCached("b", nil, now.Add(createdTTL+time.Second)); len(got) != 0 {
		t.Fatalf("expired MCA still counted: %v", got)
	}
}
