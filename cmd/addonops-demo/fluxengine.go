package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/addonops/addonops/internal/testing/flux"
	"github.com/addonops/addonops/internal/testing/gitrepo"
	"github.com/addonops/addonops/internal/testing/localhub"
)

// Flux as health/README.md's recipe runs it: CI pushes the rendered directory of each commit as
// an OCI artifact (`flux push artifact`, then `flux tag artifact ... --tag main`: the README's
// publish lines), and health/flux/addonops-hub.yaml's OCIRepository follows the main tag while its
// Kustomization applies the artifact and waits for the rollout with the recipe's health checks.
// Flux's own source-controller and kustomize-controller run against the demo's hub
// (internal/testing/flux, built by `make flux`), with the CNCF distribution registry on a loopback
// port as the OCI registry.

const (
	// The demo's intervals instead of the recipe's: the source is polled every 5 s besides the
	// reconcile the demo requests after each push, and a failed health check is retried after 5 s
	// instead of 1m (the recipe's Kustomization interval, 10m, stays: a new artifact triggers a
	// reconcile at once).
	fluxSourceInterval = "5s"
	fluxRetryInterval  = "5s"
)

// checkFluxBinaries says which of Flux's binaries are missing and how to build them.
func checkFluxBinaries(root string) error {
	if missing := flux.MissingBinaries(root); len(missing) > 0 {
		return fmt.Errorf("--engine flux runs Flux's controllers, the flux CLI and an OCI registry built from their Go modules, "+
			"but %s %s missing in %s: run `make flux` (about a minute from a warm Go build cache; `make demo DEMO_ENGINE=flux` runs it)",
			strings.Join(missing, ", "), map[bool]string{true: "is", false: "are"}[len(missing) == 1], root)
	}
	return nil
}

type fluxEngine struct {
	root string
	fx   *flux.Flux
	repo *gitrepo.Repo
	// artifact is the OCI address the commits are pushed to and the OCIRepository follows.
	artifact string
	// name is the recipe's OCIRepository and Kustomization's, in flux.Namespace.
	name    string
	recipe  *flux.Recipe
	applied bool // the recipe's objects are on the hub
	work    string
}

func (f *fluxEngine) Name() string     { return "Flux" }
func (f *fluxEngine) HandOver() string { return "the push" }

// Prepare changes nothing: the recipe applies the rendered objects as they are.
func (f *fluxEngine) Prepare([]*unstructured.Unstructured) []string { return nil }

func (f *fluxEngine) WhyFailedOnTheWay() string {
	return fmt.Sprintf(": the moment health/README.md (\"Flux\") documents for a commit that adds a Placement (Flux applies "+
		"the ClusterManagementAddOn before it, and a health check in that moment fails fast); Flux tried again after "+
		"retryInterval (%s here)", fluxRetryInterval)
}

func (f *fluxEngine) Start(ctx context.Context, hub *localhub.Hub, repo *gitrepo.Repo) ([]string, error) {
	f.repo = repo
	// Logs are kept by Stop's choice (flux removes them only at its own Stop).
	fx, err := flux.Start(ctx, hub, flux.Options{RepoRoot: f.root, KeepLogs: true})
	if err != nil {
		return nil, err
	}
	f.fx = fx
	f.work = filepath.Join(filepath.Dir(repo.Dir), "ci")
	// Only what a local registry and the demo's pace need is changed.
	recipe, err := fx.LocalRecipe(f.root, flux.RecipeOptions{SourceInterval: fluxSourceInterval, RetryInterval: fluxRetryInterval})
	if err != nil {
		return nil, err
	}
	f.artifact, f.name, f.recipe = recipe.Artifact, recipe.Name, recipe
	changes := recipe.Changes
	return []string{
		fmt.Sprintf("Flux: source-controller and kustomize-controller (%s, %s; built from their Go modules by `make flux`), "+
			"each with its own ServiceAccount's token and Flux's RBAC; OCI registry %s (%s); up in %s",
			flux.Binaries.SourceController, flux.Binaries.KustomizeController, fx.Registry, flux.Binaries.Registry, seconds(fx.StartDuration)),
		fmt.Sprintf("the recipe: %s's OCIRepository and Kustomization %s/%s (healthCheckExprs, wait, prune), changed for the demo: %s",
			flux.RecipeFile, flux.Namespace, f.name, strings.Join(changes, "; ")),
		fmt.Sprintf("each step: a commit of %s, pushed as CI does (health/README.md's publish lines, %s); the demo then asks "+
			"source-controller to fetch it now (`flux reconcile source oci %s`)", renderedFile, flux.Binaries.CLI, f.name),
	}, nil
}

// Deliver runs CI's publish lines for commit sha (from a checkout of it), then applies the recipe
// (the first time) or asks source-controller to fetch the new tag now.
func (f *fluxEngine) Deliver(ctx context.Context, sha string) ([]string, error) {
	checkout := filepath.Join(f.work, short(sha))
	if err := f.repo.Checkout(sha, checkout); err != nil {
		return nil, err
	}
	defer os.RemoveAll(checkout)
	ran, err := f.fx.Publish(ctx, checkout, f.artifact, renderedDir, f.repo.FileURL(), sha)
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, c := range ran {
		lines = append(lines, fmt.Sprintf("$ flux %s   (%s)", strings.Join(c.Args, " "), seconds(c.Took)))
	}
	if !f.applied {
		if err := f.fx.ApplyRecipe(ctx, f.recipe, FieldManager); err != nil {
			return nil, err
		}
		f.applied = true
		return append(lines, fmt.Sprintf("$ kubectl apply -f %s   (as changed above: OCIRepository and Kustomization %s/%s)", flux.RecipeFile, flux.Namespace, f.name)), nil
	}
	if _, err := f.fx.RequestReconcile(ctx, flux.OCIRepositoryGVR, f.name, FieldManager); err != nil {
		return nil, fmt.Errorf("asking source-controller to fetch %s now: %w", f.artifact, err)
	}
	return append(lines, fmt.Sprintf("$ flux reconcile source oci %s   (annotation %s: fetch the new tag now, not at the next %s poll)",
		f.name, flux.RequestedAtAnnotation, fluxSourceInterval)), nil
}

// State reads what Flux says of commit sha (flux's CommitState).
func (f *fluxEngine) State(ctx context.Context, sha string) engineState {
	return f.fx.CommitState(ctx, f.name, sha)
}

func (f *fluxEngine) Logs() string { return f.fx.Dir }

func (f *fluxEngine) Stop(keep bool) (string, error) {
	if f.fx == nil {
		return "", nil
	}
	err := f.fx.Stop()
	if err != nil || keep {
		return f.fx.Dir, err
	}
	return "", os.RemoveAll(f.fx.Dir)
}
