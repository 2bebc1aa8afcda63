package main

import (
	"bytes"
	"sync"
)

// The tests below run the demo's whole flow (Run) as `make demo` does, on a real hub: localhub's
// kube-apiserver and etcd, the real controller, go.mod's kustomize with freshly built
// functions, server-side apply of the real examples. Each run starts and stops its own hub, so
// they also check that the demo leaves nothing running.

// syncBuffer is the demo's output, safe to read while the demo writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
