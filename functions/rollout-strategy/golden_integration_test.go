//go:build integration

package main

import (
	"flag"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/addonops/addonops/internal/testing/krmfntest"
)

// Golden tests: every folder under testdata/ and examples/ is a case (layout and rules: see
// krmfntest.Golden; fnconfig.yaml is optional), run standalone, as a kustomize exec transformer
// and under `kpt fn eval --exec`, each twice on its own output. `go test -run TestGolden -update`
// rewrites expected/.

var update = flag.Bool("update", false, "rewrite the golden files under testdata/*/expected and examples/*/expected")

// tools are built once in TestMain: the function binary, and the real kustomize and kpt.
var tools krmfntest.Tools

func TestMain(m *testing.M) { krmfntest.Main(m, "rollout-strategy", &tools) }

const defaultConfig = "apiVersion: addonops.io/v1alpha1\nkind: RolloutStrategyFunction\nmetadata:\n  name: rollout-strategy\n"

func golden() *krmfntest.Golden {
	return &krmfntest.Golden{Tools: tools, Update: *update, DefaultConfig: defaultConfig}
}

func TestGolden(t *testing.T) {
	g := golden()
	for _, dir := range krmfntest.CaseDirs(t, 12, "testdata/*", "examples/*") {
		t.Run(filepath.Base(filepath.Dir(dir))+"/"+filepath.Base(dir), func(t *testing.T) {
			c := g.LoadCase(t, dir)
			g.Check(t, c)
			if strings.HasPrefix(filepath.Base(dir), "error-") {
				t.Run("fails", func(t *testing.T) {
					if _, err := os.Stat(filepath.Join(dir, "expected", "standalone.yaml")); err == nil {
						t.Fatal("an error-* case must fail, but it has an expected output")
					}
				})
			}
		})
	}
}

// TestPassThroughIsByteForByte: input already in OCM's vocabulary comes out as it went in.
func TestPassThroughIsByteForByte(t *testing.T) {
	dir := "testdata/ocm-passthrough"
	in := krmfntest.ReadFile(t, filepath.Join(dir, "resources", "hub.yaml"))
	out, stderr, ok := krmfntest.Run(t, dir, tools.Function, "resources/hub.yaml")
	if !ok || stderr != "" || out != in {
		t.Fatalf("ok=%t stderr=%q, output differs from input:\n%s", ok, stderr, cmp.Diff(in, out))
	}
}

// TestExampleKustomizations builds each example's own kustomization.yaml (the one users run after
// `make build`, with its relative exec path to bin/rollout-strategy) and expects the example's
// kustomize.yaml.
func TestExampleKustomizations(t *testing.T) {
	dirs, err := filepath.Glob("examples/*/kustomization.yaml")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no example kustomizations: %v", err)
	}
	for _, k := range dirs {
		dir := filepath.Dir(k)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			root := t.TempDir()
			if err := os.MkdirAll(filepath.Join(root, "bin"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(tools.Function, filepath.Join(root, "bin", "rollout-strategy")); err != nil {
				t.Fatal(err)
			}
			work := filepath.Join(root, "functions", "rollout-strategy", dir)
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

// TestKptRender runs the function from a Kptfile pipeline, as the README shows, with
// `kpt fn render --allow-exec`: the package comes out as `kpt fn eval` leaves it (the example's
// expected/kpt), and a second render changes nothing.
func TestKptRender(t *testing.T) {
	const example = "examples/seed-canary"
	work := t.TempDir()
	pkg := filepath.Join(work, "pkg")
	for name, content := range krmfntest.ReadTree(t, filepath.Join(example, "resources")) {
		krmfntest.WriteFile(t, filepath.Join(pkg, name), content)
	}
	krmfntest.WriteFile(t, filepath.Join(pkg, "Kptfile"), `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: pkg
  annotations:
    config.kubernetes.io/local-config: "true"
pipeline:
  mutators:
  - exec: `+tools.Function+`
`)
	if _, stderr, ok := krmfntest.Run(t, work, tools.Kpt, "fn", "render", "pkg", "--allow-exec"); !ok {
		t.Fatalf("kpt fn render failed:\n%s", stderr)
	}
	rendered := krmfntest.ReadTree(t, pkg)
	got := maps.Clone(rendered)
	delete(got, "Kptfile")
	if want := krmfntest.ReadTree(t, filepath.Join(example, "expected", "kpt")); !maps.Equal(got, want) {
		t.Errorf("kpt fn render differs from %s/expected/kpt (-want +got):\n%s", example, cmp.Diff(want, got))
	}
	if _, stderr, ok := krmfntest.Run(t, work, tools.Kpt, "fn", "render", "pkg", "--allow-exec"); !ok {
		t.Fatalf("second kpt fn render failed:\n%s", stderr)
	}
	if again := krmfntest.ReadTree(t, pkg); !maps.Equal(again, rendered) {
		t.Fatalf("second render changed the package:\n%s", cmp.Diff(rendered, again))
	}
}
