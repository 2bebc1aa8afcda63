// Package e2e is the end-to-end suite: the repository's examples run against parts addonops did
// not write. On the test hub (internal/testing/localhub: a real kube-apiserver and etcd with OCM's CRDs) it
// runs OCM v1.2.1's own placement controller and one OCM work agent per simulated cluster
// (internal/testing/ocmhub), and the addonops controller with template deployment in-process (controller
// with Options.DeployTemplates, as `addonops-controller --deploy-templates` runs it), deployed as
// users deploy it (config/default and the deploy-templates component, server-side applied) and
// running with nothing but a token of its ServiceAccount. The
// examples are built with the go.mod's kustomize and freshly built functions and server-side
// applied as a GitOps tool would; the tests then follow what the hub and the clusters do.
//
// Scenarios (all in TestEndToEnd, sharing one hub, OCM and controller):
//
//   - rollout-examples: kustomize-rollout-examples 01 → 02 → 03 → 04 in order (04 is a rollback
//     of both placements to v0.10.0, which completed on global-placement in step 01: RollingBack, then
//     RollbackSucceeded, never gated by the canary, paced by maxConcurrency), then an e2e-only step
//     05 that goes back to 02's version over OCM decision groups (ProgressivePerGroup): a rollback
//     too, paced group by group. After each step the add-on's version history ConfigMap lists
//     every version per placement, and `addonops history` shows it.
//   - bad-version: testdata/bad-version, 03's canary shape with a 20s progressDeadline: a version
//     whose agent never becomes ready stops at the canary (UpgradeFailed naming the cause) and the
//     gated placement never moves; `git revert` (the previous output applied again) rolls the
//     canary back (RollingBack, RollbackSucceeded), as `addonops status` shows.
//   - hello-template: examples/hello-template, then its upgrade/ overlay.
//
// Hub and managed clusters are one API server here, so every cluster's agent applies into the same
// namespaces. The examples' agent Deployments differ per cluster (--cluster-name, and the image tag
// while a rollout is half done), so the suite applies them through overlays in testdata/ that name
// each cluster's Deployment after the cluster; testdata/README.md explains. No kubelet runs: a
// stand-in (kubelet_test.go) sets the agent Deployments' status, ready unless a scenario says the
// agent is not, since the add-ons' health gates every rollout's success.
//
// TestAddonManagerDefaultMode runs on a hub of its own with OCM's addon-manager too, and the
// addonops controller in its default mode (no template deployment; config/default alone, run with
// its ServiceAccount's token): OCM renders hello-template into works, registers the agents and
// writes health; the controller paces an install and a Progressive (maxConcurrency 1) template
// upgrade.
//
// TestArgoCD and TestFlux, each on a hub of its own, deliver the rollout examples from a real Git
// repository (internal/testing/gitrepo) through real engines built from their Go modules:
// Argo CD v3.2.6 (internal/testing/argocd: application controller, repo server, our config
// management plugin, Redis) syncs health/argocd/application.yaml; Flux v2.9 (internal/testing/flux:
// source-controller, kustomize-controller, the flux CLI pushing CI's rendered output to a
// distribution registry) reconciles health/flux/addonops-hub.yaml. Steps 01 → 04, a pause, the bad
// version and its `git revert`, each a commit; the engines' own health verdicts are compared with
// `addonops status` and their writes counted (no sync loops). docs/gitops-engines.md has the
// results.
//
// TestMigration, on the same kind of hub, runs the recipe of docs/guides/migrating-from-addon-manager.md for moving an add-on
// between OCM's addon-manager and addonops: hello-template installed and rolled out by OCM's
// addon-manager (no lifecycle annotation), moved to addonops and back with the guide's kubectl
// lines, then again as the guide says to do it in Git. A guard watches every ManagedClusterAddOn,
// ManifestWork and agent Deployment: none may be deleted, recreated or given a new spec, no work
// may stop being Applied and Available, no agent stop being ready, no MCA stop being Available.
// The status must be OCM's vocabulary before, addonops' after and OCM's again after moving back,
// and the Argo CD and Flux health checks of health/ must judge every state it passes through right.
//
// The tests live in _test.go files; `make test` runs them (`make ocm-binaries` first).
package e2e
