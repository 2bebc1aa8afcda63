package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Golden tests. Every folder under testdata/ and examples/ is a case:
//
//	resources/*.yaml   the input package
//	fnconfig.yaml      the functionConfig
//	render.args        optional: arguments of `addon-template render` (one per line), run on resources/*
//	expected/          what each runner must produce:
//	  standalone.yaml, standalone.stderr  `addon-template --config fnconfig.yaml resources/*.yaml`
//	  kustomize.yaml, kustomize.stderr    `kustomize build --enable-alpha-plugins --enable-exec` with the
//	                                      function as an exec transformer
//	  kpt/..., kpt.stderr                 the package after `kpt fn eval --exec --fn-config`
//	  render.yaml, render.stderr          the render command (with render.args)
//
// A runner without its .yaml (or kpt/) expectation must fail: exit non-zero, print nothing on
// stdout, leave the package untouched. Every successful run is repeated on its own output and must
// give the same bytes (kpt edits in place). `go test -run TestGolden -update` rewrites expected/.

var update = flag.Bool("update", false, "rewrite the golden files under testdata/*/expected and examples/*/expected")

// Built once in TestMain: the function binary; kustomize is the go.mod tool, kpt is /usr/bin/kpt.
var fnBinary, kustomizeBinary, kptBinary string

func TestMain(m *testing.M) {
	flag.Parse()
	code, err := setup(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(code)
}

func setup(m *testing.M) (int, error) {
	dir, err := os.MkdirTemp("", "addon-template-test-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	fnBinary = filepath.Join(dir, "addon-template")
	if out, err := exec.Command("go", "build", "-o", fnBinary, ".").CombinedOutput(); err != nil {
		return 0, fmt.Errorf("building addon-template: %v\n%s", err, out)
	}
	// `go tool -n` builds the pinned kustomize (cached) and prints its path.
	out, err := exec.Command("go", "tool", "-n", "kustomize").Output()
	if err != nil {
		return 0, fmt.Errorf("locating kustomize (go tool -n kustomize): %v", err)
	}
	kustomizeBinary = strings.TrimSpace(string(out))
	kptBinary = "/usr/bin/kpt"
	if p := os.Getenv("KPT"); p != "" {
		kptBinary = p
	}
	if _, err := os.Stat(kptBinary); err != nil {
		return 0, fmt.Errorf("kpt is needed for the golden tests (set KPT to its path): %v", err)
	}
	return m.Run(), nil
}

type goldenCase struct {
	dir        string
	resources  []string // file names under resources/
	renderArgs []string
}

func loadCase(t *testing.T, dir string) goldenCase {
	t.Helper()
	c := goldenCase{dir: dir}
	entries, err := os.ReadDir(filepath.Join(dir, "resources"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		c.resources = append(c.resources, e.Name())
	}
	slices.Sort(c.resources)
	if b, err := os.ReadFile(filepath.Join(dir, "render.args")); err == nil {
		c.renderArgs = strings.Fields(string(b))
	}
	return c
}

func TestGolden(t *testing.T) {
	var dirs []string
	for _, pattern := range []string{"testdata/*/resources", "examples/*/resources"} {
		d, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d...)
	}
	if len(dirs) < 10 {
		t.Fatalf("only %d golden cases found", len(dirs))
	}
	for _, d := range dirs {
		dir := filepath.Dir(d)
		t.Run(filepath.Base(filepath.Dir(dir))+"/"+filepath.Base(dir), func(t *testing.T) {
			c := loadCase(t, dir)
			t.Run("standalone", func(t *testing.T) { c.standalone(t) })
			t.Run("kustomize", func(t *testing.T) { c.kustomize(t) })
			t.Run("kpt", func(t *testing.T) { c.kpt(t) })
			if c.renderArgs != nil {
				t.Run("render", func(t *testing.T) { c.render(t) })
			}
		})
	}
}

// runCmd executes a command and returns stdout, stderr and whether it succeeded.
func runCmd(t *testing.T, dir, name string, args ...string) (string, string, bool) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("running %s: %v", name, err)
	}
	return stdout.String(), stderr.String(), err == nil
}

func (c goldenCase) standalone(t *testing.T) {
	args := []string{"--config", "fnconfig.yaml"}
	for _, r := range c.resources {
		args = append(args, filepath.Join("resources", r))
	}
	stdout, stderr, ok := runCmd(t, c.dir, fnBinary, args...)
	c.compare(t, "standalone.stderr", stderr)
	if !c.expectSuccess(t, "standalone.yaml", ok, stderr) {
		if stdout != "" {
			t.Fatalf("failed run wrote output:\n%s", stdout)
		}
		return
	}
	c.compare(t, "standalone.yaml", stdout)
	tmp := t.TempDir()
	writeFile(t, filepath.Join(tmp, "out.yaml"), stdout)
	copyFile(t, filepath.Join(c.dir, "fnconfig.yaml"), filepath.Join(tmp, "fnconfig.yaml"))
	again, stderr, ok := runCmd(t, tmp, fnBinary, "--config", "fnconfig.yaml", "out.yaml")
	if !ok || again != stdout {
		t.Fatalf("second run on its own output differs (ok=%t, stderr %s):\n%s", ok, stderr, cmp.Diff(stdout, again))
	}
}

func (c goldenCase) render(t *testing.T) {
	args := append([]string{"render"}, c.renderArgs...)
	for _, r := range c.resources {
		args = append(args, filepath.Join("resources", r))
	}
	stdout, stderr, ok := runCmd(t, c.dir, fnBinary, args...)
	c.compare(t, "render.stderr", stderr)
	if !c.expectSuccess(t, "render.yaml", ok, stderr) {
		if stdout != "" {
			t.Fatalf("failed run wrote output:\n%s", stdout)
		}
		return
	}
	c.compare(t, "render.yaml", stdout)
}

// writeKustomization lays out a kustomization in dir that lists resources and the function as an
// exec transformer, configured by the case's functionConfig.
func (c goldenCase) writeKustomization(t *testing.T, dir string, resources []string) {
	t.Helper()
	node, err := yaml.Parse(readFile(t, filepath.Join(c.dir, "fnconfig.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	if err := node.PipeE(yaml.SetAnnotation("config.kubernetes.io/function", "exec:\n  path: "+fnBinary+"\n")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "fnconfig.yaml"), node.MustString())
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
	for _, r := range resources {
		k += "- " + r + "\n"
	}
	k += "transformers:\n- fnconfig.yaml\n"
	writeFile(t, filepath.Join(dir, "kustomization.yaml"), k)
}

func (c goldenCase) kustomize(t *testing.T) {
	work := t.TempDir()
	var resources []string
	for _, r := range c.resources {
		copyFile(t, filepath.Join(c.dir, "resources", r), filepath.Join(work, "resources", r))
		resources = append(resources, "resources/"+r)
	}
	c.writeKustomization(t, work, resources)
	stdout, stderr, ok := runCmd(t, work, kustomizeBinary, "build", "--enable-alpha-plugins", "--enable-exec", ".")
	c.compare(t, "kustomize.stderr", normalize(stderr, work))
	if !c.expectSuccess(t, "kustomize.yaml", ok, stderr) {
		if stdout != "" {
			t.Fatalf("failed build wrote output:\n%s", stdout)
		}
		return
	}
	c.compare(t, "kustomize.yaml", stdout)
	again := t.TempDir()
	writeFile(t, filepath.Join(again, "built.yaml"), stdout)
	c.writeKustomization(t, again, []string{"built.yaml"})
	rebuilt, stderr, ok := runCmd(t, again, kustomizeBinary, "build", "--enable-alpha-plugins", "--enable-exec", ".")
	if !ok || rebuilt != stdout {
		t.Fatalf("building the output again differs (ok=%t, stderr %s):\n%s", ok, stderr, cmp.Diff(stdout, rebuilt))
	}
}

func (c goldenCase) kpt(t *testing.T) {
	work := t.TempDir()
	pkg := filepath.Join(work, "pkg")
	for _, r := range c.resources {
		copyFile(t, filepath.Join(c.dir, "resources", r), filepath.Join(pkg, r))
	}
	copyFile(t, filepath.Join(c.dir, "fnconfig.yaml"), filepath.Join(work, "fnconfig.yaml"))
	args := []string{"fn", "eval", "pkg", "--exec", fnBinary, "--fn-config", "fnconfig.yaml"}
	stdout, stderr, ok := runCmd(t, work, kptBinary, args...)
	c.compare(t, "kpt.stderr", normalize(stdout+stderr, work))
	success := c.expectSuccess(t, "kpt", ok, stderr)
	after := readTree(t, pkg)
	if !success {
		if len(after) != len(c.resources) {
			t.Fatalf("failed kpt run changed the package: %v", after)
		}
		for name, content := range after {
			if content != readFile(t, filepath.Join(c.dir, "resources", name)) {
				t.Fatalf("failed kpt run changed %s:\n%s", name, content)
			}
		}
		return
	}
	c.compareTree(t, "kpt", after)
	if _, stderr, ok := runCmd(t, work, kptBinary, args...); !ok {
		t.Fatalf("second kpt run failed: %s", stderr)
	}
	if again := readTree(t, pkg); !mapsEqual(again, after) {
		t.Fatalf("second kpt run changed the package:\n%s", cmp.Diff(after, again))
	}
}

// expectSuccess tells whether the case expects this runner to succeed (its expected output
// exists), failing the test if the run disagrees. Under -update the run decides.
func (c goldenCase) expectSuccess(t *testing.T, output string, ok bool, stderr string) bool {
	t.Helper()
	path := filepath.Join(c.dir, "expected", output)
	if *update {
		os.RemoveAll(path)
		return ok
	}
	_, err := os.Stat(path)
	want := err == nil
	if ok != want {
		t.Fatalf("run succeeded=%t, want %t; stderr:\n%s", ok, want, stderr)
	}
	return ok
}

func (c goldenCase) compare(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join(c.dir, "expected", name)
	if *update {
		writeFile(t, path, got)
		return
	}
	want := readFile(t, path)
	if got != want {
		t.Errorf("%s differs from %s (-want +got):\n%s", name, path, cmp.Diff(strings.Split(want, "\n"), strings.Split(got, "\n")))
	}
}

func (c goldenCase) compareTree(t *testing.T, name string, got map[string]string) {
	t.Helper()
	dir := filepath.Join(c.dir, "expected", name)
	if *update {
		for file, content := range got {
			writeFile(t, filepath.Join(dir, file), content)
		}
		return
	}
	want := readTree(t, dir)
	if !mapsEqual(got, want) {
		t.Errorf("package after kpt differs from %s (-want +got):\n%s", dir, cmp.Diff(want, got))
	}
}

var kptDuration = regexp.MustCompile(`in \d+(\.\d+)?(ms|s|µs)`)

// normalize removes what changes from run to run: temporary paths and kpt's timings.
func normalize(s, work string) string {
	s = strings.ReplaceAll(s, fnBinary, "addon-template")
	s = strings.ReplaceAll(s, work, "$WORK")
	return kptDuration.ReplaceAllString(s, "in <duration>")
}

func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		files[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	writeFile(t, to, readFile(t, from))
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
			if err := os.Symlink(fnBinary, filepath.Join(root, "bin", "addon-template")); err != nil {
				t.Fatal(err)
			}
			work := filepath.Join(root, "functions", "addon-template", dir)
			for name, content := range readTree(t, dir) {
				if !strings.HasPrefix(name, "expected"+string(filepath.Separator)) {
					writeFile(t, filepath.Join(work, name), content)
				}
			}
			stdout, stderr, ok := runCmd(t, work, kustomizeBinary, "build", "--enable-alpha-plugins", "--enable-exec", ".")
			if !ok {
				t.Fatalf("kustomize build failed: %s", stderr)
			}
			if want := readFile(t, filepath.Join(dir, "expected", "kustomize.yaml")); stdout != want {
				t.Errorf("output differs from expected/kustomize.yaml (-want +got):\n%s", cmp.Diff(want, stdout))
			}
		})
	}
}
