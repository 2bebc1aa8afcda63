# Controller benchmark (issue 4 §7): thousands of simulated clusters on a real API server, the
# controller as its own process. Prints wall time, MCA status writes and controller CPU/peak RSS per
# cluster count and strategy. Not part of `make test`.
#   make bench-controller                          # 1,000 clusters, All and Progressive 25%
#   make bench-controller BENCH_CLUSTERS=1000,5000
#   make bench-controller BENCH_CLUSTERS=5000 BENCH_STRATEGIES=all BENCH_CONTROLLER_ARGS=--deploy-templates
#     (the template reconcilers' caches and controllers run too: the memory of the one-cache change)
BENCH_CLUSTERS ?= 1000
BENCH_STRATEGIES ?= all,progressive
BENCH_CONTROLLER_ARGS ?=

.PHONY: bench-controller
bench-controller: hub-binaries $(BIN)/addonops-controller ## Benchmark the controller (BENCH_CLUSTERS=1000,5000).
	ADDONOPS_HUB_TMPDIR=$${ADDONOPS_HUB_TMPDIR:-/dev/shm} ADDONOPS_CONTROLLER=$(BIN)/addonops-controller \
	  $(GO) test -run '^$$' -bench '^BenchmarkRollout$$' -benchtime 1x -timeout 120m ./controller/rolloutbench/ \
	  -args -clusters=$(BENCH_CLUSTERS) -strategies=$(BENCH_STRATEGIES) -more-controller-args='$(BENCH_CONTROLLER_ARGS)'
