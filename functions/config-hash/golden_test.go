package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/testing/krmfntest"
)

// Golden tests: every folder under testdata/ is a case (layout and rules: see krmfntest.Golden;
// fnconfig.yaml is optional). Besides the standalone, kustomize and kpt runs, every successful case
// must give the objects the same names under all three. `go test -run TestGolden -update` rewrites
// expected/.

// TestCatalogMetadata checks metadata.yaml, the function's entry in the layout of
// kpt-functions-catalog: every field is there, and its source and example URLs name folders of
// this repository that exist.
func TestCatalogMetadata(t *testing.T) {
	var meta struct {
		Name               string   `json:"name"`
		Description        string   `json:"description"`
		Tags               []string `json:"tags"`
		SourceURL          string   `json:"sourceURL"`
		ExamplePackageURLs []string `json:"examplePackageURLs"`
		License            string   `json:"license"`
	}
	if err := sigsyaml.UnmarshalStrict([]byte(krmfntest.ReadFile(t, "metadata.yaml")), &meta); err != nil {
		t.Fatal(err)
	}
	if meta.Name != "config-hash" || meta.Description == "" || !slices.Contains(meta.Tags, "mutator") || meta.License != "Apache-2.0" {
		t.Errorf("metadata.yaml: %+v", meta)
	}
	const tree = "https://github.com/addonops/addonops/tree/main/functions/config-hash"
	if meta.SourceURL != tree {
		t.Errorf("sourceURL %q, want %q", meta.SourceURL, tree)
	}
	examples, _ := filepath.Glob("examples/*")
	if len(meta.ExamplePackageURLs) != len(examples) {
		t.Errorf("examplePackageURLs %q, want one per folder of %q", meta.ExamplePackageURLs, examples)
	}
	for _, u := range meta.ExamplePackageURLs {
		dir, ok := strings.CutPrefix(u, tree+"/")
		if st, err := os.Stat(dir); !ok || err != nil || !st.IsDir() {
			t.Errorf("examplePackageURL %q names no example folder", u)
		}
	}
}
