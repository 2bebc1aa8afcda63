package maintwindow

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The annotation values the documentation shows parse: readmetest checks a documented CMA against
// OCM's schema, which takes any string as an annotation.
func TestDocumentedWindowsParse(t *testing.T) {
	value := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(Annotation) + `: '(.*)'\s*$`)
	seen := 0
	for _, doc := range []string{"docs/guides/day-2-operations.md", "docs/spec/rollout.md"} {
		raw, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(doc)))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range value.FindAllStringSubmatch(string(raw), -1) {
			seen++
			// A single-quoted YAML scalar writes a quote as two.
			if _, err := ParseValue(strings.ReplaceAll(m[1], "''", "'")); err != nil {
				t.Errorf("%s: %v", doc, err)
			}
		}
	}
	if _, err := ParseValue(Example); err != nil {
		t.Errorf("Example: %v", err)
	}
	if seen == 0 {
		t.Error("no documented maintenance windows annotation found: the test reads nothing")
	}
}
