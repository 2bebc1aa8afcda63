package argocd

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/addonops/addonops/internal/testing/ssapply"
)

// ApplicationFile holds the Application of health/README.md's Argo CD recipe, from the
// repository's root.
const ApplicationFile = "health/argocd/application.yaml"

// LocalApplication reads ApplicationFile under the repository root and points it at a test's
// repository: named name in Namespace, following branch main of repoURL at path. Everything else
// (automated sync, prune, selfHeal, no tool named) is the file's.
func LocalApplication(root, name, repoURL, path string) (*unstructured.Unstructured, error) {
	data, err := os.ReadFile(filepath.Join(root, ApplicationFile))
	if err != nil {
		return nil, fmt.Errorf("reading the Argo CD recipe: %w", err)
	}
	objs, err := ssapply.Decode(bytes.NewReader(data))
	if err != nil || len(objs) != 1 || objs[0].GetKind() != "Application" {
		return nil, fmt.Errorf("%s: want one Application, got %d objects (%v)", ApplicationFile, len(objs), err)
	}
	app := objs[0]
	app.SetName(name)
	app.SetNamespace(Namespace)
	for _, set := range []struct{ field, value string }{{"repoURL", repoURL}, {"targetRevision", "main"}, {"path", path}} {
		if err := unstructured.SetNestedField(app.Object, set.value, "spec", "source", set.field); err != nil {
			return nil, fmt.Errorf("%s: spec.source.%s: %w", ApplicationFile, set.field, err)
		}
	}
	return app, nil
}
