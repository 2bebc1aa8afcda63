package readmetest

import (
	"bufio"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/addonops/addonops/"

// layoutRow matches a row of docs/layout.md's table: | `path` | layer | what |.
var layoutRow = regexp.MustCompile("^\\| `([^`]+)` \\| (testing|[0-9]+) \\|")

// TestLayout checks the layering docs/layout.md declares: every package of the repository is in
// its table, every package in the table exists, and no non-test file imports a package of its own
// or a higher layer, or test infrastructure. Test files may import anything.
func TestLayout(t *testing.T) {
	f, err := os.Open(filepath.Join(root, "docs", "layout.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	layer := map[string]int{} // path -> layer; -1 for testing
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := layoutRow.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		l := -1
		if m[2] != "testing" {
			l, _ = strconv.Atoi(m[2])
		}
		if _, dup := layer[m[1]]; dup {
			t.Errorf("docs/layout.md lists %s twice", m[1])
		}
		layer[m[1]] = l
	}
	if len(layer) == 0 {
		t.Fatal("docs/layout.md: no table rows found")
	}

	imports := map[string]map[string]bool{} // package -> module packages its non-test files import
	seen := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "tools" || rel == "bin" || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		pkg := filepath.ToSlash(filepath.Dir(rel))
		seen[pkg] = true
		if strings.HasSuffix(path, "_test.go") {
			return nil
		}
		af, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		if imports[pkg] == nil {
			imports[pkg] = map[string]bool{}
		}
		for _, im := range af.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if strings.HasPrefix(p, module) {
				imports[pkg][strings.TrimPrefix(p, module)] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for pkg := range seen {
		if _, ok := layer[pkg]; !ok {
			t.Errorf("package %s is not in docs/layout.md's table: add a row with its layer", pkg)
		}
	}
	for pkg := range layer {
		if !seen[pkg] {
			t.Errorf("docs/layout.md lists %s, which has no Go files: remove its row", pkg)
		}
	}
	for pkg, ims := range imports {
		from, ok := layer[pkg]
		if !ok || from < 0 {
			continue
		}
		for im := range ims {
			to, ok := layer[im]
			switch {
			case !ok:
				// reported above
			case to < 0:
				t.Errorf("%s (layer %d) imports test infrastructure %s: only tests and the testing layer may", pkg, from, im)
			case to >= from:
				t.Errorf("%s (layer %d) imports %s (layer %d): an import must point to a lower layer (docs/layout.md)", pkg, from, im, to)
			}
		}
	}
}
