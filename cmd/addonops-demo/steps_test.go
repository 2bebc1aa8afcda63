package main

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/maintwindow"
)

func TestKindOf(t *testing.T) {
	for name, want := range map[string]stepKind{
		"01-fresh-install": stepExample, "04-rollback": stepExample, "05-pause-resume": stepPauseResume, "06-gates": stepGates,
		"07-bad-version": stepBadVersion, "08-revert": stepRevert, "09-gates-later": stepExample,
	} {
		if got := kindOf(name); got != want {
			t.Errorf("kindOf(%s) = %d, want %d", name, got, want)
		}
	}
}

func TestSetRunTimeValues(t *testing.T) {
	tmpl := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "AnalysisTemplate",
		"metadata": map[string]any{"name": "smoke-tests", "namespace": "default"},
		"spec": map[string]any{"metrics": []any{map[string]any{"name": "smoke-tests", "provider": map[string]any{"web": map[string]any{
			"url": "https://ci.example.com/verify?version={{args.version}}", "method": "POST"}}}}}}}
	cma := &unstructured.Unstructured{Object: map[string]any{"apiVersion": cmaGVK.GroupVersion().String(), "kind": "ClusterManagementAddOn",
		"metadata": map[string]any{"name": "helloworld", "annotations": map[string]any{maintwindow.Annotation: `[{"kind": "deny", "schedule": "0 0 * * *", "duration": "2h", "timeZone": "Europe/Berlin", "placements": ["default/global-placement"]}, {"kind": "allow", "schedule": "0 1 * * *", "duration": "23h"}]`}}}}
	now := time.Date(2026, 3, 4, 10, 30, 20, 0, time.UTC)
	notes, err := setRunTimeValues([]*unstructured.Unstructured{tmpl, cma}, "http://127.0.0.1:1234/verify", now)
	if err != nil {
		t.Fatal(err)
	}
	web, _, _ := unstructured.NestedSlice(tmpl.Object, "spec", "metrics")
	if got := web[0].(map[string]any)["provider"].(map[string]any)["web"].(map[string]any)["url"]; got != "http://127.0.0.1:1234/verify?version={{args.version}}" {
		t.Errorf("url %v, want the receiver's scheme and host with the template's path and query", got)
	}
	ws, err := maintwindow.Parse(cma.GetAnnotations())
	if err != nil || len(ws) != 2 {
		t.Fatalf("windows %q: %v", cma.GetAnnotations()[maintwindow.Annotation], err)
	}
	if ws[0].Schedule != "29 10 * * *" || ws[0].TimeZone != "" || ws[1].Schedule != "0 1 * * *" {
		t.Errorf("windows %+v, want the deny window from 10:29 UTC, the allow window as it was", ws)
	}
	gated := canary.PlacementKey{Namespace: "default", Name: "global-placement"}
	if ws.For(gated, false)[:1].Open(now) {
		t.Errorf("the deny window is not in force at %s", now)
	}
	if len(notes) != 2 || !strings.Contains(notes[0], "POST http://127.0.0.1:1234/verify") || !strings.Contains(notes[1], "starts at 10:29 UTC") {
		t.Errorf("notes %q, want one per change", notes)
	}
	if _, err := setRunTimeValues([]*unstructured.Unstructured{tmpl}, "::", now); err == nil {
		t.Error("a receiver URL that does not parse: no error")
	}
}

// A demo step must roll out one AddOnDeploymentConfig with an AGENT_VERSION: the error names the
// step and what it found.
func TestDeployedConfig(t *testing.T) {
	objs := lastExample(t).Objects
	if config, version, err := deployedConfig("04-rollback", objs); err != nil || !strings.HasPrefix(config, "default/helloworld-config-") || version != "v0.10.0" {
		t.Errorf("deployedConfig(04-rollback) = %s, %s, %v", config, version, err)
	}
	var none []*unstructured.Unstructured
	for _, o := range objs {
		if o.GroupVersionKind().GroupKind() != adcGK {
			none = append(none, o)
		}
	}
	if _, _, err := deployedConfig("09-mine", none); err == nil || !strings.Contains(err.Error(), "step 09-mine: want one AddOnDeploymentConfig with AGENT_VERSION, found 0") {
		t.Errorf("no config: %v, want an error naming the step", err)
	}
}
