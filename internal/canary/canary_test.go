package canary

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func key(ns, name string) PlacementKey { return PlacementKey{Namespace: ns, Name: name} }

func TestParseValue(t *testing.T) {
	cases := []struct {
		name, raw string
		want      map[PlacementKey]PlacementKey
		wantErr   string
	}{
		{"empty object", `{}`, map[PlacementKey]PlacementKey{}, ""},
		{"one", `{"default/aws": "default/canary"}`, map[PlacementKey]PlacementKey{key("default", "aws"): key("default", "canary")}, ""},
		{"two, across namespaces", `{"b/x":"a/c","a/y":"a/c"}`,
			map[PlacementKey]PlacementKey{key("b", "x"): key("a", "c"), key("a", "y"): key("a", "c")}, ""},
		{"YAML, not JSON", `default/aws: default/canary`, nil, "want a JSON object such as"},
		{"null", `null`, nil, "null is not a JSON object"},
		{"array", `["default/aws"]`, nil, "an array is not a JSON object"},
		{"string", `"default/aws"`, nil, "a string is not a JSON object"},
		{"number value", `{"default/aws": 1}`, nil, `value of "default/aws" is a JSON number, not a string`},
		{"trailing data", `{"default/aws": "default/canary"} {}`, nil, "data after the JSON object"},
		{"unterminated", `{"default/aws": "default/canary"`, nil, "want a JSON object"},
		{"duplicate key", `{"default/aws": "default/c1", "default/aws": "default/c2"}`, nil, `key "default/aws" appears twice`},
		{"bad key", `{"aws": "default/canary"}`, nil, `key "aws" is not <namespace>/<placement>`},
		{"bad value", `{"default/aws": "a/b/c"}`, nil, `value of "default/aws": "a/b/c" is not <namespace>/<placement>`},
		{"empty namespace", `{"/aws": "default/c"}`, nil, `"/aws" is not <namespace>/<placement>`},
		{"self", `{"default/aws": "default/aws"}`, nil, "placement default/aws cannot be its own canary"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseValue(tc.raw)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				if !strings.HasPrefix(err.Error(), "annotation "+Annotation+": ") {
					t.Fatalf("err = %v, want it to name the annotation", err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ParseValue = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestParseAbsent(t *testing.T) {
	if got, err := Parse(map[string]string{"other": "x"}); got != nil || err != nil {
		t.Fatalf("Parse without the annotation = %v, %v; want nil, nil", got, err)
	}
	got, err := Parse(map[string]string{Annotation: `{"n/a": "n/b"}`})
	if err != nil || got[key("n", "a")] != key("n", "b") {
		t.Fatalf("Parse = %v, %v", got, err)
	}
}

func TestFormat(t *testing.T) {
	m := map[PlacementKey]PlacementKey{key("ns", "z"): key("ns", "c"), key("a", "y"): key("ns", "c"), key("ns", "b<&>"): key("ns", "c")}
	got := Format(m)
	want := `{"a/y": "ns/c", "ns/b<&>": "ns/c", "ns/z": "ns/c"}`
	if got != want {
		t.Fatalf("Format = %s, want %s", got, want)
	}
	back, err := ParseValue(got)
	if err != nil || !reflect.DeepEqual(back, m) {
		t.Fatalf("ParseValue(Format(m)) = %v, %v; want %v", back, err, m)
	}
	if Format(back) != got {
		t.Fatalf("Format is not a fixed point")
	}
	if got := Format(nil); got != `{}` {
		t.Fatalf("Format(nil) = %s", got)
	}
}

func TestOrder(t *testing.T) {
	k := func(n string) PlacementKey { return key("ns", n) }
	order, cyclic := Order([]PlacementKey{k("aws"), k("gcp"), k("canary"), k("x"), k("y"), k("z")},
		map[PlacementKey]PlacementKey{k("aws"): k("canary"), k("gcp"): k("aws"), k("x"): k("y"), k("y"): k("x"), k("z"): k("ghost")})
	if want := []PlacementKey{k("canary"), k("aws"), k("gcp"), k("z")}; !reflect.DeepEqual(order, want) {
		t.Fatalf("order = %v, want %v", order, want)
	}
	if !reflect.DeepEqual(cyclic, map[PlacementKey]bool{k("x"): true, k("y"): true}) {
		t.Fatalf("cyclic = %v", cyclic)
	}
}

func TestCycles(t *testing.T) {
	k := func(n string) PlacementKey { return key("ns", n) }
	cases := []struct {
		name     string
		canaries map[PlacementKey]PlacementKey
		want     []PlacementKey
	}{
		{"none", nil, nil},
		{"chain", map[PlacementKey]PlacementKey{k("a"): k("b"), k("b"): k("c")}, nil},
		{"two", map[PlacementKey]PlacementKey{k("a"): k("b"), k("b"): k("a")}, []PlacementKey{k("a"), k("b")}},
		{"three, and one gated through it", map[PlacementKey]PlacementKey{k("a"): k("b"), k("b"): k("c"), k("c"): k("a"), k("d"): k("a")},
			[]PlacementKey{k("a"), k("b"), k("c"), k("d")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Cycles(tc.canaries); !slices.Equal(got, tc.want) {
				t.Fatalf("Cycles = %v, want %v", got, tc.want)
			}
		})
	}
}
