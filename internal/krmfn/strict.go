package krmfn

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"regexp"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// The strict reader: the checks every document and ResourceList item goes through, on either path
// (Execute, ExecuteStream), so that both accept the same inputs and say the same about the rest.
// Each runs once per item, on the item's first parse: the stream path parses items again and again,
// and the checks must stay one cheap walk of the tree.
//
// Merge keys (<<: *anchor) are left alone: a key that a mapping writes and also merges in is legal
// YAML, and kyaml does not expand merges anyway. Only a key written twice in one mapping counts.
//
// The same walk refuses block scalars that yaml.v3's encoder, which writes every function's output,
// would write back with another value (FuzzStrictReader found it: a folded block with a
// more-indented line loses or gains line breaks): what passes must come out as it went in.

// place is where a document or ResourceList item is, for messages.
type place struct {
	source string // "stdin", a FILE's path, "functionConfig PATH"
	doc    int    // the document's number among its source's non-empty documents, from 1; 0: none
	item   int    // its index in the ResourceList's items; -1: not an item
	list   bool   // the ResourceList itself
	object string // "Kind namespace/name" of the object there, when known
	// line is the number of lines of the source before the text that was parsed: kyaml parses each
	// document on its own, and the stream path an item split from its ResourceList, so a
	// yaml.Node's Line counts from there.
	line int
}

func (p place) String() string {
	s := p.source
	switch {
	case p.item >= 0:
		s = fmt.Sprintf("%s, ResourceList items[%d]", p.source, p.item)
	case p.list:
		s = p.source + ", ResourceList"
	case p.doc > 0:
		s = fmt.Sprintf("%s, document %d", p.source, p.doc)
	}
	if p.object != "" {
		s += " (" + p.object + ")"
	}
	return s
}

// sourceName is how messages name a FILE argument.
func sourceName(path string) string {
	if path == "-" {
		return "stdin"
	}
	return path
}

// objectID identifies an object the way the API server does, as far as the input tells: the
// namespace is compared as written, since krmfn does not know which kinds are cluster-scoped.
type objectID struct{ group, kind, namespace, name string }

// checkTree fails on the first mapping under n (skip and its subtree left out) that holds a key
// twice, or on a block scalar the encoder would write back changed. Keys are the same when their
// node kind and text are (yaml.v3's rule when it decodes into a map): kyaml reads the first of
// them, kubectl the last, so what this function checks would not be what the cluster gets.
func checkTree(n, skip *yaml.Node, p place) error {
	f := walk(n, skip)
	switch {
	case f.mapping != nil:
		key := keySegment(f.first)
		if path := pathTo(n, f.mapping); path != "" {
			key = joinPath(path, key)
		}
		return fmt.Errorf("%s: key %s is given twice, on lines %d and %d: YAML tools disagree on which one counts (this function would read the first, kubectl the last): delete one of them",
			p, key, p.line+f.first.Line, p.line+f.second.Line)
	case f.scalar != nil:
		style := "folded (>)"
		if f.scalar.Style&yaml.LiteralStyle != 0 {
			style = "literal (|)"
		}
		return fmt.Errorf("%s: the %s block scalar %s on line %d would be written out with another value: the YAML encoder every KRM function writes with "+
			"(yaml.v3) gets such a block wrong when it has more-indented lines or leading or trailing blank lines: write it as a double-quoted string",
			p, style, pathTo(n, f.scalar), p.line+f.scalar.Line)
	}
	return nil
}

// finding is what walk finds: a mapping with a key twice (first and second), or a scalar.
type finding struct {
	mapping, first, second *yaml.Node
	scalar                 *yaml.Node
}

// walk returns the first problem under n, depth first. Aliases are not followed: the subtree they
// point at is checked where it is written.
func walk(n, skip *yaml.Node) finding {
	if n == skip {
		return finding{}
	}
	switch n.Kind {
	case yaml.MappingNode:
		if a, b := repeatedKey(n.Content); a != nil {
			return finding{mapping: n, first: a, second: b}
		}
		for i, c := range n.Content {
			if i%2 == 0 && c.Kind == yaml.ScalarNode {
				continue // a plain key: nothing under it
			}
			if f := walk(c, skip); f != (finding{}) {
				return f
			}
		}
	case yaml.SequenceNode, yaml.DocumentNode:
		for _, c := range n.Content {
			if f := walk(c, skip); f != (finding{}) {
				return f
			}
		}
	case yaml.ScalarNode:
		if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 && !encodesFaithfully(n) {
			return finding{scalar: n}
		}
	}
	return finding{}
}

// encodesFaithfully tells whether the encoder writes a block scalar back with its value. Folded
// scalars it gets wrong in many ways, so each is tried; literal ones only with leading blanks or
// blank lines, or trailing blank lines, so only those are (kustomize writes a literal annotation on
// every item it sends).
func encodesFaithfully(n *yaml.Node) bool {
	v := n.Value
	if n.Style&yaml.LiteralStyle != 0 && !strings.HasPrefix(v, "\n") && !strings.HasPrefix(v, " ") && !strings.HasPrefix(v, "\t") && !strings.HasSuffix(v, "\n\n") {
		return true
	}
	doc := &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode, Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Value: "k"}, {Kind: yaml.ScalarNode, Style: n.Style, Tag: n.Tag, Value: v,
			HeadComment: n.HeadComment, LineComment: n.LineComment, FootComment: n.FootComment}}}}}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return false
	}
	var back yaml.Node
	if err := yaml.Unmarshal(out, &back); err != nil || len(back.Content) != 1 || len(back.Content[0].Content) != 2 {
		return false
	}
	return back.Content[0].Content[1].Value == v
}

type keyID struct {
	kind  yaml.Kind
	value string
}

// repeatedKey returns the first key of a mapping's content that repeats an earlier one, and that
// earlier one. Most mappings are small, where comparing every pair is cheaper than a map.
func repeatedKey(c []*yaml.Node) (first, second *yaml.Node) {
	if len(c) < 4 {
		return nil, nil
	}
	if len(c) <= 32 {
		for i := 2; i < len(c); i += 2 {
			for j := 0; j < i; j += 2 {
				if c[i].Kind == c[j].Kind && c[i].Value == c[j].Value {
					return c[j], c[i]
				}
			}
		}
		return nil, nil
	}
	seen := make(map[keyID]*yaml.Node, len(c)/2)
	for i := 0; i < len(c); i += 2 {
		k := keyID{c[i].Kind, c[i].Value}
		if prev, ok := seen[k]; ok {
			return prev, c[i]
		}
		seen[k] = c[i]
	}
	return nil, nil
}

// pathTo returns the field path from root to target (a node under it), e.g. spec.items[0]; it is
// only called to word an error, so it searches rather than making the checks keep paths.
func pathTo(root, target *yaml.Node) string {
	var segs []string
	var find func(n *yaml.Node) bool
	find = func(n *yaml.Node) bool {
		if n == target {
			return true
		}
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				if find(c) {
					return true
				}
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				segs = append(segs, keySegment(n.Content[i]))
				if find(n.Content[i+1]) {
					return true
				}
				segs = segs[:len(segs)-1]
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				segs = append(segs, fmt.Sprintf("[%d]", i))
				if find(c) {
					return true
				}
				segs = segs[:len(segs)-1]
			}
		}
		return false
	}
	find(root)
	path := ""
	for _, s := range segs {
		path = joinPath(path, s)
	}
	return path
}

// keySegment is a key as a path segment: name, or [key] when it holds anything but letters,
// digits, - and _ (annotation keys: metadata.annotations[example.com/x]).
func keySegment(k *yaml.Node) string {
	v := k.Value
	if v == "" || strings.IndexFunc(v, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}) >= 0 {
		return "[" + v + "]"
	}
	return v
}

func joinPath(path, seg string) string {
	if path == "" || strings.HasPrefix(seg, "[") {
		return path + seg
	}
	return path + "." + seg
}

// describe names an object as Describe does: "Kind namespace/name" or "Kind name".
func (id objectID) describe() string {
	if id.namespace != "" {
		return id.kind + " " + id.namespace + "/" + id.name
	}
	return id.kind + " " + id.name
}

// objectInfo is what the checks read of an object: its identity, and whether that must be unique
// in the input (unique).
type objectInfo struct {
	id         objectID
	apiVersion string
	unique     bool
}

// ref names the object in a result, when it has a kind and a name.
func (o objectInfo) ref() Ref {
	if o.id.kind == "" || o.id.name == "" {
		return Ref{}
	}
	return Ref{APIVersion: o.apiVersion, Kind: o.id.kind, Namespace: o.id.namespace, Name: o.id.name, valid: true}
}

// infoOf reads an object's identity (n its top node), the first of a key given twice.
func infoOf(n *yaml.Node) objectInfo {
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	var info objectInfo
	if n.Kind != yaml.MappingNode {
		return info
	}
	info.apiVersion, info.id.kind = scalarField(n, "apiVersion"), scalarField(n, "kind")
	if g, _, ok := strings.Cut(info.apiVersion, "/"); ok {
		info.id.group = g
	}
	if md := mappingValue(n, "metadata"); md != nil && md.Kind == yaml.MappingNode {
		info.id.namespace, info.id.name = scalarField(md, "namespace"), scalarField(md, "name")
	}
	return info
}

// hash is the identity's hash, which is all of it an item keeps.
func (id objectID) hash() uint64 {
	var h maphash.Hash
	h.SetSeed(idSeed)
	for _, s := range []string{id.group, id.kind, id.namespace, id.name} {
		h.WriteString(s)
		h.WriteByte(0)
	}
	return h.Sum64()
}

var idSeed = maphash.MakeSeed()

// checkObject runs the checks of one document or ResourceList item (n is its top node) and
// returns what they read of the object, its identity also when they fail (to name it in results).
func checkObject(n *yaml.Node, p place) (objectInfo, error) {
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	// Read first, so that a failed check can name the object.
	info := infoOf(n)
	if info.ref().valid {
		p.object = info.id.describe()
	}
	var md *yaml.Node
	if n.Kind == yaml.MappingNode {
		md = mappingValue(n, "metadata")
	}
	if err := checkTree(n, nil, p); err != nil {
		return info, err
	}
	if n.Kind != yaml.MappingNode {
		return info, nil // not an object: what reads it says what is wrong, if anything
	}
	kind := info.id.kind
	if kind == "List" || strings.HasSuffix(kind, "List") && mappingValue(n, "items") != nil {
		return info, fmt.Errorf("%s is a %s, a list of objects (what kubectl get -o yaml writes), whose items this function would not see: "+
			"expand it into its objects first: list its file under resources: in a kustomization and run kustomize build, which expands Lists, "+
			"or run yq '.items[] | split_doc' FILE (mikefarah's yq; python-yq: yq -y '.items[]' FILE)", p, kind)
	}
	if md == nil || md.ShortTag() == yaml.NodeTagNull {
		return info, nil
	}
	if md.Kind != yaml.MappingNode {
		return info, fmt.Errorf("%s: metadata is %s, but it must be a mapping (name, namespace, labels, annotations)", p, describeYNode(md))
	}
	for _, f := range []string{"name", "namespace"} {
		if v := mappingValue(md, f); v != nil && !isString(v) && v.ShortTag() != yaml.NodeTagNull {
			return info, fmt.Errorf("%s: metadata.%s is %s, but a %s is a string: %s", p, f, describeYNode(v), f, fixString(v))
		}
	}
	local := false
	for _, f := range []struct{ field, what string }{{"labels", "label"}, {"annotations", "annotation"}} {
		m := mappingValue(md, f.field)
		if m == nil || m.ShortTag() == yaml.NodeTagNull {
			continue
		}
		if m.Kind != yaml.MappingNode {
			return info, fmt.Errorf("%s: metadata.%s is %s, but it must be a mapping of %s keys to string values", p, f.field, describeYNode(m), f.what)
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			if v := m.Content[i+1]; !isString(v) {
				return info, fmt.Errorf("%s: metadata.%s%s is %s, but %s values are strings (the API server rejects anything else): %s",
					p, f.field, "["+m.Content[i].Value+"]", describeYNode(v), f.what, fixString(v))
			}
		}
		if f.field == "annotations" {
			local = scalarField(m, annotationLocalConfig) == "true"
		}
	}
	// Local config (a Kptfile, a function's config) never reaches a cluster; an object without kind
	// or name is none the API server would take, which the function says if it matters.
	info.unique = !local && info.id.kind != "" && info.id.name != ""
	return info, nil
}

const annotationLocalConfig = "config.kubernetes.io/local-config"

// mappingValue returns the value of a mapping's key, nil if it has none.
func mappingValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Kind == yaml.ScalarNode && m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// scalarField returns a scalar field's text, "" when it is missing, null or not a scalar.
func scalarField(m *yaml.Node, key string) string {
	if v := mappingValue(m, key); v != nil && v.Kind == yaml.ScalarNode && v.ShortTag() != yaml.NodeTagNull {
		return v.Value
	}
	return ""
}

// isString tells whether a node is a string to the API server: a string scalar, or a timestamp,
// which kubectl (sigs.k8s.io/yaml) sends as the string it is written as.
func isString(v *yaml.Node) bool {
	if v.Kind != yaml.ScalarNode {
		return false
	}
	t := v.ShortTag()
	return t == yaml.NodeTagString || t == "!!timestamp"
}

func describeYNode(v *yaml.Node) string {
	switch v.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias (*" + v.Value + ")"
	}
	switch v.ShortTag() {
	case yaml.NodeTagNull:
		return "null"
	case yaml.NodeTagBool:
		return "the boolean " + v.Value
	case yaml.NodeTagInt, yaml.NodeTagFloat:
		return "the number " + v.Value
	}
	if v.ShortTag() == yaml.NodeTagString {
		return fmt.Sprintf("the string %q", v.Value)
	}
	return fmt.Sprintf("a %s value", v.ShortTag())
}

var yamlLine = regexp.MustCompile(`\bline (\d+)\b`)

// absoluteLines makes the line numbers of a YAML parser's error about a document count from the
// start of its source, not of the document's text, which kyaml parses on its own.
func absoluteLines(err error, offset int) error {
	if offset == 0 {
		return err
	}
	return errors.New(yamlLine.ReplaceAllStringFunc(err.Error(), func(m string) string {
		n, _ := strconv.Atoi(m[len("line "):])
		return fmt.Sprintf("line %d", n+offset)
	}))
}

// fixString tells how to make v a string.
func fixString(v *yaml.Node) string {
	switch {
	case v.Kind == yaml.ScalarNode && v.ShortTag() == yaml.NodeTagNull:
		return `write "" for an empty value, or remove the key`
	case v.Kind == yaml.ScalarNode && v.Style&(yaml.LiteralStyle|yaml.FoldedStyle) == 0:
		return fmt.Sprintf("quote it: %q", v.Value)
	}
	return "write a string"
}

// duplicateObjects refuses the first object the input holds twice: two objects of the same API
// group, kind, namespace and name are one object to the API server, which keeps whichever is
// applied last. Every item must have been checked. Items keep only a hash of their identity, so
// the two found are parsed again, to compare them and to name them.
func duplicateObjects(items []*Item) error {
	seen := make(map[uint64]*Item, len(items))
	for _, it := range items {
		if !it.unique {
			continue
		}
		prev, dup := seen[it.idHash]
		if !dup {
			seen[it.idHash] = it
			continue
		}
		a, aOrigin, err := prev.identity()
		if err != nil {
			return err
		}
		b, bOrigin, err := it.identity()
		if err != nil {
			return err
		}
		if a.id != b.id {
			return duplicateObjectsSlowly(items) // two identities, one hash
		}
		what := b.id.describe()
		if b.id.group != "" {
			what += " (" + b.id.group + ")"
		}
		return refusal{fmt.Errorf("%s is in the input twice (%s; %s): an object may appear only once (same API group, kind, namespace and name), "+
			"or one of them silently replaces the other on the cluster: delete one, or rename it", what, where(prev, aOrigin), where(it, bOrigin)), b.ref()}
	}
	return nil
}

// duplicateObjectsSlowly is duplicateObjects by the identities themselves, for when two differ
// with the same hash.
func duplicateObjectsSlowly(items []*Item) error {
	var unique []*Item
	seen := map[objectID]uint64{}
	for _, it := range items {
		if !it.unique {
			continue
		}
		info, _, err := it.identity()
		if err != nil {
			return err
		}
		// Give each distinct identity its own hash: equal hashes are then equal identities.
		h, ok := seen[info.id]
		if !ok {
			h = uint64(len(seen))
			seen[info.id] = h
		}
		c := *it
		c.idHash = h
		unique = append(unique, &c)
	}
	return duplicateObjects(unique)
}

// identity parses the item again and returns what the checks read of it, and the file kpt read a
// ResourceList item from.
func (it *Item) identity() (objectInfo, string, error) {
	n, err := it.Node()
	if err != nil {
		return objectInfo{}, "", err
	}
	info := infoOf(n.YNode())
	if it.seq || it.node != nil {
		return info, origin(n.YNode()), nil
	}
	return info, "", nil
}

// where names an item's place, and for a ResourceList item the file kpt read it from, if known.
func where(it *Item, origin string) string {
	if origin != "" {
		return fmt.Sprintf("%s (file %s)", it.place(), origin)
	}
	return it.place().String()
}

// origin reads the file kpt says a ResourceList item came from.
func origin(n *yaml.Node) string {
	md := mappingValue(n, "metadata")
	if md == nil || md.Kind != yaml.MappingNode {
		return ""
	}
	ann := mappingValue(md, "annotations")
	if ann == nil || ann.Kind != yaml.MappingNode {
		return ""
	}
	if p := scalarField(ann, kioutil.PathAnnotation); p != "" {
		return p
	}
	return scalarField(ann, kioutil.LegacyPathAnnotation)
}

// section is one document's text as kyaml's reader splits a stream, and the lines before it.
type section struct {
	text []byte
	line int
}

// sections splits a YAML stream into documents exactly as kyaml's reader does: a separator is a
// line starting with ---, followed by nothing or a comment.
func sections(data []byte, what string) ([]section, error) {
	var secs []section
	if len(data) == 0 {
		return nil, nil
	}
	prev, line := 0, 0
	for _, loc := range documentSeparator.FindAllIndex(data, -1) {
		if rest := bytes.TrimSpace(data[loc[0]+4 : loc[1]]); len(rest) > 0 && rest[0] != '#' {
			return nil, fmt.Errorf("%s: invalid document separator: %s", what, bytes.TrimSpace(data[loc[0]:loc[1]]))
		}
		// kyaml gives every document but the last its line end back.
		secs = append(secs, section{text: data[prev : loc[0]+1], line: line})
		line += bytes.Count(data[prev:loc[1]], []byte{'\n'})
		prev = loc[1]
	}
	return append(secs, section{text: data[prev:], line: line}), nil
}

// checkOneDocument fails on a section that holds more than one YAML document: a document end
// marker (...) lets another document follow without ---, and kyaml reads only the first of a
// section, dropping the rest without a word.
func checkOneDocument(text []byte, p place) error {
	if !bytes.HasPrefix(text, []byte("...")) && !bytes.Contains(text, []byte("\n...")) {
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(text))
	var first yaml.Node
	if err := dec.Decode(&first); err != nil {
		return nil // kyaml's reader says what is wrong
	}
	for {
		var next yaml.Node
		err := dec.Decode(&next)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil || len(next.Content) > 0 && !yaml.IsYNodeEmptyDoc(&next) {
			return fmt.Errorf("%s: a YAML document follows the document end marker (...) on line %d without a --- line, and would be dropped: separate documents with ---",
				p, p.line+endMarkerLine(text))
		}
	}
}

// endMarkerLine returns the line of the first document end marker in text, from 1.
func endMarkerLine(text []byte) int {
	if bytes.HasPrefix(text, []byte("...")) {
		return 1
	}
	return bytes.Count(text[:bytes.Index(text, []byte("\n..."))+1], []byte{'\n'}) + 1
}
