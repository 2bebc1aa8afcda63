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
// A function works on a Request (every object as a YAML tree; Execute, Main) or, when inputs may be
// tens of megabytes, on a Stream (objects parsed one at a time; ExecuteStream, MainStream), which
// keeps memory at a few times the input's size and writes the same bytes.
package krmfn

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
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
	// FunctionConfig is used in plain mode (a ResourceList brings its own).
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
	if err != nil {
		// Input that is not what the contract accepts gets no answer on stdout at all: a caller
		// that sent something malformed cannot be trusted to read a ResourceList back.
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	if err := fn(req); err != nil {
		req.Errorf(nil, "", "%v", err)
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

func read(in Input) (*kio.ByteReadWriter, *Request, error) {
	if len(in.Files) == 0 {
		data, err := io.ReadAll(in.Stdin)
		if err != nil {
			return nil, nil, fmt.Errorf("reading stdin: %w", err)
		}
		if err := checkText(data, "stdin"); err != nil {
			return nil, nil, err
		}
		// kyaml unwraps whatever a ResourceList's items holds, a scalar as no items at all, and
		// panics later on items that are not objects: unwrap here, checking the shape.
		docs, err := (&kio.ByteReader{Reader: bytes.NewReader(data), PreserveSeqIndent: true, DisableUnwrapping: true}).Read()
		if err != nil {
			return nil, nil, fmt.Errorf("reading input: %w", err)
		}
		rw := &kio.ByteReadWriter{KeepReaderAnnotations: true, PreserveSeqIndent: true}
		req := &Request{}
		switch {
		case len(docs) == 0:
			return nil, nil, fmt.Errorf("no input: stdin holds no YAML document; pipe a ResourceList (as kustomize and kpt send) or YAML objects into it, or name FILEs")
		case len(docs) == 1 && isObject(docs[0]) && (docs[0].GetKind() == kio.ResourceListKind ||
			docs[0].GetKind() == "List" && (docs[0].Field("items") != nil || docs[0].Field("functionConfig") != nil)):
			list := docs[0]
			rw.WrappingKind, rw.WrappingAPIVersion = list.GetKind(), list.GetApiVersion()
			if req.Items, err = unwrap(list); err != nil {
				return nil, nil, err
			}
			if fc := list.Field("functionConfig"); fc != nil {
				// Written back as given: a ResourceList answer carries its functionConfig.
				rw.FunctionConfig = fc.Value
				if !yaml.IsMissingOrNull(fc.Value) {
					req.FunctionConfig = fc.Value
				}
			}
		default:
			for i, doc := range docs {
				if isObject(doc) && doc.GetKind() == kio.ResourceListKind {
					return nil, nil, fmt.Errorf("document %d on stdin is a ResourceList, which must be the only document of the input (there are %d)", i+1, len(docs))
				}
			}
			req.Items = docs
		}
		if rw.WrappingKind != kio.ResourceListKind {
			// Plain YAML on stdin (a List is unwrapped): answer with plain YAML, without the
			// reader's bookkeeping.
			rw.NoWrap = true
			rw.KeepReaderAnnotations = false
			req.FunctionConfig = in.FunctionConfig
		}
		return rw, req, nil
	}
	rw := &kio.ByteReadWriter{NoWrap: true, PreserveSeqIndent: true}
	req := &Request{FunctionConfig: in.FunctionConfig}
	for _, path := range in.Files {
		var data []byte
		var err error
		if path == "-" {
			data, err = io.ReadAll(in.Stdin)
		} else {
			data, err = os.ReadFile(path)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("reading %s: %w", path, err)
		}
		if err := checkText(data, path); err != nil {
			return nil, nil, err
		}
		items, err := (&kio.ByteReader{Reader: bytes.NewReader(data), PreserveSeqIndent: true, DisableUnwrapping: true}).Read()
		if err != nil {
			return nil, nil, fmt.Errorf("reading %s: %w", path, err)
		}
		for i, it := range items {
			if it.GetKind() == kio.ResourceListKind {
				return nil, nil, fmt.Errorf("reading %s: document %d is a ResourceList: pipe it into stdin instead of naming it as a FILE", path, i+1)
			}
			// Remember where an object came from so messages can say so; removed on output.
			if err := it.PipeE(yaml.SetAnnotation(kioutil.PathAnnotation, path)); err != nil {
				return nil, nil, fmt.Errorf("reading %s: %w", path, err)
			}
			if err := it.PipeE(yaml.SetAnnotation(kioutil.IndexAnnotation, fmt.Sprint(i))); err != nil {
				return nil, nil, fmt.Errorf("reading %s: %w", path, err)
			}
		}
		req.Items = append(req.Items, items...)
	}
	return rw, req, nil
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

// unwrap returns the items of a ResourceList or List, which must be a list of objects.
func unwrap(list *yaml.RNode) ([]*yaml.RNode, error) {
	kind := list.GetKind()
	f := list.Field("items")
	if f == nil {
		return nil, fmt.Errorf("the %s on stdin has no items field: write items: [] for an empty one", kind)
	}
	if yaml.IsMissingOrNull(f.Value) {
		return nil, nil
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
