package maintwindow

import (
	"strings"
	"testing"
	"time"

	"github.com/addonops/addonops/internal/canary"
)

func mustParse(t *testing.T, raw string) Windows {
	t.Helper()
	ws, err := ParseValue(raw)
	if err != nil {
		t.Fatalf("ParseValue(%s): %v", raw, err)
	}
	return ws
}

func at(t *testing.T, zone, s string) time.Time {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	v, err := time.ParseInLocation("2006-01-02 15:04", s, loc)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		want      []string // every one is in the error
	}{
		{"not JSON", `{"kind": "deny"}`, []string{Annotation, "JSON list", Example}},
		{"trailing text", `[] x`, []string{"text after"}},
		{"unknown field", `[{"kind": "deny", "schedule": "0 1 * * *", "duration": "1h", "zone": "UTC"}]`, []string{`unknown field "zone"`}},
		{"kind", `[{"kind": "block", "schedule": "0 1 * * *", "duration": "1h"}]`, []string{"window 0", `kind "block"`, `"allow" or "deny"`}},
		{"cron fields", `[{"kind": "deny", "schedule": "0 1 * *", "duration": "1h"}]`, []string{"window 0", `schedule "0 1 * *"`, "five-field"}},
		{"cron range", `[{"kind": "deny", "schedule": "0 25 * * *", "duration": "1h"}]`, []string{`schedule "0 25 * * *"`}},
		{"seconds field", `[{"kind": "deny", "schedule": "0 0 1 * * *", "duration": "1h"}]`, []string{"five-field"}},
		{"zone in schedule", `[{"kind": "deny", "schedule": "CRON_TZ=Europe/Berlin 0 1 * * *", "duration": "1h"}]`, []string{"timeZone, not in the schedule"}},
		{"duration", `[{"kind": "deny", "schedule": "0 1 * * *", "duration": "2 hours"}]`, []string{`duration "2 hours"`, "positive"}},
		{"zero duration", `[{"kind": "deny", "schedule": "0 1 * * *", "duration": "0s"}]`, []string{`duration "0s"`}},
		{"negative duration", `[{"kind": "deny", "schedule": "0 1 * * *", "duration": "-1h"}]`, []string{`duration "-1h"`}},
		{"missing duration", `[{"kind": "deny", "schedule": "0 1 * * *"}]`, []string{`duration ""`}},
		{"zone", `[{"kind": "deny", "schedule": "0 1 * * *", "duration": "1h", "timeZone": "Europe/Bonn"}]`, []string{`timeZone "Europe/Bonn"`, "IANA"}},
		{"local zone", `[{"kind": "deny", "schedule": "0 1 * * *", "duration": "1h", "timeZone": "Local"}]`, []string{`timeZone "Local"`}},
		{"placement", `[{"kind": "deny", "schedule": "0 1 * * *", "duration": "1h", "placements": ["prod"]}]`, []string{`"prod" is not <namespace>/<placement>`}},
		{"second window named", `[{"kind": "deny", "schedule": "0 1 * * *", "duration": "1h"}, {"kind": "allow", "schedule": "x", "duration": "1h"}]`, []string{"window 1", `schedule "x"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseValue(tc.raw)
			if err == nil {
				t.Fatalf("ParseValue(%s): no error", tc.raw)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestParse(t *testing.T) {
	ws, err := Parse(map[string]string{})
	if err != nil || ws != nil {
		t.Fatalf("no annotation: %v, %v; want no window", ws, err)
	}
	if !ws.Open(time.Now()) {
		t.Error("no window: closed; want open")
	}
	ws = mustParse(t, `[{"kind": "deny", "schedule": "@daily", "duration": "1h", "placements": ["a/b"], "rollbacks": false}]`)
	w := ws[0]
	if w.Location().String() != "UTC" || w.AllowsRollbacks() || !w.AppliesTo(canary.PlacementKey{Namespace: "a", Name: "b"}) || w.AppliesTo(canary.PlacementKey{Namespace: "a", Name: "c"}) {
		t.Errorf("window %+v: want UTC, rollbacks false, placement a/b only", w)
	}
	if got, want := w.String(), `deny window 0 ("@daily" for 1h, UTC)`; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// TestActive covers a window's own activity: its start, its end, a window spanning midnight,
// overlapping starts, and the days a zone's clocks change.
func TestActive(t *testing.T) {
	for _, tc := range []struct {
		name, window, zone, now string
		want                    bool
	}{
		{"at its start", `{"kind": "deny", "schedule": "0 22 * * *", "duration": "2h"}`, "UTC", "2026-06-01 22:00", true},
		{"just before its start", `{"kind": "deny", "schedule": "0 22 * * *", "duration": "2h"}`, "UTC", "2026-06-01 21:59", false},
		{"spanning midnight, after it", `{"kind": "deny", "schedule": "0 22 * * *", "duration": "4h"}`, "UTC", "2026-06-02 01:30", true},
		{"at its end", `{"kind": "deny", "schedule": "0 22 * * *", "duration": "4h"}`, "UTC", "2026-06-02 02:00", false},
		{"weekend freeze on Sunday", `{"kind": "deny", "schedule": "0 18 * * 5", "duration": "63h"}`, "UTC", "2026-06-07 12:00", true},
		{"weekend freeze ended Monday", `{"kind": "deny", "schedule": "0 18 * * 5", "duration": "63h"}`, "UTC", "2026-06-08 09:00", false},
		{"in its zone", `{"kind": "allow", "schedule": "0 9 * * *", "duration": "1h", "timeZone": "America/New_York"}`, "America/New_York", "2026-06-01 09:30", true},
		{"not at that hour in UTC", `{"kind": "allow", "schedule": "0 9 * * *", "duration": "1h", "timeZone": "America/New_York"}`, "UTC", "2026-06-01 09:30", false},
		{"duration longer than the period", `{"kind": "deny", "schedule": "0 * * * *", "duration": "90m"}`, "UTC", "2026-06-01 10:59", true},
		// Europe/Berlin springs forward on 2026-03-29 at 02:00 to 03:00: robfig/cron never fires
		// a time that does not exist that day, so a window starting at 02:30 skips the day.
		{"spring forward: 02:30 does not exist", `{"kind": "allow", "schedule": "30 2 * * *", "duration": "1h", "timeZone": "Europe/Berlin"}`, "Europe/Berlin", "2026-03-29 03:15", false},
		{"spring forward: the next day", `{"kind": "allow", "schedule": "30 2 * * *", "duration": "1h", "timeZone": "Europe/Berlin"}`, "Europe/Berlin", "2026-03-30 03:15", true},
		// A duration is elapsed time: a window from 01:00 for 3h on the day the clocks spring
		// forward ends at 05:00 wall time.
		{"spring forward: 3h from 01:00 holds 04:30", `{"kind": "deny", "schedule": "0 1 * * *", "duration": "3h", "timeZone": "Europe/Berlin"}`, "Europe/Berlin", "2026-03-29 04:30", true},
		{"a normal day: 3h from 01:00 ended at 04:00", `{"kind": "deny", "schedule": "0 1 * * *", "duration": "3h", "timeZone": "Europe/Berlin"}`, "Europe/Berlin", "2026-03-28 04:30", false},
		// Falling back on 2026-10-25 at 03:00 to 02:00, 02:30 comes twice and the window starts
		// at both.
		{"fall back: the second 02:30", `{"kind": "deny", "schedule": "30 2 * * *", "duration": "30m", "timeZone": "Europe/Berlin"}`, "UTC", "2026-10-25 01:45", true},
		{"fall back: between the two", `{"kind": "deny", "schedule": "30 2 * * *", "duration": "20m", "timeZone": "Europe/Berlin"}`, "UTC", "2026-10-25 01:10", false},
		{"never fires", `{"kind": "deny", "schedule": "0 0 30 2 *", "duration": "24h"}`, "UTC", "2026-03-02 12:00", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := mustParse(t, "["+tc.window+"]")
			if got := ws[0].Active(at(t, tc.zone, tc.now)); got != tc.want {
				t.Errorf("Active(%s %s) = %v, want %v", tc.now, tc.zone, got, tc.want)
			}
		})
	}
}

// TestOpenAndNextOpen covers Argo CD's rule over several windows and when the next one opens.
func TestOpenAndNextOpen(t *testing.T) {
	const (
		nightly   = `{"kind": "allow", "schedule": "0 22 * * *", "duration": "4h"}`
		friday    = `{"kind": "deny", "schedule": "0 18 * * 5", "duration": "63h"}`
		lunch     = `{"kind": "deny", "schedule": "0 12 * * *", "duration": "1h"}`
		berlin    = `{"kind": "allow", "schedule": "0 1 * * *", "duration": "2h", "timeZone": "Europe/Berlin"}`
		always    = `{"kind": "deny", "schedule": "* * * * *", "duration": "1h"}`
		neverAlow = `{"kind": "allow", "schedule": "0 0 30 2 *", "duration": "1h"}`
	)
	for _, tc := range []struct {
		name, windows, now string
		open               bool
		next               string // UTC; "" when none within the horizon
	}{
		{"no window", ``, "2026-06-03 10:00", true, "2026-06-03 10:00"},
		{"outside the allow window", nightly, "2026-06-03 10:00", false, "2026-06-03 22:00"},
		{"inside it, past midnight", nightly, "2026-06-04 01:00", true, "2026-06-04 01:00"},
		{"a deny window alone, outside it", lunch, "2026-06-03 10:00", true, "2026-06-03 10:00"},
		{"a deny window alone, inside it", lunch, "2026-06-03 12:30", false, "2026-06-03 13:00"},
		// Wednesday 2026-06-03; Friday 2026-06-05 18:00 to Monday 2026-06-08 09:00 is denied.
		{"deny over allow: Saturday night", nightly + "," + friday, "2026-06-06 23:00", false, "2026-06-08 22:00"},
		{"deny over allow: Friday night", friday + "," + nightly, "2026-06-05 23:00", false, "2026-06-08 22:00"},
		{"deny and allow: Thursday night", nightly + "," + friday, "2026-06-04 23:00", true, "2026-06-04 23:00"},
		// The allow window opens at 22:00 while the deny window ends later, at 09:00 on Monday:
		// the first moment both agree is 22:00 on Monday.
		{"overlapping deny that ends inside an allow window", `{"kind": "allow", "schedule": "0 8 * * 1", "duration": "4h"},` + friday, "2026-06-06 10:00", false, "2026-06-08 09:00"},
		// Europe/Berlin 01:00 is 23:00 UTC in summer and 00:00 UTC in winter.
		{"zone: summer", berlin, "2026-06-03 12:00", false, "2026-06-03 23:00"},
		{"zone: winter", berlin, "2026-12-03 12:00", false, "2026-12-04 00:00"},
		// 2026-10-25 01:00 is still summer time in Berlin (the clocks go back at 03:00); the next
		// day's 01:00 is winter time.
		{"zone: the night of the change back", berlin, "2026-10-24 22:30", false, "2026-10-24 23:00"},
		{"zone: after the change back", berlin, "2026-10-25 02:00", false, "2026-10-26 00:00"},
		{"never open", always, "2026-06-03 12:00", false, ""},
		{"an allow window that never fires", neverAlow, "2026-06-03 12:00", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := mustParse(t, "["+tc.windows+"]")
			now := at(t, "UTC", tc.now)
			if got := ws.Open(now); got != tc.open {
				t.Errorf("Open(%s) = %v, want %v", tc.now, got, tc.open)
			}
			next, ok := ws.NextOpen(now)
			if tc.next == "" {
				if ok {
					t.Errorf("NextOpen(%s) = %s; want none", tc.now, next)
				}
				return
			}
			if want := at(t, "UTC", tc.next); !ok || !next.Equal(want) {
				t.Errorf("NextOpen(%s) = %s, %v; want %s", tc.now, next.UTC(), ok, want)
			}
		})
	}
}

func TestFor(t *testing.T) {
	ws := mustParse(t, `[
		{"kind": "deny", "schedule": "@daily", "duration": "1h"},
		{"kind": "deny", "schedule": "@daily", "duration": "1h", "placements": ["ns/prod"], "rollbacks": false},
		{"kind": "allow", "schedule": "@daily", "duration": "1h", "placements": ["ns/dev"], "rollbacks": true}]`)
	prod, dev := canary.PlacementKey{Namespace: "ns", Name: "prod"}, canary.PlacementKey{Namespace: "ns", Name: "dev"}
	for _, tc := range []struct {
		name     string
		k        canary.PlacementKey
		rollback bool
		want     []int
	}{
		{"prod forward", prod, false, []int{0, 1}},
		{"prod rollback", prod, true, []int{1}},
		{"dev forward", dev, false, []int{0, 2}},
		{"dev rollback", dev, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []int
			for _, w := range ws.For(tc.k, tc.rollback) {
				got = append(got, w.Index)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("For(%s, %v) = windows %v, want %v", tc.k, tc.rollback, got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("For(%s, %v) = windows %v, want %v", tc.k, tc.rollback, got, tc.want)
				}
			}
		})
	}
}

func TestAtNamesTheWindow(t *testing.T) {
	ws := mustParse(t, `[{"kind": "allow", "schedule": "0 22 * * *", "duration": "4h"}, {"kind": "deny", "schedule": "0 12 * * *", "duration": "1h"}]`)
	st := ws.At(at(t, "UTC", "2026-06-03 12:10"))
	if st.Open || st.Deny == nil || st.Deny.Index != 1 {
		t.Errorf("At(12:10) = %+v; want closed by deny window 1", st)
	}
	st = ws.At(at(t, "UTC", "2026-06-03 15:00"))
	if st.Open || st.Deny != nil || st.Active != nil || len(st.Allow) != 1 {
		t.Errorf("At(15:00) = %+v; want closed, outside allow window 0", st)
	}
	st = ws.At(at(t, "UTC", "2026-06-03 23:00"))
	if !st.Open || st.Active == nil || st.Active.Index != 0 {
		t.Errorf("At(23:00) = %+v; want open in allow window 0", st)
	}
}

func TestClosed(t *testing.T) {
	ws := mustParse(t, `[{"kind": "allow", "schedule": "0 22 * * *", "duration": "4h", "timeZone": "Europe/Berlin"}, {"kind": "deny", "schedule": "0 12 * * *", "duration": "1h", "timeZone": "America/New_York"}]`)
	for _, tc := range []struct {
		now       string // UTC
		closed    bool
		why, when string
	}{
		{"2026-06-03 16:30", true, `deny window 1 ("0 12 * * *" for 1h, America/New_York) is active`, "the next window opens at 2026-06-03T16:00:00-04:00"}, // 20:00 UTC, in the deny window's zone
		{"2026-06-03 10:00", true, `no allow window is active (allow window 0 ("0 22 * * *" for 4h, Europe/Berlin))`, "the next window opens at 2026-06-03T22:00:00+02:00"},
		{"2026-06-03 21:00", false, "", ""},
	} {
		closed, c := ws.Closed(at(t, "UTC", tc.now))
		if closed != tc.closed || closed && (c.Why != tc.why || c.When() != tc.when) {
			t.Errorf("Closed(%s) = %v, %q, %q; want %v, %q, %q", tc.now, closed, c.Why, c.When(), tc.closed, tc.why, tc.when)
		}
	}
	never := mustParse(t, `[{"kind": "deny", "schedule": "* * * * *", "duration": "1h"}]`)
	if closed, c := never.Closed(at(t, "UTC", "2026-06-03 10:00")); !closed || !strings.HasPrefix(c.When(), "no window opens before ") {
		t.Errorf("a deny window always active: %v, %q; want closed, no window opens", closed, c.When())
	}
}
