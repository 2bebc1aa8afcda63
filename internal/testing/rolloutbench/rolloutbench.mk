# Controller benchmark (issue 4 §7, issue 20): thousands of simulated clusters on a real API server,
# the controller as its own process. Not part of `make test`. Prints the machine load with the
# figures: the machine is shared, read them with it.
#
# Rollout mode (default): an add-on without AddOnTemplate, the simulated add-on manager renders its
# works. Prints wall time, MCA status writes and controller CPU/peak RSS per cluster count and
# strategy.
#   make bench-controller                          # 1,000 clusters, All and Progressive 25%
#   make bench-controller BENCH_CLUSTERS=1000,5000
#   make bench-controller BENCH_CLUSTERS=5000 BENCH_STRATEGIES=all BENCH_CONTROLLER_ARGS=--deploy-templates
#     (the template reconcilers' caches and controllers run too: the memory of the one-cache change)
#
# Template mode: a template add-on (AddOnTemplate with a Deployment agent and KubeClient
# registration, AddOnDeploymentConfig) installed, then upgraded to a new config version, by
# addonops-controller --deploy-templates; with BENCH_PEER=ocm also by OCM v1.2.1's addon-manager
# (bin/ocm-addon), each on a fresh hub set up alike, the simulated work agent reporting Applied,
# Available and the Deployment's status feedback. Each manager is its own API user; the API server's
# audit log counts its requests. Prints per manager install and upgrade seconds, MCA and ManifestWork
# writes per cluster, API requests per cluster, manager CPU and peak RSS, where the CPU went, and
# the ratios addonops/OCM. The issue 20 table (1,000 clusters for both, 5,000 for addonops):
#   make bench-controller BENCH_MODE=template BENCH_PEER=ocm BENCH_CLUSTERS=1000,5000 BENCH_STRATEGIES=all BENCH_SOAKS=default,0s
#   (BENCH_PEER=ocm needs bin/ocm-addon: `make ocm-binaries`. BENCH_PEER_MAX_CLUSTERS=1000: the
#   peer's largest count; BENCH_OCM_ARGS: OCM's flags, by
#   default the client rate limits addonops gets; BENCH_SOAKS=default,0s: addonops runs once per
#   health soak of the add-on, `default` being the controller's 10 s, each with its ratios to OCM)
BENCH_CLUSTERS ?= 1000
BENCH_STRATEGIES ?= all,progressive
BENCH_CONTROLLER_ARGS ?=
# Environment of the controller's process only, e.g. BENCH_CONTROLLER_ENV=GOGC=50 (Go's garbage
# collector: the heap may grow to 1.5 times the live heap instead of 2).
BENCH_CONTROLLER_ENV ?=
BENCH_MODE ?= rollout
BENCH_PEER ?=
BENCH_PEER_MAX_CLUSTERS ?= 1000
BENCH_OCM_ARGS ?= --kube-api-qps=2000 --kube-api-burst=4000
BENCH_SOAKS ?= default
# Template mode: run every manager this many times, one round after another, and print the
# medians and each round's ratios (a single round's ratio moves with the machine and the peer).
BENCH_ROUNDS ?= 1
# Template mode: a folder for CPU profiles of kube-apiserver, one per manager and phase (its first
# 20 s), e.g. BENCH_APISERVER_PROFILE=/tmp/apiprof; read with `go tool pprof -top bin/kube-apiserver FILE`.
BENCH_APISERVER_PROFILE ?=

# The controller as the image ships it (hack/image.mk): CGO_ENABLED=0, RELEASE_BUILD_FLAGS. Its
# peak RSS is what a user's pod shows; a cgo build maps libc as well.
BENCH_CONTROLLER := $(BIN)/release/addonops-controller

$(BENCH_CONTROLLER): FORCE
	@mkdir -p $(dir $@)
	$(GO_BUILD_ENV) $(GO) build $(RELEASE_BUILD_FLAGS) -o $@ ./cmd/addonops-controller

.PHONY: bench-controller
bench-controller: hub-binaries $(BENCH_CONTROLLER) ## Benchmark the controller (BENCH_CLUSTERS=1000,5000; BENCH_MODE=template BENCH_PEER=ocm).
	@uptime
	ADDONOPS_HUB_TMPDIR=$${ADDONOPS_HUB_TMPDIR:-/dev/shm} ADDONOPS_CONTROLLER=$(BENCH_CONTROLLER) \
	  $(GO_BUILD_ENV) $(GO) test $(INTEGRATION_TAGS) -run '^$$' -bench '^BenchmarkRollout$$' -benchtime 1x -timeout 240m ./internal/testing/rolloutbench/ \
	  -args -clusters=$(BENCH_CLUSTERS) -strategies=$(BENCH_STRATEGIES) -more-controller-args='$(BENCH_CONTROLLER_ARGS)' -controller-env='$(BENCH_CONTROLLER_ENV)' \
	  -mode=$(BENCH_MODE) -peer=$(BENCH_PEER) -peer-max-clusters=$(BENCH_PEER_MAX_CLUSTERS) -ocm-args='$(BENCH_OCM_ARGS)' -soaks='$(BENCH_SOAKS)' -rounds=$(BENCH_ROUNDS) \
	  -apiserver-profile='$(BENCH_APISERVER_PROFILE)'
	@uptime
