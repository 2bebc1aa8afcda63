package krmfn

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"

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
	// split is the input a seq item was split from, told when the item does not parse alone;
	// parsed tells that it did once.
	split  *input
	parsed bool
}

// Node parses the item. Every call returns a new tree, which the caller may change freely.
func (it *Item) Node() (*yaml.RNode, error) {
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
		it.parsed = true
		return yaml.NewRNode(doc.Content[0].Content[0]), nil
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

// readStream reads the input the way read does, but keeps it as bytes.
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
			items, err := documents(data, fmt.Sprintf("reading %s", path))
			if err != nil {
				return nil, err
			}
			for i, it := range items {
				n, err := it.Node()
				if err != nil {
					return nil, fmt.Errorf("reading %s: %w", path, err)
				}
				if n.GetKind() == kio.ResourceListKind {
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
	return stdinInput(data, in.FunctionConfig, true)
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
	items, err := documents(data, "reading input")
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("no input: stdin holds no YAML document; pipe a ResourceList (as kustomize and kpt send) or YAML objects into it, or name FILEs")
	}
	first, err := items[0].Node()
	if err != nil {
		return nil, fmt.Errorf("reading input: %w", err)
	}
	if len(items) == 1 && isObject(first) && (first.GetKind() == kio.ResourceListKind ||
		first.GetKind() == "List" && (first.Field("items") != nil || first.Field("functionConfig") != nil)) {
		return wholeList(first, plainConfig)
	}
	for i, it := range items {
		n, err := it.Node()
		if err != nil {
			return nil, fmt.Errorf("reading input: %w", err)
		}
		if isObject(n) && n.GetKind() == kio.ResourceListKind {
			return nil, fmt.Errorf("document %d on stdin is a ResourceList, which must be the only document of the input (there are %d)", i+1, len(items))
		}
		it.annotate, it.index = true, i
	}
	return &input{items: items, functionConfig: plainConfig}, nil
}

// wholeList unwraps a ResourceList or List parsed whole.
func wholeList(list *yaml.RNode, plainConfig *yaml.RNode) (*input, error) {
	nodes, err := unwrap(list)
	if err != nil {
		return nil, err
	}
	res := &input{apiVersion: list.GetApiVersion(), kind: list.GetKind(), wrapped: list.GetKind() == kio.ResourceListKind}
	for _, n := range nodes {
		res.items = append(res.items, &Item{node: n})
	}
	if !res.wrapped {
		// A List is plain YAML: answered unwrapped, configured like any plain input.
		res.functionConfig = plainConfig
	} else if fc := list.Field("functionConfig"); fc != nil {
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

// documents splits a YAML stream into its non-empty documents exactly as kyaml's reader does (a
// separator is a line starting with ---, followed by nothing or a comment), parsing each once to
// check it and to drop empty ones.
func documents(data []byte, what string) ([]*Item, error) {
	var texts [][]byte
	if len(data) > 0 {
		prev := 0
		for _, loc := range documentSeparator.FindAllIndex(data, -1) {
			if rest := bytes.TrimSpace(data[loc[0]+4 : loc[1]]); len(rest) > 0 && rest[0] != '#' {
				return nil, fmt.Errorf("%s: invalid document separator: %s", what, bytes.TrimSpace(data[loc[0]:loc[1]]))
			}
			// kyaml gives every document but the last its line end back.
			texts = append(texts, data[prev:loc[0]+1])
			prev = loc[1]
		}
		texts = append(texts, data[prev:])
	}
	var items []*Item
	for _, text := range texts {
		docs, err := (&kio.ByteReader{Reader: bytes.NewReader(text), PreserveSeqIndent: true, DisableUnwrapping: true}).Read()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if len(docs) == 1 {
			items = append(items, &Item{text: text})
		}
	}
	return items, nil
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
	if documentSeparator.Match(data) || bytes.HasPrefix(data, []byte("---")) {
		return nil, false
	}
	// lines calls fn with each line (its \n included) and its offset, until fn returns false.
	lines := func(from int, fn func(off int, l []byte) bool) {
		for off := from; off < len(data); {
			end := len(data)
			if j := bytes.IndexByte(data[off:], '\n'); j >= 0 {
				end = off + j + 1
			}
			if !fn(off, data[off:end]) {
				return
			}
			off = end
		}
	}
	first, firstEnd, count := -1, -1, 0
	lines(0, func(off int, l []byte) bool {
		if itemsLine.Match(l) {
			count++
			if first < 0 {
				first, firstEnd = off, off+len(l)
			}
		}
		return true
	})
	if count != 1 {
		return nil, false
	}
	indent := -1
	var chunks [][2]int // [from, to) in data
	lastComment, ok := false, true
	tailStart := len(data)
	lines(firstEnd, func(off int, l []byte) bool {
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
			chunks = append(chunks, [2]int{off, -1})
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
	if !ok || lastComment {
		return nil, false
	}
	if len(chunks) > 0 {
		chunks[len(chunks)-1][1] = tailStart
	}
	skeleton := append(append([]byte(nil), data[:first]...), data[tailStart:]...)
	docs, err := (&kio.ByteReader{Reader: bytes.NewReader(skeleton), OmitReaderAnnotations: true, DisableUnwrapping: true}).Read()
	if err != nil || len(docs) != 1 || !isObject(docs[0]) || docs[0].GetKind() != kio.ResourceListKind || docs[0].Field("items") != nil {
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
	for _, c := range chunks {
		res.items = append(res.items, &Item{text: data[c[0]:c[1]:c[1]], seq: true, split: res})
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
	if s.HasErrors() && !src.splitFailed {
		// The function may have stopped before it parsed every item, and the dry run did not
		// happen: an item that does not parse alone must still be found, as reading the input
		// whole finds it.
		for _, it := range src.items {
			if it.split != nil && !it.parsed {
				if _, err := it.Node(); err != nil {
					break
				}
			}
		}
	}
	if src.splitFailed {
		// An item did not parse on its own: the input was split wrongly, or it is malformed.
		// Parsed whole it is right, or says what is wrong; the function starts over.
		if src, err = wholeInput(src.data, in.FunctionConfig); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			return 1
		}
		s, transform = src.run(fn)
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

// The memory limit ExecuteStream sets under Input.LimitMemory: 3.5 bytes per byte of input (the
// input itself, what a function keeps per object, and room for garbage), plus what the runtime
// takes on any input. The limit is soft: on a starved CPU the heap can overshoot it.
const (
	memoryPerInputByteX2 = 7
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
