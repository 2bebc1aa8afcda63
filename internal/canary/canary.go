// Package canary is the model of addonops's canary placements: the ClusterManagementAddOn
// annotation that expresses the design's RollingUpdateWithCanary, which OCM's RolloutStrategy API
// cannot. The rollout-strategy function writes and checks it at build time and the controller
// (internal/rolloutplan) reads it at run time, both with this one parser, so a package that
// passes the build is read the same way on the hub.
//
// The annotation maps a gated placement to its canary placement:
//
//	addonops.io/canary-placements: '{"<ns>/<placement>": "<ns>/<canary-placement>"}'
//
// The gated placement moves its clusters only to the configs every cluster of the canary placement
// applied successfully.
package canary

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// Annotation is the ClusterManagementAddOn annotation holding the canary placements.
const Annotation = "addonops.io/canary-placements"

// Example is a valid annotation value, for error messages.
const Example = `{"default/aws-placement": "default/canary-placement"}`

// PlacementKey names a Placement.
type PlacementKey struct {
	Namespace, Name string
}

func (k PlacementKey) String() string { return k.Namespace + "/" + k.Name }

// Compare orders keys by namespace, then name.
func Compare(a, b PlacementKey) int {
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// ParsePlacementKey reads "<namespace>/<name>".
func ParsePlacementKey(s string) (PlacementKey, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return PlacementKey{}, fmt.Errorf("%q is not <namespace>/<placement>", s)
	}
	return PlacementKey{Namespace: ns, Name: name}, nil
}

// Parse reads the annotation from an object's annotations: gated placement → canary placement.
// No annotation means no canary (nil, nil).
func Parse(annotations map[string]string) (map[PlacementKey]PlacementKey, error) {
	raw, ok := annotations[Annotation]
	if !ok {
		return nil, nil
	}
	return ParseValue(raw)
}

// ParseValue reads an annotation value. It must be one JSON object whose keys and values are
// "<namespace>/<placement>", each key once; a placement that is its own canary is an error.
// Errors name the annotation.
func ParseValue(raw string) (map[PlacementKey]PlacementKey, error) {
	pairs, err := decodeObject(raw)
	if err != nil {
		return nil, fmt.Errorf("annotation %s: %v; want a JSON object such as %s", Annotation, err, Example)
	}
	out := make(map[PlacementKey]PlacementKey, len(pairs))
	slices.SortFunc(pairs, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	for i, p := range pairs {
		if i > 0 && pairs[i-1][0] == p[0] {
			return nil, fmt.Errorf("annotation %s: key %q appears twice; a placement has one canary", Annotation, p[0])
		}
		gated, err := ParsePlacementKey(p[0])
		if err != nil {
			return nil, fmt.Errorf("annotation %s: key %v", Annotation, err)
		}
		canary, err := ParsePlacementKey(p[1])
		if err != nil {
			return nil, fmt.Errorf("annotation %s: value of %q: %v", Annotation, p[0], err)
		}
		if gated == canary {
			return nil, fmt.Errorf("annotation %s: placement %s cannot be its own canary", Annotation, gated)
		}
		out[gated] = canary
	}
	return out, nil
}

// decodeObject reads a JSON object of strings, keeping duplicate keys (encoding/json would keep
// the last silently) and refusing null and trailing data.
func decodeObject(raw string) ([][2]string, error) {
	dec := json.NewDecoder(strings.NewReader(raw))
	if tok, err := dec.Token(); err != nil {
		return nil, err
	} else if tok != json.Delim('{') {
		return nil, fmt.Errorf("%s is not a JSON object", describeToken(tok))
	}
	var pairs [][2]string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string) // object keys are always strings
		var value string
		if err := dec.Decode(&value); err != nil {
			var typeErr *json.UnmarshalTypeError
			if errors.As(err, &typeErr) {
				return nil, fmt.Errorf("value of %q is a JSON %s, not a string", key, typeErr.Value)
			}
			return nil, err
		}
		pairs = append(pairs, [2]string{key, value})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("data after the JSON object")
	}
	return pairs, nil
}

func describeToken(tok json.Token) string {
	switch tok.(type) {
	case nil:
		return "null"
	case json.Delim:
		return "an array"
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprint(tok)
}

// Format writes canaries as the annotation value, in one canonical form: keys sorted, `": "` and
// `", "` between items, as the documentation writes it. Format(ParseValue(v)) is a fixed point.
func Format(canaries map[PlacementKey]PlacementKey) string {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, gated := range slices.SortedFunc(maps.Keys(canaries), func(a, b PlacementKey) int {
		return strings.Compare(a.String(), b.String())
	}) {
		if i > 0 {
			b.WriteString(", ")
		}
		writeString(&b, gated.String())
		b.WriteString(": ")
		writeString(&b, canaries[gated].String())
	}
	b.WriteByte('}')
	return b.String()
}

func writeString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)       // a string always encodes
	b.Truncate(b.Len() - 1) // Encode's newline
}

// Order orders placements so that every canary comes before the placements it gates (a gated
// placement adopts what its canary passed in the same evaluation). Placements caught in a canary
// cycle, or gated through one, are returned separately: they cannot be ordered and must wait.
// A canary that is not among keys does not constrain the order.
func Order(keys []PlacementKey, canaries map[PlacementKey]PlacementKey) (order []PlacementKey, cyclic map[PlacementKey]bool) {
	known := map[PlacementKey]bool{}
	for _, k := range keys {
		known[k] = true
	}
	cyclic = map[PlacementKey]bool{}
	const (
		unvisited = iota
		visiting
		done
	)
	state := map[PlacementKey]int{}
	var visit func(k PlacementKey) bool
	visit = func(k PlacementKey) bool {
		switch state[k] {
		case done:
			return !cyclic[k]
		case visiting:
			return false
		}
		state[k] = visiting
		ok := true
		if c, gated := canaries[k]; gated && known[c] {
			ok = visit(c)
		}
		state[k] = done
		if !ok {
			cyclic[k] = true
			return false
		}
		order = append(order, k)
		return true
	}
	for _, k := range keys {
		visit(k)
	}
	return order, cyclic
}

// Cycles returns the placements of canaries that cannot be ordered because they are in a canary
// cycle or gated through one, sorted; none when the annotation is well-founded.
func Cycles(canaries map[PlacementKey]PlacementKey) []PlacementKey {
	var keys []PlacementKey
	for g, c := range canaries {
		keys = append(keys, g, c)
	}
	slices.SortFunc(keys, Compare)
	keys = slices.Compact(keys)
	_, cyclic := Order(keys, canaries)
	return slices.SortedFunc(maps.Keys(cyclic), Compare)
}
