package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/addonops/addonops/internal/testing/argocd"
	"github.com/addonops/addonops/internal/testing/childproc"
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
	// argoRefresh asks the application controller to refresh an Application now (what `argocd app
	// get --refresh` writes).
	argoRefresh = "argocd.argoproj.io/refresh"
	// argoSyncWave is the annotation of health/README.md's sync-wave patch ("Sync waves: configs
	// before the ClusterManagementAddOn"), which puts the configs in wave -1.
	argoSyncWave = "argocd.argoproj.io/sync-wave"
)

// argoRedisServer is the redis-server internal/testing/argocd runs (its default).
func argoRedisServer() string {
	if p := os.Getenv("ADDONOPS_REDIS_SERVER"); p != "" {
		return p
	}
	return "/usr/bin/redis-server"
}

// checkArgoCDBinaries says what of Argo CD is missing and how to get it.
func checkArgoCDBinaries(root string) error {
	var missing []string
	if os.Getenv("ADDONOPS_ARGOCD") == "" {
		missing = missingBinaries(root, "bin/argocd")
	}
	if childproc.CheckExecutable(argoRedisServer()) != nil {
		missing = append(missing, argoRedisServer())
	}
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
	hub      *localhub.Hub
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
	a.hub = hub
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
	if a.srv, err = gitrepo.ServeHTTP(filepath.Dir(repo.Dir)); err != nil {
		return nil, err
	}
	url := a.srv.URL + "/" + filepath.Base(repo.Dir)
	app, err := argocd.LocalApplication(a.root, argoAppName, url, renderedDir)
	if err != nil {
		return nil, err
	}
	a.app = app
	return []string{
		fmt.Sprintf("Argo CD: application controller, repo server and the addonops plugin's CMP server (bin/argocd, built from its Go module by "+
			"`make argocd`), redis %s (%s); the controller with its own ServiceAccount's token and Argo CD's RBAC; up in %s",
			argo.RedisAddr, argoRedisServer(), seconds(argo.StartDuration)),
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
	api := a.hub.Clients.Dynamic.Resource(argocd.ApplicationResource).Namespace(argocd.Namespace)
	if !a.created {
		if _, err := api.Create(ctx, a.app, metav1.CreateOptions{FieldManager: FieldManager}); err != nil {
			return nil, fmt.Errorf("creating the Application %s: %w", argoAppName, err)
		}
		a.created = true
		return []string{fmt.Sprintf("$ kubectl apply -f %s   (as changed above: Application %s/%s)", argocd.ApplicationFile, argocd.Namespace, argoAppName)}, nil
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"normal"}}}`, argoRefresh)
	if _, err := api.Patch(ctx, argoAppName, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		return nil, fmt.Errorf("asking Argo CD to refresh the Application %s: %w", argoAppName, err)
	}
	return []string{fmt.Sprintf("$ argocd app get %s --refresh   (annotation %s: normal)", argoAppName, argoRefresh)}, nil
}

// State reads the Application: its last sync (operationState) says whether Argo CD applied the
// commit, and once a comparison after that sync says Synced, its health (our Lua checks for the
// OCM kinds) is the verdict.
func (a *argoEngine) State(ctx context.Context, sha string) engineState {
	line := func(format string, args ...any) string {
		return fmt.Sprintf("Argo CD Application %s: ", argoAppName) + fmt.Sprintf(format, args...)
	}
	if err := a.argo.Failure(); err != nil {
		return engineState{Status: "a part exited", Problem: err.Error(), Fatal: true, Line: line("%s", oneLine(err.Error(), 200))}
	}
	app, err := a.argo.Application(ctx, argoAppName)
	if err != nil {
		return engineState{Status: "no Application", Line: line("%v", err)}
	}
	s := app.Status
	st := engineState{Revision: short(s.Sync.Revision)}
	st.Status = fmt.Sprintf("%s %s", cmpOrDash(s.Sync.Status), cmpOrDash(s.Health.Status))
	var problems []string
	for _, c := range s.Conditions {
		if strings.HasSuffix(c.Type, "Error") {
			problems = append(problems, c.Type+": "+c.Message)
		}
	}
	op := s.Operation
	opRev, opPhase := "", ""
	if op != nil {
		opPhase = op.Phase
		if op.SyncResult != nil {
			opRev = op.SyncResult.Revision
		}
	}
	at := "commit " + short(sha)
	cma := ""
	if len(s.Resources) > 0 {
		for _, r := range s.Resources {
			if r.Kind == "ClusterManagementAddOn" && r.Health != nil {
				cma = fmt.Sprintf(" (ClusterManagementAddOn %s %s)", r.Name, r.Health.Status)
			}
		}
	}
	switch {
	case opRev == sha && (opPhase == "Failed" || opPhase == "Error"):
		problems = append(problems, fmt.Sprintf("sync of %s %s: %s", short(sha), opPhase, op.Message))
		st.Line = line("sync of %s %s: %s", at, opPhase, oneLine(op.Message, 200))
	case opRev != sha || s.Sync.Revision != sha:
		st.Line = line("%s at %s, last sync %s of %s; not yet %s", st.Status, cmpOrDash(short(s.Sync.Revision)), cmpOrDash(opPhase), cmpOrDash(short(opRev)), at)
	case opPhase != "Succeeded":
		st.Status += " (syncing)"
		st.Line = line("syncing %s (%s)", at, opPhase)
	case s.Sync.Status != "Synced":
		// The sync of the commit succeeded, but the status is still the comparison that started
		// it (OutOfSync, with the health of what was there before): only a comparison after the
		// sync says Synced, and its health is about what the commit applied.
		st.Applied = true
		st.Status += " (synced, not compared again yet)"
		st.Line = line("%s at %s: synced, not compared again yet", cmpOrDash(s.Sync.Status), at)
	default:
		st.Applied = true
		switch s.Health.Status {
		case "Healthy":
			st.Verdict = verdictHealthy
		case "Degraded":
			st.Verdict = verdictFailed
		}
		if s.ReconciledAt != nil {
			st.VerdictAt = s.ReconciledAt.Time
		}
		st.Line = line("%s at %s%s", st.Status, at, cma)
		if s.Health.Message != "" && s.Health.Status != "Healthy" {
			st.Line += ": " + oneLine(s.Health.Message, 200)
		}
	}
	if len(problems) > 0 {
		st.Problem = strings.Join(problems, "; ")
	}
	return st
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
