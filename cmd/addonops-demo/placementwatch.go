package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/tools/cache"
	clusterinformers "open-cluster-management.io/api/client/cluster/informers/externalversions"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/addonops/addonops/internal/testing/localhub"
)

// placementWatcher is the demo's simulated placement controller when a GitOps engine applies the
// steps (--engine): the engine creates and changes the Placements, so the demo cannot decide them
// between two phases of its own apply as it does without an engine; it watches them instead, as
// OCM's placement controller does, and decides each Placement whenever it is created or its spec
// changes (a new generation). runStep then waits until every Placement of its step is decided at
// its current generation before it follows the rollout.
type placementWatcher struct {
	clients  *localhub.Clients
	clusters []clusterInfo
	factory  clusterinformers.SharedInformerFactory

	mu      sync.Mutex
	dirty   map[string]bool // "<namespace>/<name>" to decide
	decided map[string]placementDecision
	wake    chan struct{}
}

// placementDecision is the last decision of one Placement.
type placementDecision struct {
	Generation int64
	Clusters   int
	At         time.Time
	Err        error
}

func newPlacementWatcher(clients *localhub.Clients, clusters []clusterInfo) (*placementWatcher, error) {
	w := &placementWatcher{clients: clients, clusters: clusters, dirty: map[string]bool{},
		decided: map[string]placementDecision{}, wake: make(chan struct{}, 1)}
	w.factory = clusterinformers.NewSharedInformerFactory(clients.Cluster, 0)
	inf := w.factory.Cluster().V1beta1().Placements().Informer()
	note := func(obj any) {
		p, ok := obj.(*clusterv1beta1.Placement)
		if !ok {
			return
		}
		key := p.Namespace + "/" + p.Name
		w.mu.Lock()
		defer w.mu.Unlock()
		if d, ok := w.decided[key]; ok && d.Err == nil && d.Generation >= p.Generation {
			return // its own status write, or a resync
		}
		w.dirty[key] = true
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    note,
		UpdateFunc: func(_, obj any) { note(obj) },
	}); err != nil {
		return nil, fmt.Errorf("watching Placements: %w", err)
	}
	return w, nil
}

// start runs the informer and the deciding loop until ctx ends.
func (w *placementWatcher) start(ctx context.Context) error {
	w.factory.Start(ctx.Done())
	for typ, ok := range w.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("the cache of %v did not sync: %w", typ, ctx.Err())
		}
	}
	go w.run(ctx)
	return nil
}

// shutdown waits for the informer's goroutines once ctx has ended.
func (w *placementWatcher) shutdown() { w.factory.Shutdown() }

func (w *placementWatcher) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		}
		w.mu.Lock()
		keys := make([]string, 0, len(w.dirty))
		for k := range w.dirty {
			keys = append(keys, k)
		}
		clear(w.dirty)
		w.mu.Unlock()
		for _, key := range keys {
			ns, name, _ := strings.Cut(key, "/")
			n, gen, err := schedulePlacement(ctx, w.clients, ns, name, w.clusters)
			if ctx.Err() != nil {
				return
			}
			w.mu.Lock()
			w.decided[key] = placementDecision{Generation: gen, Clusters: n, At: time.Now(), Err: err}
			w.mu.Unlock()
		}
	}
}

// decision returns the last decision of Placement key.
func (w *placementWatcher) decision(key string) (placementDecision, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	d, ok := w.decided[key]
	return d, ok
}
