package exampletest

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// Edit replaces the one occurrence of Old in File (relative to the repository root) with New.
type Edit struct {
	File, Old, New string
}

// apply makes the edit in the tree rooted at root. Old must occur exactly once, so that an example
// that changed cannot turn the edit into a silent no-op.
func (e Edit) apply(t *testing.T, root string) {
	t.Helper()
	path := filepath.Join(root, e.File)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), e.Old); n != 1 {
		t.Fatalf("%s: %q occurs %d times, want once (did the example change?)", e.File, e.Old, n)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), e.Old, e.New, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Breakage is one way to break an example that one of its validation steps must catch.
type Breakage struct {
	Name string
	// Build is the kustomization built (relative to the repository root), as its README builds it.
	Build string
	// Break is the mistake.
	Break Edit
	// By is the function that must catch it: stderr must hold a line that starts with its name.
	By string
	// Want are what stderr must say besides (the object, the field, the misspelled name).
	Want []string
	// Without takes the catching step out: a transformer removed from a kustomization, or strict
	// turned off. The broken example must then build (exit code 0), which shows that the step, and
	// nothing else, makes the build fail.
	Without Edit
	// WithoutStderr is what stderr must hold when it builds without the step (a warning); empty
	// means nothing at all.
	WithoutStderr []string
}

// CheckBrokenBuilds copies tree (a folder of the repository, e.g. "kustomize-rollout-examples")
// into a temporary repository root once per breakage, breaks it, and builds it with the go.mod's
// kustomize and the freshly built functions exactly as the READMEs do (`go tool kustomize build
// --enable-alpha-plugins --enable-exec DIR`, from the root): the build must exit non-zero with
// the problem on stderr, since kustomize shows nothing else of a KRM function (no result, no
// warning of a function that succeeds). Then, as a control, it builds the broken copy again
// without the step that should catch the breakage, which must succeed.
func CheckBrokenBuilds(t *testing.T, tree string, breakages []Breakage) {
	t.Helper()
	for _, b := range breakages {
		t.Run(b.Name, func(t *testing.T) {
			root := copyTree(t, tree)
			b.Break.apply(t, root)
			stdout, stderr, code := build(t, root, b.Build)
			t.Logf("exit code %d, stderr:\n%s", code, stderr)
			if code == 0 {
				t.Fatalf("the broken %s built (exit code 0): %s must fail it\nstderr:\n%s", b.Build, b.By, stderr)
			}
			if stdout != "" {
				t.Errorf("a failed build printed objects:\n%s", stdout)
			}
			if !slices.ContainsFunc(strings.Split(stderr, "\n"), func(l string) bool { return strings.HasPrefix(l, b.By+": ") }) {
				t.Errorf("stderr has no line of %s:\n%s", b.By, stderr)
			}
			for _, w := range b.Want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}

			t.Run("builds without "+b.By, func(t *testing.T) {
				b.Without.apply(t, root)
				_, stderr, code := build(t, root, b.Build)
				if code != 0 {
					t.Fatalf("without the step, the broken %s still fails (exit code %d): the breakage does not test %s\nstderr:\n%s", b.Build, code, b.By, stderr)
				}
				if len(b.WithoutStderr) == 0 && stderr != "" {
					t.Errorf("stderr %q, want none", stderr)
				}
				for _, w := range b.WithoutStderr {
					if !strings.Contains(stderr, w) {
						t.Errorf("stderr lacks %q:\n%s", w, stderr)
					}
				}
			})
		})
	}
}

// copyTree copies the repository folder tree into a new temporary directory at the same relative
// path, so that the README's repository-relative commands and the examples' ../ paths work there,
// and returns that directory.
func copyTree(t *testing.T, tree string) string {
	t.Helper()
	tl := Get(t)
	root := t.TempDir()
	from := filepath.Join(tl.RepoRoot, tree)
	err := filepath.WalkDir(from, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(tl.RepoRoot, path)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		to := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// build runs the README's build of dir in root and returns what it printed and its exit code.
func build(t *testing.T, root, dir string) (stdout, stderr string, code int) {
	t.Helper()
	args, err := argv(append(slices.Clone(KustomizeBuild), dir))
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	cmd := exec.Command(Get(t).Kustomize, args[1:]...)
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("running kustomize: %v", err)
	}
	return out.String(), errOut.String(), code
}

// CheckTransformers checks that the kustomization of each folder (relative to the repository
// root) lists exactly want as its transformers, in order: the validating functions before
// config-hash, which must come last.
func CheckTransformers(t *testing.T, folders []string, want []string) {
	t.Helper()
	tl := Get(t)
	for _, f := range folders {
		b, err := os.ReadFile(filepath.Join(tl.RepoRoot, f, "kustomization.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var k struct {
			Transformers []string `json:"transformers"`
		}
		if err := yaml.Unmarshal(b, &k); err != nil {
			t.Fatalf("%s/kustomization.yaml: %v", f, err)
		}
		if !slices.Equal(k.Transformers, want) {
			t.Errorf("%s/kustomization.yaml: transformers %q, want %q", f, k.Transformers, want)
		}
	}
}

// CheckStrict checks that each functionConfig file (relative to the repository root) sets
// spec.strict: true.
func CheckStrict(t *testing.T, files ...string) {
	t.Helper()
	tl := Get(t)
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(tl.RepoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		var fc struct {
			Spec struct {
				Strict bool `json:"strict"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(b, &fc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if !fc.Spec.Strict {
			t.Errorf("%s: spec.strict is not true: the examples build strict, so that a mistake fails the build", f)
		}
	}
}
