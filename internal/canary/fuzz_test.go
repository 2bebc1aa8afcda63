package canary

import (
	"reflect"
	"testing"
)

// FuzzParseValue: any annotation value either fails to parse or parses to canaries whose canonical
// form reads back the same, and the canonical form is a fixed point.
func FuzzParseValue(f *testing.F) {
	for _, s := range []string{`{}`, `{"a/b": "c/d"}`, `{"a/b":"c/d","e/f":"a/b"}`, `{"a/b": "a/b"}`, `null`, `{"a/b": 1}`, `{"\u00e9/\"x": "y/z"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		m, err := ParseValue(raw)
		if err != nil {
			return
		}
		canonical := Format(m)
		back, err := ParseValue(canonical)
		if err != nil || !reflect.DeepEqual(back, m) {
			t.Fatalf("Format(ParseValue(%q)) = %q reads back as %v, %v; want %v", raw, canonical, back, err, m)
		}
		if again := Format(back); again != canonical {
			t.Fatalf("Format is not a fixed point: %q then %q", canonical, again)
		}
	})
}
