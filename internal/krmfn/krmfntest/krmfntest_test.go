package krmfntest

import (
	"path/filepath"
	"slices"
	"testing"
)

// The runners (CheckStandalone, CheckKustomize, CheckKpt) are exercised by the golden tests of
// functions/config-hash and functions/addon-template, with the real binaries; these tests cover
// the pure parts.

func TestCaseDirsAndLoadCase(t *testing.T) {
	root := t.TempDir()
	WriteFile(t, filepath.Join(root, "cases", "b", "resources", "2.yaml"), "")
	WriteFile(t, filepath.Join(root, "cases", "b", "resources", "1.yaml"), "")
	WriteFile(t, filepath.Join(root, "cases", "b", "fnconfig.yaml"), "")
	WriteFile(t, filepath.Join(root, "cases", "a", "resources", "x.yaml"), "")
	WriteFile(t, filepath.Join(root, "cases", "not-a-case", "README"), "")
	WriteFile(t, filepath.Join(root, "more", "c", "resources", "y.yaml"), "")

	dirs := CaseDirs(t, 3, filepath.Join(root, "cases", "*"), filepath.Join(root, "more", "*"))
	want := []string{filepath.Join(root, "cases", "a"), filepath.Join(root, "cases", "b"), filepath.Join(root, "more", "c")}
	if !slices.Equal(dirs, want) {
		t.Errorf("CaseDirs = %q, want %q", dirs, want)
	}

	g := &Golden{Tools: Tools{Name: "fn"}, DefaultConfig: "kind: X\n"}
	b := g.LoadCase(t, want[1])
	if !slices.Equal(b.Resources, []string{"1.yaml", "2.yaml"}) || b.FnConfig != filepath.Join(want[1], "fnconfig.yaml") {
		t.Errorf("case b = %+v, want sorted resources and its fnconfig.yaml", b)
	}
	if got := b.ResourcePaths(); !slices.Equal(got, []string{"resources/1.yaml", "resources/2.yaml"}) {
		t.Errorf("ResourcePaths = %q", got)
	}
	if a := g.LoadCase(t, want[0]); a.FnConfig != "" {
		t.Errorf("case a without fnconfig.yaml: FnConfig = %q, want none", a.FnConfig)
	}
}

func TestNormalize(t *testing.T) {
	g := &Golden{Tools: Tools{Name: "config-hash", Function: "/tmp/config-hash-test-1/config-hash"}}
	got := g.Normalize("[RUNNING] \"exec: /tmp/config-hash-test-1/config-hash\" on /tmp/w1/pkg in 1.25s\n[PASS] in 310ms\n", "/tmp/w1")
	want := "[RUNNING] \"exec: config-hash\" on $WORK/pkg in <duration>\n[PASS] in <duration>\n"
	if got != want {
		t.Errorf("Normalize = %q, want %q", got, want)
	}
}
