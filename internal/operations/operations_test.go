package operations

import (
	"strings"
	"testing"

	"github.com/addonops/addonops/internal/canary"
)

var (
	prod    = canary.PlacementKey{Namespace: "default", Name: "prod"}
	canaryK = canary.PlacementKey{Namespace: "default", Name: "canary"}
)

func TestParse(t *testing.T) {
	cases := []struct {
		name      string
		ann       map[string]string
		paused    []canary.PlacementKey
		notPaused []canary.PlacementKey
		problem   string
		check     func(t *testing.T, r Requests)
	}{
		{name: "nothing", ann: nil, notPaused: []canary.PlacementKey{prod}},
		{name: "pause all", ann: map[string]string{PauseAnnotation: "*"}, paused: []canary.PlacementKey{prod, canaryK}},
		{name: "pause one", ann: map[string]string{PauseAnnotation: "default/prod"}, paused: []canary.PlacementKey{prod}, notPaused: []canary.PlacementKey{canaryK}},
		{name: "pause two with spaces", ann: map[string]string{PauseAnnotation: "default/prod, default/canary"}, paused: []canary.PlacementKey{prod, canaryK}},
		{name: "bad pause pauses all", ann: map[string]string{PauseAnnotation: "prod"}, paused: []canary.PlacementKey{prod, canaryK}, problem: "every placement is paused"},
		{name: "promote", ann: map[string]string{PromoteAnnotation: `{"default/prod": "abc123"}`}, check: func(t *testing.T, r Requests) {
			if r.Promote[prod] != "abc123" {
				t.Errorf("promote: %v", r.Promote)
			}
		}},
		{name: "window override", ann: map[string]string{WindowOverrideAnnotation: `{"default/prod": "abc123"}`}, check: func(t *testing.T, r Requests) {
			if r.WindowOverride[prod] != "abc123" || len(r.WindowOverride) != 1 {
				t.Errorf("window override: %v", r.WindowOverride)
			}
		}},
		{name: "bad window override ignored", ann: map[string]string{WindowOverrideAnnotation: `["default/prod"]`}, problem: "annotation addonops.io/window-override", check: func(t *testing.T, r Requests) {
			if len(r.WindowOverride) != 0 {
				t.Errorf("window override: %v", r.WindowOverride)
			}
		}},
		{name: "bad retry ignored", ann: map[string]string{RetryAnnotation: `not json`}, problem: "annotation addonops.io/retry", check: func(t *testing.T, r Requests) {
			if len(r.Retry) != 0 {
				t.Errorf("retry: %v", r.Retry)
			}
		}},
		{name: "empty abort value", ann: map[string]string{AbortAnnotation: `{"default/prod": ""}`}, problem: "empty value"},
		{name: "auto-abort", ann: map[string]string{AutoAbortAnnotation: "true"}, check: func(t *testing.T, r Requests) {
			if !r.AutoAbort {
				t.Errorf("auto-abort off")
			}
		}},
		{name: "auto-abort typo", ann: map[string]string{AutoAbortAnnotation: "yes please"}, problem: "automatic abort is off"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := Parse(tc.ann)
			for _, k := range tc.paused {
				if !r.IsPaused(k) {
					t.Errorf("%s not paused", k)
				}
			}
			for _, k := range tc.notPaused {
				if r.IsPaused(k) {
					t.Errorf("%s paused", k)
				}
			}
			got := strings.Join(r.Problems, "; ")
			if tc.problem == "" && got != "" || tc.problem != "" && !strings.Contains(got, tc.problem) {
				t.Errorf("problems %q, want %q", got, tc.problem)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

func TestFormatRoundTrip(t *testing.T) {
	m := map[canary.PlacementKey]string{prod: "v1", canaryK: "v2"}
	raw := FormatMap(m)
	if raw != `{"default/canary":"v2","default/prod":"v1"}` {
		t.Errorf("FormatMap: %s", raw)
	}
	back, err := ParseMap(raw)
	if err != nil || len(back) != 2 || back[prod] != "v1" {
		t.Errorf("ParseMap: %v %v", back, err)
	}
	p := FormatPause(false, map[canary.PlacementKey]bool{prod: true, canaryK: true})
	if p != "default/canary,default/prod" {
		t.Errorf("FormatPause: %s", p)
	}
	all, keys, err := ParsePause(p)
	if all || len(keys) != 2 || err != nil {
		t.Errorf("ParsePause: %v %v %v", all, keys, err)
	}
}

// Pausing and resuming one placement, as `addonops pause|resume --placement` and the demo do.
func TestPauseAndResumePlacement(t *testing.T) {
	prod := canary.PlacementKey{Namespace: "default", Name: "prod"}
	other := canary.PlacementKey{Namespace: "default", Name: "canary"}
	installed := []canary.PlacementKey{prod, other}
	for _, tc := range []struct {
		name    string
		raw     string
		present bool
		pause   bool
		value   string
		changed bool
		did     string
		err     string
	}{
		{name: "pause", pause: true, value: "default/prod", changed: true, did: "paused placement default/prod"},
		{name: "pause next to another", raw: "default/canary", present: true, pause: true, value: "default/canary,default/prod", changed: true},
		{name: "already paused", raw: "default/prod", present: true, pause: true, value: "default/prod", did: "already paused"},
		{name: "every placement paused", raw: "*", present: true, pause: true, value: "*", did: "already paused"},
		{name: "resume the only one", raw: "default/prod", present: true, value: "(not set)", changed: true, did: "no placement is paused any more"},
		{name: "resume one of two", raw: "default/canary,default/prod", present: true, value: "default/canary", changed: true, did: "resumed placement default/prod"},
		{name: "resume what is not paused", value: "(not set)", did: "was not paused"},
		{name: "resume another's pause", raw: "default/canary", present: true, value: "default/canary", did: "was not paused"},
		{name: "resume one while all are paused", raw: "*", present: true, value: "default/canary", changed: true, did: "the other install placements"},
		{name: "a value that does not parse", raw: "prod", present: true, pause: true, err: "does not parse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var edit Edit
			var err error
			if tc.pause {
				edit, err = PausePlacement("hello", tc.raw, tc.present, prod)
			} else {
				edit, err = ResumePlacement("hello", tc.raw, tc.present, prod, installed)
			}
			value, did := edit.Value, edit.Did
			changed := !(value == nil && !tc.present || value != nil && tc.present && *value == tc.raw)
			if !changed {
				did = edit.Noop
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || valueOf(value) != tc.value || changed != tc.changed || !strings.Contains(did, tc.did) {
				t.Errorf("edit = %s, %v, %q, %v; want %s, %v, …%q…", valueOf(value), changed, did, err, tc.value, tc.changed, tc.did)
			}
			// What the controller reads from it.
			if value != nil {
				r := Parse(map[string]string{PauseAnnotation: *value})
				if r.IsPaused(prod) != tc.pause && tc.changed {
					t.Errorf("the controller reads %s as prod paused=%v, want %v", *value, r.IsPaused(prod), tc.pause)
				}
			}
		})
	}
}
