package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/spechash"
)

func TestPauseResumeStep(t *testing.T) {
	last := lastExample(t)
	st, err := pauseResumeStep(last, 5, "v9.9.9")
	if err != nil {
		t.Fatal(err)
	}
	if st.Name != "05-pause-resume" || st.Kind != stepPauseResume || st.Pause == nil {
		t.Fatalf("step %s (kind %d, plan %+v), want 05-pause-resume with a pause plan", st.Name, st.Kind, st.Pause)
	}
	var adc *unstructured.Unstructured
	for _, o := range st.Objects {
		if o.GroupVersionKind().GroupKind() == adcGK {
			adc = o
		}
	}
	hash, _ := spechash.Of(adc.Object)
	suffix, _ := spechash.Suffix(hash)
	want := pausePlan{Addon: "helloworld", Placement: canary.PlacementKey{Namespace: "default", Name: "global-placement"},
		Config: "default/helloworld-config-" + suffix, Version: "v9.9.9"}
	if *st.Pause != want || adc.GetName() != "helloworld-config-"+suffix {
		t.Errorf("plan %+v (config %s), want %+v: the gated placement, the config named after its content", *st.Pause, adc.GetName(), want)
	}
	// Only the version changes: the strategy and the canary stay as in the last step.
	for _, p := range placementPlans(st.Objects) {
		if p.Config != want.Config || p.Strategy != "Progressive" {
			t.Errorf("placement %s: %+v, want the new config, Progressive", p.Key, p)
		}
	}
	notes := strings.Join(st.Notes, "\n")
	for _, s := range []string{"v0.10.0 -> v9.9.9", "addonops pause helloworld --placement default/global-placement", "addonops resume"} {
		if !strings.Contains(notes, s) {
			t.Errorf("notes %q do not say %q", notes, s)
		}
	}
	// Without a canary the first placement that moves in batches is paused; with none, no step.
	plain := cma(map[string]any{"name": "all", "namespace": "ns", "rolloutStrategy": map[string]any{"type": "All"}},
		map[string]any{"name": "batches", "namespace": "ns", "rolloutStrategy": map[string]any{"type": "ProgressivePerGroup"}})
	if _, k, err := pauseTarget([]*unstructured.Unstructured{plain}); err != nil || k.String() != "ns/batches" {
		t.Errorf("pauseTarget without a canary: %s, %v; want ns/batches", k, err)
	}
	all := cma(map[string]any{"name": "all", "namespace": "ns", "rolloutStrategy": map[string]any{"type": "All"}})
	if _, _, err := pauseTarget([]*unstructured.Unstructured{all}); err == nil || !strings.Contains(err.Error(), "nothing to pause") {
		t.Errorf("pauseTarget of an All rollout: %v, want an error saying there is nothing to pause", err)
	}
}

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
		ok, why := expectPauseResume(tc.r, tc.failed, tc.injected, tc.p)
		if ok != tc.ok || !strings.Contains(why, tc.why) {
			t.Errorf("%s: (%v, %q), want (%v, …%q…)", tc.name, ok, why, tc.ok, tc.why)
		}
	}
	if d := describePause(&good); !strings.Contains(d, "paused default/global at 2.0s after its first batch (1 of 4 clusters told v2)") ||
		!strings.Contains(d, "no cluster was told it during the pause") || !strings.Contains(d, "resumed at 7.0s (5.0s paused)") {
		t.Errorf("describePause: %s", d)
	}
}
