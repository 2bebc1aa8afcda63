package krmfntest

import (
	"path/filepath"
	"slices"
	"strings"
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

func TestKptCandidate(t *testing.T) {
	for _, tc := range []struct {
		name, env, root      string
		wantPath, wantSource string
		wantHint             string
	}{
		{"KPT overrides", "/opt/kpt", "/repo", "/opt/kpt", "KPT=/opt/kpt", "fix or unset KPT"},
		{"repository's bin/kpt", "", "/repo", "/repo/bin/kpt", "/repo/bin/kpt", "make kpt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, source := kptCandidate(tc.env, tc.root)
			if path != tc.wantPath || source != tc.wantSource {
				t.Errorf("kptCandidate(%q, %q) = %q, %q; want %q, %q", tc.env, tc.root, path, source, tc.wantPath, tc.wantSource)
			}
			if hint := kptHint(source); !strings.Contains(hint, tc.wantHint) {
				t.Errorf("kptHint(%q) = %q, want it to mention %q", source, hint, tc.wantHint)
			}
		})
	}
}

func TestRepoRoot(t *testing.T) {
	root := t.TempDir()
	WriteFile(t, filepath.Join(root, "go.mod"), "module example.com/m\n")
	deep := filepath.Join(root, "functions", "fn")
	WriteFile(t, filepath.Join(deep, "main.go"), "")
	for _, dir := range []string{root, deep} {
		if got, err := repoRoot(dir); err != nil || got != root {
			t.Errorf("repoRoot(%s) = %q, %v; want %q", dir, got, err, root)
		}
	}
	if got, err := repoRoot(string(filepath.Separator)); err == nil {
		t.Errorf("repoRoot(/) = %q, want an error (no go.mod)", got)
	}
}

// TestKptPathMissing checks that a missing kpt fails with the fix in the message, found from the
// repository root whichever package folder the test runs in.
func TestKptPathMissing(t *testing.T) {
	root := t.TempDir()
	WriteFile(t, filepath.Join(root, "go.mod"), "module example.com/m\n")
	pkg := filepath.Join(root, "functions", "fn")
	WriteFile(t, filepath.Join(pkg, "main.go"), "")
	t.Chdir(pkg)

	t.Setenv("KPT", "")
	_, err := KptPath()
	if err == nil || !strings.Contains(err.Error(), filepath.Join(root, "bin", "kpt")) || !strings.Contains(err.Error(), "make kpt") {
		t.Errorf("KptPath without bin/kpt: %v; want the path and `make kpt` in the error", err)
	}

	WriteFile(t, filepath.Join(root, "bin", "kpt"), "")
	if got, err := KptPath(); err != nil || got != filepath.Join(root, "bin", "kpt") {
		t.Errorf("KptPath = %q, %v; want %s", got, err, filepath.Join(root, "bin", "kpt"))
	}

	t.Setenv("KPT", filepath.Join(root, "missing"))
	if _, err := KptPath(); err == nil || !strings.Contains(err.Error(), "KPT="+filepath.Join(root, "missing")) {
		t.Errorf("KptPath with a missing $KPT: %v; want it named in the error", err)
	}
}
