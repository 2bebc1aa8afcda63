package rolloutview

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/maintwindow"
)

// A placement waiting for a maintenance window says so, and when the window opens (regenerate the
// golden file with -update).
func TestRenderWindow(t *testing.T) {
	in := rollbackWorld(t)
	// Sunday 10:02 UTC: the weekend freeze (Friday 18:00 Berlin for 63h) holds until Monday 09:00 Berlin.
	in.CMA.Annotations[maintwindow.Annotation] = `[{"kind": "deny", "schedule": "0 18 * * 5", "duration": "63h", "timeZone": "Europe/Berlin"}]`
	in.CMA.Status.InstallProgressions[0].Conditions = progressing(metav1.ConditionTrue, addonstatus.ReasonWaitingForWindow,
		"waiting for a maintenance window: deny window 0 (\"0 18 * * 5\" for 63h, Europe/Berlin) is active; the next window opens at 2026-03-02T09:00:00+01:00; no new cluster starts, clusters in flight finish; 2/4 clusters done, 1 in progress, 0 failed, 0 timed out", t0)
	v := Build(in)
	p := v.Placements[0]
	if p.Health.Health != Progressing || v.Phase != PhaseProgressing {
		t.Errorf("health %s phase %s; want Progressing (time opens the window)", p.Health.Health, v.Phase)
	}
	if w := p.Window; w == nil || w.State != WindowClosed || w.Opens == nil || w.Opens.Format("2006-01-02T15:04:05Z07:00") != "2026-03-02T09:00:00+01:00" {
		t.Fatalf("window %+v; want closed, opening 2026-03-02T09:00:00+01:00", w)
	}
	var buf bytes.Buffer
	if err := Render(&buf, v, in.Now); err != nil {
		t.Fatal(err)
	}
	if want := "  waiting for a maintenance window: the next window opens at 2026-03-02T09:00:00+01:00 (in 21h58m); deny window 0"; !strings.Contains(buf.String(), want) {
		t.Errorf("render lacks %q:\n%s", want, buf.String())
	}
	golden(t, "render-window.golden", buf.Bytes())

	// Open (Monday 10:00 Berlin), and an annotation that does not parse.
	in.Now = t0.Add(24 * time.Hour)
	if w := Build(in).Placements[0].Window; w == nil || w.State != WindowOpen {
		t.Errorf("Monday: window %+v, want open", w)
	}
	in.CMA.Annotations[maintwindow.Annotation] = `[{"kind": "deny"}]`
	if w := Build(in).Placements[0].Window; w == nil || w.State != WindowInvalid || !strings.Contains(w.Why, "schedule") {
		t.Errorf("invalid: window %+v, want invalid naming the schedule", w)
	}
	delete(in.CMA.Annotations, maintwindow.Annotation)
	if w := Build(in).Placements[0].Window; w != nil {
		t.Errorf("no annotation: window %+v, want none", w)
	}
}
