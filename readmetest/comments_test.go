package readmetest

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// Comments cite only what is in the repository: a reader of the code has no access to the design
// documents, notes or reference files the project was started from, so a comment that cites them
// (by seed number, numbered corner case, section of a reference file, or a path under the shared
// folder) points nowhere. The design
// documents the code follows are summarised in docs/design; a comment points there, at a heading
// that exists.

// foreignCitations are what a Go comment may not cite, each with what to write instead.
var foreignCitations = []struct {
	re   *regexp.Regexp
	hint string
}{
	{regexp.MustCompile(`(?i)\bseeds?\s*\(?\s*\d{1,3}\b`), "a design document by its seed number"},
	{regexp.MustCompile(`(?i)\bcorner\s+cases?\s+\d`), "a numbered corner case of a design document"},
	{regexp.MustCompile(`(?i)\breference\b[^§\n]{0,40}§`), "a section of a reference document outside the repository"},
	{regexp.MustCompile(`(?:^|[^\w.-])/?(?:work/)?shared/`), "a shared/ path outside the repository"},
	{regexp.MustCompile(`(?i)ocm-addon-behaviour|gitops-ecosystem\.md|test-environment\.md`), "a reference document outside the repository"},
	{regexp.MustCompile(`(?i)\bissues?\s+#?\d+\b`), "an issue by its number (the tracker is outside the repository: say what the code does)"},
}

// docLink is a repository path into docs/ with an optional anchor, as comments write it.
var docLink = regexp.MustCompile("(?:^|[\\s(`\"'])(?:\\./)?(docs/[\\w./-]+?\\.md)(#[\\w-]*)?")

// TestCommentsCiteOnlyTheRepository fails for every Go comment that cites a document outside the
// repository, or points at a docs/ page or heading that does not exist.
func TestCommentsCiteOnlyTheRepository(t *testing.T) {
	problems, err := commentProblems(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestCommentCheckFails proves the check can fail: a tree with each kind of bad comment, and a good
// one that must pass.
func TestCommentCheckFails(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docs/design/x.md", "# X\n\n## When a cluster's change is done\n\n```sh\n## not a heading\n```\n\n## `lastTransitionTime` — [finish](y.md)\n")
	write("p/good.go", `// Package p: see docs/design/x.md#when-a-clusters-change-is-done and
// (docs/design/x.md#lasttransitiontime--finish), docs/design/x.md, seed-canary, a seeded fuzz case.
package p
`)
	write("p/bad.go", `package p

// A: seed 000's rule.
// B: as the seed (001) says.
// C: corner case 3.
// D: reference §4.5.
// E: shared/reference/test-environment.md.
// F: docs/design/missing.md.
// G: docs/design/x.md#not-a-heading.
// H: reference ocm-addon-behaviour.md.
var X = 1 // I: see docs/design/x.md#when-a-cluster-s-change-is-done
`)
	problems, err := commentProblems(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"bad.go:3:", "bad.go:4:", "bad.go:5:", "bad.go:6:", "bad.go:7:", "bad.go:8:", "bad.go:9:", "bad.go:10:", "bad.go:11:"} {
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, want) }) {
			t.Errorf("no problem reported at %s; got:\n%s", want, strings.Join(problems, "\n"))
		}
	}
	for _, p := range problems {
		if strings.Contains(p, "good.go") {
			t.Errorf("reported a comment that is fine: %s", p)
		}
	}
}

func TestGitHubAnchor(t *testing.T) {
	for heading, want := range map[string]string{
		"When a cluster's change is done":                      "when-a-clusters-change-is-done",
		"`lastTransitionTime` is when the change finished":     "lasttransitiontime-is-when-the-change-finished",
		"Forward changes — and the canary":                     "forward-changes--and-the-canary",
		"One name per content: how long the suffix is":         "one-name-per-content-how-long-the-suffix-is",
		"See [the spec](../spec.md) and **bold** snake_case 2": "see-the-spec-and-bold-snake_case-2",
	} {
		if got := githubAnchor(heading); got != want {
			t.Errorf("githubAnchor(%q) = %q, want %q", heading, got, want)
		}
	}
}

// commentProblems checks every Go comment under dir (bin/, testdata/ and hidden folders aside).
func commentProblems(dir string) (problems []string, err error) {
	anchors := map[string][]string{} // docs page -> its anchors, read once
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "bin" || d.Name() == "testdata" || (strings.HasPrefix(d.Name(), ".") && rel != ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("reading the comments of %s: %w", rel, err)
		}
		for _, group := range f.Comments {
			for _, c := range group.List {
				for i, line := range strings.Split(c.Text, "\n") {
					where := fmt.Sprintf("%s:%d", rel, fset.Position(c.Slash).Line+i)
					for _, msg := range lineProblems(dir, line, anchors) {
						problems = append(problems, where+": "+msg)
					}
				}
			}
		}
		return nil
	})
	return problems, err
}

// lineProblems checks one comment line.
func lineProblems(dir, line string, anchors map[string][]string) []string {
	var out []string
	for _, fc := range foreignCitations {
		if m := fc.re.FindString(line); m != "" {
			out = append(out, fmt.Sprintf("%q cites %s, which a reader of the repository cannot open: point at the heading of docs/design/*.md that summarises it (add one if needed), or say it in the comment itself", strings.TrimSpace(m), fc.hint))
		}
	}
	for _, m := range docLink.FindAllStringSubmatch(line, -1) {
		page, anchor := m[1], strings.TrimPrefix(m[2], "#")
		list, read := anchors[page]
		if !read {
			if b, err := os.ReadFile(filepath.Join(dir, page)); err == nil {
				list = append(markdownAnchors(string(b)), "") // "": the page itself, even without headings
			}
			anchors[page] = list // nil: the page does not exist
		}
		switch {
		case list == nil:
			out = append(out, fmt.Sprintf("points at %s, which does not exist: fix the path, or write the page", page))
		case anchor != "" && !slices.Contains(list, anchor):
			out = append(out, fmt.Sprintf("points at %s#%s, but %s has no such heading (its anchors: %s): fix the anchor or the heading", page, anchor, page, strings.Join(slices.DeleteFunc(slices.Clone(list), func(a string) bool { return a == "" }), ", ")))
		}
	}
	return out
}

var (
	atxHeading = regexp.MustCompile(`^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$`)
	mdLink     = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// markdownAnchors lists the anchors GitHub gives the headings of a markdown page, duplicates
// numbered as GitHub numbers them (-1, -2, ...); lines in fenced code blocks are not headings.
func markdownAnchors(text string) []string {
	var out []string
	seen := map[string]int{}
	for _, l := range proseLines(text) {
		m := atxHeading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		a := githubAnchor(m[1])
		if n := seen[a]; n > 0 {
			seen[a] = n + 1
			a = fmt.Sprintf("%s-%d", a, n)
		} else {
			seen[a] = 1
		}
		out = append(out, a)
	}
	return out
}

// proseLines yields the lines of a markdown page outside fenced code blocks, with their index.
func proseLines(text string) iter.Seq2[int, string] {
	return func(yield func(int, string) bool) {
		fence := ""
		for i, l := range strings.Split(text, "\n") {
			trimmed := strings.TrimLeft(l, " ")
			if fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")) {
				fence = trimmed[:3]
				continue
			}
			if fence != "" {
				if strings.HasPrefix(trimmed, fence) {
					fence = ""
				}
				continue
			}
			if !yield(i, l) {
				return
			}
		}
	}
}

// githubAnchor is the anchor GitHub gives a heading: the rendered text (a link's text, no markup)
// in lower case, every character but letters, digits, '_', '-' and spaces dropped, spaces -> '-'.
func githubAnchor(heading string) string {
	text := mdLink.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
