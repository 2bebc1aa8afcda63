// Package rolloutbench measures the controller at scale: thousands of simulated clusters on a real
// API server (internal/localhub), the controller running as its own process (bin/addonops-controller)
// so its CPU time and peak memory can be read from /proc, internal/simagent playing add-on manager
// and work agent. Run it with `make bench-controller` (see controller/bench.mk); it prints, per
// cluster count and rollout strategy, the wall time of a fresh install and of a config change until
// every MCA completes, the MCA status writes (counted with a watch), and the controller's CPU seconds
// and peak RSS.
package rolloutbench
