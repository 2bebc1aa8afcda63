// Package krmfntest is test support for addonops KRM functions: it builds a function binary once per
// test binary and checks it, case by case, the three ways the krmfn contract promises it runs the
// same: standalone on files, as a kustomize exec transformer and under `kpt fn eval --exec`, against
// committed expected files (golden files).
//
// Only tests and test-support packages import it; it pulls go-cmp and the testing package in.
package krmfntest

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Tools are the programs a function's tests run.
type Tools struct {
	// Name is the function's name (its binary's); golden stderr files say it where a run printed the
	// binary's temporary path.
	Name string
	// Function is the function binary, built from the package under test.
	Function string
	// Kustomize is the go.mod's kustomize (v5.8.2), as `go tool kustomize` runs it.
	Kustomize string
	// Kpt is $KPT, else the repository's bin/kpt (`make kpt` builds it at the version
	// tools/kpt pins).
	Kpt string
}

// Main is a function package's TestMain: it builds the package in the working directory (the one
// under test) as name into a temporary directory, finds kustomize and kpt, fills *tools, runs the
// tests and removes the binary. A tool that cannot be built or found fails the test binary: the
// golden tests never pass by skipping.
func Main(m *testing.M, name string, tools *Tools) {
	flag.Parse()
	code, err := setup(m, name, tools)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(code)
}

func setup(m *testing.M, name string, tools *Tools) (int, error) {
	dir, err := os.MkdirTemp("", name+"-test-")
	if err != nil {
		return 0, fmt.Errorf("creating a directory for the %s binary: %w", name, err)
	}
	defer os.RemoveAll(dir)
	fn := filepath.Join(dir, name)
	if err := Build("", fn, "."); err != nil {
		return 0, fmt.Errorf("building %s: %w", name, err)
	}
	kustomize, err := KustomizePath("")
	if err != nil {
		return 0, err
	}
	kpt, err := KptPath()
	if err != nil {
		return 0, err
	}
	*tools = Tools{Name: name, Function: fn, Kustomize: kustomize, Kpt: kpt}
	return m.Run(), nil
}

// Build runs `go build -o out pkgs...` in dir ("" is the working directory). out is a file for one
// package, or a directory ending in a separator for several.
func Build(dir, out string, pkgs ...string) error {
	args := append([]string{"build", "-o", out}, pkgs...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, output)
	}
	return nil
}

// KustomizePath returns the path of the go.mod's kustomize, asking from dir ("" is the working
// directory). `go tool -n` builds it (cached) and prints its path, so the tests run the exact pinned
// version without `go tool`'s start-up cost on every call.
func KustomizePath(dir string) (string, error) {
	cmd := exec.Command("go", "tool", "-n", "kustomize")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locating the go.mod's kustomize (go tool -n kustomize): %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// KptPath returns $KPT, else bin/kpt of the repository holding the working directory (what
// `make kpt` builds from tools/kpt, at the version pinned there), once it has checked that the file
// exists. The tests never fall back to a kpt on $PATH: its version, and so its output, would be
// anyone's.
func KptPath() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("locating kpt: %w", err)
	}
	root, err := repoRoot(wd)
	if err != nil {
		return "", fmt.Errorf("locating kpt: %w", err)
	}
	kpt, source := kptCandidate(os.Getenv("KPT"), root)
	if _, err := os.Stat(kpt); err != nil {
		return "", fmt.Errorf("kpt is needed for the golden tests: %s: %w\n%s", source, err, kptHint(source))
	}
	return kpt, nil
}

// kptCandidate is where the tests look for kpt: $KPT when set, else root/bin/kpt. source says
// which, for the error message.
func kptCandidate(env, root string) (path, source string) {
	if env != "" {
		return env, "KPT=" + env
	}
	p := filepath.Join(root, "bin", "kpt")
	return p, p
}

// kptHint is the fix for a missing kpt found at source (from kptCandidate).
func kptHint(source string) string {
	if strings.HasPrefix(source, "KPT=") {
		return "fix or unset KPT (unset, the tests use the repository's bin/kpt, which `make kpt` builds)"
	}
	return "build it with `make kpt` in the repository root (or set KPT to a kpt binary)"
}

// repoRoot returns the nearest directory at or above dir that holds a go.mod: the addonops module's
// root for every package of it.
func repoRoot(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod in %s or any folder above it", dir)
		}
	}
}

// KustomizeBuild runs `kustomize build --enable-alpha-plugins --enable-exec .` in dir: exec
// transformers, the way addonops functions run under kustomize.
func (tl Tools) KustomizeBuild(t testing.TB, dir string) (stdout, stderr string, ok bool) {
	t.Helper()
	return Run(t, dir, tl.Kustomize, "build", "--enable-alpha-plugins", "--enable-exec", ".")
}

// Run runs a program in dir and returns its stdout, its stderr and whether it exited 0. Only a
// program that cannot be run at all fails the test: a non-zero exit is for the caller to judge.
func Run(t testing.TB, dir, name string, args ...string) (stdout, stderr string, ok bool) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("running %s: %v", name, err)
	}
	return out.String(), errOut.String(), err == nil
}

// ExampleFunctions are the KRM functions the examples' kustomizations run by name from $PATH, in
// the order they run (the validating ones, then config-hash).
var ExampleFunctions = []string{"rollout-strategy", "addon-template", "config-hash"}

// BuildFunctions builds the ExampleFunctions from the repository at root (./functions/<name>), and
// the packages more (e.g. "./cmd/addonops"), into the directory dir: the programs a test that
// renders the examples puts first on $PATH, built from the tree under test.
func BuildFunctions(root, dir string, more ...string) error {
	var pkgs []string
	for _, f := range ExampleFunctions {
		pkgs = append(pkgs, "./functions/"+f)
	}
	return Build(root, filepath.Clean(dir)+string(filepath.Separator), append(pkgs, more...)...)
}
