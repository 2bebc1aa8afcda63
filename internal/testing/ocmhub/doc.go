// Package ocmhub runs OCM's own placement controller and work agents (open-cluster-management.io/ocm
// v1.2.1, built by `make ocm-binaries` into bin/ocm-placement and bin/ocm-work) against a
// localhub.Hub, so end-to-end tests prove addonops against parts it did not write.
//
//	func TestMain(m *testing.M) { os.Exit(localhub.RunTests(m)) }
//
//	hub := localhub.ForTest(t)
//	ocm := ocmhub.ForTest(t, hub, ocmhub.Options{})       // placement controller; stopped at test end
//	ocm.AddClusters(ctx, ocmhub.Cluster{Name: "cluster1", Labels: map[string]string{"canary": "true"}}, ...)
//	ocm.BindClusterSet(ctx, "open-cluster-management")     // every namespace holding Placements
//
// Each process is a child of the test with its log in Options.LogDir; ForTest prints the path and
// the last lines of every log when the test failed and keeps them. Processes are ready when they
// hold their leader-election lease (controllers running): measured on an idle 2-core machine, the
// placement controller in about 1 s, a work agent in 0.5-2 s (several start in parallel).
//
// What the e2e suite built on this must remember:
//
//   - Binaries: `make ocm-binaries` takes about 7.5 minutes on a fresh machine (CI: cache bin/ or
//     the Go build cache); `make test` must build them first. Missing binaries fail the test with
//     the make target to run; nothing is skipped.
//   - Hub and spoke are one API server, as in OCM's own integration tests. Every agent applies into
//     the same server: the same namespace/name from two clusters is one object, owned by both
//     agents' AppliedManifestWorks, last writer wins, and different contents (a rollout half done)
//     make the agents overwrite each other. Give each cluster its own target namespace (for
//     example an AddOnDeploymentConfig per cluster with agentInstallNamespace "<addon>-<cluster>")
//     or check only objects that differ per cluster.
//   - Every agent spells the hub's address differently (alias.go): OCM names AppliedManifestWorks
//     "<sha256 of the hub URL>-<work name>", so same-named works in several cluster namespaces
//     would otherwise share one and delete each other's objects. Agent.HubURL and Agent.AgentID
//     identify an agent's AppliedManifestWorks.
//   - No kubelet and no kube-controller-manager run. Deployments get no ReplicaSets or Pods and no
//     status: a test that needs readiness sets the Deployment status itself (UpdateStatus with
//     ready/available replicas) and says so. The agent reports it through status feedback
//     (WellKnownStatus) within its --status-sync-interval, 10 s by default (measured 10.8 s;
//     Options.StatusSyncInterval shortens it). Available=True on a work only means the objects
//     exist. No garbage collector and no namespace controller: deleting a Namespace never
//     finishes, and only what the agent deletes itself goes away.
//   - A ManifestWork carries the agent's finalizer: deleting one waits for the cluster's agent.
//     Delete works before stopping agents (ForTest stops them at test end), never after.
//   - No registration controller or agent, and no add-on agent: ManagedClusters are marked joined
//     and available by localhub, never tainted. To take a cluster out of placements the test adds
//     the taint OCM's registration would (clusterv1.ManagedClusterTaintUnavailable, NoSelect):
//     the controller drops it from existing decisions. ManagedClusterAddOn registration and
//     lease-based add-on health never happen; health comes from the ManifestWorks.
//   - The hub serves the api module v1.3.0's CRDs, the components are v1.2.1 (api v1.2.0): fields
//     new in v1.3.0 are stored but ignored, e.g. Placement spec.sortBy and scoreRateLimit, and
//     ManifestWork manifestConfigs[].feedbackScrapeType (status feedback is always polled).
//   - Timing: decisions appear about 0.2 s after a Placement or a cluster label changes, and an
//     agent applies a work within about 0.2 s; under load (two cores shared by parallel packages)
//     allow about a minute for the placement controller, and poll with deadlines of 1-2 minutes
//     rather than sleeping.
//   - One OCM per hub at a time: a second placement controller (or a second agent for a cluster)
//     waits for the first one's lease and fails to start. Tests sharing a hub must not run OCM
//     in parallel (t.Parallel).
//   - Options.AddonManager also runs OCM's addon-manager (bin/ocm-addon, `addon manager`; lease
//     manager-lock in open-cluster-management-hub): it renders AddOnTemplates of CMAs into works,
//     registers agents and writes health from the works' status feedback. Never combine it with the
//     addonops controller's --deploy-templates for the same add-ons.
//   - Leases: placement-lock in open-cluster-management-hub, work-agent-lock in each cluster
//     namespace. Stop sends SIGTERM so they are released and the next process takes over at
//     once; a process killed hard leaves its lease held for up to 2m17s.
//   - Logs repeat `configmap "extension-apiserver-authentication" not found` (their metrics server
//     finds no client CA on this API server); it is harmless.
package ocmhub
