package krmfn

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// A function that must go through inputs of tens of megabytes works on a Stream instead of a
// Request. A Request holds every object as a YAML node tree, which takes more than ten times the
// input's size, and kyaml's writer needs several times that again to encode the ResourceList as
// one document. A Stream keeps the input as bytes and parses one object at a time: the function
// goes through the items as often as it needs (Item.Node parses anew each time), reports, and
// returns a Transform; ExecuteStream then parses, transforms and encodes the items one by one,
// producing the very bytes kyaml's writer would.

// Item is one input object, parsed on demand.
type Item struct {
	text  []byte      // a YAML document, or (seq) a one-item sequence: a ResourceList item
	seq   bool        // text is a ResourceList item, split from the list without parsing it
	node  *yaml.RNode // the object, when the input could only be parsed whole
	path  string      // the FILE it came from (files mode)
	index int         // its index among the documents of its file or stream
	// annotate: set the reader's index annotations (plain stdin, as kyaml's reader does) or the
	// path and index annotations (files mode).
	annotate, files bool
	// split is the input a seq item was split from, told when the item does not parse alone.
	split *input
	// The strict reader's checks run on an item's first parse (checked); err is what they found.
	// What they keep is small, since a stream keeps every item while the garbage collector works
	// against a memory limit: where the item is (pos: its document's number, or its index among a
	// ResourceList's items; line: the lines before its text), a hash of its identity for the
	// duplicate check (when unique), whether a document is a ResourceList.
	pos, line    int
	checked      bool
	unique       bool
	resourceList bool
	idHash       uint64
	err          error
}

// place says where the item is.
func (it *Item) place() place {
	switch {
	case it.seq || it.node != nil:
		return place{source: "stdin", item: it.pos, line: it.line}
	case it.files:
		return place{source: sourceName(it.path), doc: it.pos, item: -1, line: it.line}
	}
	return place{source: "stdin", doc: it.pos, item: -1, line: it.line}
}

// check runs the strict checks on the item's first parse, n the item's top node.
func (it *Item) check(n *yaml.Node, p place) {
	if it.checked {
		return
	}
	it.checked = true
	info, err := checkObject(n, p)
	if err != nil {
		it.err = objectError{err, info.ref()}
		return
	}
	it.unique, it.idHash = info.unique, info.id.hash()
}

// Node parses the item. Every call returns a new tree, which the caller may change freely.
func (it *Item) Node() (*yaml.RNode, error) {
	if it.err != nil {
		return nil, it.err
	}
	if it.node != nil {
		return it.node.Copy(), nil
	}
	if it.seq {
		var doc yaml.Node
		err := yaml.NewDecoder(bytes.NewReader(it.text)).Decode(&doc)
		if err == nil && (doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.SequenceNode ||
			len(doc.Content[0].Content) != 1 || doc.Content[0].Content[0].Kind != yaml.MappingNode) {
			err = fmt.Errorf("not one object")
		}
		if err != nil {
			// The split was wrong, or the item is: ExecuteStream parses the input whole and starts
			// over, which tells which.
			it.split.splitFailed = true
			return nil, fmt.Errorf("a ResourceList item does not parse on its own: %w", err)
		}
		obj := doc.Content[0].Content[0]
		if it.check(obj, it.place()); it.err != nil {
			return nil, it.err
		}
		return yaml.NewRNode(obj), nil
	}
	docs, err := (&kio.ByteReader{Reader: bytes.NewReader(it.text), PreserveSeqIndent: true, DisableUnwrapping: true}).Read()
	if err != nil {
		return nil, err
	}
	if len(docs) != 1 {
		return nil, fmt.Errorf("a document holds %d objects", len(docs))
	}
	n := docs[0]
	if it.annotate {
		// kyaml's reader numbered the document as the first of its text: give it its place in
		// the stream or file, and in files mode its file, as read does.
		set := []string{kioutil.IndexAnnotation, fmt.Sprint(it.index), kioutil.LegacyIndexAnnotation, fmt.Sprint(it.index)}
		if it.files {
			set = append(set, kioutil.PathAnnotation, it.path)
		}
		for i := 0; i < len(set); i += 2 {
			if err := n.PipeE(yaml.SetAnnotation(set[i], set[i+1])); err != nil {
				return nil, err
			}
		}
	}
	return n, nil
}

// Stream is the input of a StreamFunc.
type Stream struct {
	Items []*Item
	// FunctionConfig is nil when none was given.
	FunctionConfig *yaml.RNode
	Reporter
}

// Transform changes the item of the given index (in Stream.Items) before it is written. It runs
// twice per item (a first pass checks that everything can be written), on a new tree each time,
// and must do the same both times; it reports nothing, and returns an error instead.
type Transform func(index int, obj *yaml.RNode) error

// StreamFunc goes through the items, reports, and returns the transform to write them with. A
// returned error is reported like an error result; on any error nothing is written. It may be
// called a second time, on a new Stream of the same input (when a ResourceList split into items
// without parsing it whole turns out to need whole parsing), and must then start afresh.
type StreamFunc func(*Stream) (Transform, error)

// input is a read invocation's input.
type input struct {
	items          []*Item
	functionConfig *yaml.RNode
	// wrapped: a ResourceList came in, and one goes out with these. fcOut is the functionConfig as
	// the ResourceList gave it (null included), written back unchanged.
	wrapped          bool
	apiVersion, kind string
	fcOut            *yaml.RNode
	size             int // of the input, in bytes
	// data is stdin, once split into items; splitFailed tells that one of them did not parse on
	// its own, and the input must be parsed whole instead.
	data        []byte
	splitFailed bool
}

// readStream reads the input, keeping it as bytes. It is the one reader of both paths: read
// parses what it returns whole, ExecuteStream item by item.
func readStream(in Input) (*input, error) {
	if len(in.Files) > 0 {
		res := &input{functionConfig: in.FunctionConfig}
		for _, path := range in.Files {
			var data []byte
			var err error
			if path == "-" {
				data, err = io.ReadAll(in.Stdin)
			} else {
				data, err = os.ReadFile(path)
			}
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", path, err)
			}
			if err := checkText(data, path); err != nil {
				return nil, err
			}
			data = withoutCR(data)
			items, err := documents(data, sourceName(path), fmt.Sprintf("reading %s", path))
			if err != nil {
				return nil, err
			}
			for i, it := range items {
				if it.resourceList {
					return nil, fmt.Errorf("reading %s: document %d is a ResourceList: pipe it into stdin instead of naming it as a FILE", path, i+1)
				}
				it.annotate, it.files, it.path, it.index = true, true, path, i
			}
			res.items = append(res.items, items...)
			res.size += len(data)
		}
		return res, nil
	}
	data, err := readAll(in.Stdin)
	if err != nil {
		return nil, fmt.Errorf("reading stdin: %w", err)
	}
	if err := checkText(data, "stdin"); err != nil {
		return nil, err
	}
	data = withoutCR(data)
	res, err := stdinInput(data, in.FunctionConfig, true)
	if err == nil && res.wrapped && in.FunctionConfig != nil {
		// kustomize and kpt put the functionConfig into the ResourceList; a second one from the
		// command line would be ignored, which is worse than refusing.
		return nil, fmt.Errorf("the ResourceList on stdin carries its own functionConfig (kustomize and kpt put it there), so --config would be ignored: drop --config, or give plain YAML instead of a ResourceList")
	}
	return res, err
}

// stdinInput makes the input of what stdin held, split into items without parsing it whole if
// split allows and its layout does.
func stdinInput(data []byte, plainConfig *yaml.RNode, split bool) (*input, error) {
	if split {
		if list, ok := splitResourceList(data); ok {
			list.size = len(data)
			return list, nil
		}
	}
	res, err := wholeInput(data, plainConfig)
	if res != nil {
		res.size = len(data)
	}
	return res, err
}

// wholeInput makes the input of what stdin held, each document parsed whole.
func wholeInput(data []byte, plainConfig *yaml.RNode) (*input, error) {
	items, err := documents(data, "stdin", "reading input")
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("no input: stdin holds no YAML document; pipe a ResourceList (as kustomize and kpt send) or YAML objects into it, or name FILEs")
	}
	if len(items) == 1 && items[0].resourceList {
		list, err := items[0].Node()
		if err != nil {
			return nil, fmt.Errorf("reading input: %w", err)
		}
		return wholeList(list, items[0].line)
	}
	for i, it := range items {
		if it.resourceList {
			return nil, fmt.Errorf("document %d on stdin is a ResourceList, which must be the only document of the input (there are %d)", i+1, len(items))
		}
		it.annotate, it.index = true, i
	}
	return &input{items: items, functionConfig: plainConfig}, nil
}

// wholeList unwraps a ResourceList parsed whole, whose text starts after line lines of stdin.
func wholeList(list *yaml.RNode, line int) (*input, error) {
	p := place{source: "stdin", item: -1, list: true, line: line}
	var items *yaml.Node
	if f := list.Field("items"); f != nil {
		items = f.Value.YNode()
	}
	// The list's own keys and everything but the items, which are checked one by one.
	if err := checkTree(list.YNode(), items, p); err != nil {
		return nil, err
	}
	nodes, err := unwrap(list)
	if err != nil {
		return nil, err
	}
	res := &input{apiVersion: list.GetApiVersion(), kind: list.GetKind(), wrapped: true}
	for i, n := range nodes {
		it := &Item{node: n, pos: i, line: line}
		it.check(n.YNode(), it.place())
		res.items = append(res.items, it)
	}
	if fc := list.Field("functionConfig"); fc != nil {
		res.fcOut = fc.Value
		if !yaml.IsMissingOrNull(fc.Value) {
			res.functionConfig = fc.Value
		}
	}
	return res, nil
}

// withoutCR turns Windows line ends into \n, as kyaml's reader does, copying data only if it
// has any.
func withoutCR(data []byte) []byte {
	if !bytes.Contains(data, []byte("\r\n")) {
		return data
	}
	return bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
}

// readAll reads r, into a buffer of the right size when r is a regular file (stdin redirected
// from one), so that a large input is not copied while the buffer grows.
func readAll(r io.Reader) ([]byte, error) {
	if f, ok := r.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > 0 {
			buf := bytes.NewBuffer(make([]byte, 0, st.Size()+bytes.MinRead))
			_, err := buf.ReadFrom(f)
			return buf.Bytes(), err
		}
	}
	return io.ReadAll(r)
}

var documentSeparator = regexp.MustCompile(`\n---.*\n`)

// documents splits a YAML stream from source into its non-empty documents exactly as kyaml's
// reader does, parsing each once: to drop empty ones, to fail as kyaml's reader would, and to run
// the strict checks (a ResourceList is checked by wholeList, if it is the only document).
func documents(data []byte, source, what string) ([]*Item, error) {
	secs, err := sections(data, what)
	if err != nil {
		return nil, err
	}
	var items []*Item
	for _, sec := range secs {
		p := place{source: source, doc: len(items) + 1, item: -1, line: sec.line}
		docs, err := (&kio.ByteReader{Reader: bytes.NewReader(sec.text), PreserveSeqIndent: true, DisableUnwrapping: true}).Read()
		if err != nil {
			if why := explain(sec.text, p); why != nil {
				return nil, why
			}
			return nil, fmt.Errorf("%s: %w", what, absoluteLines(err, sec.line))
		}
		if err := checkOneDocument(sec.text, p); err != nil {
			return nil, err
		}
		if len(docs) != 1 {
			continue
		}
		it := &Item{text: sec.text, pos: p.doc, line: p.line}
		if it.resourceList = isObject(docs[0]) && docs[0].GetKind() == kio.ResourceListKind; !it.resourceList {
			it.check(docs[0].YNode(), p)
		}
		items = append(items, it)
	}
	return items, nil
}

// explain tells, when it can, why kyaml's reader failed on a document that parses as YAML: it
// sets its annotations on every document, and says no more than "wrong node kind" when the
// document or its metadata is not a mapping.
func explain(text []byte, p place) error {
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(text)).Decode(&doc); err != nil || len(doc.Content) != 1 {
		return nil
	}
	if n := doc.Content[0]; n.Kind != yaml.MappingNode {
		return fmt.Errorf("%s is %s, but every document must be an object (a YAML mapping with apiVersion, kind and metadata)", p, describeYNode(n))
	}
	_, err := checkObject(doc.Content[0], p)
	return err
}

var (
	itemsLine = regexp.MustCompile(`^items:([ \t]+(#.*)?)?\n?$`) // a comment needs a blank before #
	entryLine = regexp.MustCompile(`^( *)-( |\n|$)`)
)

// splitResourceList splits a ResourceList laid out the way kustomize and kpt write one (top-level
// keys at column 0, items a block list) into its items without parsing it whole; the items are
// slices of data. It declines (false) whatever it cannot split with certainty, and the caller
// parses the input whole instead: another layout, comments between items, a construct that spans
// an item boundary (each part must then parse on its own, which an unterminated quote or bracket
// does not).
func splitResourceList(data []byte) (*input, bool) {
	// A document end marker (...) may hide a second document, which whole parsing reports.
	if documentSeparator.Match(data) || bytes.HasPrefix(data, []byte("---")) ||
		bytes.HasPrefix(data, []byte("...")) || bytes.Contains(data, []byte("\n...")) {
		return nil, false
	}
	// lines calls fn with each line (its \n included), its offset and the number of lines before
	// it, until fn returns false.
	lines := func(from, line int, fn func(off, line int, l []byte) bool) {
		for off := from; off < len(data); line++ {
			end := len(data)
			if j := bytes.IndexByte(data[off:], '\n'); j >= 0 {
				end = off + j + 1
			}
			if !fn(off, line, data[off:end]) {
				return
			}
			off = end
		}
	}
	first, firstEnd, firstLine, count := -1, -1, 0, 0
	lines(0, 0, func(off, line int, l []byte) bool {
		if itemsLine.Match(l) {
			count++
			if first < 0 {
				first, firstEnd, firstLine = off, off+len(l), line
			}
		}
		return true
	})
	if count != 1 {
		return nil, false
	}
	indent := -1
	var chunks [][3]int // [from, to) in data, and the lines before from
	lastComment, ok := false, true
	tailStart := len(data)
	lines(firstEnd, firstLine+1, func(off, line int, l []byte) bool {
		trimmed := bytes.TrimLeft(bytes.TrimRight(l, "\n"), " ")
		if len(trimmed) == 0 {
			return true
		}
		col := len(l) - len(bytes.TrimLeft(l, " "))
		if m := entryLine.FindSubmatch(l); m != nil && (indent < 0 || len(m[1]) == indent) {
			if lastComment {
				ok = false // a comment between items: whole parsing places it
				return false
			}
			indent = len(m[1])
			if len(chunks) > 0 {
				chunks[len(chunks)-1][1] = off
			}
			chunks = append(chunks, [3]int{off, -1, line})
			return true
		}
		if indent < 0 || col <= indent {
			if trimmed[0] == '#' || indent < 0 && col > 0 {
				ok = false
			}
			tailStart = off
			return false
		}
		lastComment = trimmed[0] == '#'
		return true
	})
	if !ok || lastComment || len(chunks) == 0 {
		// No items: items is null, which whole parsing refuses.
		return nil, false
	}
	chunks[len(chunks)-1][1] = tailStart
	skeleton := append(append([]byte(nil), data[:first]...), data[tailStart:]...)
	docs, err := (&kio.ByteReader{Reader: bytes.NewReader(skeleton), OmitReaderAnnotations: true, DisableUnwrapping: true}).Read()
	if err != nil || len(docs) != 1 || !isObject(docs[0]) || docs[0].GetKind() != kio.ResourceListKind || docs[0].Field("items") != nil {
		return nil, false
	}
	// A key twice in the list's own keys or its functionConfig: whole parsing says where, in lines
	// of stdin, which the skeleton's are not.
	if checkTree(docs[0].YNode(), nil, place{}) != nil {
		return nil, false
	}
	list := docs[0]
	res := &input{wrapped: true, apiVersion: list.GetApiVersion(), kind: list.GetKind()}
	if fc := list.Field("functionConfig"); fc != nil {
		res.fcOut = fc.Value
		if !yaml.IsMissingOrNull(fc.Value) {
			res.functionConfig = fc.Value
		}
	}
	// The items are parsed when the function asks for them; one that does not parse on its own
	// makes ExecuteStream parse the input whole and start over.
	res.data = data
	for i, c := range chunks {
		res.items = append(res.items, &Item{text: data[c[0]:c[1]:c[1]], seq: true, split: res, pos: i, line: c[2]})
	}
	return res, true
}

// ExecuteStream is Execute for a StreamFunc.
func ExecuteStream(name string, in Input, fn StreamFunc, stdout, stderr io.Writer) int {
	var held int64
	if in.LimitMemory {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		held = int64(ms.HeapAlloc)
	}
	src, err := readStream(in)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	if in.LimitMemory {
		// The input stays in memory and every pass makes a tree per item, garbage at once: let the
		// collector free it before the heap grows past a few times the input (Go's default lets
		// the heap double its live size first).
		// What the process held before it read (package data, a function's schemas loaded in
		// main) is not the input's doing: with the headroom so small, counting it against the
		// input would leave the collector running all the time.
		debug.SetMemoryLimit(held + int64(src.size)*memoryPerInputByteX2/2 + memoryBase)
	}
	s, transform := src.run(fn)
	// The strict checks run on each item's first parse, so whatever the function left unparsed
	// (it may stop at its first error, and then the dry run does not happen) is parsed now: every
	// item is checked, and an item that does not parse alone is found, as reading whole finds it.
	src.checkAll()
	if src.splitFailed {
		// An item did not parse on its own: the input was split wrongly, or it is malformed.
		// Parsed whole it is right, or says what is wrong; the function starts over.
		if src, err = wholeInput(src.data, in.FunctionConfig); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			return 1
		}
		if err := src.verify(); err != nil {
			s = src.refuse(err)
		} else {
			s, transform = src.run(fn)
		}
	} else if err := src.verify(); err != nil {
		// Objects the reader refuses get the answer Execute gives them, whatever the function
		// said about them.
		s = src.refuse(err)
	}
	plain := !src.wrapped
	for _, res := range s.Results {
		if res.Severity == "info" && !plain {
			continue
		}
		fmt.Fprintf(stderr, "%s: %s\n", name, format(res))
	}
	if s.HasErrors() {
		if !plain {
			var out bytes.Buffer
			if err := src.writeList(nil, s, &out); err == nil {
				_, _ = stdout.Write(out.Bytes())
			}
		}
		return 1
	}
	w := bufio.NewWriterSize(stdout, 256<<10)
	err = src.write(s, transform, w)
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: writing output: %v\n", name, err)
		return 1
	}
	return 0
}

// checkAll parses every item not parsed yet, which checks it, until one does not parse on its own.
func (src *input) checkAll() {
	for _, it := range src.items {
		if !it.checked {
			_, _ = it.Node()
			if src.splitFailed {
				return
			}
		}
	}
}

// refusal is what verify finds: objects of well-formed input that the strict checks refuse. It is
// reported like a function's error (in a ResourceList answer's results too, naming the object),
// not as malformed input, which gets no answer.
type refusal struct {
	error
	ref Ref
}

// objectError is what the checks found wrong with an item, and the item.
type objectError struct {
	error
	ref Ref
}

// verify reports what the strict checks found: the first item that failed them, in input order,
// or an object that is in the input twice. Every item must have been checked.
func (src *input) verify() error {
	for _, it := range src.items {
		var bad objectError
		if errors.As(it.err, &bad) {
			return refusal{bad.error, bad.ref}
		}
		if it.err != nil {
			return refusal{it.err, Ref{}}
		}
	}
	return duplicateObjects(src.items)
}

// refuse makes the results of a refusal (see verify).
func (src *input) refuse(err error) *Stream {
	s := &Stream{Items: src.items, FunctionConfig: src.functionConfig}
	r := err.(refusal)
	s.Report(framework.Error, r.ref, "", "%v", r.error)
	return s
}

// run runs fn, then a first pass that transforms and encodes every item without keeping the
// output: whatever can fail fails there, before anything is written. (The pass that writes to
// stdout as it encodes comes once the results are out, so the output is never held in memory as
// a whole.)
func (src *input) run(fn StreamFunc) (*Stream, Transform) {
	s := &Stream{Items: src.items, FunctionConfig: src.functionConfig}
	transform, err := fn(s)
	if err != nil {
		s.Errorf(nil, "", "%v", err)
	}
	if !s.HasErrors() {
		if err := src.write(s, transform, io.Discard); err != nil {
			// Reported as an error the function returned (the transform's, mostly).
			s.Errorf(nil, "", "%v", err)
		}
	}
	return s, transform
}

// write encodes the transformed items the way kyaml's writer encodes them.
func (src *input) write(s *Stream, transform Transform, out io.Writer) error {
	each := func(fn func(*yaml.RNode) error) error {
		for i, it := range src.items {
			n, err := it.Node()
			if err != nil {
				return err
			}
			if transform != nil {
				if err := transform(i, n); err != nil {
					return err
				}
			}
			if err := fn(n); err != nil {
				return err
			}
		}
		return nil
	}
	if src.wrapped {
		return src.writeList(each, s, out)
	}
	// One encoder per document: yaml.v3's encoder keeps every event it ever emitted (its event
	// queue only grows), which for a long stream takes gigabytes and quadratic time. A stream of
	// documents encoded by one encoder is each document alone, joined by "---" lines.
	var buf bytes.Buffer
	first := true
	return each(func(n *yaml.RNode) error {
		// Plain output carries no reader bookkeeping, whoever added it (see write).
		seqIndent := n.GetAnnotations()[kioutil.SeqIndentAnnotation]
		for _, a := range []string{kioutil.PathAnnotation, kioutil.IndexAnnotation, kioutil.IdAnnotation,
			kioutil.LegacyPathAnnotation, kioutil.LegacyIndexAnnotation, kioutil.LegacyIdAnnotation, kioutil.SeqIndentAnnotation} {
			if err := n.PipeE(yaml.ClearAnnotation(a)); err != nil {
				return err
			}
		}
		if err := yaml.ClearEmptyAnnotations(n); err != nil {
			return err
		}
		buf.Reset()
		if !first {
			buf.WriteString("---\n")
		}
		first = false
		encoder := yaml.NewEncoder(&buf)
		if seqIndent == string(yaml.WideSequenceStyle) {
			encoder.DefaultSeqIndent()
		} else {
			encoder.CompactSeqIndent()
		}
		if err := encoder.Encode(n.Document()); err != nil {
			return err
		}
		if err := encoder.Close(); err != nil {
			return err
		}
		_, err := out.Write(buf.Bytes())
		return err
	})
}

// The memory limit ExecuteStream sets under Input.LimitMemory: 4 bytes per byte of input (the
// input itself, what a function keeps per object, and room for garbage), plus what the runtime
// takes on any input, plus what the process held before it read. The limit is soft: on a starved
// CPU the heap can overshoot it. (3.5 bytes made config-hash 40 % slower once it defaulted and
// checked every config against its schema, which makes garbage per config: the collector ran
// without pause. At 4 it is as fast as before those checks, for ~25 % more peak memory.)
const (
	memoryPerInputByteX2 = 8
	memoryBase           = 8 << 20
)

// itemsPlaceholder stands for the items while the ResourceList around them is encoded.
const itemsPlaceholder = "krmfn-items-placeholder-3f1c"

// writeList encodes a ResourceList whose items each yields (none when each is nil): the list
// around them is encoded with a placeholder item, and each item alone as the one item of a list,
// which gives the same bytes as encoding the whole list at once.
func (src *input) writeList(each func(func(*yaml.RNode) error) error, s *Stream, out io.Writer) error {
	var results *yaml.RNode
	if len(s.Results) > 0 {
		b, err := yaml.Marshal(s.Results)
		if err != nil {
			return err
		}
		if results, err = yaml.Parse(string(b)); err != nil {
			return err
		}
	}
	items := &yaml.Node{Kind: yaml.SequenceNode}
	list := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Value: "apiVersion"}, {Kind: yaml.ScalarNode, Value: src.apiVersion},
		{Kind: yaml.ScalarNode, Value: "kind"}, {Kind: yaml.ScalarNode, Value: src.kind},
		{Kind: yaml.ScalarNode, Value: "items"}, items,
	}}
	if src.fcOut != nil {
		list.Content = append(list.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "functionConfig"}, src.fcOut.YNode())
	}
	if results != nil {
		list.Content = append(list.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "results"}, results.YNode())
	}
	if each != nil && len(src.items) > 0 {
		items.Content = []*yaml.Node{{Kind: yaml.ScalarNode, Value: itemsPlaceholder}}
	}
	var frame bytes.Buffer
	encoder := yaml.NewEncoder(&frame)
	if err := encoder.Encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{list}}); err != nil {
		return err
	}
	if err := encoder.Close(); err != nil {
		return err
	}
	if len(items.Content) == 0 {
		_, err := out.Write(frame.Bytes())
		return err
	}
	before, after, ok := bytes.Cut(frame.Bytes(), []byte("items:\n- "+itemsPlaceholder+"\n"))
	if !ok {
		return fmt.Errorf("encoding the ResourceList: no place for the items in %.80q", frame.String())
	}
	if _, err := out.Write(before); err != nil {
		return err
	}
	if _, err := io.WriteString(out, "items:\n"); err != nil {
		return err
	}
	one := &yaml.Node{Kind: yaml.SequenceNode}
	wrapper := &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode, Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Value: "items"}, one}}}}
	var buf bytes.Buffer
	err := each(func(n *yaml.RNode) error {
		if err := yaml.ClearEmptyAnnotations(n); err != nil {
			return err
		}
		one.Content = []*yaml.Node{n.YNode()}
		buf.Reset()
		encoder := yaml.NewEncoder(&buf)
		if err := encoder.Encode(wrapper); err != nil {
			return err
		}
		if err := encoder.Close(); err != nil {
			return err
		}
		item, ok := bytes.CutPrefix(buf.Bytes(), []byte("items:\n"))
		if !ok {
			return fmt.Errorf("encoding an item: unexpected %.40q", buf.String())
		}
		_, err := out.Write(item)
		return err
	})
	if err != nil {
		return err
	}
	_, err = out.Write(after)
	return err
}
