// Package rolloutbench measures the controller at scale: thousands of simulated clusters on a real
// API server (internal/testing/localhub), the controller running as its own process (bin/addonops-controller)
// so its CPU time and peak memory can be read from /proc, internal/testing/simagent playing add-on manager
// and work agent. Run it with `make bench-controller` (see controller/bench.mk); it prints, per
// cluster count and rollout strategy, the wall time of a fresh install and of a config change until
// every MCA completes, the MCA status writes (counted with a watch), and the controller's CPU seconds
// and peak RSS.
//
// With -mode=template (BENCH_MODE=template) the add-on is a template add-on deployed by
// addonops-controller --deploy-templates and, with -peer=ocm, by OCM's addon-manager on a hub of its
// own; each manager is its own API user, and the API server's audit log (internal/testing/apiaudit) counts
// its requests and writes per phase (template_test.go says why not both on one hub at once).
//
// TestWritesPerTransition, part of `make test`, runs the template scenario on four clusters and
// checks the write budget of a cluster's move to a new version (two MCA status writes, one update
// per ManifestWork), naming every write a watch saw when there are more.
package rolloutbench
