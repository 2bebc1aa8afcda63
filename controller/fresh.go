package controller

import (
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fresh remembers the objects this controller wrote until its informer has caught up with them.
//
// Informer caches lag behind writes. A rollout decision taken on a cache that does not show the
// batch it just wrote could pick more clusters than maxConcurrency, and a canary-gated placement
// could read an old last known good config from a stale CMA status and move clusters back. So
// readers look objects up through fresh: an object written here is used instead of the cached one
// until the cache shows that write (resourceVersion) or a later one.
type fresh[T metav1.Object] struct {
	mu      sync.Mutex
	written map[string]entry[T]
}

type entry[T metav1.Object] struct {
	obj T
	at  time.Time
}

// maxOverlay bounds how long a written object can shadow the cache when resourceVersions cannot be
// compared (they are opaque in general, integers with etcd).
const maxOverlay = time.Minute

func newFresh[T metav1.Object]() *fresh[T] {
	return &fresh[T]{written: map[string]entry[T]{}}
}

// wrote records obj, as the API server returned it after a write.
func (f *fresh[T]) wrote(key string, obj T) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.written[key] = entry[T]{obj: obj, at: time.Now()}
}

// forget drops what is known about key (the object was deleted).
func (f *fresh[T]) forget(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.written, key)
}

// get returns the freshest of cached (from the informer) and what was written for key.
func (f *fresh[T]) get(key string, cached T) T {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.written[key]
	if !ok {
		return cached
	}
	if newerOrSame(cached.GetResourceVersion(), e.obj.GetResourceVersion()) || time.Since(e.at) > maxOverlay {
		delete(f.written, key)
		return cached
	}
	return e.obj
}

// newerOrSame reports whether resourceVersion a is at least b. Unparsable versions only compare
// equal to themselves.
func newerOrSame(a, b string) bool {
	if a == b {
		return true
	}
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && x >= y
}
