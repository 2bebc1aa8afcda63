package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// contains tells whether every field of want is in got with the same value (got may hold more:
// API server defaults, metadata); lists must have the same length. Otherwise it returns the path
// of the first difference.
func contains(got, want any, path string) (string, bool) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return path, false
		}
		for _, k := range sortedKeys(w) {
			if p, ok := contains(g[k], w[k], path+"."+k); !ok {
				return p, false
			}
		}
		return "", true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Sprintf("%s (%d items, want %d)", path, len(g), len(w)), false
		}
		for i := range w {
			if p, ok := contains(g[i], w[i], fmt.Sprintf("%s[%d]", path, i)); !ok {
				return p, false
			}
		}
		return "", true
	default:
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		if !bytes.Equal(gj, wj) {
			return fmt.Sprintf("%s (%s, want %s)", path, gj, wj), false
		}
		return "", true
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
