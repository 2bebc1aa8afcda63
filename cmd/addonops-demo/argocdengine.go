package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/addonops/addonops/internal/testing/argocd"
	"github.com/addonops/addonops/internal/testing/gitrepo"
	"github.com/addonops/addonops/internal/testing/krmfntest"
	"github.com/addonops/addonops/internal/testing/localhub"
)

// Argo CD as health/README.md's recipe runs it: our Lua health checks merged into argocd-cm
// (health/argocd/argocd-cm.yaml) and an Application as health/argocd/application.yaml gives it
// (automated sync with prune and selfHeal), pointed at the demo's Git repository, served over
// Git's smart HTTP on a loopback port, and at the rendered directory: the Application names no
// tool, so the addonops plugin's discover rule (which looks for a kustomization running our
// functions) does not match and Argo CD applies the directory's YAML as it is. Argo CD's own
// application controller and repo server run against the demo's hub (internal/testing/argocd,
// built by `make argocd`), with Debian's redis-server as their cache.

const (
	// argoAppName names the demo's Application.
	argoAppName = "addons-hub"
	// argoSyncWave is the annotation of health/README.md's sync-wave patch ("Sync waves: configs
	// before the ClusterManagementAddOn"), which puts the configs in wave -1.
	argoSyncWave = "argocd.argoproj.io/sync-wave"
)

// checkArgoCDBinaries says what of Argo CD is missing and how to get it.
func checkArgoCDBinaries(root string) error {
	missing := argocd.MissingBinaries(root)
	if len(missing) > 0 {
		return fmt.Errorf("--engine argocd runs Argo CD's application controller and repo server built from its Go module, with "+
			"Debian's redis-server, but %s missing (in %s): run `make argocd` (about 5 minutes the first time, 17 s from a warm Go "+
			"build cache; it installs redis-server when missing; `make demo DEMO_ENGINE=argocd` runs it)",
			strings.Join(missing, ", "), root)
	}
	return nil
}

type argoEngine struct {
	root     string
	toolDirs []string
	argo     *argocd.ArgoCD
	srv      *gitrepo.Server
	app      *unstructured.Unstructured
	created  bool
}

func newArgoCDEngine(o Options) engine { return &argoEngine{root: o.RepoRoot, toolDirs: o.ToolDirs} }

func (a *argoEngine) Name() string     { return "Argo CD" }
func (a *argoEngine) HandOver() string { return "the commit" }

func (a *argoEngine) WhyFailedOnTheWay() string { return "" }

// Prepare gives the configs health/README.md's sync wave (-1): Argo CD orders custom resources of
// one wave by name, and would apply the ClusterManagementAddOn before the config versions it names.
func (a *argoEngine) Prepare(objs []*unstructured.Unstructured) []string {
	var waved []string
	for _, o := range objs {
		if gk := o.GroupVersionKind().GroupKind(); gk == adcGK || gk.Group == adcGK.Group && gk.Kind == "AddOnTemplate" {
			ann := o.GetAnnotations()
			if ann == nil {
				ann = map[string]string{}
			}
			ann[argoSyncWave] = "-1"
			o.SetAnnotations(ann)
			waved = append(waved, o.GetKind()+" "+o.GetName())
		}
	}
	if len(waved) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("%s: %s \"-1\" (health/README.md's sync-wave patch for Argo CD: configs before the ClusterManagementAddOn)",
		strings.Join(waved, ", "), argoSyncWave)}
}

func (a *argoEngine) Start(ctx context.Context, hub *localhub.Hub, repo *gitrepo.Repo) ([]string, error) {
	kustomize, err := krmfntest.KustomizePath(a.root)
	if err != nil {
		return nil, err
	}
	// Logs are kept by Stop's choice (argocd removes them only at its own Stop).
	argo, err := argocd.Start(ctx, hub, argocd.Options{RepoRoot: a.root, Kustomize: kustomize, PluginPath: a.toolDirs, KeepLogs: true})
	if err != nil {
		return nil, err
	}
	a.argo = argo
	var url string
	if a.app, a.srv, url, err = argocd.ServeApplication(a.root, repo, argoAppName, renderedDir); err != nil {
		return nil, err
	}
	return []string{
		fmt.Sprintf("Argo CD: application controller, repo server and the addonops plugin's CMP server (bin/argocd, built from its Go module by "+
			"`make argocd`), redis %s (%s); the controller with its own ServiceAccount's token and Argo CD's RBAC; up in %s",
			argo.RedisAddr, argocd.RedisServer(), seconds(argo.StartDuration)),
		fmt.Sprintf("argocd-cm: health/argocd/argocd-cm.yaml merged in (our Lua health checks); Git repository served over smart HTTP at %s", url),
		fmt.Sprintf("the recipe: %s's Application, as %s/%s with repoURL %s, targetRevision main, path %s (automated sync, prune, selfHeal; "+
			"no tool named: the plugin's discover rule finds no kustomization there, so Argo CD applies the directory)",
			argocd.ApplicationFile, argocd.Namespace, argoAppName, url, renderedDir),
		"each step: a commit of " + renderedFile + "; the demo then asks Argo CD to refresh the Application now (`argocd app get --refresh`)",
	}, nil
}

// Deliver creates the Application with the first commit, else asks for a refresh: Argo CD then
// resolves main to the new commit and syncs it (automated sync).
func (a *argoEngine) Deliver(ctx context.Context, sha string) ([]string, error) {
	if !a.created {
		if err := a.argo.CreateApplication(ctx, a.app, FieldManager); err != nil {
			return nil, err
		}
		a.created = true
		return []string{fmt.Sprintf("$ kubectl apply -f %s   (as changed above: Application %s/%s)", argocd.ApplicationFile, argocd.Namespace, argoAppName)}, nil
	}
	if err := a.argo.Refresh(ctx, argoAppName, FieldManager); err != nil {
		return nil, err
	}
	return []string{fmt.Sprintf("$ argocd app get %s --refresh   (annotation %s: normal)", argoAppName, argocd.RefreshAnnotation)}, nil
}

// State reads the Application (argocd's CommitState).
func (a *argoEngine) State(ctx context.Context, sha string) engineState {
	return a.argo.CommitState(ctx, argoAppName, sha)
}

func (a *argoEngine) Logs() string { return a.argo.LogDir }

func (a *argoEngine) Stop(keep bool) (string, error) {
	var errs []string
	if a.srv != nil {
		if err := a.srv.Close(); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if a.argo == nil {
		return "", nil
	}
	if err := a.argo.Stop(); err != nil {
		return a.argo.LogDir, fmt.Errorf("%v; %s", err, strings.Join(errs, "; "))
	}
	if len(errs) > 0 {
		return a.argo.LogDir, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	if keep {
		return a.argo.LogDir, nil
	}
	return "", os.RemoveAll(a.argo.LogDir)
}
