package planner

import (
	"fmt"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/spechash"
)

// content is what of a config counts for its spec hash (spechash.Of): everything but apiVersion,
// kind, metadata and status, as YAML.
func content(u *unstructured.Unstructured) (string, error) {
	if u == nil {
		return "", nil
	}
	b, err := yaml.Marshal(spechash.Content(u.Object))
	if err != nil {
		return "", fmt.Errorf("encoding %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return string(b), nil
}

// specDiff is a unified diff of two versions of a config's content ("" when equal); before nil
// is an added config.
func specDiff(before, after *unstructured.Unstructured) (string, error) {
	a, err := content(before)
	if err != nil {
		return "", err
	}
	b, err := content(after)
	if err != nil {
		return "", err
	}
	if a == b {
		return "", nil
	}
	from := "hub " + nsName(after.GetNamespace(), after.GetName())
	if before == nil {
		from = "/dev/null"
	} else if before.GetName() != after.GetName() {
		from = "hub " + nsName(before.GetNamespace(), before.GetName())
	}
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: lines(a), B: lines(b), FromFile: from, ToFile: "change " + nsName(after.GetNamespace(), after.GetName()), Context: 3})
}

// lines splits s into lines that keep their newline; none for "".
func lines(s string) []string {
	if s == "" {
		return nil
	}
	return difflib.SplitLines(strings.TrimSuffix(s, "\n"))
}
