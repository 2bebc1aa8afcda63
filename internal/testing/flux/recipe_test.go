package flux

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// LocalRecipe changes the repository's recipe only where a test hub must: the OCIRepository
// follows the same path on the local registry over plain HTTP, and the intervals asked for; a
// recipe that is not one OCIRepository and one Kustomization named alike is refused.
func TestLocalRecipe(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	f := &Flux{Registry: "127.0.0.1:5000"}
	r, err := f.LocalRecipe(root, RecipeOptions{SourceInterval: "2s", RetryInterval: "5s"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.Artifact, "oci://127.0.0.1:5000/") || r.Name == "" || len(r.Objects) != 2 {
		t.Fatalf("recipe: artifact %q, name %q, %d objects", r.Artifact, r.Name, len(r.Objects))
	}
	for _, o := range r.Objects {
		spec, _, _ := unstructured.NestedMap(o.Object, "spec")
		switch o.GetKind() {
		case "OCIRepository":
			if spec["url"] != r.Artifact || spec["insecure"] != true || spec["interval"] != "2s" {
				t.Errorf("OCIRepository spec %v: want url %s, insecure, interval 2s", spec, r.Artifact)
			}
		case "Kustomization":
			if spec["retryInterval"] != "5s" || spec["interval"] == nil {
				t.Errorf("Kustomization spec %v: want retryInterval 5s and the recipe's interval", spec)
			}
		}
	}

	// A recipe with a third object is not the documented one.
	bad := t.TempDir()
	data, err := os.ReadFile(filepath.Join(root, RecipeFile))
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, []byte("\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: flux-system\n")...)
	if err := os.MkdirAll(filepath.Join(bad, filepath.Dir(RecipeFile)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, RecipeFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := f.LocalRecipe(bad, RecipeOptions{}); err == nil || !strings.Contains(err.Error(), "want one OCIRepository and one Kustomization") {
		t.Errorf("LocalRecipe of a recipe with a ConfigMap: %v, want it refused", err)
	}
}
