// An Overlay remembers the objects this controller wrote until its informer caches show them.

package statuswrite

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Overlay remembers the objects this controller wrote until the informer cache shows them.
//
// Informer caches lag behind writes. A rollout decision taken on a cache that does not show the
// batch it just wrote could start more clusters than maxConcurrency, and a canary-gated placement
// could read an old last known good config from a stale CMA status and move clusters back. So
// readers look objects up through the overlay: an object written here is used instead of the
// cached one while the cache still shows a version the write replaced.
//
// resourceVersions are opaque: they are only compared for equality. A write that succeeded was
// computed from a version (its resourceVersion precondition) that it replaced, and versions of one
// object only move forward, in the cache too; so once the cache shows any version other than the
// ones our writes replaced, it shows our write or a later one. Unlike client-go's MutationCache
// (integer resourceVersions, and an LRU of 100 entries that silently drops overlays when one
// decision writes more than 100 MCAs), no entry is dropped before the cache has caught up.
type Overlay[T metav1.Object] struct {
	mu      sync.Mutex
	written map[string]overlayEntry[T]
}

type overlayEntry[T metav1.Object] struct {
	obj T
	// replaced are the resourceVersions our writes replaced: the cache showing one of them is
	// behind.
	replaced map[string]bool
}

func NewOverlay[T metav1.Object]() *Overlay[T] {
	return &Overlay[T]{written: map[string]overlayEntry[T]{}}
}

// Wrote records written, the API server's answer to a write computed from the version from. Its
// managedFields are dropped (written is changed): no reader uses them, the cached objects lack them
// too (hubcache), and a write of an object without them leaves the API server's as they are. They
// are the larger part of an MCA as the API server returns it, and one rollout decision records a
// written MCA per cluster.
func (o *Overlay[T]) Wrote(key, from string, written T) {
	written.SetManagedFields(nil)
	o.mu.Lock()
	defer o.mu.Unlock()
	e, ok := o.written[key]
	if !ok {
		e.replaced = map[string]bool{}
	}
	e.replaced[from] = true
	e.obj = written
	o.written[key] = e
}

// Get returns what was written for key while cached (from the informer) is older, else cached.
func (o *Overlay[T]) Get(key string, cached T) T {
	o.mu.Lock()
	defer o.mu.Unlock()
	e, ok := o.written[key]
	if !ok {
		return cached
	}
	if e.replaced[cached.GetResourceVersion()] {
		return e.obj
	}
	delete(o.written, key) // the cache caught up
	return cached
}

// Peek is Get without forgetting: the freshest known version of key, cached or written. Writers
// check with it that the version they computed from is still the freshest before they write.
func (o *Overlay[T]) Peek(key string, cached T) T {
	o.mu.Lock()
	defer o.mu.Unlock()
	if e, ok := o.written[key]; ok && e.replaced[cached.GetResourceVersion()] {
		return e.obj
	}
	return cached
}

// Settle drops what was written for key if cached, the informer's version of key now, shows it or a
// later version. Get does the same for the keys it is asked for; Settle is for the informer's event
// handler, so that a written object is not kept after the cache caught up merely because no reader
// asked for it again (at 5,000 clusters, a full MCA per cluster). cached must be what the cache
// holds now, not the object of the event being handled: a late event can carry a version older
// than the one a write replaced.
func (o *Overlay[T]) Settle(key string, cached T) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if e, ok := o.written[key]; ok && !e.replaced[cached.GetResourceVersion()] {
		delete(o.written, key)
	}
}

// Forget drops what is known about key (the object was deleted).
func (o *Overlay[T]) Forget(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.written, key)
}

// Created returns what was written for key when the cache does not show the object at all yet
// (it was just created).
func (o *Overlay[T]) Created(key string) (T, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	e, ok := o.written[key]
	if !ok || !e.replaced[""] {
		var zero T
		return zero, false
	}
	return e.obj, true
}
