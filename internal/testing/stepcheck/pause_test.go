package stepcheck

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestExpectPauseResume(t *testing.T) {
	s := time.Second
	good := PauseResult{Placement: "default/global", Version: "v2", Clusters: 4, WrittenAt: 1 * s, PausedAt: 2 * s, ResumedAt: 7 * s,
		ToldAtPause: []string{"c3"}, InFlightAtPause: 1, Held: 3, DoneAtResume: 1, ReasonAtResume: "Paused",
		Told: []ToldAt{{"c3", s}, {"c4", 8 * s}, {"c5", 8 * s}, {"c6", 9 * s}}}
	with := func(f func(p *PauseResult)) *PauseResult {
		p := good
		p.Told, p.ToldAtPause = slices.Clone(good.Told), slices.Clone(good.ToldAtPause)
		f(&p)
		return &p
	}
	injected := map[string]bool{"c6": true}
	for _, tc := range []struct {
		name     string
		r        Result
		failed   []string
		injected map[string]bool
		p        *PauseResult
		ok       bool
		why      string
	}{
		{"paused, held, resumed", Succeeded, nil, nil, &good, true, ""},
		{"the rollout failed", Failed, []string{"c4"}, nil, &good, false, "should not have"},
		{"no pause ran", Succeeded, nil, nil, nil, false, "did not run"},
		{"a cluster told while paused", Succeeded, nil, nil, with(func(p *PauseResult) { p.ToldDuring = []string{"c4"} }), false, "while default/global was paused: c4"},
		{"a cluster told before the resume", Succeeded, nil, nil, with(func(p *PauseResult) { p.Told[1].At = 5 * s }), false, "before the resume"},
		{"too late to hold anything", Succeeded, nil, nil, with(func(p *PauseResult) { p.Held = 0 }), false, "held no cluster"},
		{"not Paused at the resume", Succeeded, nil, nil, with(func(p *PauseResult) { p.ReasonAtResume = "Upgrading" }), false, "want Paused"},
		{"in flight did not finish", Succeeded, nil, nil, with(func(p *PauseResult) { p.DoneAtResume = 0 }), false, "in flight"},
		{"a problem", Succeeded, nil, nil, with(func(p *PauseResult) { p.Problem = "the rollout ended first" }), false, "ended first"},
		{"injected failures, no pause came to pass", Failed, []string{"c6"}, injected, with(func(p *PauseResult) { p.Problem = "x"; p.Held = 0 }), true, ""},
		{"injected failures still start no cluster while paused", Failed, []string{"c6"}, injected,
			with(func(p *PauseResult) { p.ToldDuring = []string{"c4"} }), false, "while default/global was paused"},
	} {
		ok, why := PauseResume(tc.r, tc.failed, tc.injected, tc.p)
		if ok != tc.ok || !strings.Contains(why, tc.why) {
			t.Errorf("%s: (%v, %q), want (%v, …%q…)", tc.name, ok, why, tc.ok, tc.why)
		}
	}
	if d := DescribePause(&good); !strings.Contains(d, "paused default/global at 2.0s after its first batch (1 of 4 clusters told v2)") ||
		!strings.Contains(d, "no cluster was told it during the pause") || !strings.Contains(d, "resumed at 7.0s (5.0s paused)") {
		t.Errorf("DescribePause: %s", d)
	}
}
