package main

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/spechash"
	"github.com/addonops/addonops/internal/testing/stepcheck"
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
	for _, p := range stepcheck.PlacementPlans(st.Objects) {
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
