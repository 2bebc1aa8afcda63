// Package krmfn runs an addonops KRM function the same way whether it is called by kustomize
// (exec transformer), by kpt (fn eval --exec / fn render), or standalone on files.
//
// The contract every addonops function keeps:
//   - A ResourceList on stdin gives a ResourceList on stdout; plain YAML (stdin or FILE arguments)
//     gives plain YAML on stdout.
//   - Errors are written to stderr, because kustomize and Argo CD show nothing of
//     ResourceList.results, and also put into the results, for kpt.
//   - On any error the exit code is 1 and no resource is written: a ResourceList carries only its
//     results, plain mode writes nothing to stdout. Nothing half-transformed can reach a cluster.
//   - Input that breaks the contract gets no answer on stdout at all, only a message on stderr and
//     exit 1: empty stdin, text that is not UTF-8 (a UTF-16 stream would otherwise lose all but its
//     first document), a ResourceList that is not the only document, has no items, or whose items
//     are not a list of objects, and a --config file that is not exactly one object.
//
// The reader is strict, and the same on both paths (Execute, ExecuteStream): each of these is
// input that breaks the contract too, with a message that says where it is (FILE or stdin, the
// document or ResourceList item, the lines) and how to fix it:
//   - A key given twice in one mapping, at any depth: in any document, in a ResourceList (items:
//     or functionConfig: twice included), its functionConfig, or a --config file. YAML tools
//     disagree on which of the two counts. Merge keys (<<: *anchor) are not expanded, and a key a
//     mapping both merges in and writes is legal YAML: only a key written twice counts.
//   - Two objects with the same API group, kind, namespace (as written: krmfn does not know which
//     kinds are cluster-scoped) and name, which the API server takes for one. Local config
//     (config.kubernetes.io/local-config: "true": Kptfiles, function configs) and objects without
//     kind or name do not count.
//   - A List (kind: List, what kubectl get -o yaml writes, or a kind ending in List with items),
//     wherever it is, alone on stdin too: its items would pass through unseen. It is refused with
//     the commands that expand it (kustomize build; yq).
//   - A ResourceList with items: null (items: [] is an empty one).
//   - A metadata.name or metadata.namespace that is not a string, a label or annotation value
//     that is not one (an unquoted true or 5, or nothing at all): the API server rejects them. A
//     timestamp (2024-01-01) counts as the string it is written as, as kubectl sends it.
//   - A document end marker (...) followed by another document without a --- line: kyaml would
//     read the first document only.
//   - --config given twice (a usage error, exit 2, as for any bad flag), or together with a
//     ResourceList on stdin, which carries its own functionConfig.
//
// A function works on a Request (every object as a YAML tree; Execute, Main) or, when inputs may be
// tens of megabytes, on a Stream (objects parsed one at a time; ExecuteStream, MainStream), which
// keeps memory at a few times the input's size and writes the same bytes.
package krmfn

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Request is what a function works on. Items may be replaced, reordered, added or removed.
type Request struct {
	Items          []*yaml.RNode
	FunctionConfig *yaml.RNode // nil when none was given
	Reporter
}

// ProcessFunc transforms a request. A returned error is reported like an error result.
type ProcessFunc func(*Request) error

// Reporter collects a function's results.
type Reporter struct {
	Results framework.Results
}

// Ref identifies an object in results without holding its YAML.
type Ref struct {
	APIVersion, Kind, Namespace, Name string
	// Path and Index locate the object in its file, when it came from one.
	Path  string
	Index int
	valid bool // made by RefOf from an object, which a result then names
}

// RefOf identifies obj (nil gives the zero Ref, which names no object).
func RefOf(obj *yaml.RNode) Ref {
	if obj == nil {
		return Ref{}
	}
	ref := Ref{APIVersion: obj.GetApiVersion(), Kind: obj.GetKind(), Name: obj.GetName(), Namespace: obj.GetNamespace(), valid: true}
	if path, index, err := kioutil.GetFileAnnotations(obj); err == nil && path != "" {
		ref.Path = path
		fmt.Sscan(index, &ref.Index)
	}
	return ref
}

// Errorf records an error result about obj (which may be nil), at the optional field path.
func (r *Reporter) Errorf(obj *yaml.RNode, field, format string, args ...any) {
	r.add(framework.Error, obj, field, fmt.Sprintf(format, args...))
}

// Warningf records a warning result.
func (r *Reporter) Warningf(obj *yaml.RNode, field, format string, args ...any) {
	r.add(framework.Warning, obj, field, fmt.Sprintf(format, args...))
}

// Infof records an informational result.
func (r *Reporter) Infof(obj *yaml.RNode, field, format string, args ...any) {
	r.add(framework.Info, obj, field, fmt.Sprintf(format, args...))
}

// Report records a result about the object ref names (a Ref not made by RefOf names none).
func (r *Reporter) Report(sev framework.Severity, ref Ref, field, format string, args ...any) {
	res := &framework.Result{Message: fmt.Sprintf(format, args...), Severity: sev}
	if ref.valid {
		res.ResourceRef = &yaml.ResourceIdentifier{
			TypeMeta: yaml.TypeMeta{APIVersion: ref.APIVersion, Kind: ref.Kind},
			NameMeta: yaml.NameMeta{Name: ref.Name, Namespace: ref.Namespace},
		}
		if ref.Path != "" {
			res.File = &framework.File{Path: ref.Path, Index: ref.Index}
		}
	}
	if field != "" {
		res.Field = &framework.Field{Path: field}
	}
	r.Results = append(r.Results, res)
}

// HasErrors tells whether an error result was recorded.
func (r *Reporter) HasErrors() bool {
	for _, res := range r.Results {
		if res.Severity == framework.Error {
			return true
		}
	}
	return false
}

func (r *Reporter) add(sev framework.Severity, obj *yaml.RNode, field, msg string) {
	r.Report(sev, RefOf(obj), field, "%s", msg)
}

// Describe names an object for messages: "Kind namespace/name" or "Kind name".
func Describe(obj *yaml.RNode) string {
	if ns := obj.GetNamespace(); ns != "" {
		return obj.GetKind() + " " + ns + "/" + obj.GetName()
	}
	return obj.GetKind() + " " + obj.GetName()
}

// Input is one invocation's input.
type Input struct {
	// Stdin is read when Files is empty.
	Stdin io.Reader
	// Files are read as plain YAML streams, in order ("-" is stdin).
	Files []string
	// FunctionConfig is used in plain mode. A ResourceList brings its own: one given here too is
	// an error, rather than silently dropped.
	FunctionConfig *yaml.RNode
	// LimitMemory lets ExecuteStream cap the process's Go memory at a few times the input's size
	// (debug.SetMemoryLimit), which only a function binary should do: MainStream sets it.
	LimitMemory bool
}

// Execute reads the input, runs fn and writes the output to stdout. Error, warning and (in plain
// mode, which has no other channel for them) info messages go to stderr prefixed with name.
// It returns the exit code.
func Execute(name string, in Input, fn ProcessFunc, stdout, stderr io.Writer) int {
	rw, req, err := read(in)
	var refused refusal
	switch {
	case errors.As(err, &refused):
		// Well-formed input with objects the reader refuses: reported like the function's own
		// errors, which the function does not get to add to.
		req.Report(framework.Error, refused.ref, "", "%v", refused.error)
	case err != nil:
		// Input that is not what the contract accepts gets no answer on stdout at all: a caller
		// that sent something malformed cannot be trusted to read a ResourceList back.
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	default:
		if err := fn(req); err != nil {
			req.Errorf(nil, "", "%v", err)
		}
	}
	plain := rw.NoWrap
	for _, res := range req.Results {
		if res.Severity == framework.Info && !plain {
			continue
		}
		fmt.Fprintf(stderr, "%s: %s\n", name, format(res))
	}
	if req.HasErrors() {
		if !plain {
			_ = writeResults(rw, req, stdout)
		}
		return 1
	}
	var buf bytes.Buffer
	if err := write(rw, req, &buf); err != nil {
		fmt.Fprintf(stderr, "%s: writing output: %v\n", name, err)
		return 1
	}
	if _, err := stdout.Write(buf.Bytes()); err != nil {
		fmt.Fprintf(stderr, "%s: writing output: %v\n", name, err)
		return 1
	}
	return 0
}

func format(res *framework.Result) string {
	var b strings.Builder
	if res.Severity != framework.Error {
		b.WriteString(string(res.Severity) + ": ")
	}
	b.WriteString(res.Message)
	var where []string
	if res.ResourceRef != nil && res.ResourceRef.Kind != "" && !strings.Contains(res.Message, res.ResourceRef.Kind+" ") {
		id := res.ResourceRef.Name
		if res.ResourceRef.Namespace != "" {
			id = res.ResourceRef.Namespace + "/" + id
		}
		where = append(where, res.ResourceRef.Kind+" "+id)
	}
	if res.Field != nil && res.Field.Path != "" && !strings.Contains(res.Message, res.Field.Path) {
		where = append(where, "field "+res.Field.Path)
	}
	if res.File != nil && res.File.Path != "" {
		where = append(where, "file "+res.File.Path)
	}
	if len(where) > 0 {
		b.WriteString(" (" + strings.Join(where, ", ") + ")")
	}
	return b.String()
}

// read reads the input with readStream, the reader of both paths, and parses every item.
func read(in Input) (*kio.ByteReadWriter, *Request, error) {
	src, err := readStream(in)
	if err != nil {
		return nil, nil, err
	}
	items := src.nodes()
	if src.splitFailed {
		// As in ExecuteStream: an item that does not parse on its own needs the input parsed whole.
		if src, err = wholeInput(src.data, in.FunctionConfig); err != nil {
			return nil, nil, err
		}
		items = src.nodes()
	}
	rw := &kio.ByteReadWriter{PreserveSeqIndent: true}
	if src.wrapped {
		// Answered with a ResourceList that keeps the reader's bookkeeping and carries the
		// functionConfig as given.
		rw.WrappingKind, rw.WrappingAPIVersion = src.kind, src.apiVersion
		rw.KeepReaderAnnotations = true
		rw.FunctionConfig = src.fcOut
	} else {
		// Plain YAML: answered with plain YAML, without the reader's bookkeeping.
		rw.NoWrap = true
	}
	// What verify finds is a refusal, which Execute reports with the request's writer.
	return rw, &Request{Items: items, FunctionConfig: src.functionConfig}, src.verify()
}

// nodes parses every item (which checks it), stopping at an item that does not parse on its own.
func (src *input) nodes() []*yaml.RNode {
	items := make([]*yaml.RNode, 0, len(src.items))
	for _, it := range src.items {
		n, err := it.Node()
		if src.splitFailed {
			return nil
		}
		if err != nil && it.err == nil {
			// Not a check's finding, which verify reports: an item kyaml's reader cannot take
			// after all.
			it.err = fmt.Errorf("reading %s: %w", it.place(), err)
		}
		items = append(items, n)
	}
	return items
}

// checkText rejects input that is not UTF-8 text. kyaml splits documents on "\n---" in the raw
// bytes, which a UTF-16 stream does not contain, and its YAML parser then decodes only the first
// document: every other document would be dropped without a word.
func checkText(data []byte, where string) error {
	switch {
	case bytes.HasPrefix(data, []byte{0xFE, 0xFF}), bytes.HasPrefix(data, []byte{0xFF, 0xFE}):
		return fmt.Errorf("%s is UTF-16 (it starts with a UTF-16 byte order mark), but KRM functions read UTF-8: convert it first, e.g. iconv -f UTF-16 -t UTF-8", where)
	case bytes.IndexByte(data, 0) >= 0:
		return fmt.Errorf("%s holds NUL bytes, which YAML text never does (UTF-16 or UTF-32 without byte order mark, or a binary file?): give UTF-8 YAML", where)
	case !utf8.Valid(data):
		return fmt.Errorf("%s is not valid UTF-8: give UTF-8 YAML (convert other encodings first, e.g. with iconv)", where)
	}
	return nil
}

// unwrap returns the items of a ResourceList, which must be a list of objects.
func unwrap(list *yaml.RNode) ([]*yaml.RNode, error) {
	kind := list.GetKind()
	f := list.Field("items")
	if f == nil {
		return nil, fmt.Errorf("the %s on stdin has no items field: write items: [] for an empty one", kind)
	}
	if yaml.IsMissingOrNull(f.Value) {
		// Written by hand, not by kustomize or kpt: items: with nothing after it, perhaps where
		// the items were meant to follow.
		return nil, fmt.Errorf("the %s on stdin has items: null: write items: [] for an empty one", kind)
	}
	if f.Value.YNode().Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("the %s on stdin has items: %s, but items must be a list of objects", kind, describeNode(f.Value))
	}
	var items []*yaml.RNode
	for i, n := range f.Value.Content() {
		it := yaml.NewRNode(n)
		if !isObject(it) {
			return nil, fmt.Errorf("the %s on stdin has items[%d]: %s, but every item must be an object (a YAML mapping with apiVersion, kind and metadata)", kind, i, describeNode(it))
		}
		items = append(items, it)
	}
	return items, nil
}

// isObject tells whether n is a mapping, the only kind of node kyaml's metadata accessors accept.
func isObject(n *yaml.RNode) bool {
	return n != nil && n.YNode() != nil && n.YNode().Kind == yaml.MappingNode
}

func describeNode(n *yaml.RNode) string {
	if n == nil || n.YNode() == nil {
		return "empty"
	}
	switch n.YNode().Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.YNode().Tag == yaml.NodeTagNull {
			return "null"
		}
		return fmt.Sprintf("the scalar %q", n.YNode().Value)
	case yaml.AliasNode:
		return "an alias"
	case yaml.MappingNode:
		return "a mapping"
	}
	return "a document"
}

func write(rw *kio.ByteReadWriter, req *Request, out io.Writer) error {
	if rw.NoWrap {
		// Plain output carries no reader bookkeeping, whoever added it.
		for _, it := range req.Items {
			for _, a := range []string{kioutil.PathAnnotation, kioutil.IndexAnnotation, kioutil.IdAnnotation,
				kioutil.LegacyPathAnnotation, kioutil.LegacyIndexAnnotation, kioutil.LegacyIdAnnotation} {
				if err := it.PipeE(yaml.ClearAnnotation(a)); err != nil {
					return err
				}
			}
		}
	}
	if len(req.Results) > 0 {
		b, err := yaml.Marshal(req.Results)
		if err != nil {
			return err
		}
		if rw.Results, err = yaml.Parse(string(b)); err != nil {
			return err
		}
	}
	rw.Writer = out
	return rw.Write(req.Items)
}

func writeResults(rw *kio.ByteReadWriter, req *Request, out io.Writer) error {
	return write(rw, &Request{Reporter: req.Reporter}, out)
}

// ErrUsage marks a command-line usage error.
var ErrUsage = errors.New("usage")
