package main

import (
	"encoding/json"
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
