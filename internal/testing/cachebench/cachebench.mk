# Cache benchmark (issue 39): the controller's hub cache (internal/hubcache) against
# controller-runtime's cache configured as a controller engineer would, each in a fresh process on a
# real hub holding BENCH_CLUSTERS clusters' worth of the objects the controller caches. Prints per
# cluster count and cache: sync time, live heap after GC, RSS and peak RSS, and how long
# BENCH_CACHE_UPDATES ManagedClusterAddOn status updates (default: one per cluster) take to show in
# the cache. Not part of `make test`; figures and how to read them: docs/benchmarks/cache.md.
#   make bench-cache BENCH_CLUSTERS=1000,5000
#   make bench-cache BENCH_CLUSTERS=5000 BENCH_CACHES=hubcache,hubcache-nointern BENCH_CACHE_ROUNDS=3
# Caches: hubcache (as the controller starts it), hubcache-nointern (its interning off), cr-typed,
# cr-decoded, cr-paged and cr-paged-nonsindex (controller-runtime's: typed, with per-object decoding,
# paged, without namespace indexes; caches_test.go says how each is configured).
BENCH_CLUSTERS ?= 1000
BENCH_CACHES ?= hubcache,cr-typed,cr-decoded
BENCH_CACHE_UPDATES ?= 0
BENCH_CACHE_ROUNDS ?= 1
# A folder for each cache's CPU profile from its start until synced, e.g. /tmp/cacheprof.
BENCH_CACHE_PROFILE ?=

.PHONY: bench-cache
bench-cache: hub-binaries ## Benchmark hubcache against controller-runtime's cache (BENCH_CLUSTERS=1000,5000).
	@uptime
	ADDONOPS_HUB_TMPDIR=$${ADDONOPS_HUB_TMPDIR:-/dev/shm} \
	  $(GO) test -tags integration -count=1 -run '^$$' -bench '^BenchmarkCache$$' -benchtime 1x -timeout 120m ./internal/testing/cachebench/ \
	  -args -clusters=$(BENCH_CLUSTERS) -caches=$(BENCH_CACHES) -updates=$(BENCH_CACHE_UPDATES) -rounds=$(BENCH_CACHE_ROUNDS) -profile='$(BENCH_CACHE_PROFILE)'
	@uptime
