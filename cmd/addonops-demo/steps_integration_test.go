//go:build integration

package main

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/maintwindow"
	"github.com/addonops/addonops/internal/notify"
	"github.com/addonops/addonops/internal/render"
	"github.com/addonops/addonops/internal/spechash"
	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/stepcheck"
	"github.com/addonops/addonops/internal/verification"
)

// renderSteps renders 04-rollback and the demo's own steps as the demo does (go tool kustomize
// with the functions built for the tests) and plans each as Run does.
func renderSteps(t *testing.T) map[string]step {
	t.Helper()
	root, err := localhub.RepoRoot("")
	if err != nil {
		t.Fatal(err)
	}
	o := Options{RepoRoot: root, ToolDirs: []string{toolDir}}
	if err := o.complete(); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 4, 10, 30, 20, 0, time.UTC)
	out := map[string]step{}
	var prev *step
	for _, name := range []string{"04-rollback", "05-pause-resume", "06-gates", "07-bad-version", "08-revert"} {
		dir, err := o.stepDir(name)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := buildStep(context.Background(), root, dir, toolEnv(o.ToolDirs))
		if err != nil {
			t.Fatalf("rendering %s: %v", name, err)
		}
		st := step{Name: name, Dir: dir, Objects: objs, Kind: kindOf(name)}
		if st.Kind != stepExample {
			if err := planDemoStep(&st, prev, "http://127.0.0.1:1234/verify", now); err != nil {
				t.Fatalf("planning %s: %v", name, err)
			}
		}
		out[name] = st
		prev = &st
	}
	return out
}

// configOf is the step's AddOnDeploymentConfig, checked to be named after its content as
// config-hash names it.
func configOf(t *testing.T, st step, version string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range st.Objects {
		if o.GroupVersionKind().GroupKind() == adcGK {
			hash, _ := spechash.Of(o.Object)
			suffix, _ := spechash.Suffix(hash)
			if agentVersion(o) != version || o.GetName() != "helloworld-config-"+suffix {
				t.Errorf("%s: config %s at %s, want helloworld-config-%s at %s", st.Name, o.GetName(), agentVersion(o), suffix, version)
			}
			return o
		}
	}
	t.Fatalf("%s: no AddOnDeploymentConfig", st.Name)
	return nil
}

func TestPauseResumeStep(t *testing.T) {
	st := renderSteps(t)["05-pause-resume"]
	adc := configOf(t, st, "v0.12.1")
	want := pausePlan{Addon: "helloworld", Placement: canary.PlacementKey{Namespace: "default", Name: "global-placement"},
		Config: "default/" + adc.GetName(), Version: "v0.12.1"}
	if st.Kind != stepPauseResume || st.Pause == nil || *st.Pause != want {
		t.Fatalf("step %s (kind %d, plan %+v), want a pause plan %+v", st.Name, st.Kind, st.Pause, want)
	}
	// Only the version changes: the strategy and the canary stay as in the last step.
	for _, p := range stepcheck.PlacementPlans(st.Objects) {
		if p.Config != want.Config || p.Strategy != "Progressive" {
			t.Errorf("placement %s: %+v, want the new config, Progressive", p.Key, p)
		}
	}
	notes := strings.Join(st.Notes, "\n")
	for _, s := range []string{"v0.10.0 -> v0.12.1", "steps/05-pause-resume", "addonops pause helloworld --placement default/global-placement", "addonops resume"} {
		if !strings.Contains(notes, s) {
			t.Errorf("notes %q do not say %q", notes, s)
		}
	}
}

func TestGatesStep(t *testing.T) {
	st := renderSteps(t)["06-gates"]
	adc := configOf(t, st, "v0.12.2")
	p := st.Gates
	if st.Kind != stepGates || p == nil || p.Addon != "helloworld" || p.Gated != (canary.PlacementKey{Namespace: "default", Name: "global-placement"}) ||
		p.Canary != "default/canary-placement" || p.Version != "v0.12.2" || p.Config != "default/"+adc.GetName() {
		t.Fatalf("step %s (kind %d) plan %+v; want helloworld's global-placement gated by canary-placement, the new config", st.Name, st.Kind, p)
	}
	var tmpl, cma *unstructured.Unstructured
	for _, o := range st.Objects {
		switch o.GetKind() {
		case "AnalysisTemplate":
			tmpl = o
		case "ClusterManagementAddOn":
			cma = o
		}
	}
	if tmpl == nil || cma == nil {
		t.Fatalf("objects without an AnalysisTemplate or a ClusterManagementAddOn")
	}
	metrics, _, _ := unstructured.NestedSlice(tmpl.Object, "spec", "metrics")
	if url, _, _ := unstructured.NestedString(metrics[0].(map[string]any), "provider", "web", "url"); tmpl.GetName() != "smoke-tests" ||
		url != "http://127.0.0.1:1234/verify?version={{args.version}}" {
		t.Errorf("AnalysisTemplate %s POSTs to %s: want smoke-tests POSTing to the receiver", tmpl.GetName(), url)
	}
	ann := cma.GetAnnotations()
	if refs, err := verification.Parse(ann); err != nil || len(refs) != 1 {
		t.Errorf("verification annotation %q: %v, %v; want one reference for every placement", ann[verification.Annotation], refs, err)
	}
	ws, err := maintwindow.Parse(ann)
	if err != nil || len(ws) != 1 {
		t.Fatalf("windows %q: %v", ann[maintwindow.Annotation], err)
	}
	now := time.Date(2026, 3, 4, 10, 30, 20, 0, time.UTC)
	if ws.For(p.Gated, false).Open(now) || !ws.For(p.Gated, false).Open(now.Add(2*time.Hour)) {
		t.Errorf("the window on %s is not in force at %s, or still 2h later", p.Gated, now)
	}
	if len(ws.For(canary.PlacementKey{Namespace: "default", Name: "canary-placement"}, false)) != 0 {
		t.Errorf("the window applies to the canary placement too")
	}
	var subscribed []string
	for k := range ann {
		if tr, ok := strings.CutPrefix(k, "notifications.argoproj.io/subscribe."); ok {
			subscribed = append(subscribed, strings.TrimSuffix(tr, ".webhook"))
		}
	}
	slices.Sort(subscribed)
	if !slices.Equal(subscribed, notify.Triggers()) {
		t.Errorf("subscriptions %v, want every trigger with the webhook service: %v", subscribed, notify.Triggers())
	}
}

func TestBadVersionSteps(t *testing.T) {
	steps := renderSteps(t)
	gates, bad, revert := steps["06-gates"], steps["07-bad-version"], steps["08-revert"]
	if bad.Kind != stepBadVersion || revert.Kind != stepRevert {
		t.Errorf("kinds %d, %d; want the bad version and its revert", bad.Kind, revert.Kind)
	}
	badADC := configOf(t, bad, "v0.13.0-bad")
	configOf(t, revert, "v0.12.2")
	wantRevert, _ := render.YAMLStream(gates.Objects)
	if got, _ := render.YAMLStream(revert.Objects); !bytes.Equal(got, wantRevert) {
		t.Errorf("the revert does not render 06-gates' output again")
	}
	for _, p := range stepcheck.PlacementPlans(bad.Objects) {
		if p.Config != "default/"+badADC.GetName() {
			t.Errorf("placement %s rolls out %s, want the bad config %s", p.Key, p.Config, badADC.GetName())
		}
	}
	for _, o := range bad.Objects {
		if o.GroupVersionKind() != cmaGVK {
			continue
		}
		placements, _, _ := unstructured.NestedSlice(o.Object, "spec", "installStrategy", "placements")
		for _, raw := range placements {
			if d, _, _ := unstructured.NestedString(raw.(map[string]any), "rolloutStrategy", "progressive", "progressDeadline"); d != "20s" {
				t.Errorf("placement %v progressDeadline %q, want 20s", raw.(map[string]any)["name"], d)
			}
		}
	}
	for name, want := range map[string]string{"07-bad-version": "v0.12.2 -> v0.13.0-bad", "08-revert": "v0.13.0-bad -> v0.12.2"} {
		if notes := strings.Join(steps[name].Notes, "\n"); !strings.Contains(notes, want) || !strings.Contains(notes, filepath.Join("steps", name)) {
			t.Errorf("%s notes %q do not say %q and the folder", name, notes, want)
		}
	}
}
