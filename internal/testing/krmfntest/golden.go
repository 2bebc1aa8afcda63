package krmfntest

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Golden checks a function against golden cases. A case is a folder holding
//
//	resources/*.yaml   the input package
//	fnconfig.yaml      the functionConfig (optional when DefaultConfig is set)
//	expected/          what each runner must produce:
//	  standalone.yaml, standalone.stderr  `FUNCTION [--config fnconfig.yaml] resources/*.yaml`
//	  kustomize.yaml, kustomize.stderr    `kustomize build --enable-alpha-plugins --enable-exec` with
//	                                      the function as an exec transformer
//	  kpt/..., kpt.stderr                 the package after `kpt fn eval --exec [--fn-config]`
//
// A runner without its .yaml (or kpt/) expectation must fail: exit non-zero, print nothing on
// stdout, leave the package untouched. Every successful run is repeated on its own output and must
// give the same bytes (kpt edits in place). With Update the runs rewrite expected/ instead.
type Golden struct {
	Tools
	// Update rewrites the expected files from the runs instead of comparing with them (the test
	// package's -update flag).
	Update bool
	// DefaultConfig is the functionConfig kustomize gets for a case without fnconfig.yaml: kustomize
	// needs an object to carry the exec annotation. Empty: every case must have fnconfig.yaml.
	DefaultConfig string
}

// Case is one golden case.
type Case struct {
	Dir       string
	Resources []string // file names under resources/, sorted
	FnConfig  string   // path of fnconfig.yaml, or ""
}

// CaseDirs returns the case directories matching patterns (globs such as "testdata/*": only
// directories with a resources/ folder count), failing the test when there are fewer than min, so
// a moved testdata folder cannot pass as no cases at all.
func CaseDirs(t testing.TB, min int, patterns ...string) []string {
	t.Helper()
	var dirs []string
	for _, pattern := range patterns {
		found, err := filepath.Glob(filepath.Join(pattern, "resources"))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range found {
			dirs = append(dirs, filepath.Dir(d))
		}
	}
	if len(dirs) < min {
		t.Fatalf("found %d golden cases in %q, want at least %d", len(dirs), patterns, min)
	}
	return dirs
}

// LoadCase reads the case in dir.
func (g *Golden) LoadCase(t testing.TB, dir string) Case {
	t.Helper()
	c := Case{Dir: dir}
	entries, err := os.ReadDir(filepath.Join(dir, "resources"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		c.Resources = append(c.Resources, e.Name())
	}
	slices.Sort(c.Resources)
	if _, err := os.Stat(filepath.Join(dir, "fnconfig.yaml")); err == nil {
		c.FnConfig = filepath.Join(dir, "fnconfig.yaml")
	} else if g.DefaultConfig == "" {
		t.Fatalf("%s has no fnconfig.yaml, which every case of %s needs", dir, g.Name)
	}
	return c
}

// Check runs the three runners on c, as the subtests "standalone", "kustomize" and "kpt".
func (g *Golden) Check(t *testing.T, c Case) {
	t.Run("standalone", func(t *testing.T) { g.CheckStandalone(t, c) })
	t.Run("kustomize", func(t *testing.T) { g.CheckKustomize(t, c) })
	t.Run("kpt", func(t *testing.T) { g.CheckKpt(t, c) })
}

// ResourcePaths returns the case's resources as paths relative to the case directory.
func (c Case) ResourcePaths() []string {
	var paths []string
	for _, r := range c.Resources {
		paths = append(paths, filepath.Join("resources", r))
	}
	return paths
}

// CheckStandalone runs the function on the case's files, then on its own output.
func (g *Golden) CheckStandalone(t testing.TB, c Case) {
	var args []string
	if c.FnConfig != "" {
		args = append(args, "--config", "fnconfig.yaml")
	}
	stdout, stderr, ok := Run(t, c.Dir, g.Function, slices.Concat(args, c.ResourcePaths())...)
	g.Compare(t, c, "standalone.stderr", stderr)
	if !g.CompareOutput(t, c, "standalone.yaml", stdout, stderr, ok) {
		return
	}
	// Running on its own output changes nothing.
	tmp := t.TempDir()
	WriteFile(t, filepath.Join(tmp, "out.yaml"), stdout)
	if c.FnConfig != "" {
		CopyFile(t, c.FnConfig, filepath.Join(tmp, "fnconfig.yaml"))
	}
	again, stderr, ok := Run(t, tmp, g.Function, slices.Concat(args, []string{"out.yaml"})...)
	if !ok || again != stdout {
		t.Fatalf("second run on its own output differs (ok=%t, stderr %s):\n%s", ok, stderr, cmp.Diff(stdout, again))
	}
}

// WriteKustomization lays out a kustomization in dir that lists resources and the function as an
// exec transformer, configured by the case's functionConfig (or DefaultConfig).
func (g *Golden) WriteKustomization(t testing.TB, c Case, dir string, resources []string) {
	t.Helper()
	fnconfig := g.DefaultConfig
	if c.FnConfig != "" {
		fnconfig = ReadFile(t, c.FnConfig)
	}
	node, err := yaml.Parse(fnconfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := node.PipeE(yaml.SetAnnotation("config.kubernetes.io/function", "exec:\n  path: "+g.Function+"\n")); err != nil {
		t.Fatal(err)
	}
	WriteFile(t, filepath.Join(dir, "fnconfig.yaml"), node.MustString())
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
	for _, r := range resources {
		k += "- " + r + "\n"
	}
	k += "transformers:\n- fnconfig.yaml\n"
	WriteFile(t, filepath.Join(dir, "kustomization.yaml"), k)
}

// CheckKustomize builds the case with the function as a kustomize exec transformer, then builds the
// output again.
func (g *Golden) CheckKustomize(t testing.TB, c Case) {
	work := t.TempDir()
	var resources []string
	for _, r := range c.Resources {
		CopyFile(t, filepath.Join(c.Dir, "resources", r), filepath.Join(work, "resources", r))
		resources = append(resources, "resources/"+r)
	}
	g.WriteKustomization(t, c, work, resources)
	stdout, stderr, ok := g.KustomizeBuild(t, work)
	g.Compare(t, c, "kustomize.stderr", g.Normalize(stderr, work))
	if !g.CompareOutput(t, c, "kustomize.yaml", stdout, stderr, ok) {
		return
	}
	// Building the built output again changes nothing.
	again := t.TempDir()
	WriteFile(t, filepath.Join(again, "built.yaml"), stdout)
	g.WriteKustomization(t, c, again, []string{"built.yaml"})
	rebuilt, stderr, ok := g.KustomizeBuild(t, again)
	if !ok || rebuilt != stdout {
		t.Fatalf("building the output again differs (ok=%t, stderr %s):\n%s", ok, stderr, cmp.Diff(stdout, rebuilt))
	}
}

// CheckKpt runs `kpt fn eval --exec` on a copy of the case's package, twice.
func (g *Golden) CheckKpt(t testing.TB, c Case) {
	work := t.TempDir()
	pkg := filepath.Join(work, "pkg")
	for _, r := range c.Resources {
		CopyFile(t, filepath.Join(c.Dir, "resources", r), filepath.Join(pkg, r))
	}
	args := []string{"fn", "eval", "pkg", "--exec", g.Function}
	if c.FnConfig != "" {
		CopyFile(t, c.FnConfig, filepath.Join(work, "fnconfig.yaml"))
		args = append(args, "--fn-config", "fnconfig.yaml")
	}
	stdout, stderr, ok := Run(t, work, g.Kpt, args...)
	g.Compare(t, c, "kpt.stderr", g.Normalize(stdout+stderr, work))
	success := g.ExpectSuccess(t, c, "kpt", ok, stderr)
	after := ReadTree(t, pkg)
	if !success {
		if len(after) != len(c.Resources) {
			t.Fatalf("failed kpt run changed the package: %v", after)
		}
		for name, content := range after {
			if content != ReadFile(t, filepath.Join(c.Dir, "resources", name)) {
				t.Fatalf("failed kpt run changed %s:\n%s", name, content)
			}
		}
		return
	}
	g.CompareTree(t, c, "kpt", after)
	// kpt edits in place: a second run must leave every file as it is.
	if _, stderr, ok := Run(t, work, g.Kpt, args...); !ok {
		t.Fatalf("second kpt run failed: %s", stderr)
	}
	if again := ReadTree(t, pkg); !maps.Equal(again, after) {
		t.Fatalf("second kpt run changed the package:\n%s", cmp.Diff(after, again))
	}
}

// CompareOutput checks a run's stdout against the case's expected/output; a run the case expects
// to fail (no such file) must have failed and printed nothing. It tells whether the run succeeded,
// so the caller can check more.
func (g *Golden) CompareOutput(t testing.TB, c Case, output, stdout, stderr string, ok bool) bool {
	t.Helper()
	if !g.ExpectSuccess(t, c, output, ok, stderr) {
		if stdout != "" {
			t.Fatalf("failed run wrote output:\n%s", stdout)
		}
		return false
	}
	g.Compare(t, c, output, stdout)
	return true
}

// ExpectSuccess tells whether the case expects a runner to succeed (its expected output exists),
// failing the test if the run disagrees. Under Update the run decides.
func (g *Golden) ExpectSuccess(t testing.TB, c Case, output string, ok bool, stderr string) bool {
	t.Helper()
	path := filepath.Join(c.Dir, "expected", output)
	if g.Update {
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

// Compare compares got with the case's expected/name (under Update, writes it there).
func (g *Golden) Compare(t testing.TB, c Case, name, got string) {
	t.Helper()
	path := filepath.Join(c.Dir, "expected", name)
	if g.Update {
		WriteFile(t, path, got)
		return
	}
	want := ReadFile(t, path)
	if got != want {
		t.Errorf("%s differs from %s (-want +got):\n%s", name, path, cmp.Diff(strings.Split(want, "\n"), strings.Split(got, "\n")))
	}
}

// CompareTree compares files (by path) with the tree under the case's expected/name (under Update,
// writes them there).
func (g *Golden) CompareTree(t testing.TB, c Case, name string, got map[string]string) {
	t.Helper()
	dir := filepath.Join(c.Dir, "expected", name)
	if g.Update {
		for file, content := range got {
			WriteFile(t, filepath.Join(dir, file), content)
		}
		return
	}
	want := ReadTree(t, dir)
	if !maps.Equal(got, want) {
		t.Errorf("package after kpt differs from %s (-want +got):\n%s", dir, cmp.Diff(want, got))
	}
}

var kptDuration = regexp.MustCompile(`in \d+(\.\d+)?(ms|s|µs)`)

// Normalize removes what changes from run to run: the binary's and the work directory's temporary
// paths, and kpt's timings.
func (g *Golden) Normalize(s, work string) string {
	s = strings.ReplaceAll(s, g.Function, g.Name)
	s = strings.ReplaceAll(s, work, "$WORK")
	return kptDuration.ReplaceAllString(s, "in <duration>")
}
