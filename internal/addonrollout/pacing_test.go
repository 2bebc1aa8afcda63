package addonrollout

import (
	"testing"
	"time"
)

// An add-on's decisions take at most about a tenth of the time while its MCAs change: the wait
// before the next one is nine times the last one's, never below the floor nor above MaxSpacing.
func TestSpacing(t *testing.T) {
	for _, tc := range []struct {
		floor, last, want time.Duration
	}{
		{250 * time.Millisecond, 0, 250 * time.Millisecond},                      // no decision yet
		{250 * time.Millisecond, 2 * time.Millisecond, 250 * time.Millisecond},   // a small fleet
		{250 * time.Millisecond, 100 * time.Millisecond, 900 * time.Millisecond}, // thousands of clusters
		{250 * time.Millisecond, 1 * time.Second, MaxSpacing},                    // bounded
		{5 * time.Second, 1 * time.Second, 5 * time.Second},                      // a longer floor stays
		{0, 10 * time.Millisecond, 90 * time.Millisecond},
		{0, 0, 0}, // the install reconciler's first decision: at once
	} {
		if got := Spacing(tc.floor, tc.last); got != tc.want {
			t.Errorf("Spacing(%s, %s) = %s, want %s", tc.floor, tc.last, got, tc.want)
		}
	}
}

// A pacer keeps each add-on's last decision apart, and forgets a deleted add-on.
func TestPacer(t *testing.T) {
	p := NewPacer(50 * time.Millisecond)
	if got := p.Wait("a"); got != 50*time.Millisecond {
		t.Fatalf("Wait before any decision = %s, want the floor 50ms", got)
	}
	p.Took("a", 100*time.Millisecond)
	p.Took("b", time.Millisecond)
	if got := p.Wait("a"); got != 900*time.Millisecond {
		t.Errorf("Wait(a) = %s, want 900ms", got)
	}
	if got := p.Wait("b"); got != 50*time.Millisecond {
		t.Errorf("Wait(b) = %s, want the floor 50ms", got)
	}
	p.Forget("a")
	if got := p.Wait("a"); got != 50*time.Millisecond {
		t.Errorf("Wait(a) after Forget = %s, want the floor 50ms", got)
	}
}
