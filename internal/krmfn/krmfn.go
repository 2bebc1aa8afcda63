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
package krmfn

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Request is what a function works on. Items may be replaced, reordered, added or removed.
type Request struct {
	Items          []*yaml.RNode
	FunctionConfig *yaml.RNode // nil when none was given
	Results        framework.Results
}

// ProcessFunc transforms a request. A returned error is reported like an error result.
type ProcessFunc func(*Request) error

// Errorf records an error result about obj (which may be nil), at the optional field path.
func (r *Request) Errorf(obj *yaml.RNode, field, format string, args ...any) {
	r.add(framework.Error, obj, field, fmt.Sprintf(format, args...))
}

// Warningf records a warning result.
func (r *Request) Warningf(obj *yaml.RNode, field, format string, args ...any) {
	r.add(framework.Warning, obj, field, fmt.Sprintf(format, args...))
}

// Infof records an informational result.
func (r *Request) Infof(obj *yaml.RNode, field, format string, args ...any) {
	r.add(framework.Info, obj, field, fmt.Sprintf(format, args...))
}

// HasErrors tells whether an error result was recorded.
func (r *Request) HasErrors() bool {
	for _, res := range r.Results {
		if res.Severity == framework.Error {
			return true
		}
	}
	return false
}

func (r *Request) add(sev framework.Severity, obj *yaml.RNode, field, msg string) {
	res := &framework.Result{Message: msg, Severity: sev}
	if obj != nil {
		res.ResourceRef = &yaml.ResourceIdentifier{
			TypeMeta: yaml.TypeMeta{APIVersion: obj.GetApiVersion(), Kind: obj.GetKind()},
			NameMeta: yaml.NameMeta{Name: obj.GetName(), Namespace: obj.GetNamespace()},
		}
		if path, index, err := kioutil.GetFileAnnotations(obj); err == nil && path != "" {
			res.File = &framework.File{Path: path}
			fmt.Sscan(index, &res.File.Index)
		}
	}
	if field != "" {
		res.Field = &framework.Field{Path: field}
	}
	r.Results = append(r.Results, res)
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
}

// Execute reads the input, runs fn and writes the output to stdout. Error, warning and (in plain
// mode, which has no other channel for them) info messages go to stderr prefixed with name.
// It returns the exit code.
func Execute(name string, in Input, fn ProcessFunc, stdout, stderr io.Writer) int {
	rw, req, err := read(in)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		if rw != nil && !rw.NoWrap {
			// Still answer a ResourceList caller with a ResourceList carrying the error.
			req = &Request{}
			req.Errorf(nil, "", "%v", err)
			_ = writeResults(rw, req, stdout)
		}
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
		rw := &kio.ByteReadWriter{Reader: in.Stdin, KeepReaderAnnotations: true, PreserveSeqIndent: true}
		items, err := rw.Read()
		if err != nil {
			return rw, nil, fmt.Errorf("reading input: %w", err)
		}
		req := &Request{Items: items, FunctionConfig: rw.FunctionConfig}
		if rw.WrappingKind != kio.ResourceListKind {
			// Plain YAML on stdin: answer with plain YAML, without the reader's bookkeeping.
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
			return rw, nil, fmt.Errorf("reading %s: %w", path, err)
		}
		items, err := (&kio.ByteReader{Reader: bytes.NewReader(data), PreserveSeqIndent: true}).Read()
		if err != nil {
			return rw, nil, fmt.Errorf("reading %s: %w", path, err)
		}
		for i, it := range items {
			// Remember where an object came from so messages can say so; removed on output.
			if err := it.PipeE(yaml.SetAnnotation(kioutil.PathAnnotation, path)); err != nil {
				return rw, nil, fmt.Errorf("reading %s: %w", path, err)
			}
			if err := it.PipeE(yaml.SetAnnotation(kioutil.IndexAnnotation, fmt.Sprint(i))); err != nil {
				return rw, nil, fmt.Errorf("reading %s: %w", path, err)
			}
		}
		req.Items = append(req.Items, items...)
	}
	return rw, req, nil
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
	return write(rw, &Request{Results: req.Results}, out)
}

// ErrUsage marks a command-line usage error.
var ErrUsage = errors.New("usage")
