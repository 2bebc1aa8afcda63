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
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Golden tests: every folder under testdata/ is a case with
//
//	resources/*.yaml    the input package
//	fnconfig.yaml       the functionConfig (optional)
//	expected/           what each runner must produce:
//	  standalone.yaml, standalone.stderr   `config-hash --config fnconfig.yaml resources/*.yaml`
//	  kustomize.yaml, kustomize.stderr     `kustomize build --enable-alpha-plugins --enable-exec` with
//	                                       config-hash as an exec transformer
//	  kpt/*.yaml, kpt.stderr               the package files after `kpt fn eval --exec`
//
// A case whose runs fail has no .yaml expectations: the runs must exit non-zero, print nothing on
// stdout and leave the package untouched. Every successful case is also run on its own output,
// which must come back byte for byte. `go test -run TestGolden -update` rewrites expected/.

var update = flag.Bool("update", false, "rewrite the golden files under testdata/*/expected")

// Built once in TestMain: the function binary, and the real kustomize and kpt.
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
	dir, err := os.MkdirTemp("", "config-hash-test-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	fnBinary = filepath.Join(dir, "config-hash")
	if out, err := exec.Command("go", "build", "-o", fnBinary, ".").CombinedOutput(); err != nil {
		return 0, fmt.Errorf("building config-hash: %v\n%s", err, out)
	}
	// kustomize is a go.mod tool: `go tool -n` builds it (cached) and prints its path, so the tests
	// run the exact pinned version without `go tool`'s start-up cost on every call.
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
	dir       string
	resources []string // file names under resources/
	fnconfig  string   // path, or ""
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
	if _, err := os.Stat(filepath.Join(dir, "fnconfig.yaml")); err == nil {
		c.fnconfig = filepath.Join(dir, "fnconfig.yaml")
	}
	return c
}

func TestGolden(t *testing.T) {
	dirs, err := filepath.Glob("testdata/*/resources")
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no golden cases under testdata/")
	}
	for _, d := range dirs {
		dir := filepath.Dir(d)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			c := loadCase(t, dir)
			t.Run("standalone", func(t *testing.T) { c.standalone(t) })
			t.Run("kustomize", func(t *testing.T) { c.kustomize(t) })
			t.Run("kpt", func(t *testing.T) { c.kpt(t) })
			t.Run("same names everywhere", func(t *testing.T) { c.sameNames(t) })
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
	args := []string{}
	if c.fnconfig != "" {
		args = append(args, "--config", "fnconfig.yaml")
	}
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
	// Running on its own output changes nothing.
	tmp := t.TempDir()
	writeFile(t, filepath.Join(tmp, "out.yaml"), stdout)
	args = []string{"out.yaml"}
	if c.fnconfig != "" {
		copyFile(t, c.fnconfig, filepath.Join(tmp, "fnconfig.yaml"))
		args = []string{"--config", "fnconfig.yaml", "out.yaml"}
	}
	again, stderr, ok := runCmd(t, tmp, fnBinary, args...)
	if !ok || again != stdout {
		t.Fatalf("second run on its own output differs (ok=%t, stderr %s):\n%s", ok, stderr, cmp.Diff(stdout, again))
	}
}

// sameNames checks that kustomize, kpt and the standalone binary give every object the same name:
// the suffix depends on content only, not on the tool that ran the function.
func (c goldenCase) sameNames(t *testing.T) {
	expected := filepath.Join(c.dir, "expected")
	if _, err := os.Stat(filepath.Join(expected, "standalone.yaml")); err != nil {
		t.Skip("an error case: no output")
	}
	want := identities(t, readFile(t, filepath.Join(expected, "standalone.yaml")))
	if got := identities(t, readFile(t, filepath.Join(expected, "kustomize.yaml"))); !slices.Equal(got, want) {
		t.Errorf("kustomize named the objects\n%v\nstandalone\n%v", got, want)
	}
	var kpt []string
	for _, content := range readTree(t, filepath.Join(expected, "kpt")) {
		kpt = append(kpt, identities(t, content)...)
	}
	slices.Sort(kpt)
	if !slices.Equal(kpt, want) {
		t.Errorf("kpt named the objects\n%v\nstandalone\n%v", kpt, want)
	}
}

// identities lists "Kind namespace/name" of every object in a YAML stream, sorted.
func identities(t *testing.T, stream string) []string {
	t.Helper()
	items, err := (&kio.ByteReader{Reader: strings.NewReader(stream)}).Read()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, it := range items {
		ids = append(ids, it.GetKind()+" "+it.GetNamespace()+"/"+it.GetName())
	}
	slices.Sort(ids)
	return ids
}

// writeKustomization lays out a kustomization in dir that lists resources and config-hash as an
// exec transformer configured by the case's functionConfig.
func (c goldenCase) writeKustomization(t *testing.T, dir string, resources []string) {
	t.Helper()
	fnconfig := "apiVersion: addonops.io/v1alpha1\nkind: ConfigHash\nmetadata:\n  name: config-hash\n"
	if c.fnconfig != "" {
		fnconfig = readFile(t, c.fnconfig)
	}
	node, err := yaml.Parse(fnconfig)
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
	// Building the built output again changes nothing.
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
	args := []string{"fn", "eval", "pkg", "--exec", fnBinary}
	if c.fnconfig != "" {
		copyFile(t, c.fnconfig, filepath.Join(work, "fnconfig.yaml"))
		args = append(args, "--fn-config", "fnconfig.yaml")
	}
	stdout, stderr, ok := runCmd(t, work, kptBinary, args...)
	c.compare(t, "kpt.stderr", normalize(stdout+stderr, work))
	success := c.expectSuccess(t, "kpt", ok, stderr)
	after := readTree(t, pkg)
	if !success {
		for name, content := range after {
			if content != readFile(t, filepath.Join(c.dir, "resources", name)) {
				t.Fatalf("failed kpt run changed %s:\n%s", name, content)
			}
		}
		return
	}
	c.compareTree(t, "kpt", after)
	// kpt edits in place: a second run must leave every file as it is.
	if _, stderr, ok := runCmd(t, work, kptBinary, args...); !ok {
		t.Fatalf("second kpt run failed: %s", stderr)
	}
	if again := readTree(t, pkg); !mapsEqual(again, after) {
		t.Fatalf("second kpt run changed the package:\n%s", cmp.Diff(after, again))
	}
}

// expectSuccess tells whether the case expects this runner to succeed (its expected output exists),
// failing the test if the run disagrees. Under -update the run decides.
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

var (
	kptDuration = regexp.MustCompile(`in \d+(\.\d+)?(ms|s|µs)`)
)

// normalize removes what changes from run to run: temporary paths and kpt's timings.
func normalize(s, work string) string {
	s = strings.ReplaceAll(s, fnBinary, "config-hash")
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

// TestExamples builds every example under examples/ with the real kustomize and compares the
// result with its expected/kustomize-build.yaml, so the README's examples cannot rot. The examples
// point at ../../../../bin/config-hash (make build); the test points them at the binary it built.
func TestExamples(t *testing.T) {
	dirs, err := filepath.Glob("examples/*/kustomization.yaml")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, k := range dirs {
		dir := filepath.Dir(k)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			work := t.TempDir()
			for name, content := range readTree(t, dir) {
				if strings.HasPrefix(name, "expected"+string(filepath.Separator)) || strings.HasSuffix(name, ".md") {
					continue
				}
				if strings.Contains(content, "config.kubernetes.io/function") {
					if !strings.Contains(content, "path: ../../../../bin/config-hash") {
						t.Fatalf("%s: the function must be at ../../../../bin/config-hash (built by make build)", name)
					}
					content = strings.ReplaceAll(content, "../../../../bin/config-hash", fnBinary)
				}
				writeFile(t, filepath.Join(work, name), content)
			}
			stdout, stderr, ok := runCmd(t, work, kustomizeBinary, "build", "--enable-alpha-plugins", "--enable-exec", ".")
			if !ok {
				t.Fatalf("kustomize build failed:\n%s", stderr)
			}
			goldenCase{dir: dir}.compare(t, "kustomize-build.yaml", stdout)
		})
	}
}

// TestKptRender runs config-hash from a Kptfile pipeline, as the README shows, with
// `kpt fn render --allow-exec`: it names the example's configs as kustomize does, and a second
// render changes nothing.
func TestKptRender(t *testing.T) {
	work := t.TempDir()
	hub := filepath.Join(work, "hub")
	for name, content := range readTree(t, "examples/hello-addon/hub") {
		writeFile(t, filepath.Join(hub, name), content)
	}
	writeFile(t, filepath.Join(hub, "Kptfile"), `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: hub
  annotations:
    config.kubernetes.io/local-config: "true"
pipeline:
  mutators:
  - exec: `+fnBinary+`
    configPath: config-hash.yaml
`)
	writeFile(t, filepath.Join(hub, "config-hash.yaml"), `apiVersion: addonops.io/v1alpha1
kind: ConfigHash
metadata:
  name: config-hash
  annotations:
    config.kubernetes.io/local-config: "true"
spec:
  pruneProtection: true
`)
	if _, stderr, ok := runCmd(t, work, kptBinary, "fn", "render", "hub", "--allow-exec"); !ok {
		t.Fatalf("kpt fn render failed:\n%s", stderr)
	}
	rendered := readTree(t, hub)
	var got []string
	for name, content := range rendered {
		if name == "Kptfile" || name == "config-hash.yaml" {
			continue
		}
		got = append(got, identities(t, content)...)
	}
	slices.Sort(got)
	want := identities(t, readFile(t, "examples/hello-addon/expected/kustomize-build.yaml"))
	if !slices.Equal(got, want) {
		t.Fatalf("kpt render named the objects\n%v\nkustomize\n%v", got, want)
	}
	if _, stderr, ok := runCmd(t, work, kptBinary, "fn", "render", "hub", "--allow-exec"); !ok {
		t.Fatalf("second kpt fn render failed:\n%s", stderr)
	}
	if again := readTree(t, hub); !mapsEqual(again, rendered) {
		t.Fatalf("second render changed the package:\n%s", cmp.Diff(rendered, again))
	}
}

// TestKustomizeBuildOrder checks, with the real kustomize, what the README says about
// transformers of the kustomization that lists config-hash: namePrefix is followed, and a
// namespace: that moves a config out of the namespace its references name is an error.
func TestKustomizeBuildOrder(t *testing.T) {
	c := goldenCase{}
	build := func(t *testing.T, extra string) (string, string, bool) {
		work := t.TempDir()
		for name, content := range readTree(t, "examples/hello-addon/hub") {
			writeFile(t, filepath.Join(work, "hub", name), content)
		}
		c.writeKustomization(t, work, []string{"hub/template.yaml", "hub/deployment-config.yaml", "hub/clustermanagementaddon.yaml"})
		k := filepath.Join(work, "kustomization.yaml")
		writeFile(t, k, readFile(t, k)+extra)
		return runCmd(t, work, kustomizeBinary, "build", "--enable-alpha-plugins", "--enable-exec", ".")
	}
	t.Run("namePrefix", func(t *testing.T) {
		out, stderr, ok := build(t, "namePrefix: prod-\n")
		if !ok {
			t.Fatalf("build failed: %s", stderr)
		}
		items, err := (&kio.ByteReader{Reader: strings.NewReader(out)}).Read()
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]string{}
		for _, it := range items {
			names[it.GetKind()] = it.GetName()
		}
		for _, kind := range []string{"AddOnTemplate", "AddOnDeploymentConfig"} {
			if !isSuffixed(names[kind], "prod-hello") {
				t.Fatalf("%s named %q, want prod-hello-<suffix>", kind, names[kind])
			}
			if !strings.Contains(out, "name: "+names[kind]+"\n") || strings.Count(out, names[kind]) < 2 {
				t.Fatalf("no reference to %s in\n%s", names[kind], out)
			}
		}
	})
	t.Run("namespace moves a referenced config", func(t *testing.T) {
		_, stderr, ok := build(t, "namespace: elsewhere\n")
		want := `refers to addondeploymentconfigs.addon.open-cluster-management.io open-cluster-management-hub/hello, but kustomize moved that AddOnDeploymentConfig to namespace "elsewhere" during this build`
		if ok || !strings.Contains(stderr, want) {
			t.Fatalf("ok=%t, stderr:\n%s\nwant it to contain %q", ok, stderr, want)
		}
	})
}
