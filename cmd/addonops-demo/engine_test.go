package main

import (
	"strings"
	"testing"
)

func TestCheckEngine(t *testing.T) {
	empty := t.TempDir()
	for _, c := range []struct {
		engine string
		want   []string // in the error; none: no error
	}{
		{engine: ""},
		{engine: engineNone},
		{engine: "kubectl", want: []string{`--engine "kubectl"`, "none", "flux", "argocd"}},
		{engine: engineFlux, want: []string{"bin/flux-source-controller", "bin/flux-kustomize-controller", "bin/flux", "bin/oci-registry", "make flux"}},
		{engine: engineArgoCD, want: []string{"bin/argocd", "make argocd"}},
	} {
		err := checkEngine(c.engine, empty)
		if len(c.want) == 0 {
			if err != nil {
				t.Errorf("checkEngine(%q): %v, want no error", c.engine, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("checkEngine(%q) in a tree without binaries: no error, want one naming %q", c.engine, c.want)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("checkEngine(%q): %q does not say %q", c.engine, err, w)
			}
		}
	}
	// The command line refuses an unknown engine before anything starts.
	if code := runCommand([]string{"--engine", "kubectl"}); code != exitError {
		t.Errorf("--engine kubectl: exit code %d, want %d", code, exitError)
	}
}

func TestHolds(t *testing.T) {
	want := map[string]any{"a": "x", "n": int64(2), "l": []any{map[string]any{"k": "v"}}}
	for _, c := range []struct {
		live any
		ok   bool
	}{
		{map[string]any{"a": "x", "n": int64(2), "l": []any{map[string]any{"k": "v", "default": true}}, "extra": 1}, true},
		{map[string]any{"a": "x", "n": int64(3), "l": []any{map[string]any{"k": "v"}}}, false},         // another value
		{map[string]any{"a": "x", "n": int64(2)}, false},                                               // a field missing
		{map[string]any{"a": "x", "n": int64(2), "l": []any{map[string]any{"k": "v"}, "more"}}, false}, // a longer list
		{nil, false},
	} {
		if got := holds(c.live, want); got != c.ok {
			t.Errorf("holds(%v, %v) = %v, want %v", c.live, want, got, c.ok)
		}
	}
	if !holds(map[string]string{"a": "1", "b": "2"}, map[string]string{"a": "1"}) || holds(map[string]string{"a": "2"}, map[string]string{"a": "1"}) ||
		holds(map[string]string(nil), map[string]string{"a": "1"}) {
		t.Error("holds on annotations: want extra keys allowed, other values and missing keys refused")
	}
}
