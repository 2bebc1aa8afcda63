package render

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Variable substitution.
//
// OCM runs fasttemplate over the raw JSON text of each manifest and pastes values in unescaped, so a
// value holding a quote, a backslash or a newline breaks the manifest or injects fields into it, an
// unknown variable silently becomes "", and a "{{" without "}}" makes fasttemplate panic. Here the
// manifest is decoded first and substitution happens inside each decoded string (values and map
// keys): the value lands in the object exactly as given and JSON encoding escapes it, so it can
// never change the manifest's structure. Tag syntax is fasttemplate's: the text between "{{" and
// the next "}}" is the variable name, taken literally (no trimming).

const (
	startTag = "{{"
	endTag   = "}}"
)

// tmplString is a string holding at least one {{VAR}} tag: texts[0] vars[0] texts[1] ... texts[n].
type tmplString struct {
	texts []string
	vars  []string
	size  int // total length of texts, to size the builder
}

// tmplMap is a map in which at least one key holds a tag. Entries are sorted by source key.
type tmplMap struct {
	path   string // where the map is, for messages
	keys   []any  // string or *tmplString
	values []any
}

// VariableUse is one {{VAR}} tag found in a manifest.
type VariableUse struct {
	Name string
	// Field is the path of the string holding the tag, e.g. spec.template.spec.containers[0].args[2].
	// A tag in a map key is reported at the path of that key.
	Field string
}

// parseTags splits s at its tags. It returns nil, nil when s holds no tag.
func parseTags(s string) (*tmplString, error) {
	if !strings.Contains(s, startTag) {
		return nil, nil
	}
	t := &tmplString{}
	rest := s
	for {
		i := strings.Index(rest, startTag)
		if i < 0 {
			t.texts = append(t.texts, rest)
			t.size += len(rest)
			break
		}
		t.texts = append(t.texts, rest[:i])
		t.size += i
		rest = rest[i+len(startTag):]
		j := strings.Index(rest, endTag)
		if j < 0 {
			return nil, fmt.Errorf("%q opens a variable with %q but never closes it with %q; OCM has no escape for a literal %q",
				s, startTag, endTag, startTag)
		}
		t.vars = append(t.vars, rest[:j])
		rest = rest[j+len(endTag):]
	}
	return t, nil
}

// compileTree turns a decoded JSON value into a tree where strings holding tags are *tmplString
// and maps with tagged keys are *tmplMap. uses collects every tag in a deterministic order.
func compileTree(v any, path string, uses *[]VariableUse) (any, error) {
	switch x := v.(type) {
	case string:
		t, err := parseTags(x)
		if err != nil {
			return nil, &Error{Field: path, Message: err.Error()}
		}
		if t == nil {
			return x, nil
		}
		for _, name := range t.vars {
			*uses = append(*uses, VariableUse{Name: name, Field: path})
		}
		return t, nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make(map[string]any, len(x))
		keyTmpls := make([]*tmplString, len(keys))
		tagged := false
		for i, k := range keys {
			child := joinField(path, k)
			kt, err := parseTags(k)
			if err != nil {
				return nil, &Error{Field: child, Message: "map key " + err.Error()}
			}
			if kt != nil {
				tagged = true
				keyTmpls[i] = kt
				for _, name := range kt.vars {
					*uses = append(*uses, VariableUse{Name: name, Field: child})
				}
			}
			cv, err := compileTree(x[k], child, uses)
			if err != nil {
				return nil, err
			}
			out[k] = cv
		}
		if !tagged {
			return out, nil
		}
		tm := &tmplMap{path: path}
		for i, k := range keys {
			if keyTmpls[i] != nil {
				tm.keys = append(tm.keys, keyTmpls[i])
			} else {
				tm.keys = append(tm.keys, k)
			}
			tm.values = append(tm.values, out[k])
		}
		return tm, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			cv, err := compileTree(e, path+"["+strconv.Itoa(i)+"]", uses)
			if err != nil {
				return nil, err
			}
			out[i] = cv
		}
		return out, nil
	default:
		return x, nil
	}
}

func joinField(path, key string) string {
	if strings.ContainsAny(key, ".[]") || key == "" {
		key = "[" + strconv.Quote(key) + "]"
		return path + key
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func (t *tmplString) expand(vars map[string]string) string {
	n := t.size
	for _, name := range t.vars {
		n += len(vars[name])
	}
	var b strings.Builder
	b.Grow(n)
	for i, text := range t.texts {
		b.WriteString(text)
		if i < len(t.vars) {
			b.WriteString(vars[t.vars[i]])
		}
	}
	return b.String()
}

// instantiate builds a fresh, fully owned copy of a compiled tree with every tag replaced. All
// variables used must be defined in vars (checked by the caller beforehand).
func instantiate(v any, vars map[string]string) (any, error) {
	switch x := v.(type) {
	case *tmplString:
		return x.expand(vars), nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			cv, err := instantiate(e, vars)
			if err != nil {
				return nil, err
			}
			out[k] = cv
		}
		return out, nil
	case *tmplMap:
		out := make(map[string]any, len(x.keys))
		for i, k := range x.keys {
			var key string
			switch kk := k.(type) {
			case string:
				key = kk
			case *tmplString:
				key = kk.expand(vars)
			}
			if _, dup := out[key]; dup {
				return nil, &Error{Field: x.path, Message: fmt.Sprintf(
					"after substitution the map at %s has the key %q twice", orRoot(x.path), key)}
			}
			cv, err := instantiate(x.values[i], vars)
			if err != nil {
				return nil, err
			}
			out[key] = cv
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			cv, err := instantiate(e, vars)
			if err != nil {
				return nil, err
			}
			out[i] = cv
		}
		return out, nil
	default:
		// string, bool, int64, float64, nil: immutable, safe to share.
		return x, nil
	}
}

func orRoot(path string) string {
	if path == "" {
		return "the top level"
	}
	return path
}
