package readmetest

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/mdblock"
)

func TestMain(m *testing.M) {
	code := localhub.RunTests(m)
	for _, f := range afterTests {
		f()
	}
	os.Exit(code)
}

// afterTests run once every test has: the integration tier removes the tools it built there.
var afterTests []func()

// verbs are the markers' verbs, with the block languages each applies to ("" is a block without
// a language).
var verbs = map[string][]string{
	"run":        {"sh", "console"},
	"check-only": {"sh", "console"},
	"covered-by": {"sh", "console"},
	"object":     {"yaml"},
	"fragment":   {"yaml"},
	"same-as":    {"yaml", "sh", ""},
	"lines-in":   {"", "text", "console", "diff"},
	"tree":       {""},
	"skip":       {"", "text", "console", "diff", "yaml", "sh"},
	"diagram":    {"mermaid"},
}

var root = func() string {
	r, err := localhub.RepoRoot("")
	if err != nil {
		panic(err)
	}
	return r
}()

// markdownFile is one markdown file of the repository with its blocks.
type markdownFile struct {
	path   string // repository-relative
	text   string
	blocks []mdblock.Block
}

// markdownFiles reads every markdown file of the repository (bin/ and hidden folders left out).
func markdownFiles(t *testing.T) []markdownFile {
	t.Helper()
	var files []markdownFile
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() && (rel == "bin" || (strings.HasPrefix(d.Name(), ".") && rel != ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".md") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		blocks, err := mdblock.Extract(rel, string(b))
		if err != nil {
			t.Error(err)
			return nil
		}
		files = append(files, markdownFile{path: rel, text: string(b), blocks: blocks})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no markdown files found under " + root)
	}
	return files
}

// classify returns why a block's marker is not acceptable, or "".
func classify(b mdblock.Block) string {
	lang := b.Lang
	if lang == "bash" || lang == "shell" {
		lang = "sh"
	}
	if b.Marker == nil {
		return fmt.Sprintf("new ```%s block not covered: add a marker on the line before its fence, e.g. %s (the verbs are listed in readmetest/doc.go)", b.Lang, suggest(lang))
	}
	m := b.Marker
	langs, ok := verbs[m.Verb]
	if !ok {
		return fmt.Sprintf("marker on line %d: unknown verb %q: use one of %s (readmetest/doc.go)", m.Line, m.Verb, strings.Join(sortedVerbs(), ", "))
	}
	if !slices.Contains(langs, lang) {
		return fmt.Sprintf("marker on line %d: %q does not apply to a ```%s block (only to %q)", m.Line, m.Verb, b.Lang, langs)
	}
	switch m.Verb {
	case "diagram":
		if len(m.Args) != 0 {
			return fmt.Sprintf("marker on line %d: diagram takes no argument", m.Line)
		}
	case "skip", "check-only":
		if len(m.Args) != 1 || len(strings.TrimSpace(m.Args[0])) < 10 {
			return fmt.Sprintf("marker on line %d: %s needs one quoted reason saying why the block cannot be run or validated", m.Line, m.Verb)
		}
	case "covered-by", "same-as", "lines-in", "tree":
		if len(m.Args) != 1 {
			return fmt.Sprintf("marker on line %d: %s takes one repository path", m.Line, m.Verb)
		}
		if _, err := os.Stat(filepath.Join(root, m.Args[0])); err != nil {
			return fmt.Sprintf("marker on line %d: %s %s: %v", m.Line, m.Verb, m.Args[0], err)
		}
	case "fragment":
		if len(m.Args) < 1 || len(m.Args) > 2 {
			return fmt.Sprintf("marker on line %d: fragment takes KIND [PATH]", m.Line)
		}
		if _, ok := skeletons[m.Args[0]]; !ok {
			return fmt.Sprintf("marker on line %d: fragment of unknown kind %q: add a skeleton to readmetest/yaml_test.go", m.Line, m.Args[0])
		}
	case "object":
		if len(m.Args) > 1 || (len(m.Args) == 1 && !strings.HasPrefix(m.Args[0], "fnconfig=")) {
			return fmt.Sprintf("marker on line %d: object takes no argument but fnconfig=FUNCTION", m.Line)
		}
	case "run":
		if _, err := parseRun(m.Args); err != nil {
			return fmt.Sprintf("marker on line %d: %v", m.Line, err)
		}
	}
	return ""
}

func suggest(lang string) string {
	switch lang {
	case "sh":
		return `<!-- readme-test: run --> (add "hub" when it needs a hub) or <!-- readme-test: check-only "why it cannot run here" -->`
	case "console":
		return `<!-- readme-test: run hub --> (its output is compared)`
	case "yaml":
		return `<!-- readme-test: object --> or <!-- readme-test: fragment KIND PATH -->`
	case "mermaid":
		return `<!-- readme-test: diagram -->`
	}
	return `<!-- readme-test: lines-in PATH --> (output kept in golden files) or <!-- readme-test: skip "why" -->`
}

func sortedVerbs() []string {
	var v []string
	for k := range verbs {
		v = append(v, k)
	}
	slices.Sort(v)
	return v
}

// TestEveryBlockIsClassified fails for every block without a valid marker: a block added to a
// README must say how it is tested.
func TestEveryBlockIsClassified(t *testing.T) {
	counts := map[string]int{}
	n := 0
	for _, f := range markdownFiles(t) {
		for _, b := range f.blocks {
			n++
			if msg := classify(b); msg != "" {
				t.Errorf("%s: %s", b.Where(), msg)
				continue
			}
			counts[b.Marker.Verb]++
		}
	}
	t.Logf("%d blocks: %v", n, counts)
}

// runArgs are a run marker's arguments.
type runArgs struct {
	hub    bool
	subs   [][2]string
	stdout map[int]string
	before string
	cwd    string
	ignore *regexp.Regexp
}

func parseRun(args []string) (runArgs, error) {
	r := runArgs{stdout: map[int]string{}}
	for _, a := range args {
		switch k, v, _ := strings.Cut(a, "="); {
		case a == "hub":
			r.hub = true
		case strings.HasPrefix(a, "sub:") && strings.Contains(a, "="):
			old, nw, _ := strings.Cut(strings.TrimPrefix(a, "sub:"), "=")
			r.subs = append(r.subs, [2]string{old, nw})
		case strings.HasPrefix(k, "stdout:"):
			n, err := strconv.Atoi(strings.TrimPrefix(k, "stdout:"))
			if err != nil || n < 1 {
				return r, fmt.Errorf("run: %q: write stdout:N=FILE with N the command's number from 1", a)
			}
			r.stdout[n] = v
		case k == "before":
			r.before = v
		case k == "cwd":
			r.cwd = v
		case k == "ignore":
			re, err := regexp.Compile(v)
			if err != nil {
				return r, fmt.Errorf("run: ignore: %v", err)
			}
			r.ignore = re
		default:
			return r, fmt.Errorf("run: unknown argument %q (hub, sub:OLD=NEW, stdout:N=FILE, before=..., cwd=DIR, ignore=REGEXP)", a)
		}
	}
	return r, nil
}

// diagramKinds are the Mermaid diagram types the docs use.
var diagramKinds = []string{"flowchart", "graph", "sequenceDiagram", "stateDiagram-v2"}

// repoPath matches a repository path a diagram names (internal/hubcache, cmd/addonops, ...).
var repoPath = regexp.MustCompile(`\b(?:internal|cmd|functions|config|health|docs)/[a-z0-9_./-]*[a-z0-9]`)

// TestDiagrams checks every block marked diagram: a Mermaid diagram of a known type whose
// brackets and quotes balance on every line (Mermaid refuses the whole diagram otherwise, and
// GitHub then shows an error instead of the picture), and whose repository paths exist, so a
// diagram cannot name a package that moved.
func TestDiagrams(t *testing.T) {
	n := 0
	for _, f := range markdownFiles(t) {
		for _, b := range f.blocks {
			if b.Marker == nil || b.Marker.Verb != "diagram" || classify(b) != "" {
				continue
			}
			n++
			lines := strings.Split(strings.TrimSpace(b.Content), "\n")
			if kind := strings.Fields(lines[0]); len(kind) == 0 || !slices.Contains(diagramKinds, kind[0]) {
				t.Errorf("%s: the diagram starts with %q, not one of %q", b.Where(), lines[0], diagramKinds)
			}
			for i, l := range lines {
				if strings.Count(l, `"`)%2 != 0 {
					t.Errorf("%s:%d: unbalanced quotes in %q", b.File, b.Line+1+i, l)
				}
				for _, pair := range []string{"[]", "()", "{}"} {
					if strings.Count(l, pair[:1]) != strings.Count(l, pair[1:]) {
						t.Errorf("%s:%d: unbalanced %s in %q", b.File, b.Line+1+i, pair, l)
					}
				}
				for _, p := range repoPath.FindAllString(l, -1) {
					if _, err := os.Stat(filepath.Join(root, p)); err != nil {
						t.Errorf("%s:%d: the diagram names %s, which does not exist", b.File, b.Line+1+i, p)
					}
				}
			}
		}
	}
	t.Logf("%d diagrams", n)
}
