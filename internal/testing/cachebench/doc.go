// Package cachebench measures the controller's hub cache (internal/hubcache) against
// controller-runtime's cache configured as a controller engineer would configure it, on a real API
// server (internal/testing/localhub) holding N clusters' worth of the objects the controller caches.
//
// Each cache runs in a fresh child process (the test binary re-executed), so its peak RSS is its
// own: the child builds the cache, waits for it to sync, collects garbage, reports the sync time,
// the live heap and its peak RSS, then reports how long K ManagedClusterAddOn status updates, made
// by the parent, take to show in its cache. Run it with `make bench-cache` (cachebench.mk); the
// figures and how to read them are in docs/benchmarks/cache.md. Every file but this one is built
// with the integration tag only: the benchmark is not part of `make test`.
package cachebench
