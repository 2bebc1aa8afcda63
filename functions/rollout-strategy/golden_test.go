package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/testing/krmfntest"
)

// Golden tests: every folder under testdata/ and examples/ is a case (layout and rules: see
// krmfntest.Golden; fnconfig.yaml is optional), run standalone, as a kustomize exec transformer
// and under `kpt fn eval --exec`, each twice on its own output. `go test -run TestGolden -update`
// rewrites expected/.

// TestMetadata checks the catalog metadata: the function's name and license, and example package
// URLs that point at folders of this repository that exist.
func TestMetadata(t *testing.T) {
	var md struct {
		Name               string   `json:"name"`
		Description        string   `json:"description"`
		Tags               []string `json:"tags"`
		SourceURL          string   `json:"sourceURL"`
		ExamplePackageURLs []string `json:"examplePackageURLs"`
		License            string   `json:"license"`
	}
	if err := yaml.Unmarshal([]byte(krmfntest.ReadFile(t, "metadata.yaml")), &md); err != nil {
		t.Fatal(err)
	}
	if md.Name != "rollout-strategy" || md.License != "Apache-2.0" || md.Description == "" || len(md.Tags) == 0 {
		t.Errorf("metadata %+v: want name rollout-strategy, license Apache-2.0, a description and tags", md)
	}
	const repo = "https://github.com/addonops/addonops/tree/main/"
	for _, u := range append([]string{md.SourceURL}, md.ExamplePackageURLs...) {
		path, ok := strings.CutPrefix(u, repo)
		if !ok {
			t.Errorf("%s is not under %s", u, repo)
			continue
		}
		if st, err := os.Stat(filepath.Join("..", "..", path)); err != nil || !st.IsDir() {
			t.Errorf("%s: no folder %s in the repository", u, path)
		}
	}
	if len(md.ExamplePackageURLs) == 0 {
		t.Error("no examplePackageURLs")
	}
}
