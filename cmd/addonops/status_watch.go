package main

// `addonops status ADDON --watch`: the view follows the hub's watch events. Informers hold what
// the view reads (the ClusterManagementAddOn, its ManagedClusterAddOns and the decisions of its
// install placements); every change redraws, bursts coalesced, and while nothing changes the
// command makes no request at all. client-go's reflectors relist when a watch expires and
// reconnect after the hub comes back.

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addoninformers "open-cluster-management.io/api/client/addon/informers/externalversions/addon/v1alpha1"
	clusterinformers "open-cluster-management.io/api/client/cluster/informers/externalversions/cluster/v1beta1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/ocmkinds"
	"github.com/addonops/addonops/internal/rolloutview"
)

const (
	// coalesceEvents merges a burst of events (a rollout step writes the CMA and several MCAs) into
	// one redraw.
	coalesceEvents = 100 * time.Millisecond
	// clockTick re-evaluates the cached objects for what depends on the clock alone (a cluster
	// that times out, ages); it reads no object from the hub.
	clockTick = time.Second
)

// addonWatch holds the informers of one add-on's view.
type addonWatch struct {
	ctx     context.Context
	hub     *hubReader
	addon   string
	cma     cache.SharedIndexInformer
	mcas    cache.SharedIndexInformer
	changed chan struct{}
	// errs receives the hub's list and watch errors (the reflectors retry with a backoff).
	errs chan error

	mu        sync.Mutex
	decisions map[string]*placementWatch // by "<namespace>/<placement>"
}

type placementWatch struct {
	informer cache.SharedIndexInformer
	stop     context.CancelFunc
}

// watch starts the informers of addon's view and waits until they have listed. It fails at once
// if the hub lacks OCM's kinds (an informer would retry in silence forever).
func (h *hubReader) watch(ctx context.Context, addon string) (*addonWatch, error) {
	if err := ocmkinds.Check(h.disc, h.host, ocmkinds.Status); err != nil {
		return nil, err
	}
	w := &addonWatch{ctx: ctx, hub: h, addon: addon, changed: make(chan struct{}, 1), errs: make(chan error, 1),
		decisions: map[string]*placementWatch{}}
	byName := func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", addon).String()
	}
	w.cma = addoninformers.NewFilteredClusterManagementAddOnInformer(h.addon, 0, cache.Indexers{}, byName)
	w.mcas = addoninformers.NewFilteredManagedClusterAddOnInformer(h.addon, metav1.NamespaceAll, 0, cache.Indexers{}, byName)
	for _, inf := range []cache.SharedIndexInformer{w.cma, w.mcas} {
		if err := w.follow(inf); err != nil {
			return nil, err
		}
		go inf.RunWithContext(ctx)
	}
	if !cache.WaitForCacheSync(ctx.Done(), w.cma.HasSynced, w.mcas.HasSynced) {
		return nil, fmt.Errorf("interrupted before the first list of %s's objects", addon)
	}
	return w, nil
}

// follow makes inf's events signal a change and its errors reach errs.
func (w *addonWatch) follow(inf cache.SharedIndexInformer) error {
	signal := func() {
		select {
		case w.changed <- struct{}{}:
		default:
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { signal() },
		UpdateFunc: func(any, any) { signal() },
		DeleteFunc: func(any) { signal() },
	}); err != nil {
		return fmt.Errorf("watching the hub: %w", err)
	}
	// Replaces client-go's handler, which logs through klog: the command reports them itself.
	return inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
		select {
		case w.errs <- err:
		default:
		}
	})
}

// input is what the view needs, from the informers' caches: no request but the configs' base
// names, which are read once per config.
func (w *addonWatch) input() (rolloutview.Input, error) {
	obj, ok, err := w.cma.GetStore().GetByKey(w.addon)
	if err != nil {
		return rolloutview.Input{}, err
	}
	if !ok {
		w.placements(nil)
		return rolloutview.Input{}, apierrors.NewNotFound(schema.GroupResource{Group: addonv1alpha1.GroupName, Resource: "clustermanagementaddons"}, w.addon)
	}
	cma := obj.(*addonv1alpha1.ClusterManagementAddOn)
	in := rolloutview.Input{CMA: cma, Clusters: map[string][]string{},
		BaseName: func(r configref.Ref) (string, bool) { return w.hub.baseName(w.ctx, r) }}
	for _, o := range w.mcas.GetStore().List() {
		in.MCAs = append(in.MCAs, o.(*addonv1alpha1.ManagedClusterAddOn))
	}
	for key, inf := range w.placements(cma.Spec.InstallStrategy.Placements) {
		if !inf.HasSynced() {
			continue // clusters unknown for now: the view relies on the controller's counts
		}
		var clusters []string
		for _, o := range inf.GetStore().List() {
			for _, d := range o.(*clusterv1beta1.PlacementDecision).Status.Decisions {
				clusters = append(clusters, d.ClusterName)
			}
		}
		in.Clusters[key] = clusters
	}
	return in, nil
}

// placements keeps one decision informer per install placement: new placements get one (its
// first list signals a change), removed ones stop theirs.
func (w *addonWatch) placements(ps []addonv1alpha1.PlacementStrategy) map[string]cache.SharedIndexInformer {
	w.mu.Lock()
	defer w.mu.Unlock()
	want := map[string]cache.SharedIndexInformer{}
	for _, p := range ps {
		key := p.Namespace + "/" + p.Name
		pw, ok := w.decisions[key]
		if !ok {
			byPlacement := func(o *metav1.ListOptions) {
				o.LabelSelector = labels.SelectorFromSet(labels.Set{clusterv1beta1.PlacementLabel: p.Name}).String()
			}
			inf := clusterinformers.NewFilteredPlacementDecisionInformer(w.hub.cluster, p.Namespace, 0, cache.Indexers{}, byPlacement)
			if err := w.follow(inf); err != nil {
				continue
			}
			ctx, stop := context.WithCancel(w.ctx)
			go inf.RunWithContext(ctx)
			pw = &placementWatch{informer: inf, stop: stop}
			w.decisions[key] = pw
		}
		want[key] = pw.informer
	}
	for key, pw := range w.decisions {
		if _, ok := want[key]; !ok {
			pw.stop()
			delete(w.decisions, key)
		}
	}
	return want
}

// wait returns when the hub changed (after coalescing a burst), the clock ticked, or ctx or
// deadline ended; it reports a list or watch error of the hub once per distinct message.
func (w *addonWatch) wait(ctx context.Context, deadline <-chan time.Time, tick <-chan time.Time, prog string, stderr io.Writer, lastErr *string) (timedOut bool) {
	for {
		select {
		case <-ctx.Done():
			return false
		case <-deadline:
			return true
		case <-tick:
			return false
		case err := <-w.errs:
			if msg := err.Error(); msg != *lastErr {
				*lastErr = msg
				fmt.Fprintf(stderr, "%s status: reading the hub (retrying): %v\n", prog, err)
			}
		case <-w.changed:
			select {
			case <-time.After(coalesceEvents):
			case <-ctx.Done():
			}
			select {
			case <-w.changed:
			default:
			}
			return false
		}
	}
}
