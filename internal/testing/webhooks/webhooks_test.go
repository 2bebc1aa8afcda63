package webhooks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/argoproj/notifications-engine/pkg/api"
	"github.com/argoproj/notifications-engine/pkg/services"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/notify"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/verification"
)

// post sends b to the gate as the controller's web provider does and returns the verdict it
// answered, or the error.
func post(url string, b verification.Batch) (string, error) {
	body, err := json.Marshal(b)
	if err != nil {
		return "", err
	}
	resp, err := http.Post(url+"/verify?version="+b.Version, "application/json", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %d: %s", resp.StatusCode, data)
	}
	var v struct{ Verdict string }
	if err := json.Unmarshal(data, &v); err != nil {
		return "", fmt.Errorf("answer %s: %w", data, err)
	}
	return v.Verdict, nil
}

type answer struct {
	verdict string
	err     error
}

// postAsync posts b and delivers the answer on the returned channel.
func postAsync(url string, b verification.Batch) <-chan answer {
	c := make(chan answer, 1)
	go func() {
		v, err := post(url, b)
		c <- answer{v, err}
	}()
	return c
}

func batch(index int, clusters ...string) verification.Batch {
	return verification.Batch{Addon: "logging", Placement: "fleet/prod", Version: "abc123", Index: index, Clusters: clusters}
}

// waitRuns waits until the gate received n runs.
func waitRuns(t *testing.T, g *GateReceiver, n int) []GateRun {
	t.Helper()
	var runs []GateRun
	harness.EventuallyTrue(t, 10*time.Second, fmt.Sprintf("%d runs received", n), func() bool {
		runs = g.Runs()
		return len(runs) >= n
	})
	return runs
}

func TestGateReceiverAnswersAndRecords(t *testing.T) {
	var mu sync.Mutex
	var events []string
	g := NewGateReceiver(GateOptions{Delay: 20 * time.Millisecond,
		OnArrive: func(r GateRun) { mu.Lock(); events = append(events, fmt.Sprintf("arrived %d", r.Index)); mu.Unlock() },
		OnAnswer: func(r GateRun) {
			mu.Lock()
			events = append(events, fmt.Sprintf("answered %d %s", r.Index, r.Verdict))
			mu.Unlock()
		}})
	defer g.Close()
	before := time.Now()
	if v, err := post(g.URL, batch(1, "c1", "c2")); err != nil || v != "pass" {
		t.Fatalf("batch 1: %q, %v; want the default verdict pass", v, err)
	}
	g.Set("fail", 0)
	if v, err := post(g.URL, batch(2, "c3")); err != nil || v != "fail" {
		t.Fatalf("batch 2: %q, %v; want fail once Set", v, err)
	}
	runs := g.Runs()
	if len(runs) != 2 {
		t.Fatalf("%d runs recorded, want 2: %+v", len(runs), runs)
	}
	r := runs[0]
	if r.Addon != "logging" || r.Placement != "fleet/prod" || r.Version != "abc123" || r.Index != 1 || !slices.Equal(r.Clusters, []string{"c1", "c2"}) {
		t.Errorf("run 1 recorded %+v, want the batch POSTed", r.Batch)
	}
	if r.Arrived.Before(before) || r.Answered.Sub(r.Arrived) < 20*time.Millisecond || r.Verdict != "pass" {
		t.Errorf("run 1: arrived %s, answered %s, verdict %q; want answered at least the delay after it arrived, pass", r.Arrived, r.Answered, r.Verdict)
	}
	if runs[1].Verdict != "fail" || runs[1].Answered.IsZero() {
		t.Errorf("run 2: %+v, want answered fail", runs[1])
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"arrived 1", "answered 1 pass", "arrived 2", "answered 2 fail"}; !slices.Equal(events, want) {
		t.Errorf("callbacks %q, want %q", events, want)
	}
}

// The answer's status is the one in force when the run arrived, written with the verdict; the
// Fields go beside the verdict and cannot replace it.
func TestGateReceiverStatusAndFields(t *testing.T) {
	fields := map[string]any{"errorRate": 0.01, "verdict": "not this"}
	g := NewGateReceiver(GateOptions{Status: http.StatusAccepted, Fields: fields})
	defer g.Close()
	fields["errorRate"] = 0.5 // the receiver keeps its own copy
	answer := func(b verification.Batch) (int, map[string]any) {
		t.Helper()
		body, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Post(g.URL, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var got map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
			t.Fatalf("batch %d: the answer is not JSON: %v", b.Index, err)
		}
		return resp.StatusCode, got
	}
	if code, got := answer(batch(1, "c1")); code != http.StatusAccepted || got["verdict"] != "pass" || got["errorRate"] != 0.01 || len(got) != 2 {
		t.Errorf("batch 1: %d %v; want 202 with verdict pass and errorRate 0.01", code, got)
	}
	g.SetStatus(http.StatusInternalServerError)
	g.Set("fail", 0)
	if code, got := answer(batch(2, "c1")); code != http.StatusInternalServerError || got["verdict"] != "fail" || got["errorRate"] != 0.01 {
		t.Errorf("batch 2: %d %v; want 500 with verdict fail and errorRate 0.01", code, got)
	}
	runs := g.Runs()
	if len(runs) != 2 || runs[0].Status != http.StatusAccepted || runs[1].Status != http.StatusInternalServerError || runs[1].Verdict != "fail" {
		t.Errorf("runs recorded %+v; want statuses 202 then 500", runs)
	}
	d := NewGateReceiver(GateOptions{})
	defer d.Close()
	if v, err := post(d.URL, batch(1, "c1")); err != nil || v != "pass" || d.Runs()[0].Status != http.StatusOK {
		t.Errorf("default receiver: %q, %v, runs %+v; want pass with status 200", v, err, d.Runs())
	}
}

func TestGateReceiverRejectsFieldsJSONCannotWrite(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "GateOptions.Fields") {
			t.Errorf("NewGateReceiver with a channel among the Fields: recovered %v, want a panic naming GateOptions.Fields", r)
		}
	}()
	g := NewGateReceiver(GateOptions{Fields: map[string]any{"bad": make(chan int)}})
	g.Close()
}

// Held batch runs wait for Release, with the verdict in force when they arrived; continuous runs
// are not held and get their own verdict.
func TestGateReceiverHoldAndContinuous(t *testing.T) {
	g := NewGateReceiver(GateOptions{Verdict: "pass"})
	defer g.Close()
	g.Hold()
	held := postAsync(g.URL, batch(1, "c1"))
	waitRuns(t, g, 1)
	// Changed after batch 1 arrived: batch 1 keeps pass.
	g.Set("fail", 0)
	g.SetContinuous("maybe")
	cont := batch(1, "c1")
	cont.Continuous = 1
	if v, err := post(g.URL, cont); err != nil || v != "maybe" {
		t.Fatalf("continuous run while batch 1 is held: %q, %v; want its own verdict, at once", v, err)
	}
	select {
	case a := <-held:
		t.Fatalf("batch 1 answered %+v while held", a)
	default:
	}
	if r := g.Runs()[0]; !r.Answered.IsZero() || r.Verdict != "" {
		t.Fatalf("batch 1 recorded as answered while held: %+v", g.Runs()[0])
	}
	g.Release()
	g.Release() // twice does nothing
	if a := <-held; a.err != nil || a.verdict != "pass" {
		t.Fatalf("batch 1 after Release: %+v; want the verdict in force when it arrived, pass", a)
	}
	if v, err := post(g.URL, batch(2, "c2")); err != nil || v != "fail" {
		t.Fatalf("batch 2 after Release: %q, %v; want fail, not held", v, err)
	}
	g.SetContinuous("")
	cont.Continuous = 2
	if v, err := post(g.URL, cont); err != nil || v != "fail" {
		t.Fatalf("continuous run 2: %q, %v; want the batch runs' verdict again", v, err)
	}
	got := g.ContinuousRuns("abc123")
	if len(got) != 2 || got[0].Continuous != 1 || got[1].Continuous != 2 {
		t.Errorf("ContinuousRuns: %+v, want runs 1 and 2", got)
	}
	if n := len(g.ContinuousRuns("other")); n != 0 {
		t.Errorf("ContinuousRuns of another version: %d runs", n)
	}
}

// Close does not wait for a held run: it gets no verdict.
func TestGateReceiverCloseGivesNoVerdict(t *testing.T) {
	g := NewGateReceiver(GateOptions{})
	g.Hold()
	held := postAsync(g.URL, batch(1, "c1"))
	waitRuns(t, g, 1)
	g.Close()
	if a := <-held; a.err == nil {
		t.Fatalf("a held run got %q after Close, want no answer", a.verdict)
	}
	if r := g.Runs()[0]; !r.Answered.IsZero() || r.Verdict != "" {
		t.Errorf("the held run is recorded as answered: %+v", r)
	}
}

func TestGateReceiverRejectsWhatIsNotABatch(t *testing.T) {
	g := NewGateReceiver(GateOptions{})
	defer g.Close()
	resp, err := http.Post(g.URL, "application/json", strings.NewReader("not json"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || len(g.Runs()) != 0 {
		t.Errorf("status %d, %d runs; want 400 and nothing recorded", resp.StatusCode, len(g.Runs()))
	}
}

func TestNotificationReceiver(t *testing.T) {
	var errs, seen []string
	var mu sync.Mutex
	n := NewNotificationReceiver(NotificationOptions{
		OnNotification: func(d Notification) { mu.Lock(); seen = append(seen, d.Trigger); mu.Unlock() },
		OnError:        func(err error) { mu.Lock(); errs = append(errs, err.Error()); mu.Unlock() }})
	defer n.Close()
	body := `{"trigger": "on-rollout-completed", "addon": "logging", "placement": "fleet/prod", "versionID": "abc123", "kind": "Upgrade", "clusters": ["c1", "c2"], "reason": "UpgradeSucceed", "message": "done"}`
	before := time.Now()
	for _, b := range []string{body, "not json"} {
		resp, err := http.Post(n.URL, "application/json", strings.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if want := map[bool]int{true: http.StatusNoContent, false: http.StatusBadRequest}[b == body]; resp.StatusCode != want {
			t.Errorf("%s: status %d, want %d", b, resp.StatusCode, want)
		}
	}
	got := n.Notifications()
	want := Notification{Trigger: "on-rollout-completed", Addon: "logging", Placement: "fleet/prod", VersionID: "abc123", Kind: "Upgrade",
		Clusters: []string{"c1", "c2"}, Reason: "UpgradeSucceed", Message: "done", Text: body}
	if len(got) != 1 {
		t.Fatalf("%d notifications recorded, want 1: %+v", len(got), got)
	}
	at := got[0].At
	got[0].At = time.Time{}
	if !equal(got[0], want) || at.Before(before) {
		t.Errorf("recorded %+v at %s, want %+v", got[0], at, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(seen, []string{"on-rollout-completed"}) || len(errs) != 1 || !strings.Contains(errs[0], "not the catalog's JSON body") {
		t.Errorf("callbacks: notifications %q, errors %q; want one of each", seen, errs)
	}

	text := NewNotificationReceiver(NotificationOptions{Text: true})
	defer text.Close()
	resp, err := http.Post(text.URL, "text/plain", strings.NewReader("Add-on logging upgrade completed"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := text.Notifications(); len(got) != 1 || got[0].Text != "Add-on logging upgrade completed" || got[0].Trigger != "" {
		t.Errorf("text receiver recorded %+v, want the message as Text", got)
	}
}

func equal(a, b Notification) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb) && a.Text == b.Text && a.At.Equal(b.At)
}

// The configuration as notifications-engine reads it: the shipped catalog's triggers fire and its
// templates reach the receivers through the services NotificationConfig added, the JSON body to
// the one named "webhook", the message to the others.
func TestNotificationConfigSendsToTheReceivers(t *testing.T) {
	jsonRecv := NewNotificationReceiver(NotificationOptions{OnError: func(err error) { t.Error(err) }})
	defer jsonRecv.Close()
	textRecv := NewNotificationReceiver(NotificationOptions{Text: true})
	defer textRecv.Close()
	repoRoot := filepath.Join("..", "..", "..")
	cm, secret, err := NotificationConfig(repoRoot, "ops", map[string]Webhook{"webhook": {URL: jsonRecv.URL}, "chat": {URL: textRecv.URL, FastRetry: true}})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Namespace != "ops" || cm.Name != notify.ConfigMapName || cm.Kind != "ConfigMap" || secret.Namespace != "ops" || secret.Name != notify.SecretName || secret.Kind != "Secret" {
		t.Fatalf("ConfigMap %s %s/%s, Secret %s %s/%s; want the controller's names in ops", cm.Kind, cm.Namespace, cm.Name, secret.Kind, secret.Namespace, secret.Name)
	}
	if s := cm.Data["service.webhook"]; !strings.Contains(s, "url: $webhook-url") || !strings.Contains(s, "application/json") || strings.Contains(s, "retryMax") {
		t.Errorf("service.webhook: %q; want the URL from the Secret, JSON, default retries", s)
	}
	if s := cm.Data["service.webhook.chat"]; !strings.Contains(s, "url: $chat-url") || !strings.Contains(s, "retryMax: 1") {
		t.Errorf("service.webhook.chat: %q; want the URL from the Secret, one fast retry", s)
	}
	// As the API server stores the Secret.
	stored := &corev1.Secret{ObjectMeta: secret.ObjectMeta, Data: map[string][]byte{}}
	for k, v := range secret.StringData {
		stored.Data[k] = []byte(v)
	}
	cfg, err := api.ParseConfig(cm, stored)
	if err != nil {
		t.Fatalf("the configuration does not parse: %v", err)
	}
	a, err := api.NewAPI(*cfg, func(obj map[string]any, _ services.Destination) map[string]any { return obj })
	if err != nil {
		t.Fatalf("the configuration does not compile: %v", err)
	}
	cma := &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: "logging"}}
	m := notify.Moment{Trigger: notify.OnRolloutCompleted, Reason: notify.ReasonsOf(notify.OnRolloutCompleted)[0], Message: "done", Addon: "logging"}
	m.Placement, m.VersionID, m.Kind, m.Clusters = "fleet/prod", "abc123", "Upgrade", []string{"c1", "c2"}
	vars, err := notify.Vars(cma, m)
	if err != nil {
		t.Fatal(err)
	}
	conds, err := a.RunTrigger(m.Trigger, vars)
	if err != nil || len(conds) != 1 || !conds[0].Triggered {
		t.Fatalf("trigger %s: %+v, %v; want one condition that fires", m.Trigger, conds, err)
	}
	for _, svc := range []string{"webhook", "chat"} {
		if err := a.Send(vars, conds[0].Templates, services.Destination{Service: svc}); err != nil {
			t.Fatalf("sending to %s: %v", svc, err)
		}
	}
	got := jsonRecv.Notifications()
	if len(got) != 1 || got[0].Trigger != m.Trigger || got[0].Addon != "logging" || got[0].Placement != m.Placement || got[0].VersionID != m.VersionID ||
		got[0].Kind != m.Kind || !slices.Equal(got[0].Clusters, m.Clusters) {
		t.Errorf("service webhook delivered %+v, want the moment as the catalog's JSON body", got)
	}
	if got := textRecv.Notifications(); len(got) != 1 || !strings.Contains(got[0].Text, "Add-on logging upgrade to version abc123 completed") {
		t.Errorf("service chat delivered %+v, want the catalog's message", got)
	}
}

func TestNotificationConfigErrors(t *testing.T) {
	if _, _, err := NotificationConfig(t.TempDir(), "ops", nil); err == nil || !strings.Contains(err.Error(), "catalog.yaml") {
		t.Errorf("no catalog: %v, want an error naming it", err)
	}
	_, _, err := NotificationConfig(filepath.Join("..", "..", ".."), "ops", map[string]Webhook{"webhook": {}})
	if err == nil || !strings.Contains(err.Error(), "no URL") {
		t.Errorf("a service without a URL: %v, want an error", err)
	}
}
