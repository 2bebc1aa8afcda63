//go:build integration

package main

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/addonops/addonops/internal/testing/krmfntest"
)

// Golden tests. Every folder under testdata/ and examples/ is a case (layout and rules: see
// krmfntest.Golden); fnconfig.yaml is required, and besides the standalone, kustomize and kpt runs
//
//	render.args        optional: arguments of `addon-template render` (one per line), run on resources/*
//	expected/render.yaml, expected/render.stderr  the render command (with render.args)
//
// `go test -run TestGolden -update` rewrites expected/.

var update = flag.Bool("update", false, "rewrite the golden files under testdata/*/expected and examples/*/expected")

// tools are built once in TestMain: the function binary; kustomize is the go.mod tool, kpt is the
// repository's bin/kpt (`make kpt`) or $KPT.
var tools krmfntest.Tools

func TestMain(m *testing.M) { krmfntest.Main(m, "addon-template", &tools) }

func TestGolden(t *testing.T) {
	g := &krmfntest.Golden{Tools: tools, Update: *update}
	for _, dir := range krmfntest.CaseDirs(t, 10, "testdata/*", "examples/*") {
		t.Run(filepath.Base(filepath.Dir(dir))+"/"+filepath.Base(dir), func(t *testing.T) {
			c := g.LoadCase(t, dir)
			g.Check(t, c)
			if b, err := os.ReadFile(filepath.Join(dir, "render.args")); err == nil {
				t.Run("render", func(t *testing.T) { checkRender(t, g, c, strings.Fields(string(b))) })
			}
		})
	}
}

// checkRender runs `addon-template render ARGS resources/*` on the case.
func checkRender(t *testing.T, g *krmfntest.Golden, c krmfntest.Case, renderArgs []string) {
	args := slices.Concat([]string{"render"}, renderArgs, c.ResourcePaths())
	stdout, stderr, ok := krmfntest.Run(t, c.Dir, g.Function, args...)
	g.Compare(t, c, "render.stderr", stderr)
	g.CompareOutput(t, c, "render.yaml", stdout, stderr, ok)
}

// TestExampleKustomizations builds each example's own kustomization.yaml (the one users run after
// `make build`, with its relative exec path to bin/addon-template) and expects the example's
// kustomize.yaml.
func TestExampleKustomizations(t *testing.T) {
	dirs, err := filepath.Glob("examples/*/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no example kustomizations")
	}
	for _, k := range dirs {
		dir := filepath.Dir(k)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			root := t.TempDir()
			if err := os.MkdirAll(filepath.Join(root, "bin"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(tools.Function, filepath.Join(root, "bin", "addon-template")); err != nil {
				t.Fatal(err)
			}
			work := filepath.Join(root, "functions", "addon-template", dir)
			for name, content := range krmfntest.ReadTree(t, dir) {
				if !strings.HasPrefix(name, "expected"+string(filepath.Separator)) {
					krmfntest.WriteFile(t, filepath.Join(work, name), content)
				}
			}
			stdout, stderr, ok := tools.KustomizeBuild(t, work)
			if !ok {
				t.Fatalf("kustomize build failed: %s", stderr)
			}
			if want := krmfntest.ReadFile(t, filepath.Join(dir, "expected", "kustomize.yaml")); stdout != want {
				t.Errorf("output differs from expected/kustomize.yaml (-want +got):\n%s", cmp.Diff(want, stdout))
			}
		})
	}
}
