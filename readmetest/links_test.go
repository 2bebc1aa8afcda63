package readmetest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var (
	// inlineLink is a markdown link or image: [text](target) or [text](target "title").
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// refLink is a reference definition: [label]: target.
	refLink = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s|$)`)
	// htmlAnchor is an explicit anchor a page may set: <a id="x"> or name="x".
	htmlAnchor = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	inlineCode = regexp.MustCompile("`+[^`]*`+")
)

// TestMarkdownLinks fails for every link of a markdown page of the repository that points at a
// file or folder the repository lacks, or at a heading its page does not have: a page moved or
// a heading renamed must take its links along. Links to other sites are not followed.
func TestMarkdownLinks(t *testing.T) {
	anchors := map[string][]string{}
	for _, f := range markdownFiles(t) {
		for _, p := range linkProblems(root, f.path, f.text, anchors) {
			t.Error(p)
		}
	}
}

// TestLinkCheckFails proves the check can fail, and passes what it must.
func TestLinkCheckFails(t *testing.T) {
	dir := t.TempDir()
	for rel, content := range map[string]string{
		"docs/a.md":   "# A\n\n## Two words\n\n<a id=\"custom\"></a>\n",
		"docs/dir/.k": "",
	} {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	page := strings.Join([]string{
		"[ok](docs/a.md) [ok](docs/a.md#two-words) [ok](./docs/a.md#custom) [ok](docs/dir/) [ok](#here)",
		"[ok](https://example.com/x.md) [ok](mailto:a@b) `[not a link](missing.md)`",
		"## Here",
		"```",
		"[not a link](missing.md)",
		"```",
		"[bad1](docs/missing.md) [bad2](docs/a.md#no-such) [bad3](#nowhere)",
		"[ref]: docs/gone.md",
	}, "\n")
	problems := linkProblems(dir, "README.md", page, map[string][]string{})
	for _, want := range []string{"docs/missing.md", "docs/a.md#no-such", "#nowhere", "docs/gone.md"} {
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, want) }) {
			t.Errorf("no problem reported for %s; got:\n%s", want, strings.Join(problems, "\n"))
		}
	}
	if len(problems) != 4 {
		t.Errorf("%d problems, want 4:\n%s", len(problems), strings.Join(problems, "\n"))
	}
}

// linkProblems checks the links of markdown page rel (repository-relative, text its content).
func linkProblems(dir, rel, text string, anchors map[string][]string) []string {
	var out []string
	if _, ok := anchors[rel]; !ok {
		anchors[rel] = pageAnchors(text)
	}
	for i, line := range proseLines(text) {
		line = inlineCode.ReplaceAllString(line, "")
		var targets []string
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			targets = append(targets, m[1])
		}
		if m := refLink.FindStringSubmatch(line); m != nil {
			targets = append(targets, m[1])
		}
		for _, target := range targets {
			if msg := checkLink(dir, rel, target, anchors); msg != "" {
				out = append(out, fmt.Sprintf("%s:%d: link %s %s", rel, i+1, target, msg))
			}
		}
	}
	return out
}

// checkLink says what is wrong with one link target of page rel, or "".
func checkLink(dir, rel, target string, anchors map[string][]string) string {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return ""
	}
	path, anchor, _ := strings.Cut(target, "#")
	page := rel
	if path != "" {
		page = filepath.ToSlash(filepath.Join(filepath.Dir(rel), path))
		if strings.HasPrefix(page, "../") || strings.HasPrefix(path, "/") {
			return "leaves the repository: link within it, or to the page's address on the web"
		}
		if _, err := os.Stat(filepath.Join(dir, page)); err != nil {
			return "points at " + page + ", which does not exist: fix the path, or write the page"
		}
	}
	if anchor == "" || !strings.HasSuffix(page, ".md") {
		return ""
	}
	list, read := anchors[page]
	if !read {
		if b, err := os.ReadFile(filepath.Join(dir, page)); err == nil {
			list = pageAnchors(string(b))
		}
		anchors[page] = list
	}
	if !slices.Contains(list, anchor) {
		return fmt.Sprintf("points at a heading %s lacks (#%s): fix the anchor or the heading", page, anchor)
	}
	return ""
}

// pageAnchors lists the anchors of a markdown page: its headings' and its explicit ones.
func pageAnchors(text string) []string {
	list := markdownAnchors(text)
	for _, m := range htmlAnchor.FindAllStringSubmatch(text, -1) {
		list = append(list, m[1])
	}
	return list
}

// navEntry is a page of mkdocs.yml's nav: "- Title: page.md" or "- page.md".
var navEntry = regexp.MustCompile(`^\s*-\s+(?:[^:]+:\s+)?([\w./-]+\.md)\s*$`)

// TestMkdocsNav keeps the site's navigation and the docs/ tree together: every page the nav
// lists exists, and every page of docs/ is in the nav, but for the CLI reference's per-command
// pages, which its index links.
func TestMkdocsNav(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "mkdocs.yml"))
	if err != nil {
		t.Fatal(err)
	}
	nav := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if m := navEntry.FindStringSubmatch(line); m != nil {
			nav[m[1]] = true
			if _, err := os.Stat(filepath.Join(root, "docs", m[1])); err != nil {
				t.Errorf("mkdocs.yml lists docs/%s, which does not exist: fix the entry or write the page", m[1])
			}
		}
	}
	if len(nav) == 0 {
		t.Fatal("mkdocs.yml lists no page: has its nav's shape changed?")
	}
	for _, f := range markdownFiles(t) {
		page, ok := strings.CutPrefix(f.path, "docs/")
		if !ok || strings.HasPrefix(page, "reference/cli/") {
			continue
		}
		if !nav[page] {
			t.Errorf("%s is not in mkdocs.yml's nav: add it where a reader looks for it", f.path)
		}
	}
}
