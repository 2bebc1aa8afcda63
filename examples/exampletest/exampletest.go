// Package exampletest checks the repository's example packages (examples/ and
// kustomize-rollout-examples/) the way a user meets them: it runs the commands their READMEs
// show, with freshly built function binaries and the go.mod's kustomize, and compares what they
// print with the committed expected files. Because the commands are read from the READMEs, the
// documentation cannot drift from what is tested.
//
// It is test support: only the examples' tests import it.
package exampletest

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/addonops/addonops/internal/testing/krmfntest"
	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/mdblock"
)

// Update makes CheckCommands rewrite the expected files instead of comparing with them.
var Update = flag.Bool("update", false, "rewrite the examples' expected files from the README commands")

// Functions are the KRM function binaries the examples' kustomizations run by name from $PATH.
var Functions = krmfntest.ExampleFunctions

// Tools are the programs the README commands run.
type Tools struct {
	// RepoRoot is the module root; README commands run there.
	RepoRoot string
	// BinDir holds the freshly built Functions; it is first on $PATH while tests run.
	BinDir string
	// Kustomize is the binary `go tool kustomize` runs (the go.mod tool, v5.8.2).
	Kustomize string
}

var tools *Tools

// Main builds the tools, puts BinDir first on $PATH (the examples find the functions there, as
// the READMEs tell users to arrange with `make build`), runs the tests and cleans up, the test hub
// included. Call it from TestMain.
func Main(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "exampletest:", err)
		code = 1
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	root, err := localhub.RepoRoot("")
	if err != nil {
		return 0, fmt.Errorf("finding the repository root: %w", err)
	}
	bin, err := os.MkdirTemp("", "addonops-examples-bin-")
	if err != nil {
		return 0, fmt.Errorf("creating a directory for the function binaries: %w", err)
	}
	defer os.RemoveAll(bin)
	if err := krmfntest.BuildFunctions(root, bin); err != nil {
		return 0, fmt.Errorf("building the functions: %w", err)
	}
	kustomize, err := krmfntest.KustomizePath(root)
	if err != nil {
		return 0, err
	}
	if err := os.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH")); err != nil {
		return 0, fmt.Errorf("setting PATH: %w", err)
	}
	tools = &Tools{RepoRoot: root, BinDir: bin, Kustomize: kustomize}
	// RunTests stops the package's test hub (ApplyToHub) if a test started one.
	return localhub.RunTests(m), nil
}

// Get returns the tools Main prepared.
func Get(t testing.TB) *Tools {
	t.Helper()
	if tools == nil {
		t.Fatal("exampletest.Main must run from TestMain first")
	}
	return tools
}

// Command is one command of a README: `PROGRAM ARGS... > OUTPUT`, run from the repository root.
type Command struct {
	README string // repository-relative path of the README
	Line   int
	Text   string
	Args   []string // as written, without the redirection
	Output string   // repository-relative file the command's stdout is committed as
}

func (c Command) String() string { return fmt.Sprintf("%s:%d: %s", c.README, c.Line, c.Text) }

// KustomizeBuild is how every example is built, as the READMEs must write it.
var KustomizeBuild = []string{"go", "tool", "kustomize", "build", "--enable-alpha-plugins", "--enable-exec"}

// setupLines may appear in a README's sh blocks besides commands: they prepare what the tests
// prepare in Main.
var setupLines = []string{"make build", `export PATH="$PWD/bin:$PATH"`}

// ParseREADME returns the commands of the ```sh blocks of a README (repository-relative path)
// that these tests run: every sh block but the ones whose readme-test marker hands them to the
// README test (readmetest) to run another way, e.g. `run hub` for a kubectl apply. Every line of
// those blocks must be a setup line or a command with its output file, so a README cannot show a
// command the tests do not run.
func ParseREADME(root, readme string) ([]Command, error) {
	src, err := os.ReadFile(filepath.Join(root, readme))
	if err != nil {
		return nil, fmt.Errorf("reading README: %w", err)
	}
	blocks, err := mdblock.Extract(readme, string(src))
	if err != nil {
		return nil, err
	}
	var cmds []Command
	for _, b := range blocks {
		if b.Lang != "sh" || (b.Marker != nil && b.Marker.Verb != "covered-by") {
			continue
		}
		for i, line := range strings.Split(strings.TrimSuffix(b.Content, "\n"), "\n") {
			n := b.Line + 1 + i
			line = strings.TrimSpace(line)
			if line == "" || slices.Contains(setupLines, line) {
				continue
			}
			fields := strings.Fields(line)
			if len(fields) < 3 || fields[len(fields)-2] != ">" {
				return nil, fmt.Errorf("%s:%d: %q: every command in a sh block must end in \"> FILE\" (its committed output), or be one of %q", readme, n, line, setupLines)
			}
			cmd := Command{README: readme, Line: n, Text: line, Args: fields[:len(fields)-2], Output: fields[len(fields)-1]}
			if _, err := argv(cmd.Args); err != nil {
				return nil, fmt.Errorf("%s: %w", cmd, err)
			}
			cmds = append(cmds, cmd)
		}
	}
	return cmds, nil
}

// argv maps a README command to the program the tests run: `go tool kustomize` to the go.mod's
// kustomize, a function name to the freshly built function.
func argv(args []string) ([]string, error) {
	if len(args) >= 3 && slices.Equal(args[:3], KustomizeBuild[:3]) {
		if len(args) != len(KustomizeBuild)+1 || !slices.Equal(args[:len(KustomizeBuild)], KustomizeBuild) {
			return nil, fmt.Errorf("a build must be written %q DIR", strings.Join(KustomizeBuild, " "))
		}
		return append([]string{"kustomize"}, args[3:]...), nil
	}
	if slices.Contains(Functions, args[0]) {
		return args, nil
	}
	return nil, fmt.Errorf("unknown program %q: README commands may run %q or one of %q", args[0], strings.Join(KustomizeBuild[:3], " "), Functions)
}

// BuildDir returns the directory a kustomize build command builds, or "".
func (c Command) BuildDir() string {
	if slices.Equal(c.Args[:min(len(c.Args), len(KustomizeBuild))], KustomizeBuild) {
		return c.Args[len(c.Args)-1]
	}
	return ""
}

// Result is what a README command printed.
type Result struct {
	Command
	Stdout, Stderr []byte
}

var (
	resultsMu sync.Mutex
	results   = map[string][]Result{}
)

// Run runs the commands of a README once per test binary, in README order, and returns what each
// printed. A command that reads an earlier command's output file gets what that command printed
// in this run, not the committed file, so the whole chain is fresh. A command that fails or writes
// to stderr fails the test.
func Run(t *testing.T, readme string) []Result {
	t.Helper()
	resultsMu.Lock()
	defer resultsMu.Unlock()
	if rs, ok := results[readme]; ok {
		return rs
	}
	tl := Get(t)
	cmds, err := ParseREADME(tl.RepoRoot, readme)
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) == 0 {
		t.Fatalf("%s shows no commands", readme)
	}
	fresh := map[string]string{} // output file -> temp file holding this run's output
	tmp := t.TempDir()
	var rs []Result
	for i, c := range cmds {
		args, _ := argv(slices.Clone(c.Args)) // validated by ParseREADME
		for j, a := range args {
			if f, ok := fresh[a]; ok {
				args[j] = f
			}
		}
		prog := filepath.Join(tl.BinDir, args[0])
		if args[0] == "kustomize" {
			prog = tl.Kustomize
		}
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(prog, args[1:]...)
		cmd.Dir = tl.RepoRoot
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v\nstderr:\n%s", c, err, stderr.Bytes())
		}
		if stderr.Len() > 0 {
			t.Fatalf("%s: wrote to stderr (a warning in an example is a defect):\n%s", c, stderr.Bytes())
		}
		f := filepath.Join(tmp, fmt.Sprintf("%d-%s", i, filepath.Base(c.Output)))
		if err := os.WriteFile(f, stdout.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		fresh[c.Output] = f
		rs = append(rs, Result{Command: c, Stdout: stdout.Bytes(), Stderr: stderr.Bytes()})
	}
	results[readme] = rs
	return rs
}

// Output returns what the README command writing the given output file printed in this run.
func Output(t *testing.T, readme, output string) []byte {
	t.Helper()
	for _, r := range Run(t, readme) {
		if r.Output == output {
			return r.Stdout
		}
	}
	t.Fatalf("%s has no command writing %s", readme, output)
	return nil
}

// CheckCommands runs a README's commands and compares each output with its committed file
// byte for byte (with -update, rewrites the file instead).
func CheckCommands(t *testing.T, readme string) {
	t.Helper()
	tl := Get(t)
	for _, r := range Run(t, readme) {
		path := filepath.Join(tl.RepoRoot, r.Output)
		if *Update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, r.Stdout, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: reading the committed output: %v (run the tests with -update to create it)", r.Command, err)
			continue
		}
		if !bytes.Equal(r.Stdout, want) {
			t.Errorf("%s: output differs from %s (run the tests with -update to accept it):\n%s", r.Command, r.Output, LineDiff(want, r.Stdout))
		}
	}
}

// CheckExpectedCovered fails for every file under an expected/ folder below dir (repository
// relative) that no README command writes, so stale expected files cannot linger.
func CheckExpectedCovered(t *testing.T, dir string, readmes ...string) {
	t.Helper()
	tl := Get(t)
	written := map[string]bool{}
	for _, readme := range readmes {
		for _, r := range Run(t, readme) {
			written[filepath.Clean(r.Output)] = true
		}
	}
	err := filepath.WalkDir(filepath.Join(tl.RepoRoot, dir), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(tl.RepoRoot, path)
		if err != nil {
			return err
		}
		if slices.Contains(strings.Split(filepath.Dir(rel), string(filepath.Separator)), "expected") && !written[rel] {
			t.Errorf("%s is not the output of any command in %q: remove it or document its command", rel, readmes)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// LineDiff shows the first lines where got differs from want, enough to see what changed.
func LineDiff(want, got []byte) string {
	wl := strings.Split(string(want), "\n")
	gl := strings.Split(string(got), "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(wl), len(gl)) && shown < 20; i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g || (i >= len(wl)) != (i >= len(gl)) {
			fmt.Fprintf(&b, "line %d:\n  want: %q\n  got:  %q\n", i+1, w, g)
			shown++
		}
	}
	return b.String()
}

// RunFunction runs a freshly built function binary with args from the repository root and returns
// its stdout; a failure or any stderr output fails the test.
func RunFunction(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	tl := Get(t)
	if !slices.Contains(Functions, name) {
		t.Fatalf("%q is not one of the functions %q", name, Functions)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(tl.BinDir, name), args...)
	cmd.Dir = tl.RepoRoot
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstderr:\n%s", name, strings.Join(args, " "), err, stderr.Bytes())
	}
	if stderr.Len() > 0 {
		t.Fatalf("%s %s wrote to stderr:\n%s", name, strings.Join(args, " "), stderr.Bytes())
	}
	return stdout.Bytes()
}

// RenderCluster renders what a cluster gets from a hub output (a YAML stream holding an
// AddOnTemplate and its AddOnDeploymentConfig) with `addon-template render`.
func RenderCluster(t *testing.T, hub []byte, cluster string) []byte {
	t.Helper()
	f := filepath.Join(t.TempDir(), "hub.yaml")
	if err := os.WriteFile(f, hub, 0o644); err != nil {
		t.Fatal(err)
	}
	return RunFunction(t, "addon-template", "render", "--cluster", cluster, f)
}
