// Package rolloutwatch follows one add-on's rollout on the hub through watch events, for
// `addonops status --watch` and the demo's live progress. Informers hold what rolloutview reads
// (the ClusterManagementAddOn, its ManagedClusterAddOns and the decisions of its install
// placements); every change signals, and while nothing changes no request is made at all.
// client-go's reflectors relist when a watch expires and reconnect after the hub comes back.
package rolloutwatch

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/cache"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	addoninformers "open-cluster-management.io/api/client/addon/informers/externalversions/addon/v1alpha1"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterinformers "open-cluster-management.io/api/client/cluster/informers/externalversions/cluster/v1beta1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/ocmkinds"
	"github.com/addonops/addonops/internal/rolloutview"
)

// Hub is what a watch reads the hub with.
type Hub struct {
	Addon     addonclient.Interface
	Cluster   clusterclient.Interface
	Discovery discovery.DiscoveryInterface
	// Host names the hub in errors.
	Host string
	// BaseName returns the addonops.io/base-name of a config the add-on names
	// (rolloutview.Input.BaseName); it is called while the view is built.
	BaseName func(ctx context.Context, r configref.Ref) (string, bool)
}

// Watch holds the informers of one add-on's view.
type Watch struct {
	ctx     context.Context
	hub     Hub
	addon   string
	cma     cache.SharedIndexInformer
	mcas    cache.SharedIndexInformer
	changed chan struct{}
	// errs receives the hub's list and watch errors (the reflectors retry with a backoff).
	errs chan error

	mu        sync.Mutex
	decisions map[string]*placementWatch // by "<namespace>/<placement>"
	running   sync.WaitGroup             // the informers' goroutines
}

type placementWatch struct {
	informer cache.SharedIndexInformer
	stop     context.CancelFunc
}

// Start starts the informers of addon's view and waits until they have listed; they run until ctx
// ends. It fails at once if the hub lacks OCM's kinds (an informer would retry in silence forever).
func Start(ctx context.Context, hub Hub, addon string) (*Watch, error) {
	if err := ocmkinds.Check(hub.Discovery, hub.Host, ocmkinds.Status); err != nil {
		return nil, err
	}
	w := &Watch{ctx: ctx, hub: hub, addon: addon, changed: make(chan struct{}, 1), errs: make(chan error, 1),
		decisions: map[string]*placementWatch{}}
	byName := func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", addon).String()
	}
	w.cma = addoninformers.NewFilteredClusterManagementAddOnInformer(hub.Addon, 0, cache.Indexers{}, byName)
	w.mcas = addoninformers.NewFilteredManagedClusterAddOnInformer(hub.Addon, metav1.NamespaceAll, 0, cache.Indexers{}, byName)
	for _, inf := range []cache.SharedIndexInformer{w.cma, w.mcas} {
		if err := w.follow(inf); err != nil {
			return nil, err
		}
		w.run(ctx, inf)
	}
	if !cache.WaitForCacheSync(ctx.Done(), w.cma.HasSynced, w.mcas.HasSynced) {
		return nil, fmt.Errorf("interrupted before the first list of %s's objects", addon)
	}
	return w, nil
}

func (w *Watch) run(ctx context.Context, inf cache.SharedIndexInformer) {
	w.running.Add(1)
	go func() {
		defer w.running.Done()
		inf.RunWithContext(ctx)
	}()
}

// Wait returns once the informers have stopped: after the context Start was given ended.
func (w *Watch) Wait() { w.running.Wait() }

// Changed receives a value when an object of the view changed since the last receive.
func (w *Watch) Changed() <-chan struct{} { return w.changed }

// Errors receives the hub's list and watch errors; the informers retry by themselves.
func (w *Watch) Errors() <-chan error { return w.errs }

// OnClusterManagementAddOn calls f with the add-on's ClusterManagementAddOn as each version
// arrives (those already listed first), from the informer's goroutine.
func (w *Watch) OnClusterManagementAddOn(f func(*addonv1alpha1.ClusterManagementAddOn)) error {
	call := func(obj any) {
		if cma, ok := obj.(*addonv1alpha1.ClusterManagementAddOn); ok {
			f(cma)
		}
	}
	if _, err := w.cma.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    call,
		UpdateFunc: func(_, obj any) { call(obj) },
	}); err != nil {
		return fmt.Errorf("watching ClusterManagementAddOn %s: %w", w.addon, err)
	}
	return nil
}

// follow makes inf's events signal a change and its errors reach errs, and drops the objects'
// managedFields, which the view never reads.
func (w *Watch) follow(inf cache.SharedIndexInformer) error {
	if err := inf.SetTransform(stripManagedFields); err != nil {
		return fmt.Errorf("watching the hub: %w", err)
	}
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
	// Replaces client-go's handler, which logs through klog: the caller reports them itself.
	return inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
		select {
		case w.errs <- err:
		default:
		}
	})
}

func stripManagedFields(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// Input is what the view needs, from the informers' caches: no request but the configs' base
// names (Hub.BaseName). A placement whose decisions have not been listed yet has no entry in
// Clusters. The error is NotFound while the ClusterManagementAddOn does not exist.
func (w *Watch) Input() (rolloutview.Input, error) {
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
		BaseName: func(r configref.Ref) (string, bool) { return w.hub.BaseName(w.ctx, r) }}
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
func (w *Watch) placements(ps []addonv1alpha1.PlacementStrategy) map[string]cache.SharedIndexInformer {
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
			inf := clusterinformers.NewFilteredPlacementDecisionInformer(w.hub.Cluster, p.Namespace, 0, cache.Indexers{}, byPlacement)
			if err := w.follow(inf); err != nil {
				continue
			}
			ctx, stop := context.WithCancel(w.ctx)
			w.run(ctx, inf)
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
