package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/addonops/addonops/internal/verification"
)

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
	var verdict struct{ Verdict string }
	if err := json.Unmarshal(answer, &verdict); err != nil || verdict.Verdict != "pass" {
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
