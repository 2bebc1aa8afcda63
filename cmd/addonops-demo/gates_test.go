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
