//go:build integration

package main

import (
	"bytes"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/addonops/addonops/internal/testing/krmfntest"
)

// TestKptPipelineExample renders examples/kpt-pipeline/package with real kpt: its Kptfile pipeline
// runs addon-template generate, config-hash and addon-template validate as exec functions found on
// $PATH. The package after the first render must be expected/package, and a second render (the
// pipeline on its own output: the template renamed by config-hash, no plain manifests left) must
// succeed and change nothing.
func TestKptPipelineExample(t *testing.T) {
	bin := t.TempDir()
	if err := os.Symlink(tools.Function, filepath.Join(bin, "addon-template")); err != nil {
		t.Fatal(err)
	}
	if err := krmfntest.Build("", filepath.Join(bin, "config-hash"), "../config-hash"); err != nil {
		t.Fatal(err)
	}
	example := filepath.Join("examples", "kpt-pipeline")
	work := t.TempDir()
	pkg := filepath.Join(work, "package")
	for name, content := range krmfntest.ReadTree(t, filepath.Join(example, "package")) {
		krmfntest.WriteFile(t, filepath.Join(pkg, name), content)
	}

	render := func() string {
		t.Helper()
		cmd := exec.Command(tools.Kpt, "fn", "render", "package", "--allow-exec")
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("kpt fn render: %v\n%s", err, out.String())
		}
		return out.String()
	}

	log := render()
	first := krmfntest.ReadTree(t, pkg)
	expected := filepath.Join(example, "expected", "package")
	if *update {
		os.RemoveAll(expected)
		for name, content := range first {
			krmfntest.WriteFile(t, filepath.Join(expected, name), content)
		}
	} else if want := krmfntest.ReadTree(t, expected); !maps.Equal(first, want) {
		t.Errorf("package after kpt fn render differs from %s (-want +got):\n%s", expected, cmp.Diff(want, first))
	}
	if !strings.Contains(log, "ClusterRole hello-template-agent-hub stays out of AddOnTemplate hello-template") {
		t.Errorf("kpt did not report the hub-side ClusterRole kept out of the template:\n%s", log)
	}

	render()
	if again := krmfntest.ReadTree(t, pkg); !maps.Equal(again, first) {
		t.Errorf("a second kpt fn render changed the package (-first +second):\n%s", cmp.Diff(first, again))
	}
}
