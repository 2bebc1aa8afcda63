package main

import "github.com/addonops/addonops/internal/testing/harness"

// The tests below run the demo's whole flow (Run) as `make demo` does, on a real hub: localhub's
// kube-apiserver and etcd, the real controller, go.mod's kustomize with freshly built
// functions, server-side apply of the real examples. Each run starts and stops its own hub, so
// they also check that the demo leaves nothing running.

// syncBuffer is safe to read while goroutines write to it.
type syncBuffer = harness.SyncBuffer
