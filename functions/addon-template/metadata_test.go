package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	sigsyaml "sigs.k8s.io/yaml"
)

// TestCatalogMetadata: metadata.yaml has the kpt-functions-catalog fields, and every example URL
// is a folder of this function (so a moved example cannot leave a dead link).
func TestCatalogMetadata(t *testing.T) {
	b, err := os.ReadFile("metadata.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Name               string   `json:"name"`
		Description        string   `json:"description"`
		Tags               []string `json:"tags"`
		SourceURL          string   `json:"sourceURL"`
		ExamplePackageURLs []string `json:"examplePackageURLs"`
		License            string   `json:"license"`
	}
	if err := sigsyaml.UnmarshalStrict(b, &m); err != nil {
		t.Fatal(err)
	}
	if m.Name != name || m.Description == "" || len(m.Tags) == 0 || m.License != "Apache-2.0" {
		t.Errorf("metadata.yaml: %+v", m)
	}
	if !strings.HasSuffix(m.SourceURL, "/functions/addon-template") {
		t.Errorf("sourceURL %q is not this function's folder", m.SourceURL)
	}
	if len(m.ExamplePackageURLs) == 0 {
		t.Error("no examplePackageURLs")
	}
	for _, u := range m.ExamplePackageURLs {
		rel, ok := strings.CutPrefix(u, m.SourceURL+"/")
		if !ok {
			t.Errorf("example %q is not under sourceURL", u)
			continue
		}
		if fi, err := os.Stat(filepath.FromSlash(rel)); err != nil || !fi.IsDir() {
			t.Errorf("example %q: %s is not a folder here", u, rel)
		}
	}
}
