package krmfn

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// runBoth runs args (flags, FILEs) with stdin through both paths, Run with rename and RunStream
// with renameStream, in dir, fails unless they answer alike, and returns the answer.
func runBoth(t *testing.T, dir, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	t.Chdir(dir)
	var out1, err1, out2, err2 bytes.Buffer
	c1 := Run("t", "test", args, strings.NewReader(stdin), &out1, &err1, rename)
	c2 := RunStream("t", "test", args, strings.NewReader(stdin), &out2, &err2, renameStream)
	if c1 != c2 || out1.String() != out2.String() || err1.String() != err2.String() {
		t.Fatalf("the paths disagree on args %q, stdin %q:\nExecute: exit %d\n%s\nstderr %s\nExecuteStream: exit %d\n%s\nstderr %s",
			args, stdin, c1, out1.String(), err1.String(), c2, out2.String(), err2.String())
	}
	return c1, out1.String(), err1.String()
}

func cm(name string, extra ...string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n" + strings.Join(extra, "")
}

// item indents an object as a ResourceList item.
func item(obj string) string {
	return "- " + strings.ReplaceAll(strings.TrimSuffix(obj, "\n"), "\n", "\n  ") + "\n"
}

// answer is how the input must be answered when it is refused.
type answer int

const (
	// noAnswer: malformed input, nothing on stdout.
	noAnswer answer = iota
	// results: a ResourceList holding the error as its only result (and no items), for a
	// ResourceList whose objects are refused; nothing on stdout for plain input.
	results
)

// TestStrictReader covers every rule of the strict reader on both paths, with the message each
// gives: exit 1, the message on stderr, and on stdout nothing or, for a ResourceList whose objects
// are refused, a ResourceList with the error as its only result.
func TestStrictReader(t *testing.T) {
	dupData := cm("a", "data:\n  k: one\n  x: y\n  k: two\n")
	split := rlHeader + "items:\n" + item(cm("z")) + item(dupData) + "functionConfig:\n  kind: X\n"
	// A comment between items makes the stream path parse the list whole: same message.
	whole := rlHeader + "items:\n" + item(cm("z")) + "# between\n" + item(dupData)
	kpt := func(name, path string) string {
		return cm(name, "  annotations:\n    internal.config.kubernetes.io/path: "+path+"\n")
	}
	deploy := func(apiVersion, ns string) string {
		return "apiVersion: " + apiVersion + "\nkind: Deployment\nmetadata:\n  name: d\n  namespace: " + ns + "\n"
	}
	cases := []struct {
		name   string
		files  map[string]string
		stdin  string
		args   []string
		want   string // "" : accepted
		answer answer
	}{
		// Duplicate keys, with both lines counted from the top of the file or stdin.
		{name: "duplicate key in a plain document", stdin: cm("a") + "---\n" + dupData,
			want: "stdin, document 2 (ConfigMap a): key data.k is given twice, on lines 11 and 13: YAML tools disagree on which one counts (this function would read the first, kubectl the last): delete one of them"},
		{name: "duplicate key deep in a file", files: map[string]string{"in.yaml": "# header\n---\n" + cm("a", "spec:\n  list:\n  - x: 1\n    y:\n      z: 1\n      z: 2\n")},
			args: []string{"in.yaml"}, want: "in.yaml, document 1 (ConfigMap a): key spec.list[0].y.z is given twice, on lines 11 and 12"},
		{name: "duplicate key given as -", stdin: dupData, args: []string{"-"}, want: "stdin, document 1 (ConfigMap a): key data.k is given twice, on lines 6 and 8"},
		{name: "duplicate top-level key", stdin: cm("a") + "kind: Secret\n", want: "stdin, document 1 (ConfigMap a): key kind is given twice, on lines 2 and 5"},
		{name: "duplicate metadata.name", stdin: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  name: b\n", want: "key metadata.name is given twice, on lines 4 and 5"},
		{name: "duplicate annotation", stdin: cm("a", "  annotations:\n    example.com/x: a\n    example.com/x: b\n"),
			want: "key metadata.annotations[example.com/x] is given twice, on lines 6 and 7"},
		{name: "duplicate key in an anchored mapping", stdin: cm("a", "data: &d {k: 1, k: 2}\nother: *d\n"), want: "key data.k is given twice, on lines 5 and 5"},
		{name: "merge key overridden", stdin: cm("a", "base: &b {k: one, l: two}\ndata:\n  <<: *b\n  k: three\n")},
		{name: "merge key twice", stdin: cm("a", "base: &b {k: one}\ndata:\n  <<: *b\n  <<: *b\n"), want: "key data[<<] is given twice, on lines 7 and 8"},
		{name: "duplicate key in an item split from its ResourceList", stdin: split,
			want: "stdin, ResourceList items[1] (ConfigMap a): key data.k is given twice, on lines 13 and 15", answer: results},
		{name: "duplicate key in an item of a ResourceList parsed whole", stdin: whole,
			want: "stdin, ResourceList items[1] (ConfigMap a): key data.k is given twice, on lines 14 and 16", answer: results},
		{name: "items twice", stdin: rlHeader + "items: []\nfunctionConfig: {kind: X}\nitems:\n" + item(cm("a")),
			want: "stdin, ResourceList: key items is given twice, on lines 3 and 5"},
		{name: "functionConfig twice", stdin: rlHeader + "items:\n" + item(cm("a")) + "functionConfig: {kind: X}\nfunctionConfig: {kind: Y}\n",
			want: "stdin, ResourceList: key functionConfig is given twice, on lines 8 and 9"},
		{name: "duplicate key in the ResourceList's functionConfig", stdin: rlHeader + "items:\n" + item(cm("a")) + "functionConfig:\n  kind: X\n  data:\n    a: 1\n    a: 2\n",
			want: "stdin, ResourceList: key functionConfig.data.a is given twice, on lines 11 and 12"},
		{name: "duplicate key in a --config file", files: map[string]string{"fn.yaml": "# config\n---\nkind: ConfigMap\ndata:\n  a: 1\n  a: 2\n", "in.yaml": cm("a")},
			args: []string{"--config", "fn.yaml", "in.yaml"}, want: "functionConfig fn.yaml: key data.a is given twice, on lines 5 and 6"},

		// Objects twice.
		{name: "the same object in two files", files: map[string]string{"a.yaml": cm("a"), "b.yaml": cm("b") + "---\n" + cm("a")}, args: []string{"a.yaml", "b.yaml"},
			want: "ConfigMap a is in the input twice (a.yaml, document 1; b.yaml, document 2): an object may appear only once (same API group, kind, namespace and name), or one of them silently replaces the other on the cluster: delete one, or rename it"},
		{name: "the same object twice on stdin", stdin: deploy("apps/v1", "ns") + "---\n" + cm("a") + "---\n" + deploy("apps/v1beta2", "ns"),
			want: "Deployment ns/d (apps) is in the input twice (stdin, document 1; stdin, document 3)"},
		{name: "the same object twice in a ResourceList, with kpt's paths", stdin: rlHeader + "items:\n" + item(kpt("a", "a.yaml")) + item(kpt("a", "b.yaml")),
			want: "ConfigMap a is in the input twice (stdin, ResourceList items[0] (file a.yaml); stdin, ResourceList items[1] (file b.yaml))", answer: results},
		{name: "other namespace, other group, other kind", stdin: deploy("apps/v1", "ns") + "---\n" + deploy("apps/v1", "other") + "---\n" + deploy("extensions/v1beta1", "ns") +
			"---\n" + cm("d", "  namespace: ns\n")},
		{name: "local config and objects without name", stdin: cm("k", "  annotations: {config.kubernetes.io/local-config: \"true\"}\n") + "---\n" +
			cm("k", "  annotations: {config.kubernetes.io/local-config: \"true\"}\n") + "---\napiVersion: v1\nkind: ConfigMap\n---\napiVersion: v1\nkind: ConfigMap\n"},

		// Lists.
		{name: "a List alone on stdin", stdin: "apiVersion: v1\nkind: List\nitems:\n" + item(cm("a")),
			want: "stdin, document 1 is a List, a list of objects (what kubectl get -o yaml writes), whose items this function would not see: expand it into its objects first: " +
				"list its file under resources: in a kustomization and run kustomize build, which expands Lists, or run yq '.items[] | split_doc' FILE (mikefarah's yq; python-yq: yq -y '.items[]' FILE)"},
		{name: "a List in a file", files: map[string]string{"in.yaml": cm("a") + "---\napiVersion: v1\nkind: List\nitems: []\n"}, args: []string{"in.yaml"},
			want: "in.yaml, document 2 is a List"},
		{name: "a ConfigMapList in a ResourceList", stdin: rlHeader + "items:\n" + item(cm("a")) + item("apiVersion: v1\nkind: ConfigMapList\nitems:\n"+item(cm("b"))),
			want: "stdin, ResourceList items[1] is a ConfigMapList", answer: results},
		{name: "a kind ending in List without items", stdin: "apiVersion: example.com/v1\nkind: AllowList\nmetadata: {name: a}\nspec: {}\n"},

		// items: null.
		{name: "items: null", stdin: rlHeader + "items: null\n", want: "the ResourceList on stdin has items: null: write items: [] for an empty one"},

		// Metadata values of the wrong type.
		{name: "a boolean annotation", stdin: cm("a", "  annotations:\n    addonops.io/hash-suffix: true\n"),
			want: `stdin, document 1 (ConfigMap a): metadata.annotations[addonops.io/hash-suffix] is the boolean true, but annotation values are strings (the API server rejects anything else): quote it: "true"`},
		{name: "a number label in a ResourceList", stdin: rlHeader + "items:\n" + item(cm("a", "  labels: {tier: 5}\n")),
			want: `stdin, ResourceList items[0] (ConfigMap a): metadata.labels[tier] is the number 5, but label values are strings (the API server rejects anything else): quote it: "5"`, answer: results},
		{name: "a null annotation", stdin: cm("a", "  annotations:\n    x:\n"),
			want: `metadata.annotations[x] is null, but annotation values are strings (the API server rejects anything else): write "" for an empty value, or remove the key`},
		{name: "a mapping as annotation value", stdin: cm("a", "  annotations:\n    x: {a: b}\n"), want: "metadata.annotations[x] is a mapping, but annotation values are strings (the API server rejects anything else): write a string"},
		{name: "a number name", stdin: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: 0755\n", want: `stdin, document 1 (ConfigMap 0755): metadata.name is the number 0755, but a name is a string: quote it: "0755"`},
		{name: "a boolean namespace", stdin: cm("a", "  namespace: yes\n"), want: ""}, // yes is a string in YAML 1.2
		{name: "a boolean namespace, YAML 1.2", stdin: cm("a", "  namespace: true\n"), want: `metadata.namespace is the boolean true, but a namespace is a string: quote it: "true"`},
		{name: "a list as name", stdin: rlHeader + "items:\n" + item("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [a]\n"),
			want: "stdin, ResourceList items[0]: metadata.name is a list, but a name is a string: write a string", answer: results},
		{name: "annotations a list", stdin: cm("a", "  annotations: [x]\n"), want: "stdin, document 1 (ConfigMap a): metadata.annotations is a list, but it must be a mapping of annotation keys to string values"},
		{name: "a timestamp annotation and quoted values", stdin: cm("a", "  annotations: {date: 2024-01-01, b: \"true\", n: '5', e: \"\"}\n  labels: {x: y}\n")},

		// Block scalars the encoder would write back changed (FuzzStrictReader found the first).
		{name: "a folded block with a more-indented line", stdin: cm("a", "data:\n  k: >\n    one\n     two\n"),
			want: "stdin, document 1 (ConfigMap a): the folded (>) block scalar data.k on line 6 would be written out with another value: the YAML encoder every KRM function writes with (yaml.v3) " +
				"gets such a block wrong when it has more-indented lines or leading or trailing blank lines: write it as a double-quoted string"},
		{name: "a literal block starting with a tab", stdin: rlHeader + "items:\n" + item(cm("a", "data:\n  k: |2\n    \tone\n")) + "functionConfig: {}\n",
			want: "stdin, ResourceList items[0] (ConfigMap a): the literal (|) block scalar data.k on line 9 would be written out with another value", answer: results},
		{name: "block scalars the encoder writes back", stdin: cm("a", "data:\n  k: |\n    one\n      two\n  l: >-\n    folded\n    text\n\n    more\n")},

		// Documents kyaml would drop.
		{name: "a document after ...", stdin: cm("a") + "...\n" + cm("b"),
			want: "stdin, document 1: a YAML document follows the document end marker (...) on line 5 without a --- line, and would be dropped: separate documents with ---"},
		{name: "... in a ResourceList", stdin: rlHeader + "items:\n" + item(cm("a")) + "...\nfunctionConfig: {kind: X}\n", want: "stdin, document 1: a YAML document follows the document end marker (...) on line 8"},
		{name: "... ending the input", stdin: cm("a") + "...\n"},

		// Flags.
		{name: "--config with a ResourceList", files: map[string]string{"fn.yaml": "kind: ConfigMap\n"}, stdin: rlHeader + "items: []\n", args: []string{"--config", "fn.yaml"},
			want: "the ResourceList on stdin carries its own functionConfig (kustomize and kpt put it there), so --config would be ignored: drop --config, or give plain YAML instead of a ResourceList"},
		{name: "an invalid --config with a ResourceList", files: map[string]string{"fn.yaml": "- x\n"}, stdin: rlHeader + "items: []\n", args: []string{"--config", "fn.yaml"},
			want: "functionConfig fn.yaml is a list, but a functionConfig is an object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tc.files {
				mustWrite(t, dir+"/"+name, content)
			}
			code, stdout, stderr := runBoth(t, dir, tc.stdin, tc.args...)
			if tc.want == "" {
				if code != 0 {
					t.Fatalf("refused (exit %d): %s", code, stderr)
				}
				return
			}
			if code != 1 || !strings.HasPrefix(stderr, "t: ") || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit 1 and stderr with:\n%s", code, stderr, tc.want)
			}
			if strings.Count(stderr, "\n") != 1 {
				t.Errorf("more than the reader's message on stderr:\n%s", stderr)
			}
			switch {
			case tc.answer == results:
				rl, err := yaml.Parse(stdout)
				if err != nil || rl.GetKind() != "ResourceList" || !strings.Contains(stdout, "items: []") || len(rl.Field("results").Value.Content()) != 1 ||
					!strings.Contains(stdout, "severity: error") || !strings.Contains(stdout, "is in the input twice") && !strings.Contains(stdout, "items[") {
					t.Fatalf("want a ResourceList with the error as its only result, got:\n%s", stdout)
				}
				// kpt shows the object a result names.
				if strings.Contains(tc.want, "(ConfigMap ") && !strings.Contains(stdout, "resourceRef:") {
					t.Errorf("the result does not name the object:\n%s", stdout)
				}
			case stdout != "":
				t.Fatalf("wrote to stdout:\n%s", stdout)
			}
		})
	}
}

// The flags that take one value refuse a second: the flag package would let the last one win.
func TestConfigTwice(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, dir+"/a.yaml", "kind: ConfigMap\n")
	mustWrite(t, dir+"/b.yaml", "kind: ConfigMap\n")
	mustWrite(t, dir+"/in.yaml", cm("x"))
	code, stdout, stderr := runBoth(t, dir, "", "--config", "a.yaml", "--config", "b.yaml", "in.yaml")
	if code != 2 || stdout != "" || !strings.Contains(stderr, `invalid value "b.yaml" for flag -config: given twice (first "a.yaml"), but it takes one value: give it once`) {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
}

func TestOnceString(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(new(bytes.Buffer))
	o := OnceString{Value: "default"}
	fs.Var(&o, "x", "")
	if err := fs.Parse(nil); err != nil || o.Value != "default" || o.IsSet() {
		t.Fatalf("no flag: %v, %+v", err, o)
	}
	if err := fs.Parse([]string{"-x", "a"}); err != nil || o.Value != "a" || !o.IsSet() {
		t.Fatalf("one flag: %v, %+v", err, o)
	}
	if err := fs.Parse([]string{"-x", "b"}); err == nil || o.Value != "a" {
		t.Fatalf("second flag: %v, %+v", err, o)
	}
}

// An item split from its ResourceList is parsed alone, and its lines are counted from the top of
// stdin all the same: the split and the whole parse of one input say the same.
func TestSplitAndWholeSayTheSame(t *testing.T) {
	long := cm("y", "data:\n  a: |\n    line\n    line\n  b: [1,\n    2]\n")
	for i, bad := range []string{
		cm("a", "data:\n  k: 1\n  k: 2\n"),
		cm("a", "  annotations: {x: 5}\n"),
		"apiVersion: v1\nkind: List\nitems: []\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  name: b\n",
	} {
		in := rlHeader + "items:\n" + item(cm("x")) + item(long) + item(bad) + "functionConfig:\n  kind: X\n"
		data := []byte(in)
		split, ok := splitResourceList(data)
		if !ok {
			t.Fatalf("case %d not split:\n%s", i, in)
		}
		split.checkAll()
		whole, err := stdinInput(data, nil, false)
		if err != nil || split.splitFailed {
			t.Fatalf("case %d: %v, split failed %t", i, err, split.splitFailed)
		}
		e1, e2 := split.verify(), whole.verify()
		if e1 == nil || e2 == nil || e1.Error() != e2.Error() {
			t.Fatalf("case %d:\nsplit: %v\nwhole: %v", i, e1, e2)
		}
	}
}

// The strict checks must not reject what kustomize and kpt write: a ResourceList as kustomize
// sends it, with its build annotations, passes.
func TestStrictAcceptsOrchestratorOutput(t *testing.T) {
	in := rlHeader + "items:\n" + item(cm("a", "  annotations:\n    config.kubernetes.io/index: '0'\n    internal.config.kubernetes.io/index: '0'\n"+
		"    internal.config.kubernetes.io/previousNames: 'a'\n    kustomize.config.k8s.io/id: |\n      kind: ConfigMap\n      name: a\n")) +
		item("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: pkg\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n") +
		"functionConfig:\n  apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: fc}\n"
	if code, _, stderr := runBoth(t, t.TempDir(), in); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

// Every item is checked once, on its first parse, however often the function parses it.
func TestCheckedOnce(t *testing.T) {
	in := rlHeader + "items:\n" + item(cm("a")) + item(cm("b"))
	src, err := readStream(Input{Stdin: strings.NewReader(in)})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		for _, it := range src.items {
			if _, err := it.Node(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, it := range src.items {
		if !it.checked || !it.unique {
			t.Fatalf("item not checked: %+v", it)
		}
	}
	// A check that failed fails every parse after it, without parsing again.
	bad := &Item{text: []byte(item(cm("a", "data: {k: 1, k: 2}\n"))), seq: true, split: src}
	_, err1 := bad.Node()
	bad.text = nil
	_, err2 := bad.Node()
	if err1 == nil || err2 != err1 {
		t.Fatalf("errors %v, %v", err1, err2)
	}
}

func ExampleOnceString() {
	fs := flag.NewFlagSet("render", flag.ContinueOnError)
	fs.SetOutput(os.Stdout)
	output := OnceString{Value: "Manifests"}
	fs.Var(&output, "output", "`WHAT` to print")
	err := fs.Parse([]string{"--output", "ManifestWork", "--output", "Manifests"})
	fmt.Println(output.Value, err != nil)
	// Output:
	// invalid value "Manifests" for flag -output: given twice (first "ManifestWork"), but it takes one value: give it once
	// Usage of render:
	//   -output WHAT
	//     	WHAT to print (default Manifests)
	// ManifestWork true
}

// keep and keepStream change nothing: what passes must come out as it went in.
func keep(*Request) error { return nil }

func keepStream(s *Stream) (Transform, error) {
	for _, it := range s.Items {
		if _, err := it.Node(); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// hasDuplicateKey tells, by yaml.v3's decoder rather than the reader's own check, whether a
// document of the input, split as kyaml splits a stream, holds a mapping with a key twice.
func hasDuplicateKey(input string) bool {
	secs, err := sections(withoutCR([]byte(input)), "")
	if err != nil {
		return false
	}
	for _, sec := range secs {
		dec := yaml.NewDecoder(bytes.NewReader(sec.text))
		for {
			var v any
			err := dec.Decode(&v)
			if err == nil {
				continue
			}
			if strings.Contains(err.Error(), "already defined at line") {
				return true
			}
			break
		}
	}
	return false
}

// objects reads the objects of an answer (a ResourceList's items, or plain documents), as text.
func objects(t *testing.T, out string) []string {
	t.Helper()
	items, err := (&kio.ByteReader{Reader: strings.NewReader(out), OmitReaderAnnotations: true}).Read()
	if err != nil {
		t.Fatalf("the answer does not read back: %v\n%s", err, out)
	}
	var texts []string
	for _, it := range items {
		texts = append(texts, it.MustString())
	}
	return texts
}

// FuzzStrictReader asserts the strict reader's promises on any input: both paths answer alike; a
// document with a key written twice in one mapping never passes; and what passes is a fixed point:
// its answer, read again, passes and gives the same objects.
func FuzzStrictReader(f *testing.F) {
	for _, in := range streamInputs {
		f.Add(in)
	}
	for _, in := range []string{
		cm("a", "data:\n  k: 1\n  k: 2\n"),
		rlHeader + "items:\n" + item(cm("a")) + item(cm("a", "data: {x: 1, x: 2}\n")) + "functionConfig: {kind: X}\n",
		rlHeader + "items: []\nitems:\n" + item(cm("a")),
		rlHeader + "items:\n" + item(cm("a")) + "functionConfig: {kind: X}\nfunctionConfig: {kind: Y}\n",
		cm("a") + "---\n" + cm("a"),
		cm("a", "base: &b {k: one}\ndata:\n  <<: *b\n  k: two\n"),
		"apiVersion: v1\nkind: List\nitems:\n" + item(cm("a")),
		cm("a", "  annotations: {x: true, y: \"1\"}\n"),
		cm("a") + "...\n" + cm("b"),
		rlHeader + "items: null\n",
	} {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, input string) {
		var out1, err1, out2, err2 bytes.Buffer
		c1 := Execute("t", Input{Stdin: strings.NewReader(input)}, keep, &out1, &err1)
		c2 := ExecuteStream("t", Input{Stdin: strings.NewReader(input)}, keepStream, &out2, &err2)
		if c1 != c2 || out1.String() != out2.String() || err1.String() != err2.String() {
			t.Fatalf("the paths disagree on %q:\nExecute: exit %d\n%s\nstderr %s\nExecuteStream: exit %d\n%s\nstderr %s",
				input, c1, out1.String(), err1.String(), c2, out2.String(), err2.String())
		}
		if c1 == 0 && hasDuplicateKey(input) {
			t.Fatalf("a key given twice passed: %q\n%s", input, out1.String())
		}
		if c1 != 0 {
			return
		}
		var again, errAgain bytes.Buffer
		if code := Execute("t", Input{Stdin: strings.NewReader(out1.String())}, keep, &again, &errAgain); code != 0 {
			t.Fatalf("the answer to %q does not pass again: %s\n%s", input, errAgain.String(), out1.String())
		}
		first, second := objects(t, out1.String()), objects(t, again.String())
		if strings.Join(first, "---\n") != strings.Join(second, "---\n") {
			t.Fatalf("the answer to %q, read again, gives other objects:\n%s\nthen:\n%s", input, out1.String(), again.String())
		}
	})
}

// Items keep only a hash of their identity: two different objects with one hash are no duplicate,
// two equal ones still are.
func TestDuplicateObjectsHashCollision(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
	}{
		{cm("a") + "---\n" + cm("b") + "---\n" + cm("c"), ""},
		{cm("a") + "---\n" + cm("b") + "---\n" + cm("a"), "ConfigMap a is in the input twice (stdin, document 1; stdin, document 3)"},
	} {
		src, err := readStream(Input{Stdin: strings.NewReader(tc.in)})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range src.items {
			it.idHash = 42
		}
		err = src.verify()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)) {
			t.Fatalf("%q: %v, want %q", tc.in, err, tc.want)
		}
	}
}
