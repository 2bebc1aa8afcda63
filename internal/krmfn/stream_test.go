package krmfn

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// renameStream is rename as a StreamFunc: the same results, the same changes.
func renameStream(s *Stream) (Transform, error) {
	for _, it := range s.Items {
		n, err := it.Node()
		if err != nil {
			return nil, err
		}
		if n.GetName() == "bad" {
			s.Errorf(n, "metadata.name", "name %q is not allowed", n.GetName())
			continue
		}
		s.Infof(n, "", "renamed %s", Describe(n))
		// rename stops at the first object it cannot rename; so does this.
		if err := n.SetName(n.GetName() + "-x"); err != nil {
			return nil, err
		}
	}
	return func(_ int, n *yaml.RNode) error { return n.SetName(n.GetName() + "-x") }, nil
}

// The stream path must answer every input exactly as the whole-tree path does: same exit code,
// same stdout bytes, same stderr.
func sameAsExecute(t *testing.T, input string, files ...string) {
	t.Helper()
	var out1, err1, out2, err2 bytes.Buffer
	c1 := Execute("t", Input{Stdin: strings.NewReader(input), Files: files}, rename, &out1, &err1)
	c2 := ExecuteStream("t", Input{Stdin: strings.NewReader(input), Files: files}, renameStream, &out2, &err2)
	if c1 != c2 || out1.String() != out2.String() || err1.String() != err2.String() {
		t.Fatalf("input %q:\nExecute: exit %d\n%s\nstderr %s\nExecuteStream: exit %d\n%s\nstderr %s", input, c1, out1.String(), err1.String(), c2, out2.String(), err2.String())
	}
}

var streamInputs = []string{
	resourceList,
	strings.Replace(resourceList, "name: a\n", "name: bad\n", 1),
	rlHeader + "items: []\n",
	rlHeader + "items:\n",
	rlHeader + "items: []\nfunctionConfig: null\n",
	rlHeader + "items:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a\n    annotations: {}\n  data:\n    k: |+\n      keep\n\n- # head comment\n  apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: b} # line\n  data:\n    # inside\n    k: \"multi\n      line\"\n    l: >-\n      folded\n      text\n\n    m: [1,\n      2]\n- apiVersion: v1\n  kind: Secret\n  metadata: {name: c}\nfunctionConfig:\n  # fc comment\n  apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: fc}\nresults:\n- message: old\n",
	rlHeader + "items:\n  - apiVersion: v1\n    kind: ConfigMap\n    metadata:\n      name: a\n    list:\n      - x\n      - y\n  - apiVersion: v1\n    kind: ConfigMap\n    metadata: {name: b}\n",
	rlHeader + "items:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n  # foot of a\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: b}\n",
	rlHeader + "items:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n  data: {k: \"x\n- y\"}\n",
	rlHeader + "items:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n# between, at column 0\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: b}\n",
	rlHeader + "items:\n- &a {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n- *a\n",
	`{"apiVersion":"config.kubernetes.io/v1","kind":"ResourceList","items":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}]}`,
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\nlist:\n  - wide\n---\n# doc comment\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  annotations:\n    config.kubernetes.io/index: '7'\nlist:\n- compact\n",
	"apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n",
	rlHeader + "items:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n  data: {k: 1, k: 2}\n",
	rlHeader + "items:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n",
	"apiVersion: v1\r\nkind: ConfigMap\r\nmetadata:\r\n  name: a\r\n---\r\napiVersion: v1\r\nkind: ConfigMap\r\nmetadata: {name: b}\r\n",
}

func TestStreamMatchesExecute(t *testing.T) {
	for _, in := range streamInputs {
		sameAsExecute(t, in)
	}
	// Files mode.
	dir := t.TempDir()
	f1, f2 := dir+"/a.yaml", dir+"/b.yaml"
	mustWrite(t, f1, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\n")
	mustWrite(t, f2, "# comment\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  annotations: {keep: me}\n")
	sameAsExecute(t, "", f2)
	sameAsExecute(t, "", f1, f2)
}

// A ResourceList laid out as kustomize and kpt write one is split without parsing it whole.
func TestSplitResourceList(t *testing.T) {
	for _, in := range []string{resourceList, streamInputs[5], streamInputs[6]} {
		list, ok := splitResourceList([]byte(in))
		if !ok {
			t.Fatalf("not split:\n%s", in)
		}
		for _, it := range list.items {
			if it.node != nil || !it.seq {
				t.Fatalf("item parsed whole")
			}
		}
	}
	// Comments between items, and another layout: parsed whole from the start.
	for _, in := range []string{streamInputs[7], streamInputs[9], streamInputs[11]} {
		if _, ok := splitResourceList([]byte(in)); ok {
			t.Fatalf("split, but needs whole parsing:\n%s", in)
		}
	}
	// A quoted scalar across an item boundary, an alias to another item: split, but an item does
	// not parse on its own, which makes ExecuteStream parse the input whole (TestStreamMatchesExecute
	// checks the outcome).
	for _, in := range []string{streamInputs[8], streamInputs[10]} {
		list, ok := splitResourceList([]byte(in))
		if !ok {
			t.Fatalf("not split:\n%s", in)
		}
		for _, it := range list.items {
			_, _ = it.Node()
		}
		if !list.splitFailed {
			t.Fatalf("every item parsed on its own:\n%s", in)
		}
	}
}

func FuzzStreamMatchesExecute(f *testing.F) {
	for _, in := range streamInputs {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, input string) {
		sameAsExecute(t, input)
	})
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
