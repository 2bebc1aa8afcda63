package planner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// A batch that a maintenance window holds says when it may start (the window's opening, in its
// zone) and which window holds it, in every format, and the placement warns. The hub state is
// read on Sunday 2026-03-01 at 10:00 UTC (t0); the install is planned on it.
func TestMaintenanceWindowsHoldBatches(t *testing.T) {
	main := placementSpec{name: "main", strategy: `{type: Progressive, progressive: {maxConcurrency: 1}}`, groups: [][]string{{"c1", "c2"}}}
	slow := placementSpec{name: "main", strategy: `{type: Progressive, progressive: {maxConcurrency: 1, minSuccessTime: 1h}}`, groups: [][]string{{"c1", "c2"}}}
	other := placementSpec{name: "other", strategy: `{type: All}`, groups: [][]string{{"c3"}}}
	windows := func(w string) string { return soak0 + `, addonops.io/maintenance-windows: '` + w + `'` }

	for _, tc := range []struct {
		name       string
		placements []placementSpec
		windows    string
		// want is, per placement, its batches with their notBefore ("c1@2026-...|c2").
		want map[string]string
	}{
		{"no window", []placementSpec{main}, "",
			map[string]string{"default/main": "c1 | c2"}},
		{"a deny window active now holds the first batch until it ends", []placementSpec{main},
			`[{"kind": "deny", "schedule": "0 9 * * *", "duration": "3h"}]`,
			map[string]string{"default/main": "c1@2026-03-01T12:00:00Z | c2"}},
		{"a deny window that starts mid-rollout holds a later batch", []placementSpec{slow},
			`[{"kind": "deny", "schedule": "0 11 * * *", "duration": "2h"}]`,
			map[string]string{"default/main": "c1 | c2@2026-03-01T13:00:00Z"}},
		{"outside every allow window: the next opening, in the window's zone", []placementSpec{main},
			`[{"kind": "allow", "schedule": "0 22 * * *", "duration": "4h", "timeZone": "Europe/Berlin"}]`,
			map[string]string{"default/main": "c1@2026-03-01T22:00:00+01:00 | c2"}},
		{"a window for another placement holds only that one", []placementSpec{main, other},
			`[{"kind": "deny", "schedule": "0 9 * * *", "duration": "3h", "placements": ["default/other"]}]`,
			map[string]string{"default/main": "c1 | c2", "default/other": "c3@2026-03-01T12:00:00Z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ann := soak0
			if tc.windows != "" {
				ann = windows(tc.windows)
			}
			base := snapshotOf(t, append(hubObjects(tc.placements...), adc("cfg-v1", "1"))...)
			rep, _ := step(t, base, cma(ann, "cfg-v1", tc.placements...))
			for key, want := range tc.want {
				p := placementOf(t, rep, key)
				var got []string
				held := 0
				for _, b := range p.Batches {
					s := strings.Join(b.Clusters, ",")
					if b.NotBefore != "" {
						s += "@" + b.NotBefore
						held++
						if !strings.Contains(b.Window, "window 0") {
							t.Errorf("%s: batch %v: window %q does not name the window", key, b.Clusters, b.Window)
						}
					}
					got = append(got, s)
				}
				if strings.Join(got, " | ") != want || !p.Completes {
					var buf bytes.Buffer
					_ = rep.Write(&buf, FormatText)
					t.Fatalf("%s: batches %q (completes %t), want %q\n%s", key, strings.Join(got, " | "), p.Completes, want, buf.String())
				}
				warned := strings.Contains(strings.Join(p.Warnings, "\n"), fmt.Sprintf("maintenance windows hold %d of %d batches", held, len(p.Batches)))
				if warned != (held > 0) {
					t.Errorf("%s: %d batches held, warnings %q", key, held, p.Warnings)
				}
			}
		})
	}
}

func TestMaintenanceWindowInEveryFormat(t *testing.T) {
	main := placementSpec{name: "main", strategy: `{type: All}`, groups: [][]string{{"c1"}}}
	base := snapshotOf(t, append(hubObjects(main), adc("cfg-v1", "1"))...)
	ann := soak0 + `, addonops.io/maintenance-windows: '[{"kind": "deny", "schedule": "0 9 * * *", "duration": "3h"}]'`
	rep, _ := step(t, base, cma(ann, "cfg-v1", main))
	const why = `deny window 0 ("0 9 * * *" for 3h, UTC) is active`
	for format, want := range map[string]string{
		FormatText:     "    batch 1 (step 1, not before 2026-03-01T12:00:00Z: " + why + "): c1\n",
		FormatMarkdown: "- batch 1 (step 1, not before 2026-03-01T12:00:00Z: " + why + "): c1\n",
	} {
		var b bytes.Buffer
		if err := rep.Write(&b, format); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), want) {
			t.Errorf("%s output lacks %q:\n%s", format, want, b.String())
		}
	}
	var b bytes.Buffer
	if err := rep.Write(&b, FormatJSON); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if bt := back.Addons[0].Placements[0].Batches[0]; bt.NotBefore != "2026-03-01T12:00:00Z" || bt.Window != why {
		t.Fatalf("JSON batch %+v", bt)
	}
}
