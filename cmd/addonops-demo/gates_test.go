package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/maintwindow"
	"github.com/addonops/addonops/internal/notify"
	"github.com/addonops/addonops/internal/verification"
)

func TestGatesStep(t *testing.T) {
	last := lastExample(t)
	now := time.Date(2026, 3, 4, 10, 30, 20, 0, time.UTC)
	st, err := gatesStep(last, 6, "v9.9.9", "http://127.0.0.1:1234/verify", now)
	if err != nil {
		t.Fatal(err)
	}
	if st.Name != "06-gates" || st.Kind != stepGates || st.Gates == nil {
		t.Fatalf("step %s (kind %d, plan %+v), want 06-gates with a gates plan", st.Name, st.Kind, st.Gates)
	}
	p := st.Gates
	if p.Addon != "helloworld" || p.Gated != (canary.PlacementKey{Namespace: "default", Name: "global-placement"}) ||
		p.Canary != "default/canary-placement" || p.Version != "v9.9.9" || !strings.HasPrefix(p.Config, "default/helloworld-config-") ||
		p.Schedule != "29 10 * * *" {
		t.Errorf("plan %+v; want helloworld's global-placement gated by canary-placement, the new config, a window from 10:29 UTC", *p)
	}
	var tmpl, cmaObj map[string]any
	for _, o := range st.Objects {
		switch o.GetKind() {
		case "AnalysisTemplate":
			tmpl = o.Object
		case "ClusterManagementAddOn":
			cmaObj = o.Object
		}
	}
	if tmpl == nil || cmaObj == nil {
		t.Fatalf("objects without an AnalysisTemplate or a ClusterManagementAddOn")
	}
	b, _ := json.Marshal(tmpl)
	if !strings.Contains(string(b), `"url":"http://127.0.0.1:1234/verify?version={{args.version}}"`) || !strings.Contains(string(b), `"name":"smoke-tests"`) {
		t.Errorf("AnalysisTemplate %s: want smoke-tests POSTing to the receiver", b)
	}
	ann := map[string]string{}
	for k, v := range cmaObj["metadata"].(map[string]any)["annotations"].(map[string]any) {
		ann[k] = v.(string)
	}
	if refs, err := verification.Parse(ann); err != nil || len(refs) != 1 {
		t.Errorf("verification annotation %q: %v, %v; want one reference for every placement", ann[verification.Annotation], refs, err)
	}
	ws, err := maintwindow.Parse(ann)
	if err != nil || len(ws) != 1 {
		t.Fatalf("windows %q: %v", ann[maintwindow.Annotation], err)
	}
	gated := canary.PlacementKey{Namespace: "default", Name: "global-placement"}
	if ws.For(gated, false).Open(now) || !ws.For(gated, false).Open(now.Add(windowDuration)) {
		t.Errorf("the window on %s is not in force at %s, or still at its end", gated, now)
	}
	if len(ws.For(canary.PlacementKey{Namespace: "default", Name: "canary-placement"}, false)) != 0 {
		t.Errorf("the window applies to the canary placement too")
	}
	for _, tr := range notify.Triggers() {
		if _, ok := ann["notifications.argoproj.io/subscribe."+tr+".webhook"]; !ok {
			t.Errorf("no subscription to %s", tr)
		}
	}
}

func TestExpectGates(t *testing.T) {
	s := time.Second
	good := func() *GatesResult {
		return &GatesResult{Version: "v2", VersionID: "abc", Gated: "d/global", Canary: "d/canary",
			Clusters: map[string][]string{"d/canary": {"c1"}, "d/global": {"c2", "c3"}},
			Decided:  map[string][]string{"d/canary": {"c1"}, "d/global": {"c1", "c2", "c3"}},
			Batches: []GateBatch{{Placement: "d/canary", Index: 1, Version: "abc", Clusters: []string{"c1"}, Arrived: 2 * s, Answered: 3 * s, Verdict: "pass"},
				{Placement: "d/global", Index: 1, Version: "abc", Clusters: []string{"c2"}, Arrived: 12 * s, Answered: 13 * s, Verdict: "pass"},
				{Placement: "d/global", Index: 2, Version: "abc", Clusters: []string{"c3"}, Arrived: 16 * s, Answered: 17 * s, Verdict: "pass"}},
			Told:     map[string]map[string]time.Duration{"d/canary": {"c1": s}, "d/global": {"c2": 10 * s, "c3": 14 * s}},
			WindowAt: 4 * s, OverrideAt: 9 * s, WindowMessage: "waiting for a maintenance window: ...; the next window opens at 2026-03-04T12:29:00Z (in 2h)",
			Notifications: []Notification{
				{Trigger: notify.OnRolloutStarted, Placement: "d/canary", VersionID: "abc", Clusters: []string{"c1"}},
				{Trigger: notify.OnRolloutCompleted, Placement: "d/canary", VersionID: "abc", Clusters: []string{"c1"}},
				{Trigger: notify.OnCanaryPassed, Placement: "d/global", VersionID: "abc", Clusters: []string{"c1", "c2", "c3"}},
				{Trigger: notify.OnRolloutStarted, Placement: "d/global", VersionID: "abc", Clusters: []string{"c2", "c3"}},
				{Trigger: notify.OnRolloutCompleted, Placement: "d/global", VersionID: "abc", Clusters: []string{"c2", "c3"}},
			}}
	}
	with := func(f func(g *GatesResult)) *GatesResult {
		g := good()
		f(g)
		return g
	}
	for _, tc := range []struct {
		name string
		r    Result
		g    *GatesResult
		ok   bool
		why  string
	}{
		{"gated, held, overridden, notified", Succeeded, good(), true, ""},
		{"the rollout failed", Failed, good(), false, "failed although"},
		{"no gates", Succeeded, nil, false, "did not run"},
		{"a batch started before the verdict", Succeeded, with(func(g *GatesResult) { g.Told["d/global"]["c3"] = 12 * s }), false,
			"c3 of batch 2 of d/global was told the version at 12.0s, before the verdict on batch 1 (13.0s)"},
		{"a verdict never given", Succeeded, with(func(g *GatesResult) { g.Batches[2].Verdict, g.Batches[2].Answered = "", -1 }), false, "batch 2 of d/global got no verdict"},
		{"a cluster never verified", Succeeded, with(func(g *GatesResult) { g.Batches = g.Batches[:2] }), false, "c3 of d/global was in no batch"},
		{"the window never held", Succeeded, with(func(g *GatesResult) { g.WindowAt = 0 }), false, "never waited for its maintenance window"},
		{"no opening time", Succeeded, with(func(g *GatesResult) { g.WindowMessage = "waiting" }), false, "does not say when it opens"},
		{"told through the closed window", Succeeded, with(func(g *GatesResult) { g.ToldBeforeOverride = []string{"c2"} }), false, "let clusters of d/global start: c2"},
		{"told before the override", Succeeded, with(func(g *GatesResult) { g.Told["d/global"]["c2"] = 8 * s }), false, "before the override"},
		{"no override", Succeeded, with(func(g *GatesResult) { g.OverrideAt = 0 }), false, "override-window` did not run"},
		{"a notification missing", Succeeded, with(func(g *GatesResult) { g.Notifications = g.Notifications[:4] }), false,
			"notifications not received: on-rollout-completed d/global"},
		{"a notification twice", Succeeded, with(func(g *GatesResult) { g.Notifications = append(g.Notifications, g.Notifications[0]) }), false, "received twice"},
		{"a notification without a cluster", Succeeded, with(func(g *GatesResult) { g.Notifications[3].Clusters = []string{"c2"} }), false, "does not name c3"},
		{"a problem", Succeeded, with(func(g *GatesResult) { g.Problem = "boom" }), false, "boom"},
		{"injected failures: the window still holds", Failed, with(func(g *GatesResult) { g.ToldBeforeOverride = []string{"c2"} }), false, "let clusters"},
	} {
		var failed []string
		var injected map[string]bool
		if strings.HasPrefix(tc.name, "injected") {
			failed, injected = []string{"c3"}, map[string]bool{"c3": true}
		}
		ok, why := expectGates(tc.r, failed, injected, tc.g)
		if ok != tc.ok || !strings.Contains(why, tc.why) {
			t.Errorf("%s: (%v, %q), want (%v, …%q…)", tc.name, ok, why, tc.ok, tc.why)
		}
	}
	d := describeGates(good())
	for _, want := range []string{"webhook gate: 3 batches verified (d/canary 1 batch, d/global 2 batches)", "the deny window held d/global from 4.0s, overridden at 9.0s",
		"5 notifications received (on-canary-passed x1, on-rollout-completed x2, on-rollout-started x2)"} {
		if !strings.Contains(d, want) {
			t.Errorf("describeGates: %s; want %q", d, want)
		}
	}
}

// The receivers' lines, as the step prints them: the batch when it arrives, its verdict once given
// (at --speed 100 the verdict takes minVerdictDelay), each notification.
func TestGateServersLines(t *testing.T) {
	g := startGateServers(100)
	defer g.close()
	b, _ := json.Marshal(verification.Batch{Addon: "helloworld", Placement: "default/global-placement", Version: "abc", Index: 2, Clusters: []string{"c1", "c2"}})
	resp, err := http.Post(g.gate.URL+"/verify", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(answer), `"verdict": "pass"`) {
		t.Errorf("the gate answered %s, want pass", answer)
	}
	n := `{"trigger": "on-rollout-completed", "addon": "helloworld", "placement": "default/global-placement", "versionID": "abc", "kind": "Upgrade", "clusters": ["c1", "c2"]}`
	resp, err = http.Post(g.notify.URL, "application/json", strings.NewReader(n))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var out bytes.Buffer
	g.flush(newDisplay(&out, false, 0, 0))
	want := "   gate: verifying batch 2 of default/global-placement (c1, c2), version abc: the webhook got it; no new cluster starts until its verdict\n" +
		"   gate: batch 2 of default/global-placement: verdict pass (after 0.3s)\n" +
		"   notification: on-rollout-completed for helloworld on default/global-placement, version abc (Upgrade), clusters c1, c2\n"
	if out.String() != want {
		t.Errorf("printed:\n%s\nwant:\n%s", out.String(), want)
	}
	batches, notes := g.records()
	if len(batches) != 1 || batches[0].Verdict != "pass" || batches[0].Answered.Sub(batches[0].Arrived) < minVerdictDelay || len(notes) != 1 || notes[0].Trigger != "on-rollout-completed" {
		t.Errorf("records %+v, %+v; want the batch answered pass after the delay and the notification", batches, notes)
	}
}
