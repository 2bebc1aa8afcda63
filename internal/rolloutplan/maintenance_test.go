package rolloutplan

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/maintwindow"
	"github.com/addonops/addonops/internal/operations"
)

// Maintenance windows (maintenance.go). The world's clock starts on Sunday 2026-03-01 at 10:00 UTC.

// workHours denies 08:00 to 16:00 UTC every day: closed at the world's start.
const workHours = `{"kind": "deny", "schedule": "0 8 * * *", "duration": "8h"}`

func (w *world) windows(specs ...string) {
	w.cma.Annotations[maintwindow.Annotation] = "[" + strings.Join(specs, ",") + "]"
}

func (w *world) eventCount(reason string) int {
	n := 0
	for _, e := range w.lastPlan.Events {
		if e.Reason == reason {
			n++
		}
	}
	return n
}

// A deny window closes while a batch is in flight: the cluster in flight finishes and counts as
// done, the next batch waits, the status says when the window opens, the decision is taken again
// then, and the rollout goes on.
func TestWindowHoldsTheNextBatch(t *testing.T) {
	w, p := pausedWorld(t) // c1 moves to b
	w.windows(workHours)
	w.step()
	w.expectProgression(p, addonstatus.ReasonUpgrading, "0/4 clusters done, 1 in progress", "b", "a", "a")
	w.agent("c1", succeed)
	w.step()
	w.expectStates("c1=b/b/T c2=a/a/F c3=a/a/F c4=a/a/F")
	w.expectProgression(p, addonstatus.ReasonWaitingForWindow,
		`waiting for a maintenance window: deny window 0 ("0 8 * * *" for 8h, UTC) is active; the next window opens at 2026-03-01T16:00:00Z; no new cluster starts, clusters in flight finish; 1/4 clusters done, 0 in progress`, "b", "a", "a")
	if c := ProgressingOf(w.progression(p)); c.Status != metav1.ConditionTrue {
		t.Fatalf("WaitingForWindow with status %s, want True (time opens the window)", c.Status)
	}
	if got, want := w.lastPlan.RecheckAfter, 6*time.Hour; got != want {
		t.Fatalf("RecheckAfter = %s, want %s (when the window opens)", got, want)
	}
	w.expectEvent(addonstatus.ReasonWaitingForWindow, "placement default/p: waiting for a maintenance window")
	for range 3 {
		w.advance(time.Hour)
		w.step()
		if n := w.eventCount(addonstatus.ReasonWaitingForWindow); n != 0 {
			t.Fatalf("%d more WaitingForWindow events while it waits, want one in all", n)
		}
	}
	w.expectStates("c1=b/b/T c2=a/a/F c3=a/a/F c4=a/a/F")
	w.expectProgression(p, addonstatus.ReasonWaitingForWindow, "opens at 2026-03-01T16:00:00Z", "b", "a", "a")
	// The version history counts the wait once.
	if v := w.history.Placement(p.String()).Last(); v.Configs[0].Name != "b" || v.WindowWaits != 1 || v.WindowOverridden {
		t.Fatalf("history of b: %+v; want one window wait", v)
	}

	w.advance(3 * time.Hour) // 16:00
	w.step()
	w.expectStates("c1=b/b/T c2=b/a/T c3=a/a/F c4=a/a/F")
	w.expectProgression(p, addonstatus.ReasonUpgrading, "1/4 clusters done, 1 in progress", "b", "a", "a")
	w.expectEvent("WindowOpened", "placement default/p: a maintenance window opened")
	w.settle()
	w.expectProgression(p, addonstatus.ReasonUpgradeSucceed, "4/4 upgrade completed", "b", "b", "b")
}

// A version committed outside the allow windows starts nothing, the canary included; the time the
// window opens is written in the window's zone.
func TestWindowHoldsTheCanaryStart(t *testing.T) {
	w, aws, canaryKey := canaryWorld(t)
	w.installAll()
	w.windows(`{"kind": "allow", "schedule": "0 22 * * *", "duration": "4h", "timeZone": "Europe/Berlin"}`)
	w.setConfig(aws, "b")
	w.setConfig(canaryKey, "b")
	w.step()
	w.expectStates("c1=a/a/T c2=a/a/T c3=a/a/T c4=a/a/T k1=a/a/F k2=a/a/F")
	w.expectProgression(canaryKey, addonstatus.ReasonWaitingForWindow,
		`no allow window is active (allow window 0 ("0 22 * * *" for 4h, Europe/Berlin)); the next window opens at 2026-03-01T22:00:00+01:00`, "b", "a", "a")
	w.expectProgression(aws, addonstatus.ReasonWaitingForCanary, "", "b", "a", "a")
	if got, want := w.lastPlan.RecheckAfter, 11*time.Hour; got != want {
		t.Fatalf("RecheckAfter = %s, want %s (21:00 UTC)", got, want)
	}
	w.advance(11 * time.Hour)
	w.step()
	w.expectStates("c1=a/a/T c2=a/a/T c3=a/a/T c4=a/a/T k1=b/a/T k2=b/a/T")
}

// A rollback goes through a deny window by default; a window with rollbacks: false holds it.
func TestWindowAndRollbacks(t *testing.T) {
	for _, tc := range []struct {
		name, window string
		held         bool
	}{
		{"default", workHours, false},
		{"rollbacks true", `{"kind": "deny", "schedule": "0 8 * * *", "duration": "8h", "rollbacks": true}`, false},
		{"rollbacks false", `{"kind": "deny", "schedule": "0 8 * * *", "duration": "8h", "rollbacks": false}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, p := pausedWorld(t)
			w.settle()
			w.expectProgression(p, addonstatus.ReasonUpgradeSucceed, "4/4 upgrade completed", "b", "b", "b")
			w.now = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC) // inside the window
			w.windows(tc.window)
			w.setConfig(p, "a")
			w.step()
			if tc.held {
				w.expectStates("c1=b/b/F c2=b/b/F c3=b/b/F c4=b/b/F")
				w.expectProgression(p, addonstatus.ReasonWaitingForWindow, "opens at 2026-03-02T16:00:00Z", "a", "a", "b")
				// Still a rollback once the window opens.
				w.now = time.Date(2026, 3, 2, 16, 0, 0, 0, time.UTC)
				w.step()
			}
			w.expectProgression(p, addonstatus.ReasonRollingBack, "", "a", "a", "b")
			w.expectStates("c1=a/b/T c2=b/b/F c3=b/b/F c4=b/b/F")
		})
	}
}

// An abort returns clusters through a closed window unless it says rollbacks: false.
func TestWindowAndAbort(t *testing.T) {
	for _, held := range []bool{false, true} {
		t.Run(map[bool]string{false: "passes", true: "held"}[held], func(t *testing.T) {
			w, p := pausedWorld(t) // c1 moves to b
			w.agent("c1", succeed)
			w.windows(strings.Replace(workHours, `}`, map[bool]string{false: `}`, true: `, "rollbacks": false}`}[held], 1))
			w.annotateAs("addonops-cli", operations.AbortAnnotation, operations.FormatMap(map[canary.PlacementKey]string{canary.PlacementKey(p): versionID([]Config{cfgOf("b")})}))
			w.step()
			if held {
				// c2..c4 never left a: only c1 waits to go back.
				w.expectStates("c1=b/b/F c2=a/a/T c3=a/a/T c4=a/a/T")
				w.expectProgression(p, addonstatus.ReasonWaitingForWindow, "opens at 2026-03-01T16:00:00Z", "b", "a", "a")
				return
			}
			w.expectStates("c1=a/b/T c2=a/a/T c3=a/a/T c4=a/a/T")
			w.expectProgression(p, addonstatus.ReasonAborting, "", "b", "a", "a")
		})
	}
}

// A window names its placements: another placement is not held.
func TestWindowForOnePlacement(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	prod := w.placement("prod", "a", all(), []string{"c1"})
	dev := w.placement("dev", "a", all(), []string{"c2"})
	w.windows(strings.Replace(workHours, `}`, `, "placements": ["default/prod"]}`, 1))
	w.step()
	w.expectStates("c1=//F c2=a//T")
	w.expectProgression(prod, addonstatus.ReasonWaitingForWindow, "", "a", "", "")
	w.expectProgression(dev, addonstatus.ReasonInstalling, "", "a", "", "")
}

// A person lets one version through a closed window: its clusters start, batch after batch, an
// event says who, once; the next version waits for the window again.
func TestWindowOverrideLetsOneVersionThrough(t *testing.T) {
	w := newWorld(t)
	for _, c := range []string{"a", "b", "c"} {
		w.config(c)
	}
	p := w.placement("p", "a", progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{}), []string{"c1", "c2", "c3"})
	w.installAll()
	w.windows(workHours)
	w.setConfig(p, "b")
	w.step()
	w.expectStates("c1=a/a/F c2=a/a/F c3=a/a/F")
	w.expectProgression(p, addonstatus.ReasonWaitingForWindow, "to let version "+versionID([]Config{cfgOf("b")})+" through now: `addonops override-window hello --placement default/p`", "b", "a", "a")

	w.annotateAs("addonops-cli", operations.WindowOverrideAnnotation, operations.FormatMap(map[canary.PlacementKey]string{canary.PlacementKey(p): versionID([]Config{cfgOf("b")})}))
	w.step()
	w.expectStates("c1=b/a/T c2=a/a/F c3=a/a/F")
	w.expectEvent("WindowOverridden", "placement default/p: version "+versionID([]Config{cfgOf("b")})+" passes its closed maintenance windows (annotation addonops.io/window-override, set by addonops-cli)")
	w.expectProgression(p, addonstatus.ReasonUpgrading, "", "b", "a", "a")
	// The next batches pass too, with no second event.
	for _, c := range []string{"c1", "c2", "c3"} {
		w.agent(c, succeed)
		w.advance(time.Minute)
		w.step()
		if n := w.eventCount("WindowOverridden"); n != 0 {
			t.Fatalf("WindowOverridden recorded again after %s", c)
		}
	}
	w.expectStates("c1=b/b/T c2=b/b/T c3=b/b/T")
	w.expectProgression(p, addonstatus.ReasonUpgradeSucceed, "3/3 upgrade completed", "b", "b", "b")
	if v := w.history.Placement(p.String()).Last(); v.Configs[0].Name != "b" || !v.WindowOverridden || v.WindowWaits != 1 {
		t.Fatalf("history of b: %+v; want overridden after one window wait", v)
	}

	w.setConfig(p, "c")
	w.step()
	w.expectStates("c1=b/b/F c2=b/b/F c3=b/b/F")
	w.expectProgression(p, addonstatus.ReasonWaitingForWindow, "", "c", "b", "b")
	if v := w.history.Placement(p.String()).Last(); v.Configs[0].Name != "c" || v.WindowOverridden || v.WindowWaits != 1 {
		t.Fatalf("history of c: %+v; want one window wait, not overridden", v)
	}
}

// A window annotation that does not parse, or names a placement the add-on does not install, holds
// every placement (fail closed), Degraded with a warning event once.
func TestInvalidWindows(t *testing.T) {
	for _, tc := range []struct{ name, windows, want string }{
		{"cron", `{"kind": "deny", "schedule": "0 25 * * *", "duration": "1h"}`, `window 0: schedule "0 25 * * *"`},
		{"zone", `{"kind": "deny", "schedule": "0 1 * * *", "duration": "1h", "timeZone": "Mars/Olympus"}`, `timeZone "Mars/Olympus"`},
		{"placement", `{"kind": "deny", "schedule": "0 1 * * *", "duration": "1h", "placements": ["default/prd"]}`, "placement default/prd is not an install placement"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, p := pausedWorld(t) // c1 moves to b
			w.agent("c1", succeed)
			w.windows(tc.windows)
			w.step()
			w.expectStates("c1=b/b/T c2=a/a/F c3=a/a/F c4=a/a/F")
			w.expectProgression(p, addonstatus.ReasonInvalidMaintenanceWindows, tc.want, "b", "a", "a")
			w.expectProgression(p, addonstatus.ReasonInvalidMaintenanceWindows, "no batch starts on any placement until it is fixed (fix or remove annotation addonops.io/maintenance-windows of ClusterManagementAddOn hello", "b", "a", "a")
			if c := ProgressingOf(w.progression(p)); c.Status != metav1.ConditionFalse || addonstatus.ClassOf(c.Status, c.Reason) != addonstatus.ClassDegraded {
				t.Fatalf("condition %+v: want Progressing=False, Degraded", c)
			}
			if e := w.lastPlan.Events; len(e) != 1 || !e[0].Warning || e[0].Reason != addonstatus.ReasonInvalidMaintenanceWindows {
				t.Fatalf("events %+v: want one warning %s", e, addonstatus.ReasonInvalidMaintenanceWindows)
			}
			w.advance(time.Hour)
			w.step()
			if n := w.eventCount(addonstatus.ReasonInvalidMaintenanceWindows); n != 0 {
				t.Fatalf("the warning was recorded again")
			}
			delete(w.cma.Annotations, maintwindow.Annotation)
			w.step()
			w.expectStates("c1=b/b/T c2=b/a/T c3=a/a/F c4=a/a/F")
		})
	}
}

// A window on the gated placement alone: the canary proves the version during the window, the
// gated placement adopts it but moves no cluster until the window opens.
func TestWindowOnTheGatedPlacement(t *testing.T) {
	w, aws, canaryKey := canaryWorld(t)
	w.installAll()
	w.windows(strings.Replace(workHours, `}`, `, "placements": ["default/aws"]}`, 1))
	w.setConfig(aws, "b")
	w.setConfig(canaryKey, "b")
	w.step()
	w.agents(succeed, "k1", "k2")
	w.step()
	w.step()
	w.expectProgression(canaryKey, addonstatus.ReasonUpgradeSucceed, "2/2 upgrade completed", "b", "b", "b")
	w.expectStates("c1=a/a/F c2=a/a/F c3=a/a/F c4=a/a/F k1=b/b/T k2=b/b/T")
	w.expectProgression(aws, addonstatus.ReasonWaitingForWindow, "the next window opens at 2026-03-01T16:00:00Z", "b", "b", "a")
	w.now = time.Date(2026, 3, 1, 16, 0, 0, 0, time.UTC)
	w.step()
	w.expectStates("c1=b/a/T c2=a/a/F c3=a/a/F c4=a/a/F k1=b/b/T k2=b/b/T")
	w.expectProgression(aws, addonstatus.ReasonUpgrading, "", "b", "b", "a")
}
