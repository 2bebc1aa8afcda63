package refdocs

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Source is the product's Go code, parsed: every non-test file of every package docs/layout.md
// lists in a numbered layer (test infrastructure, the demo and the test-only packages apart: what
// they name is not the product's API).
type Source struct {
	Files []*File
}

// File is one parsed Go file.
type File struct {
	Pkg  string // its package's path from the repository root ("internal/operations")
	Path string // from the repository root
	Fset *token.FileSet
	AST  *ast.File
}

// Origin is where a name is in the code.
type Origin struct {
	Pkg   string // "internal/operations"
	Const string // the constant holding it ("PauseAnnotation"), or "" for a literal elsewhere
	Pos   string // file:line
}

// String names the origin as the page shows it: internal/operations.PauseAnnotation.
func (o Origin) String() string {
	if o.Const != "" {
		return o.Pkg + "." + o.Const
	}
	return o.Pos
}

// ParseSource parses the product's packages under root.
func ParseSource(root string) (*Source, error) {
	pkgs, err := productPackages(filepath.Join(root, "docs", "layout.md"))
	if err != nil {
		return nil, err
	}
	src := &Source{}
	fset := token.NewFileSet()
	for _, pkg := range pkgs {
		dir := filepath.Join(root, filepath.FromSlash(pkg))
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("reading package %s (docs/layout.md lists it): %w", pkg, err)
		}
		for _, e := range entries {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
				continue
			}
			rel := pkg + "/" + e.Name()
			if pkg == "." {
				rel = e.Name()
			}
			f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
			if err != nil {
				return nil, fmt.Errorf("parsing %s: %w", rel, err)
			}
			src.Files = append(src.Files, &File{Pkg: pkg, Path: rel, Fset: fset, AST: f})
		}
	}
	if len(src.Files) == 0 {
		return nil, fmt.Errorf("no Go files in the packages docs/layout.md lists under %s", root)
	}
	return src, nil
}

var layoutRowRE = regexp.MustCompile("^\\| `([^`]+)` \\| ([0-9]+|testing) \\|")

// productPackages are the packages docs/layout.md lists in a numbered layer.
func productPackages(layout string) ([]string, error) {
	f, err := os.Open(layout)
	if err != nil {
		return nil, fmt.Errorf("reading the package list: %w", err)
	}
	defer f.Close()
	var pkgs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := layoutRowRE.FindStringSubmatch(sc.Text()); m != nil && m[2] != "testing" {
			pkgs = append(pkgs, m[1])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", layout, err)
	}
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("%s lists no package with a numbered layer: its table changed shape (refdocs reads it)", layout)
	}
	return pkgs, nil
}

// StringsMatching finds every string literal of the product's code that re matches whole, with
// where it is: the constant it defines, else its position.
func (s *Source) StringsMatching(re *regexp.Regexp) map[string][]Origin {
	out := map[string][]Origin{}
	for _, f := range s.Files {
		consts := map[*ast.BasicLit]string{}
		ast.Inspect(f.AST, func(n ast.Node) bool {
			if vs, ok := n.(*ast.ValueSpec); ok {
				for i, v := range vs.Values {
					if lit, ok := v.(*ast.BasicLit); ok && i < len(vs.Names) {
						consts[lit] = vs.Names[i].Name
					}
				}
			}
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			v, err := strconv.Unquote(lit.Value)
			if err != nil || !re.MatchString(v) {
				return true
			}
			p := f.Fset.Position(lit.Pos())
			out[v] = append(out[v], Origin{Pkg: f.Pkg, Const: consts[lit], Pos: fmt.Sprintf("%s:%d", f.Path, p.Line)})
			return true
		})
	}
	return out
}

// ConstNames are the names of the constants of package pkg that start with one of prefixes, with
// their values where the code spells them as a literal ("" where it names another constant).
func (s *Source) ConstNames(pkg string, prefixes ...string) map[string]string {
	out := map[string]string{}
	for _, f := range s.Files {
		if f.Pkg != pkg {
			continue
		}
		for _, d := range f.AST.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(n.Name, p) }) {
						continue
					}
					val := ""
					if i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							val, _ = strconv.Unquote(lit.Value)
						}
					}
					out[n.Name] = val
				}
			}
		}
	}
	return out
}

// stringValue is the value of a string literal or a sum of them ("a" + "b"), else false.
func stringValue(e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		v, err := strconv.Unquote(e.Value)
		return v, err == nil
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "", false
		}
		a, ok1 := stringValue(e.X)
		b, ok2 := stringValue(e.Y)
		return a + b, ok1 && ok2
	case *ast.ParenExpr:
		return stringValue(e.X)
	}
	return "", false
}

// stringList is the value of a []string{...} literal of string literals.
func stringList(e ast.Expr) ([]string, bool) {
	cl, ok := e.(*ast.CompositeLit)
	if !ok {
		return nil, false
	}
	out := []string{}
	for _, el := range cl.Elts {
		v, ok := stringValue(el)
		if !ok {
			return nil, false
		}
		out = append(out, v)
	}
	return out, true
}

// Declared reports whether package pkg declares name at top level (a constant, variable, type or
// function).
func (s *Source) Declared(pkg, name string) bool {
	for _, f := range s.Files {
		if f.Pkg != pkg {
			continue
		}
		for _, d := range f.AST.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.Name == name {
					return true
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch sp := spec.(type) {
					case *ast.ValueSpec:
						for _, n := range sp.Names {
							if n.Name == name {
								return true
							}
						}
					case *ast.TypeSpec:
						if sp.Name.Name == name {
							return true
						}
					}
				}
			}
		}
	}
	return false
}
