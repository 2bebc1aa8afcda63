// Package maintwindow is the model of an add-on's maintenance windows: the ClusterManagementAddOn
// annotation that says when a placement's rollout may start new batches. The rollout-strategy
// function checks it at build time and the controller (internal/rolloutplan) reads it at run time,
// both with this one parser, so a package that passes the build is read the same way on the hub.
//
//	addonops.io/maintenance-windows: '[{"kind": "deny", "schedule": "0 18 * * 5", "duration": "63h",
//	  "timeZone": "Europe/Berlin", "placements": ["default/prod"], "rollbacks": true}]'
//
// The semantics are Argo CD's sync windows: while a deny window that applies is active the
// placement is closed; otherwise, when any allow window applies to the placement, it is open only
// while one of them is active; otherwise it is open. A window applies to the placements it lists,
// or to every placement of the add-on when it lists none. A rollback or an abort ignores the
// windows that allow rollbacks ("rollbacks", true unless set to false), so by default it goes
// through a deny window and outside the allow windows.
//
// Schedules are five-field cron expressions read by github.com/robfig/cron/v3 (as Argo CD reads
// sync windows), in the window's time zone (IANA name, UTC when empty); a window is active from
// each time its schedule fires until its duration (elapsed time) has passed.
package maintwindow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	// The zone database is embedded: the controller's distroless image and a KRM function's
	// container may have none, and a window must read the same on every host.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"

	"github.com/addonops/addonops/internal/canary"
)

// Annotation is the ClusterManagementAddOn annotation holding the maintenance windows.
const Annotation = "addonops.io/maintenance-windows"

// Example is a valid annotation value, for error messages.
const Example = `[{"kind": "deny", "schedule": "0 18 * * 5", "duration": "63h", "timeZone": "Europe/Berlin"}]`

// Kinds of window.
const (
	Allow = "allow"
	Deny  = "deny"
)

// Spec is one window as the annotation writes it.
type Spec struct {
	Kind       string   `json:"kind"`
	Schedule   string   `json:"schedule"`
	Duration   string   `json:"duration"`
	TimeZone   string   `json:"timeZone,omitempty"`
	Placements []string `json:"placements,omitempty"`
	Rollbacks  *bool    `json:"rollbacks,omitempty"`
}

// Window is one parsed window.
type Window struct {
	Spec
	// Index is the window's position in the annotation (0-based), to name it in messages.
	Index    int
	schedule cron.Schedule
	duration time.Duration
	loc      *time.Location
	keys     []canary.PlacementKey
}

// Windows are an add-on's maintenance windows.
type Windows []Window

// parser reads five-field cron expressions (minute, hour, day of month, month, day of week) and
// the descriptors (@daily, @weekly, ...), as Argo CD's sync windows do.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Parse reads the annotation from an object's annotations. No annotation means no window (nil,
// nil): always open. The error says which window is wrong, why, and what a valid one looks like.
func Parse(annotations map[string]string) (Windows, error) {
	raw, ok := annotations[Annotation]
	if !ok {
		return nil, nil
	}
	return ParseValue(raw)
}

// ParseValue reads the annotation's value.
func ParseValue(raw string) (Windows, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.DisallowUnknownFields()
	var specs []Spec
	if err := dec.Decode(&specs); err != nil {
		return nil, fmt.Errorf("annotation %s: want a JSON list of windows such as %s: %w", Annotation, Example, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("annotation %s: text after the JSON list; want a list such as %s", Annotation, Example)
	}
	out := make(Windows, 0, len(specs))
	// Every window's problem, on one line: messages go into conditions, events and build output.
	var errs []string
	for i, s := range specs {
		w, err := parseWindow(i, s)
		if err != nil {
			errs = append(errs, fmt.Sprintf("window %d: %v", i, err))
			continue
		}
		out = append(out, w)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("annotation %s: %s", Annotation, strings.Join(errs, "; "))
	}
	return out, nil
}

func parseWindow(i int, s Spec) (Window, error) {
	w := Window{Spec: s, Index: i}
	if s.Kind != Allow && s.Kind != Deny {
		return w, fmt.Errorf("kind %q: want %q or %q", s.Kind, Allow, Deny)
	}
	if strings.HasPrefix(strings.TrimSpace(s.Schedule), "TZ=") || strings.HasPrefix(strings.TrimSpace(s.Schedule), "CRON_TZ=") {
		return w, fmt.Errorf("schedule %q: set the time zone in timeZone, not in the schedule", s.Schedule)
	}
	sched, err := parser.Parse(s.Schedule)
	if err != nil {
		return w, fmt.Errorf("schedule %q is not a five-field cron expression (minute hour day-of-month month day-of-week, e.g. \"0 22 * * 1-5\"): %w", s.Schedule, err)
	}
	w.schedule = sched
	d, err := time.ParseDuration(s.Duration)
	if err != nil || d <= 0 {
		return w, fmt.Errorf("duration %q: want a positive Go duration such as \"2h\" or \"90m\"", s.Duration)
	}
	w.duration = d
	// LoadLocation reads "Local" as the host's zone, which differs between the build and the hub.
	if s.TimeZone == "Local" {
		return w, fmt.Errorf("timeZone %q: name an IANA zone such as \"Europe/Berlin\" (the host's zone differs between machines)", s.TimeZone)
	}
	loc, err := time.LoadLocation(s.TimeZone)
	if err != nil {
		return w, fmt.Errorf("timeZone %q is not an IANA time zone (e.g. \"Europe/Berlin\", \"America/New_York\", \"UTC\"): %w", s.TimeZone, err)
	}
	w.loc = loc
	for _, p := range s.Placements {
		k, err := canary.ParsePlacementKey(p)
		if err != nil {
			return w, fmt.Errorf("placements: %w", err)
		}
		w.keys = append(w.keys, k)
	}
	return w, nil
}

// Location is the window's time zone.
func (w Window) Location() *time.Location { return w.loc }

// Keys are the placements the window lists (none: every placement).
func (w Window) Keys() []canary.PlacementKey { return slices.Clone(w.keys) }

// AllowsRollbacks reports whether a rollback or an abort ignores this window (the default).
func (w Window) AllowsRollbacks() bool { return w.Rollbacks == nil || *w.Rollbacks }

// AppliesTo reports whether the window applies to placement k.
func (w Window) AppliesTo(k canary.PlacementKey) bool {
	return len(w.keys) == 0 || slices.Contains(w.keys, k)
}

// String names the window in messages: `deny window 0 ("0 18 * * 5" for 63h, Europe/Berlin)`.
func (w Window) String() string {
	return fmt.Sprintf("%s window %d (%q for %s, %s)", w.Kind, w.Index, w.Schedule, w.Duration, w.loc)
}

// Active reports whether the window is active at now: its schedule fired at some start s with
// s <= now < s+duration.
func (w Window) Active(now time.Time) bool {
	// The first start after now-duration is the earliest start whose window may still hold now
	// (Argo CD's rule).
	s := w.schedule.Next(now.Add(-w.duration).In(w.loc))
	// A schedule that never fires (30 February) gives the zero time.
	return !s.IsZero() && !s.After(now)
}

// For are the windows that decide placement k, for a rollback (or an abort) or not: a rollback
// ignores the windows that allow rollbacks.
func (ws Windows) For(k canary.PlacementKey, rollback bool) Windows {
	var out Windows
	for _, w := range ws {
		if w.AppliesTo(k) && (!rollback || !w.AllowsRollbacks()) {
			out = append(out, w)
		}
	}
	return out
}

// State is whether windows let a batch start at one moment, and why.
type State struct {
	Open bool
	// Deny is the active deny window that closes it; nil when none does.
	Deny *Window
	// Allow lists the allow windows (active or not) when no deny window closes it and allow
	// windows exist; Active is the one active, nil when none is.
	Allow  Windows
	Active *Window
}

// At evaluates the windows at now (apply For first: At takes every window it is given).
func (ws Windows) At(now time.Time) State {
	var st State
	for i := range ws {
		w := &ws[i]
		if w.Kind == Deny && w.Active(now) {
			return State{Deny: w}
		}
	}
	for i := range ws {
		w := &ws[i]
		if w.Kind != Allow {
			continue
		}
		st.Allow = append(st.Allow, *w)
		if st.Active == nil && w.Active(now) {
			st.Active = w
		}
	}
	st.Open = len(st.Allow) == 0 || st.Active != nil
	return st
}

// Open reports whether the windows let a batch start at now.
func (ws Windows) Open(now time.Time) bool { return ws.At(now).Open }

// maxSteps bounds NextOpen's walk over window starts and ends: a window that fires every minute
// takes one step per minute.
const maxSteps = 20000

// Horizon bounds how far NextOpen looks ahead.
const Horizon = 366 * 24 * time.Hour

// NextOpen is the first moment at or after now when the windows let a batch start. ok is false
// when none comes within Horizon (or within the steps NextOpen takes; then at is how far it
// looked): a deny window that never ends, or allow windows that never fire.
func (ws Windows) NextOpen(now time.Time) (at time.Time, ok bool) {
	t := now
	end := now.Add(Horizon)
	for range maxSteps {
		if ws.Open(t) {
			return t, true
		}
		// The state changes only where a window starts or ends: step to the first such moment
		// after t.
		next := time.Time{}
		consider := func(c time.Time) {
			if c.After(t) && (next.IsZero() || c.Before(next)) {
				next = c
			}
		}
		for _, w := range ws {
			consider(w.schedule.Next(t.In(w.loc)))
			if w.Active(t) {
				// The earliest start still holding t ends first; a later start may extend the
				// window, which the next step sees.
				consider(w.schedule.Next(t.Add(-w.duration).In(w.loc)).Add(w.duration))
			}
		}
		if next.IsZero() || next.After(end) {
			return end, false
		}
		t = next
	}
	return t, false
}

// Closure says why windows are closed at a moment and when they open: Why names the window (an
// active deny window, or the allow windows none of which is active), Opens is the next opening in
// the zone of that window (the deny window's, or the first allow window's), and OpensOK is false
// when none comes within Horizon (Opens is then how far NextOpen looked).
type Closure struct {
	Why     string
	Opens   time.Time
	OpensOK bool
}

// Closed tells whether the windows keep a batch from starting at now, and if so why and until
// when (apply For first).
func (ws Windows) Closed(now time.Time) (bool, Closure) {
	st := ws.At(now)
	if st.Open {
		return false, Closure{}
	}
	var c Closure
	zone := time.UTC
	if st.Deny != nil {
		c.Why = st.Deny.String() + " is active"
		zone = st.Deny.Location()
	} else {
		names := make([]string, len(st.Allow))
		for i, a := range st.Allow {
			names[i] = a.String()
		}
		c.Why = "no allow window is active (" + strings.Join(names, ", ") + ")"
		zone = st.Allow[0].Location()
	}
	at, ok := ws.NextOpen(now)
	c.Opens, c.OpensOK = at.In(zone), ok
	return true, c
}

// When says when the windows open, for messages: "the next window opens at <RFC 3339>".
func (c Closure) When() string {
	if !c.OpensOK {
		return "no window opens before " + c.Opens.Format(time.RFC3339)
	}
	return "the next window opens at " + c.Opens.Format(time.RFC3339)
}
