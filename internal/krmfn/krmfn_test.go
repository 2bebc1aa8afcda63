package krmfn

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// rename appends "-x" to every name, or fails on an object named "bad".
func rename(req *Request) error {
	for _, it := range req.Items {
		if it.GetName() == "bad" {
			req.Errorf(it, "metadata.name", "name %q is not allowed", it.GetName())
			continue
		}
		req.Infof(it, "", "renamed %s", Describe(it))
		if err := it.SetName(it.GetName() + "-x"); err != nil {
			return err
		}
	}
	return nil
}

const resourceList = `apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: a
    annotations:
      config.kubernetes.io/index: '0'
      internal.config.kubernetes.io/index: '0'
  data:
    k: v # comment
functionConfig:
  apiVersion: v1
  kind: ConfigMap
  metadata: {name: cfg}
`

func TestResourceListMode(t *testing.T) {
	var out, errw bytes.Buffer
	code := Execute("t", Input{Stdin: strings.NewReader(resourceList)}, rename, &out, &errw)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errw.String())
	}
	rl := yaml.MustParse(out.String())
	if rl.GetKind() != "ResourceList" {
		t.Fatalf("output is not a ResourceList:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "name: a-x") || !strings.Contains(out.String(), "k: v # comment") || !strings.Contains(out.String(), "renamed ConfigMap a") {
		t.Fatalf("output lacks renamed item or info result:\n%s", out.String())
	}
	if errw.Len() != 0 {
		t.Fatalf("info results leaked to stderr under a ResourceList caller: %s", errw.String())
	}
}

func TestErrorWritesNoResources(t *testing.T) {
	in := strings.Replace(resourceList, "name: a\n", "name: bad\n", 1)
	var out, errw bytes.Buffer
	if code := Execute("t", Input{Stdin: strings.NewReader(in)}, rename, &out, &errw); code != 1 {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(errw.String(), `t: name "bad" is not allowed (ConfigMap bad, field metadata.name)`) {
		t.Fatalf("stderr = %q", errw.String())
	}
	if !strings.Contains(out.String(), "items: []") || !strings.Contains(out.String(), "severity: error") {
		t.Fatalf("error output must carry results only:\n%s", out.String())
	}
}

func TestPlainFilesMode(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "in.yaml")
	if err := os.WriteFile(f, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errw bytes.Buffer
	if code := Run("t", "test", []string{f}, strings.NewReader(""), &out, &errw, rename); code != 0 {
		t.Fatalf("exit %d: %s", code, errw.String())
	}
	want := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a-x\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b-x\n"
	if out.String() != want {
		t.Fatalf("plain output:\n%s\nwant:\n%s", out.String(), want)
	}
	if !strings.Contains(errw.String(), "info: renamed ConfigMap a (file "+f+")") {
		t.Fatalf("plain mode must show infos on stderr with the file: %q", errw.String())
	}
}

func TestPlainErrorWritesNothing(t *testing.T) {
	var out, errw bytes.Buffer
	code := Run("t", "test", nil, strings.NewReader("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\n"), &out, &errw, rename)
	if code != 1 || out.Len() != 0 {
		t.Fatalf("exit %d, stdout %q", code, out.String())
	}
}

const rlHeader = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n"

func utf16(s string, bom bool) string {
	var b []byte
	if bom {
		b = append(b, 0xFF, 0xFE)
	}
	for _, r := range s {
		b = append(b, byte(r), 0)
	}
	return string(b)
}

// Input that is not what the contract accepts is a clear error: exit 1, a message on stderr that
// says what is wrong, nothing at all on stdout (not even a ResourceList), no panic.
func TestMalformedInputs(t *testing.T) {
	twoObjects := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n"
	cases := []struct{ name, input, want string }{
		{"items holds a list", rlHeader + "items: [[x]]\n", "the ResourceList on stdin has items[0]: a list, but every item must be an object"},
		{"items holds a scalar item", rlHeader + "items: [x]\n", `items[0]: the scalar "x", but every item must be an object`},
		{"items holds a null item", rlHeader + "items:\n- \n", "items[0]: null, but every item must be an object"},
		{"items is a scalar", rlHeader + "items: hello\n", `the ResourceList on stdin has items: the scalar "hello", but items must be a list of objects`},
		{"items is a mapping", rlHeader + "items: {a: b}\n", "has items: a mapping, but items must be a list of objects"},
		{"no items", rlHeader + "functionConfig: {kind: X}\n", "the ResourceList on stdin has no items field"},
		{"ResourceList among other documents", rlHeader + "items: []\n---\n" + twoObjects, "document 1 on stdin is a ResourceList, which must be the only document of the input (there are 3)"},
		{"items is null", rlHeader + "items:\nfunctionConfig: {kind: X}\n", "the ResourceList on stdin has items: null: write items: [] for an empty one"},
		{"items is ~", rlHeader + "items: ~\n", "the ResourceList on stdin has items: null"},
		{"UTF-16 with byte order mark", utf16(twoObjects, true), "stdin is UTF-16"},
		{"UTF-16 without byte order mark", utf16(twoObjects, false), "stdin holds NUL bytes"},
		{"not UTF-8", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: \xff}\n", "stdin is not valid UTF-8"},
		{"empty stdin", "", "no input: stdin holds no YAML document"},
		{"only separators and comments", "# nothing\n---\n\n---\n", "no input: stdin holds no YAML document"},
		{"malformed YAML", "a: [b\n", "reading input"},
		{"plain document is a list", "- a\n- b\n", "stdin, document 1 is a list, but every document must be an object"},
		{"plain document is a scalar", "kind: X\n---\nhello\n", `stdin, document 2 is the string "hello", but every document must be an object`},
		// The line counts from the top of stdin, not of the document, which kyaml parses alone.
		{"malformed YAML in a later document", "kind: X\n---\nx: 1\n  a: b\n", "reading input: MalformedYAMLError: yaml: line 4: mapping values are not allowed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errw bytes.Buffer
			code := Run("t", "test", nil, strings.NewReader(tc.input), &out, &errw, rename)
			if code != 1 || out.Len() != 0 || !strings.HasPrefix(errw.String(), "t: ") || !strings.Contains(errw.String(), tc.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 1, no stdout, stderr with %q", code, out.String(), errw.String(), tc.want)
			}
		})
	}
}

func TestMalformedFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	obj := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"
	good := write("good.yaml", obj)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"functionConfig with two documents", []string{"--config", write("two.yaml", "kind: ConfigMap\n---\nkind: ConfigMap\n"), good}, "two.yaml holds 2 documents, but a functionConfig is exactly one object"},
		{"empty functionConfig", []string{"--config", write("empty.yaml", "# nothing\n"), good}, "empty.yaml holds no object"},
		{"functionConfig not an object", []string{"--config", write("list.yaml", "- a\n"), good}, "list.yaml is a list, but a functionConfig is an object"},
		{"UTF-16 file", []string{write("utf16.yaml", utf16(obj+"---\n"+obj, true))}, "utf16.yaml is UTF-16"},
		{"ResourceList as a file", []string{write("rl.yaml", rlHeader+"items: []\n")}, "rl.yaml: document 1 is a ResourceList: pipe it into stdin"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errw bytes.Buffer
			code := Run("t", "test", tc.args, strings.NewReader(""), &out, &errw, rename)
			if code != 1 || out.Len() != 0 || !strings.Contains(errw.String(), tc.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 1, no stdout, stderr with %q", code, out.String(), errw.String(), tc.want)
			}
		})
	}
}

// An empty ResourceList is valid input (kpt sends one for an empty package), and the answer
// carries the functionConfig it was given.
func TestEmptyResourceList(t *testing.T) {
	for _, in := range []string{rlHeader + "items: []\n", rlHeader + "items: []\nfunctionConfig: {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}\n"} {
		var out, errw bytes.Buffer
		if code := Run("t", "test", nil, strings.NewReader(in), &out, &errw, rename); code != 0 {
			t.Fatalf("exit %d: %s", code, errw.String())
		}
		rl := yaml.MustParse(out.String())
		if rl.GetKind() != "ResourceList" || (strings.Contains(in, "functionConfig") != (rl.Field("functionConfig") != nil)) {
			t.Fatalf("output:\n%s", out.String())
		}
	}
}

// FuzzResourceList feeds raw input, seeded with ResourceList shapes, through Execute. Whatever
// the input: no panic; either a clean failure (exit 1, a message on stderr, and on stdout nothing,
// or for a function's own error a ResourceList with error results and no items), or valid output:
// a ResourceList answer to a ResourceList, holding objects only.
func FuzzResourceList(f *testing.F) {
	for _, s := range []string{
		resourceList,
		strings.Replace(resourceList, "name: a\n", "name: bad\n", 1),
		rlHeader + "items: []\n",
		rlHeader + "items: [[x]]\n",
		rlHeader + "items: hello\n",
		rlHeader + "items: [~, {kind: X}]\n",
		rlHeader + "items:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\nfunctionConfig: [x]\nresults: 5\n",
		rlHeader + "items: []\n---\nkind: X\n",
		"apiVersion: v1\nkind: List\nitems: [{kind: X, metadata: {name: a}}]\n",
		`{"apiVersion":"config.kubernetes.io/v1","kind":"ResourceList","items":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}]}`,
		utf16(resourceList, true),
		"",
		"a: &x [*x]\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, input string) {
		var out, errw bytes.Buffer
		code := Execute("t", Input{Stdin: strings.NewReader(input)}, rename, &out, &errw)
		switch code {
		case 1:
			if errw.Len() == 0 {
				t.Fatalf("failed without a message; input %q", input)
			}
			if out.Len() == 0 {
				return
			}
			rl, err := yaml.Parse(out.String())
			if err != nil || rl.GetKind() != "ResourceList" || !strings.Contains(out.String(), "items: []") || !strings.Contains(out.String(), "severity: error") {
				t.Fatalf("failed run wrote more than error results:\n%s\ninput %q", out.String(), input)
			}
		case 0:
			wrapped := false
			if in, err := yaml.Parse(input); err == nil && isObject(in) && in.GetKind() == "ResourceList" {
				wrapped = true
			}
			items, err := (&kio.ByteReader{Reader: strings.NewReader(out.String()), OmitReaderAnnotations: true}).Read()
			if err != nil {
				t.Fatalf("output is not valid YAML: %v\n%s\ninput %q", err, out.String(), input)
			}
			if rl, err := yaml.Parse(out.String()); wrapped && (err != nil || !isObject(rl) || rl.GetKind() != "ResourceList") {
				t.Fatalf("a ResourceList was not answered with one:\n%s", out.String())
			}
			for _, it := range items {
				if !isObject(it) {
					t.Fatalf("output holds a non-object:\n%s\ninput %q", out.String(), input)
				}
			}
		default:
			t.Fatalf("exit %d", code)
		}
	})
}

func TestFieldErrors(t *testing.T) {
	obj, err := yaml.Parse("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: ns}\n")
	if err != nil {
		t.Fatal(err)
	}
	var r Reporter
	r.FieldErrors(obj, "p: ", field.ErrorList{
		field.Invalid(field.NewPath("spec", "x"), "A", "must be lower case"),
		field.Invalid(nil, nil, "some validation rules were not checked"),
	})
	if len(r.Results) != 2 {
		t.Fatalf("%d results", len(r.Results))
	}
	if got, want := r.Results[0].Message, `p: ConfigMap ns/c: spec.x: Invalid value: "A": must be lower case`; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	if r.Results[0].Field == nil || r.Results[0].Field.Path != "spec.x" {
		t.Errorf("field %+v", r.Results[0].Field)
	}
	if got, want := r.Results[1].Message, "p: ConfigMap ns/c: some validation rules were not checked"; got != want || r.Results[1].Field != nil {
		t.Errorf("message %q (field %+v), want %q and no field", got, r.Results[1].Field, want)
	}
}
