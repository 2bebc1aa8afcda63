package rolloutplan

// Maintenance windows (package maintwindow): while a placement's windows are closed no cluster
// starts a new version; clusters in flight finish and are judged as usual; rollbacks and aborts
// pass unless a window says rollbacks: false; a person may let one version through
// (operations.WindowOverrideAnnotation).

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/maintwindow"
	"github.com/addonops/addonops/internal/operations"
)

// parseWindows reads the add-on's maintenance windows and checks that every placement a window
// names is an install placement: a window meant for a placement that a typo or a rename left
// unnamed must not let its rollout through.
func parseWindows(annotations map[string]string, install []PlacementKey) (maintwindow.Windows, error) {
	ws, err := maintwindow.Parse(annotations)
	if err != nil {
		return nil, err
	}
	known := map[canary.PlacementKey]bool{}
	for _, k := range install {
		known[canary.PlacementKey(k)] = true
	}
	for _, w := range ws {
		for _, k := range w.Keys() {
			if !known[k] {
				return nil, fmt.Errorf("annotation %s: window %d: placement %s is not an install placement of the add-on (spec.installStrategy.placements); name one of them, or leave placements out for every placement",
					maintwindow.Annotation, w.Index, k)
			}
		}
	}
	return ws, nil
}

// invalidWindows is the condition message of every placement while the windows do not parse.
func invalidWindows(addon string, err error) string {
	return fmt.Sprintf("%v; no batch starts on any placement until it is fixed (fix or remove annotation %s of ClusterManagementAddOn %s; a valid value: %s)",
		err, maintwindow.Annotation, addon, maintwindow.Example)
}

// windowClosed tells whether placement p's maintenance windows keep its clusters from starting
// the version rolled out now (a rollback or an abort counts only the windows with rollbacks:
// false), and if so why and until when. A window override for p's desired version opens them:
// override is then that version's id.
func (d *decider) windowClosed(p *placementState) (closed bool, wait *maintwindow.Closure, override string) {
	if len(d.windows) == 0 {
		return false, nil, ""
	}
	ws := d.windows.For(canary.PlacementKey(p.key), p.rollback || p.aborted)
	now := d.in.Now.Time
	if ws.Open(now) {
		return false, nil, ""
	}
	if id := versionID(p.desired); d.requests.WindowOverride[canary.PlacementKey(p.key)] == id {
		return false, nil, id
	}
	if closed, c := ws.Closed(now); closed {
		return true, &c, ""
	}
	return false, nil, ""
}

// windowCondition turns the condition of a placement whose clusters wait for a window into
// WaitingForWindow (Progressing=True: time opens the window), and has the decision taken again
// when the window opens. A condition that says the rollout stopped or ended stays.
func (d *decider) windowCondition(p *placementState) {
	w := p.windowWait
	if w == nil || p.blocked || p.cond.Status != metav1.ConditionTrue {
		return
	}
	after := w.Opens.Sub(d.in.Now.Time)
	d.noteRecheck(&after)
	msg := p.cond.Message
	if _, rest, ok := strings.Cut(msg, "... "); ok {
		msg = rest // "upgrading... 1/4 clusters done" reads as the counts
	}
	p.cond = metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionTrue, Reason: addonstatus.ReasonWaitingForWindow,
		Message: fmt.Sprintf("waiting for a maintenance window: %s; %s; no new cluster starts, clusters in flight finish; %s; to let version %s through now: `addonops override-window %s --placement %s`",
			w.Why, w.When(), msg, versionID(p.desired), d.in.CMA.Name, p.key)}
}

// windowOverrideEvent records that a person's override let placement p's version through closed
// windows, once per version (the history remembers it).
func (d *decider) windowOverrideEvent(p *placementState) {
	if p.windowOverride == "" {
		return
	}
	if hp := d.placementHistory(p); hp != nil && hp.WindowOverride == p.windowOverride {
		return
	}
	d.events = append(d.events, Event{Reason: "WindowOverridden", Message: fmt.Sprintf(
		"placement %s: version %s passes its closed maintenance windows (annotation %s, %s); a newer version waits for the windows again",
		p.key, p.windowOverride, operations.WindowOverrideAnnotation, d.setBy(operations.WindowOverrideAnnotation))})
}
