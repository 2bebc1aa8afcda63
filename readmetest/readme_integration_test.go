//go:build integration

package readmetest

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/addonops/addonops/internal/testing/krmfntest"
	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/mdblock"
)

// setupLines are lines of sh blocks the test has done itself before any block runs: the product
// binaries are built into the copy's bin/, which is first on $PATH.
var setupLines = []string{"make build", `export PATH=$PWD/bin:$PATH`, `export PATH="$PWD/bin:$PATH"`}

// env is what commands run with.
type env struct {
	bin        string // fresh product binaries, kustomize, kubectl, kpt
	kubeconfig string // "" without a hub
}

var (
	toolsOnce sync.Once
	toolsBin  string
	toolsErr  error
)

// tools builds the product binaries into a temporary bin directory, next to links to the go.mod's
// kustomize, the repository's bin/kubectl (make kubectl) and kpt, once per test binary.
func tools(t testing.TB) string {
	t.Helper()
	toolsOnce.Do(func() {
		dir, err := os.MkdirTemp("", "readmetest-bin-")
		if err != nil {
			toolsErr = err
			return
		}
		toolsBin = dir
		// About 230 MB of binaries per test run: removed when the package's tests end.
		afterTests = append(afterTests, func() { os.RemoveAll(dir) })
		if toolsErr = krmfntest.Build(root, dir+string(filepath.Separator), "./cmd/addonops", "./cmd/addonops-controller",
			"./functions/config-hash", "./functions/addon-template", "./functions/rollout-strategy"); toolsErr != nil {
			return
		}
		kustomize, err := krmfntest.KustomizePath(root)
		if err != nil {
			toolsErr = err
			return
		}
		kpt, err := krmfntest.KptPath()
		if err != nil {
			toolsErr = err
			return
		}
		kubectl := filepath.Join(root, "bin", "kubectl")
		if _, err := os.Stat(kubectl); err != nil {
			toolsErr = fmt.Errorf("%s is missing: run `make kubectl` (make test does): %w", kubectl, err)
			return
		}
		for name, target := range map[string]string{"kustomize": kustomize, "kpt": kpt, "kubectl": kubectl} {
			if toolsErr = os.Symlink(target, filepath.Join(dir, name)); toolsErr != nil {
				return
			}
		}
	})
	if toolsErr != nil {
		t.Fatal(toolsErr)
	}
	return toolsBin
}

// copyRepo copies the repository's files (not bin/, not hidden folders) into a temporary
// directory whose bin/ holds the freshly built tools, for commands that write files.
func copyRepo(t *testing.T) string {
	t.Helper()
	bin := tools(t)
	dst := t.TempDir()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "bin" || (strings.HasPrefix(d.Name(), ".") && rel != ".") {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		info, _ := d.Info()
		return os.WriteFile(filepath.Join(dst, rel), b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(dst, "bin")); err != nil {
		t.Fatal(err)
	}
	return dst
}

// result is what one command did.
type result struct {
	stdout, stderr string
	code           int
}

// sh runs one command with bash in dir.
func sh(ctx context.Context, dir string, e env, prefix, command string) (result, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", prefix+command)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+e.bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	if e.kubeconfig != "" {
		cmd.Env = append(cmd.Env, "KUBECONFIG="+e.kubeconfig)
	} else {
		cmd.Env = append(cmd.Env, "KUBECONFIG=/nonexistent/the-block-is-not-marked-hub")
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errOut.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
		err = nil
	}
	if ctx.Err() != nil {
		err = fmt.Errorf("timed out after 3m")
	}
	return r, err
}

var (
	hubOnce sync.Once
	hub     *localhub.Hub
)

func testHub(t *testing.T) *localhub.Hub {
	t.Helper()
	hubOnce.Do(func() { hub = localhub.ForTest(t) })
	if hub == nil {
		t.Fatal("the test hub did not start (see the first test that asked for it)")
	}
	return hub
}

// TestREADMEBlocks runs or validates every classified block, file by file, in the order of the file.
func TestREADMEBlocks(t *testing.T) {
	for _, f := range markdownFiles(t) {
		if len(f.blocks) == 0 {
			continue
		}
		t.Run(f.path, func(t *testing.T) {
			var dir string // the file's copy of the repository, made on first use
			for _, b := range f.blocks {
				if classify(b) != "" {
					continue // TestEveryBlockIsClassified reports it
				}
				switch m := b.Marker; m.Verb {
				case "run":
					if dir == "" {
						dir = copyRepo(t)
					}
					runBlock(t, b, dir)
				case "check-only":
					for _, c := range mdblock.Commands(b) {
						checkCommand(t, b.File, c.Line, mdblock.StripComment(c.Text))
					}
				case "covered-by":
					coveredBy(t, f, b)
				case "object", "fragment":
					validateYAML(t, b)
				case "same-as":
					sameAs(t, b)
				case "lines-in":
					linesIn(t, b)
				case "tree":
					tree(t, b)
				case "diagram":
					// TestDiagrams checks it (unit tier).
				case "skip":
					t.Logf("%s: not checked: %s", b.Where(), m.Args[0])
				}
			}
		})
	}
}

func runBlock(t *testing.T, b mdblock.Block, dir string) {
	t.Helper()
	args, _ := parseRun(b.Marker.Args)
	e := env{bin: tools(t)}
	if args.hub {
		e.kubeconfig = testHub(t).Kubeconfig
	}
	tmp := t.TempDir()
	expand := func(s string) string {
		for _, sb := range args.subs {
			s = strings.ReplaceAll(s, sb[0], strings.ReplaceAll(sb[1], "$TMP", tmp))
		}
		return s
	}
	ctx := context.Background()
	if args.before != "" {
		r, err := sh(ctx, dir, e, "set -e\n", strings.ReplaceAll(args.before, "$TMP", tmp))
		if err != nil || r.code != 0 {
			t.Fatalf("%s: the marker's before=%q failed (exit %d, %v):\n%s%s", b.Where(), args.before, r.code, err, r.stdout, r.stderr)
		}
	}
	prefix := ""
	for i, c := range mdblock.Commands(b) {
		where := fmt.Sprintf("%s:%d", b.File, c.Line)
		text := strings.TrimSpace(mdblock.StripComment(c.Text))
		if slices.Contains(setupLines, text) {
			t.Logf("%s: %s: done by the test (fresh binaries in bin/, first on PATH)", where, text)
			if strings.HasPrefix(text, "export ") {
				prefix += text + "\n"
			}
			continue
		}
		checkCommand(t, b.File, c.Line, text)
		cmd := expand(c.Text)
		start := time.Now()
		r, err := sh(ctx, filepath.Join(dir, args.cwd), e, prefix, cmd)
		t.Logf("%s: $ %s  [exit %d, %s]", where, cmd, r.code, time.Since(start).Round(time.Millisecond))
		if err != nil || r.code != 0 {
			t.Errorf("%s: `%s` failed (exit %d%s):\nstdout:\n%s\nstderr:\n%s\nFix the README command (or the product, if the command is right); a command that cannot run here gets <!-- readme-test: check-only \"why\" -->",
				where, cmd, r.code, errText(err), clip(r.stdout), clip(r.stderr))
			return // later commands depend on this one
		}
		if file, ok := args.stdout[i+1]; ok {
			want, err := os.ReadFile(filepath.Join(root, file))
			if err != nil {
				t.Fatalf("%s: stdout:%d=%s: %v", b.Where(), i+1, file, err)
			}
			if r.stdout != string(want) {
				t.Errorf("%s: `%s` printed something else than %s, which the README says it prints:\n%s", where, cmd, file, lineDiff(string(want), r.stdout))
			}
		}
		if b.Lang == "console" {
			got, want := normalize(r.stdout+r.stderr, args.ignore), normalize(c.Output, args.ignore)
			if got != want {
				t.Errorf("%s: `%s` printed what the README does not show (fix the README's output, or the product):\n%s", where, cmd, lineDiff(want, got))
			}
		}
	}
}

func errText(err error) string {
	if err != nil {
		return ", " + err.Error()
	}
	return ""
}

func clip(s string) string {
	if len(s) > 4000 {
		return s[:4000] + "\n[...]"
	}
	return s
}

// normalize trims trailing spaces of every line and blank lines at the end, and replaces what
// ignore matches with "<...>".
func normalize(s string, ignore *regexp.Regexp) string {
	lines := strings.Split(strings.TrimRight(s, "\n "), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	s = strings.Join(lines, "\n")
	if ignore != nil {
		s = ignore.ReplaceAllString(s, "<...>")
	}
	return s
}

// lineDiff shows the first lines where got differs from want.
func lineDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(wl), len(gl)) && shown < 15; i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			fmt.Fprintf(&b, "line %d:\n  README: %q\n  got:    %q\n", i+1, w, g)
			shown++
		}
	}
	return b.String()
}

// coveredBy checks that the test named by the marker exists and names the markdown file, and
// checks the commands as check-only commands are.
func coveredBy(t *testing.T, f markdownFile, b mdblock.Block) {
	t.Helper()
	test := b.Marker.Args[0]
	src, err := os.ReadFile(filepath.Join(root, test))
	if err != nil || !strings.HasSuffix(test, "_test.go") {
		t.Errorf("%s: covered-by %s: not a Go test file of the repository (%v)", b.Where(), test, err)
		return
	}
	if !strings.Contains(string(src), f.path) && !(filepath.Base(f.path) == "README.md" && strings.Contains(string(src), filepath.Dir(f.path)+"/README.md")) &&
		!(f.path == "README.md" && strings.Contains(string(src), `"README.md"`)) {
		t.Errorf("%s: covered-by %s, which does not name %s: point the marker at the test that runs these commands", b.Where(), test, f.path)
	}
	for _, c := range mdblock.Commands(b) {
		checkCommand(t, b.File, c.Line, mdblock.StripComment(c.Text))
	}
}

// sameAs checks that the block is a part of the repository file its marker names.
func sameAs(t *testing.T, b mdblock.Block) {
	t.Helper()
	file := b.Marker.Args[0]
	content, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	block := strings.Split(strings.TrimRight(b.Content, "\n"), "\n")
	if len(block) > 0 && strings.HasPrefix(block[0], "# ") && !strings.Contains(string(content), block[0]) {
		block = block[1:]
	}
	lines := strings.Split(string(content), "\n")
	// Comments are the README's own (or the file's): compared without them.
	for i := range lines {
		lines[i] = uncomment(lines[i])
	}
	for i := range block {
		block[i] = uncomment(block[i])
	}
	// An excerpt: the block's lines must be lines of the file, in the file's order; lines the block
	// leaves out (comments, fields beside the point, "..." lines) do not matter.
	at := 0
	for _, l := range block {
		if strings.TrimSpace(l) == "..." || strings.TrimSpace(l) == "" {
			continue
		}
		found := slices.Index(lines[at:], l)
		if found < 0 {
			t.Errorf("%s: the block is not an excerpt of %s (same-as): %q is not in it (after the lines before it): copy the file's current lines into the README, or point the marker at the file it shows", b.Where(), file, l)
			return
		}
		at += found + 1
	}
}

// uncomment drops a line's trailing YAML or shell comment and trailing spaces, keeping its indentation.
func uncomment(l string) string {
	indent := l[:len(l)-len(strings.TrimLeft(l, " "))]
	if c := mdblock.StripComment(l); c != "" {
		return indent + c
	}
	return ""
}

// linesIn checks that every non-blank line of the block occurs in a file under the marker's path.
func linesIn(t *testing.T, b mdblock.Block) {
	t.Helper()
	var corpus strings.Builder
	base := filepath.Join(root, b.Marker.Args[0])
	err := filepath.WalkDir(base, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		c, err := os.ReadFile(path)
		corpus.Write(c)
		corpus.WriteByte('\n')
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(b.Content, "\n") {
		l = strings.TrimSpace(l)
		// "..." (also "(...)") stands for text the README leaves out.
		var parts []string
		for _, p := range strings.Split(strings.ReplaceAll(l, "(...)", "..."), "...") {
			parts = append(parts, regexp.QuoteMeta(p))
		}
		if l != "" && !regexp.MustCompile(strings.Join(parts, ".*")).MatchString(corpus.String()) {
			t.Errorf("%s:%d: %q is in no file under %s (lines-in): the product no longer prints it; copy the current text from the golden files there", b.File, b.Line+1+i, l, b.Marker.Args[0])
		}
	}
}

// tree checks a directory listing: lines like "├── name/   # comment" under a first line "DIR/".
func tree(t *testing.T, b mdblock.Block) {
	t.Helper()
	base := b.Marker.Args[0]
	var stack []string // folder per depth
	n := 0
	for i, l := range strings.Split(strings.TrimRight(b.Content, "\n"), "\n") {
		name := strings.TrimSpace(mdblock.StripComment(l))
		depth := 0
		if i > 0 {
			idx := strings.IndexFunc(l, func(r rune) bool { return !strings.ContainsRune("│├└─ \u00a0", r) })
			if idx < 0 || !strings.ContainsAny(l[:idx], "├└") {
				continue // a description's continuation line
			}
			depth = len([]rune(l[:idx]))/4 - 1
			name = strings.TrimSpace(mdblock.StripComment(l[idx:]))
		} else {
			stack = nil
			if name = strings.TrimSuffix(name, "/"); name != filepath.Base(base) {
				t.Errorf("%s: the tree's first line %q is not the folder %s the marker names", b.Where(), name, base)
			}
			continue
		}
		if name == "" {
			continue
		}
		if fields := strings.Fields(name); len(fields) > 0 {
			name = fields[0]
		}
		stack = append(stack[:min(depth, len(stack))], strings.TrimSuffix(name, "/"))
		rel := filepath.Join(append([]string{base}, stack...)...)
		if _, err := os.Stat(filepath.Join(root, rel)); err != nil {
			t.Errorf("%s:%d: the tree names %s, which does not exist: update the listing", b.File, b.Line+1+i, rel)
		}
		n++
	}
	if n == 0 {
		t.Errorf("%s: tree: no entries read", b.Where())
	}
}
