// The View is how the rollout half's reconcilers (packages install, rollout, progress and
// configgc) see the add-ons this controller manages: the hub cache (package hubcache) overlaid with
// the objects they wrote and the cache does not show yet (Overlay), the clients and the event
// recorder they share, and the event handlers that map hub objects to the add-ons they concern.

package addonrollout

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/internal/hubcache"
	"github.com/addonops/addonops/internal/rolloutplan"
	"github.com/addonops/addonops/internal/statuswrite"
)

// View is the shared state of the rollout half's reconcilers.
type View struct {
	Hub      *hubcache.Cache
	Addon    addonclient.Interface
	Recorder record.EventRecorder
	// WrittenCMAs and WrittenMCAs overlay the hub cache's CMAs and MCAs with what the reconcilers
	// wrote and the cache does not show yet (Overlay). WrittenMCAs is the hub's
	// MCAWriter's: every reconciler of the process records its MCA writes there.
	WrittenCMAs *statuswrite.Overlay[*addonv1alpha1.ClusterManagementAddOn]
	WrittenMCAs *statuswrite.Overlay[*addonv1alpha1.ManagedClusterAddOn]
	// WrittenHistories overlays the version history ConfigMaps the rollout reconciler wrote, by
	// name: the progress tracker reads a run's verdict there as soon as it is recorded (History).
	WrittenHistories *statuswrite.Overlay[*corev1.ConfigMap]
	// Held are the interim conditions of MCAs the progress reconciler has not written (Held).
	Held *Held
	// Coalesce delays decisions triggered by bursts of events (placements, MCAs, configs).
	Coalesce time.Duration
	// WriteParallelism bounds the concurrent writes of one decision (Parallel).
	WriteParallelism int

	toldMu sync.Mutex
	told   map[string]string
}

// NewView returns a view of hub.
func NewView(hub *hubcache.Cache, recorder record.EventRecorder, coalesce time.Duration, writeParallelism int) *View {
	return &View{Hub: hub, Addon: hub.Clients.Addon, Recorder: recorder,
		WrittenCMAs: statuswrite.NewOverlay[*addonv1alpha1.ClusterManagementAddOn](), WrittenMCAs: hub.MCAWriter.Written,
		WrittenHistories: statuswrite.NewOverlay[*corev1.ConfigMap](),
		Held:             NewHeld(),
		Coalesce:         coalesce, WriteParallelism: max(writeParallelism, 1)}
}

// Managed reports whether this controller manages cma (the --addons selection).
func (v *View) Managed(cma *addonv1alpha1.ClusterManagementAddOn) bool { return v.Hub.Selected(cma) }

// ManagedCMA returns the CMA of that name, at its freshest known version, if this controller
// manages it and it is not being deleted.
func (v *View) ManagedCMA(name string) (*addonv1alpha1.ClusterManagementAddOn, bool) {
	cached, err := v.Hub.CMAs.Get(name)
	if err != nil {
		return nil, false
	}
	cma := v.WrittenCMAs.Get(name, cached)
	if cma.DeletionTimestamp != nil || !v.Managed(cma) {
		return nil, false
	}
	return cma, true
}

// ManagedCMAs lists the managed CMAs as the cache holds them.
func (v *View) ManagedCMAs() []*addonv1alpha1.ClusterManagementAddOn {
	cmas, _ := v.Hub.CMAs.List(labels.Everything())
	out := cmas[:0:0]
	for _, cma := range cmas {
		if v.Managed(cma) {
			out = append(out, cma)
		}
	}
	return out
}

// AddonMCAs returns the add-on's MCAs, each at its freshest known version with its held interim
// conditions (MCA).
func (v *View) AddonMCAs(addon string) []*addonv1alpha1.ManagedClusterAddOn {
	objs, _ := v.Hub.MCAInformer.GetIndexer().ByIndex(hubcache.IndexMCAsByAddon, addon)
	out := make([]*addonv1alpha1.ManagedClusterAddOn, 0, len(objs))
	for _, o := range objs {
		m := o.(*addonv1alpha1.ManagedClusterAddOn)
		out = append(out, v.MCA(m.Namespace+"/"+m.Name, m))
	}
	return out
}

// MCA returns the cached MCA of key at its freshest known version (WrittenMCAs), with the changes
// deferred for it (statuswrite.Writer.View) and the interim conditions held for it (Held): as the
// decisions must see it.
func (v *View) MCA(key string, cached *addonv1alpha1.ManagedClusterAddOn) *addonv1alpha1.ManagedClusterAddOn {
	return v.Held.Apply(key, v.Hub.MCAWriter.View(key, cached))
}

// AddonWorks returns the add-on's ManifestWorks in a cluster namespace.
func (v *View) AddonWorks(namespace, addon string) []*workv1.ManifestWork {
	return v.Hub.AddonWorks(namespace, addon)
}

// TellOnce reports whether what was not told yet for key in this process (and records it): for
// events raised once per object version and problem.
func (v *View) TellOnce(key, what string) bool {
	v.toldMu.Lock()
	defer v.toldMu.Unlock()
	if v.told == nil {
		v.told = map[string]string{}
	}
	if v.told[key] == what {
		return false
	}
	v.told[key] = what
	return true
}

// Parallel runs fn for every item with at most WriteParallelism at a time and joins the errors.
func (v *View) Parallel(items []string, fn func(string) error) error {
	sem := make(chan struct{}, v.WriteParallelism)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, it := range items {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := fn(it); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %w", it, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// PlacementsOf lists the placement keys a CMA depends on: its install placements and canaries.
func PlacementsOf(cma *addonv1alpha1.ClusterManagementAddOn) []rolloutplan.PlacementKey {
	var keys []rolloutplan.PlacementKey
	for _, p := range cma.Spec.InstallStrategy.Placements {
		keys = append(keys, rolloutplan.PlacementKey{Namespace: p.Namespace, Name: p.Name})
	}
	if canaries, err := rolloutplan.ParseCanaries(cma.Annotations); err == nil {
		for _, k := range canaries {
			keys = append(keys, k)
		}
	}
	return keys
}

// Event handlers: what each reconciler looks at again, registered on the hub cache's informers
// with the reconciler's queue when it starts.

// CMAHandler enqueues a CMA (by name) when it appears or changes as hubcache.CMAChanged says.
func CMAHandler(q hubcache.Queue) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { q.Add(obj.(*addonv1alpha1.ClusterManagementAddOn).Name) },
		UpdateFunc: func(old, cur any) {
			if hubcache.CMAChanged(old, cur) {
				q.Add(cur.(*addonv1alpha1.ClusterManagementAddOn).Name)
			}
		},
	}
}

// Dependents enqueues, after the coalescing delay, every managed CMA that depends on the
// placement (or placement decision) obj.
func (v *View) Dependents(q hubcache.Queue) cache.ResourceEventHandler {
	enqueue := func(obj any) {
		m, ok := hubcache.Tombstone[metav1.Object](obj)
		if !ok {
			return
		}
		key := rolloutplan.PlacementKey{Namespace: m.GetNamespace(), Name: m.GetName()}
		if _, decision := m.(*clusterv1beta1.PlacementDecision); decision {
			key.Name = m.GetLabels()[clusterv1beta1.PlacementLabel]
		}
		for _, cma := range v.ManagedCMAs() {
			for _, k := range PlacementsOf(cma) {
				if k == key {
					q.AddAfter(cma.Name, v.Coalesce)
					break
				}
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, cur any) { enqueue(cur) },
		DeleteFunc: enqueue,
	}
}

// EnqueueAll enqueues every managed CMA after the coalescing delay.
func (v *View) EnqueueAll(q hubcache.Queue) {
	for _, cma := range v.ManagedCMAs() {
		q.AddAfter(cma.Name, v.Coalesce)
	}
}

// Registration is an event handler for an informer.
type Registration struct {
	Informer cache.SharedIndexInformer
	Handler  cache.ResourceEventHandler
}

// Register adds the handlers to their informers.
func Register(regs ...Registration) error {
	for _, r := range regs {
		if _, err := r.Informer.AddEventHandler(r.Handler); err != nil {
			return fmt.Errorf("registering event handlers: %w", err)
		}
	}
	return nil
}

// SplitKey splits a "namespace/name" queue key; a key without "/" is a name.
func SplitKey(key string) (namespace, name string) {
	ns, n, ok := strings.Cut(key, "/")
	if !ok {
		return "", key
	}
	return ns, n
}
