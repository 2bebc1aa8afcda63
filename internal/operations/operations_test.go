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
