package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/notify"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/ssapply"
	"github.com/addonops/addonops/internal/testing/stepcheck"
	"github.com/addonops/addonops/internal/testing/webhooks"
	"github.com/addonops/addonops/internal/verification"
)

// The gates step (steps/06-gates) follows the pause step: a new good version in a commit that also
// uses verification gates, notifications and maintenance windows, the way a user does:
//
//   - a webhook verification gate: an Argo Rollouts AnalysisTemplate with a web provider (as
//     kustomize-rollout-examples/webhook-gate) and the annotation addonops.io/verification naming it
//     for every placement. Its URL is set at run time to a local HTTP receiver the demo runs (net/http/httptest on
//     127.0.0.1): it prints each batch the controller POSTs ("verifying batch N") and answers
//     {"verdict": "pass"} after verdictDelay, so the next batch visibly waits for the verdict;
//   - notifications: the add-on subscribes to every trigger with the webhook service (annotations
//     notifications.argoproj.io/subscribe.<trigger>.webhook); the demo writes the catalog
//     (config/notifications/catalog.yaml) with service.webhook pointing at a second local receiver
//     into addonops-notifications-cm, and the URL into addonops-notifications-secret, in the
//     controller's namespace, as kustomize-rollout-examples/notifications does. The receiver prints
//     each notification as it arrives, in this step and the ones after it;
//   - a maintenance window: a deny window on the gated placement, moved at run time to begin a
//     minute before the demo rendered its steps (annotation addonops.io/maintenance-windows, as
//     kustomize-rollout-examples/weekend-freeze), so it is in force: the canary rolls out, batch by
//     verified batch, and the gated placement then reports WaitingForWindow with when the window
//     opens. The demo holds a few seconds (nothing moves), then runs `addonops override-window`, the
//     CLI binary, as a person letting a hotfix through does, and the batches go.
//
// Before the step's objects are applied the demo installs config/components/verification's CRDs
// (the hub has no Argo Rollouts) and the notification configuration: a platform team's setup,
// outside the add-on's repository. The MCA changes recorded over the step, the receivers' records
// and the placements' reasons prove that each part acted (stepcheck.Gates).
const (
	// notifyNamespace is the demo controller's namespace, where it reads the notification
	// configuration (addonops-system, as config/default deploys it).
	notifyNamespace = "addonops-system"
	// verdictDelay is how long (before --speed) the gate's receiver takes to answer, as smoke tests
	// take some time: the next batch waits for it. At least minVerdictDelay.
	verdictDelay    = 1500 * time.Millisecond
	minVerdictDelay = 300 * time.Millisecond
	// windowHold is how long (before --speed) the demo lets the window hold the gated placement
	// before it overrides it. At least minWindowHold.
	windowHold    = 3 * time.Second
	minWindowHold = time.Second
	// notifyWait bounds how long the step waits, once its rollout ended, for the notifications it
	// expects: they are sent from a queue, after the moments.
	notifyWait = 15 * time.Second
)

// gatesPlan is what the gates step gates: add-on Addon rolling out the AddOnDeploymentConfig
// Config ("<namespace>/<name>"), AGENT_VERSION Version; the deny window holds placement Gated
// (the placement a canary gates, else the first rolled out in batches), Canary is its canary
// placement ("" for none).
type gatesPlan struct {
	Addon   string
	Gated   canary.PlacementKey
	Canary  string
	Config  string
	Version string
}

// gateServers are the two local receivers (internal/testing/webhooks): the verification gate's
// webhook and the notifications' webhook service. They queue a line per batch, verdict and
// notification for the step to print (the display is the step loop's alone).
type gateServers struct {
	gate   *webhooks.GateReceiver
	notify *webhooks.NotificationReceiver

	// setUp: the hub has what the gates need (setupGates).
	setUp bool

	mu    sync.Mutex
	lines []string
}

func startGateServers(speed float64) *gateServers {
	g := &gateServers{}
	delay := max(time.Duration(float64(verdictDelay)/speed), minVerdictDelay)
	g.gate = webhooks.NewGateReceiver(webhooks.GateOptions{Verdict: "pass", Delay: delay,
		OnArrive: func(b webhooks.GateRun) {
			g.queue("   gate: verifying batch %d of %s (%s), version %s: the webhook got it; no new cluster starts until its verdict",
				b.Index, b.Placement, describe(b.Clusters, 5), b.Version)
		},
		OnAnswer: func(b webhooks.GateRun) {
			g.queue("   gate: batch %d of %s: verdict %s (after %s)", b.Index, b.Placement, b.Verdict, seconds(delay))
		}})
	g.notify = webhooks.NewNotificationReceiver(webhooks.NotificationOptions{OnNotification: func(n webhooks.Notification) {
		g.queue("   notification: %s for %s on %s, version %s (%s), clusters %s",
			n.Trigger, n.Addon, n.Placement, n.VersionID, n.Kind, describe(n.Clusters, 4))
	}})
	return g
}

// close stops the receivers; a verdict still waiting is not given.
func (g *gateServers) close() {
	if g == nil {
		return
	}
	g.gate.Close()
	g.notify.Close()
}

func (g *gateServers) queue(format string, args ...any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lines = append(g.lines, fmt.Sprintf(format, args...))
}

// flush prints the lines the receivers queued.
func (g *gateServers) flush(d *display) {
	if g == nil {
		return
	}
	g.mu.Lock()
	lines := g.lines
	g.lines = nil
	g.mu.Unlock()
	for _, l := range lines {
		d.printf("%s\n", l)
	}
}

func (g *gateServers) records() ([]webhooks.GateRun, []webhooks.Notification) {
	return g.gate.Runs(), g.notify.Notifications()
}

// setupGates installs what the gates step needs on the hub before the first step with an
// AnalysisTemplate: the CRDs of
// config/components/verification, and the notification configuration in notifyNamespace.
func (r *demoRun) setupGates(ctx context.Context) error {
	path := filepath.Join(r.o.RepoRoot, "config", "components", "verification", "analysistemplates.yaml")
	crds, err := ssapply.DecodeFile(path)
	if err != nil {
		return fmt.Errorf("the gates step installs the AnalysisTemplate CRDs: %w", err)
	}
	// Served before the step's objects (an AnalysisTemplate among them) are applied.
	if err := localhub.ApplyCRDs(ctx, r.clients, FieldManager, crds); err != nil {
		return fmt.Errorf("applying %s: %w", path, err)
	}
	r.disp.printf("   setup: the AnalysisTemplate and ClusterAnalysisTemplate CRDs of config/components/verification (the hub has no Argo Rollouts)\n")

	cm, secret, err := webhooks.NotificationConfig(r.o.RepoRoot, notifyNamespace, map[string]webhooks.Webhook{"webhook": {URL: r.gates.notify.URL}})
	if err != nil {
		return fmt.Errorf("the gates step writes the notification configuration: %w", err)
	}
	objs := []*unstructured.Unstructured{{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": notifyNamespace}}}}
	for _, o := range []runtime.Object{cm, secret} {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return fmt.Errorf("the notification configuration: %w", err)
		}
		unstructured.RemoveNestedField(u, "metadata", "creationTimestamp")
		objs = append(objs, &unstructured.Unstructured{Object: u})
	}
	if _, err := r.apply.ApplyAll(ctx, objs); err != nil {
		return fmt.Errorf("writing the notification configuration: %w", err)
	}
	r.disp.printf("   setup: ConfigMap %s/%s (config/notifications' catalog + service.webhook) and Secret %s/%s (webhook-url %s)\n",
		notifyNamespace, notify.ConfigMapName, notifyNamespace, notify.SecretName, r.gates.notify.URL)
	return nil
}

// Phases of the gates step.
const (
	windowWaiting = iota // for the gated placement to wait for its window
	windowHolding        // it waits: the demo holds before the override
	windowDone           // overridden, or given up (Problem)
)

// gater runs the window's part of one gates step and collects what the step saw.
type gater struct {
	r        *demoRun
	plan     gatesPlan
	start    time.Time
	hold     time.Duration
	phase    int
	heldAt   time.Time
	endedAt  time.Time
	res      GatesResult
	clusters map[string][]string
	decided  map[string][]string
}

func (r *demoRun) newGater(plan gatesPlan, start time.Time) *gater {
	return &gater{r: r, plan: plan, start: start, hold: max(time.Duration(float64(windowHold)/r.o.Speed), minWindowHold),
		res:      GatesResult{Version: plan.Version, Gated: plan.Gated.String(), Canary: plan.Canary},
		clusters: map[string][]string{}, decided: map[string][]string{}}
}

// advance moves the window's part on with the step's latest snapshots.
func (g *gater) advance(ctx context.Context, snaps []snapshot, states map[string]harness.MCAState, now time.Time) {
	key := g.plan.Gated.String()
	var reason, message string
	found := false
	for _, s := range snaps {
		if s.View.Addon != g.plan.Addon {
			continue
		}
		for k := range s.Clusters {
			g.clusters[k] = s.owned(k)
			g.decided[k] = slices.Clone(s.Clusters[k])
		}
		for _, p := range s.View.Placements {
			if p.Key() == key && p.Behind == "" {
				reason, message, found = p.Reason, p.Message, true
				if p.DesiredVersion != "" {
					g.res.VersionID = p.DesiredVersion
				}
			}
		}
	}
	if !found {
		return
	}
	d := g.r.disp
	switch g.phase {
	case windowWaiting:
		switch {
		case reason == addonstatus.ReasonWaitingForWindow:
			g.res.WindowAt, g.res.WindowMessage = now.Sub(g.start), message
			g.heldAt = now
			d.printf("   -- %s waits for its maintenance window at %s (reason %s):\n", key, seconds(g.res.WindowAt), reason)
			for _, part := range strings.Split(message, "; ") {
				d.printf("      %s\n", part)
			}
			d.printf("   -- the demo lets it hold %s: no cluster of it starts\n", seconds(g.hold))
			g.phase = windowHolding
		case addonstatus.IsDoneReason(reason):
			g.res.Problem = fmt.Sprintf("%s finished its rollout (%s) without waiting for its maintenance window", key, reason)
			g.phase = windowDone
		}
	case windowHolding:
		if now.Sub(g.heldAt) < g.hold {
			return
		}
		for _, c := range g.clusters[key] {
			if states[c].Desired() == g.plan.Config {
				g.res.ToldBeforeOverride = append(g.res.ToldBeforeOverride, c)
			}
		}
		d.printf("   -- held for %s (reason %s): %d of its %d clusters told %s; a person lets this version through the window:\n",
			seconds(now.Sub(g.heldAt)), reason, len(g.res.ToldBeforeOverride), len(g.clusters[key]), g.plan.Version)
		g.override(ctx)
	}
}

// override runs `addonops override-window ADDON --placement NS/NAME` against the hub.
func (g *gater) override(ctx context.Context) {
	d := g.r.disp
	g.phase = windowDone
	args := []string{"override-window", g.plan.Addon, "--placement", g.plan.Gated.String(), "--kubeconfig", g.r.hub.Kubeconfig}
	d.printf("   $ addonops override-window %s --placement %s\n", g.plan.Addon, g.plan.Gated)
	cmd := exec.CommandContext(ctx, g.r.planBin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	for _, l := range strings.Split(strings.TrimRight(stdout.String()+stderr.String(), "\n"), "\n") {
		if l != "" {
			g.res.Override = append(g.res.Override, l)
			d.printf("   %s\n", l)
		}
	}
	if err != nil {
		g.res.Problem = fmt.Sprintf("%s %s: %v", g.r.planBin, strings.Join(args, " "), err)
		d.printf("   ERROR: %s\n", g.res.Problem)
		return
	}
	g.res.OverrideAt = time.Since(g.start)
}

// holds tells whether the step stays open although its rollout ended: the notifications it
// expects may still be on their way (at most notifyWait).
func (g *gater) holds(ended bool, now time.Time) bool {
	if g == nil || !ended {
		if g != nil {
			g.endedAt = time.Time{}
		}
		return false
	}
	if g.endedAt.IsZero() {
		g.endedAt = now
	}
	if now.Sub(g.endedAt) >= notifyWait {
		return false
	}
	_, notes := g.r.gates.records()
	return len(stepcheck.MissingNotifications(g.clusters, g.plan.Gated.String(), g.plan.Canary, g.res.VersionID, g.convert(notes))) > 0
}

func (g *gater) convert(notes []webhooks.Notification) []Notification {
	var out []Notification
	for _, n := range notes {
		if n.At.Before(g.start) || n.Addon != g.plan.Addon {
			continue
		}
		c := slices.Clone(n.Clusters)
		slices.Sort(c)
		out = append(out, Notification{Trigger: n.Trigger, Placement: n.Placement, VersionID: n.VersionID, Kind: n.Kind, Clusters: c, At: n.At.Sub(g.start)})
	}
	return out
}

// finish completes the result from the step's recording and the receivers' records.
func (g *gater) finish(events []harness.MCAStateEvent) *GatesResult {
	res := g.res
	if g.phase == windowWaiting && res.Problem == "" {
		res.Problem = fmt.Sprintf("the step ended before %s waited for its maintenance window", g.plan.Gated)
	}
	res.Clusters, res.Decided = g.clusters, g.decided
	res.Told = map[string]map[string]time.Duration{}
	for p, cs := range g.clusters {
		res.Told[p] = map[string]time.Duration{}
		for c, at := range harness.FirstTold(events, g.plan.Addon, g.plan.Config, cs) {
			res.Told[p][c] = at.Sub(g.start)
		}
	}
	batches, notes := g.r.gates.records()
	for _, b := range batches {
		if b.Arrived.Before(g.start) || b.Addon != g.plan.Addon {
			continue
		}
		gb := GateBatch{Placement: b.Placement, Index: b.Index, Version: b.Version, Clusters: slices.Sorted(slices.Values(b.Clusters)),
			Arrived: b.Arrived.Sub(g.start), Answered: -1, Verdict: b.Verdict}
		if !b.Answered.IsZero() {
			gb.Answered = b.Answered.Sub(g.start)
		}
		res.Batches = append(res.Batches, gb)
	}
	res.Notifications = g.convert(notes)
	return &res
}

// analysisTemplateGVK is the AnalysisTemplates' kind (config/components/verification).
var analysisTemplateGVK = schema.GroupVersionKind{Group: verification.Group, Version: verification.Version, Kind: "AnalysisTemplate"}
