package argocd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/addonops/addonops/internal/testing/gitrepo"
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

// RefreshAnnotation asks the application controller to refresh an Application now (what `argocd
// app get --refresh` writes).
const RefreshAnnotation = "argocd.argoproj.io/refresh"

// ServeApplication serves the repositories beside repo over Git's smart HTTP (gitrepo.ServeHTTP)
// and returns LocalApplication name following repo's branch main at path, the server (the caller
// closes it) and repo's URL.
func ServeApplication(root string, repo *gitrepo.Repo, name, path string) (*unstructured.Unstructured, *gitrepo.Server, string, error) {
	srv, err := gitrepo.ServeHTTP(filepath.Dir(repo.Dir))
	if err != nil {
		return nil, nil, "", err
	}
	url := srv.URL + "/" + filepath.Base(repo.Dir)
	app, err := LocalApplication(root, name, url, path)
	if err != nil {
		_ = srv.Close()
		return nil, nil, "", err
	}
	return app, srv, url, nil
}

// CreateApplication creates app (LocalApplication's) on the hub, written by fieldManager ("": the
// client's default).
func (a *ArgoCD) CreateApplication(ctx context.Context, app *unstructured.Unstructured, fieldManager string) error {
	if _, err := a.hub.Clients.Dynamic.Resource(ApplicationResource).Namespace(Namespace).Create(ctx, app,
		metav1.CreateOptions{FieldManager: fieldManager}); err != nil {
		return fmt.Errorf("argocd: creating the Application %s: %w", app.GetName(), err)
	}
	return nil
}

// Refresh asks the application controller to refresh Application name now (RefreshAnnotation,
// "normal"): it then resolves the branch to its newest commit and, with automated sync, syncs it.
func (a *ArgoCD) Refresh(ctx context.Context, name, fieldManager string) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"normal"}}}`, RefreshAnnotation)
	if _, err := a.hub.Clients.Dynamic.Resource(ApplicationResource).Namespace(Namespace).Patch(ctx, name, types.MergePatchType,
		[]byte(patch), metav1.PatchOptions{FieldManager: fieldManager}); err != nil {
		return fmt.Errorf("argocd: asking Argo CD to refresh the Application %s: %w", name, err)
	}
	return nil
}
