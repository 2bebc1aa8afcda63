// Package controller is addonops' hub controller: it installs ManagedClusterAddOns from placements,
// rolls new config versions out across clusters with OCM's rollout strategies and canary
// placements, tracks the add-on's ManifestWorks and reports progress in the add-on's status.
//
// Three reconcilers, controller-runtime controllers on the process's one hub cache (package
// hubcache, shared with the template reconcilers under --deploy-templates):
//   - install (key: CMA name): creates and deletes MCAs (decision: package installplan);
//   - rollout (key: CMA name): desired configs of every MCA, batches, CMA status (rolloutplan);
//   - progress (key: MCA namespace/name): lastAppliedConfig and Progressing from works (mcastatus).
//
// Writes to an MCA's status carry the resourceVersion they were computed from, and every writer
// (rollout, progress, and the template reconcilers through package mcawrite) changes only the
// fields it owns, so none overwrites another's with a stale copy: a conflict is retried on the
// newer object.
//
// All state lives in status, so a restarted controller continues where the last one stopped.
//
// The safety rules — when a cluster is done (works applied with the desired configs, ManifestApplied,
// healthy), what fails it and counts toward maxFailures, when a change is a rollback (which never
// waits for a canary and is paced by maxConcurrency), how a canary placement is judged, and what
// Manual leaves alone — are written down, with the design's corner cases, in package rolloutplan's
// documentation and implemented there and in mcastatus.
package controller

import (
	"context"
	"fmt"
	"github.com/addonops/addonops/internal/addonstatus"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/controller/deploytemplates"
	"github.com/addonops/addonops/controller/hubcache"
	"github.com/addonops/addonops/controller/rolloutmetrics"
	"github.com/addonops/addonops/controller/rolloutplan"
	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/history"
)

// Add-on selection modes (--addons).
const (
	// AddonsSelf manages the CMAs annotated addon.open-cluster-management.io/lifecycle with any value
	// but "addon-manager": exactly the CMAs OCM's addon-manager leaves alone (it manages those without
	// the annotation or with "addon-manager"). addon-framework v1.3.0 rewrites "self" to "", which
	// OCM v1.3.0 still treats as self-managed, so "" is ours too.
	AddonsSelf = hubcache.AddonsSelf
	// AddonsAll manages every CMA: a hub without OCM's addon-manager.
	AddonsAll = hubcache.AddonsAll
)

// Options configure the controller. Zero values get defaults.
type Options struct {
	// Addons selects the CMAs to manage: AddonsSelf (default) or AddonsAll.
	Addons string
	// Workers is the number of progress workers (per-MCA reconciles); install and rollout get
	// fewer, as they work per add-on. Default 4.
	Workers int
	// Resync is the informers' resync period: every object is reconciled again this often. Default 10m.
	Resync time.Duration
	// Coalesce delays rollout decisions triggered by MCA, work and config events so a burst of
	// events makes one decision. Default 250ms.
	Coalesce time.Duration
	// WriteParallelism bounds concurrent MCA writes of one decision. Default 16.
	WriteParallelism int
	// ConfigGC configures the garbage collection of superseded config versions (package configgc).
	ConfigGC ConfigGCOptions
	// DeployTemplates, when set, runs the template reconcilers (package deploytemplates) on the
	// controller's cache: --deploy-templates.
	DeployTemplates *deploytemplates.Options
	// Only, when set, restricts the controller to these add-on names: tests run several
	// controllers on one hub, each on its own add-on.
	Only []string
	// HistoryNamespace is where the add-ons' version histories are kept (package history): one
	// ConfigMap per add-on. Empty turns the history off (a revert is then a rollback only while
	// the install progressions or the clusters still remember the version).
	HistoryNamespace string
	// HistoryLimit is how many versions per placement the history keeps. Default history.DefaultLimit.
	HistoryLimit int
}

// ConfigGCOptions configure the garbage collection of superseded config versions.
type ConfigGCOptions struct {
	// Disabled turns it off (--config-gc=false).
	Disabled bool
	// Keep is how many unused versions per base name are kept, newest first (--config-gc-keep).
	// Negative means the default, 1.
	Keep int
	// MinAge is how old a version must be before it is deleted (--config-gc-min-age). Zero means
	// the default, 10m; negative means no minimum.
	MinAge time.Duration
	// DryRun only reports what would be deleted (events, logs, metric), deleting nothing.
	DryRun bool
	// Interval is how often it runs. Default 1m.
	Interval time.Duration
}

// Complete validates o and fills in the defaults.
func (o *Options) Complete() error {
	switch o.Addons {
	case "":
		o.Addons = AddonsSelf
	case AddonsSelf, AddonsAll:
	default:
		return fmt.Errorf("--addons=%q: want %q (CMAs annotated %s, not %q) or %q (every CMA)", o.Addons, AddonsSelf,
			addonv1alpha1.AddonLifecycleAnnotationKey, addonv1alpha1.AddonLifecycleAddonManagerAnnotationValue, AddonsAll)
	}
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.Resync <= 0 {
		o.Resync = 10 * time.Minute
	}
	if o.Coalesce <= 0 {
		o.Coalesce = 250 * time.Millisecond
	}
	if o.HistoryLimit <= 0 {
		o.HistoryLimit = history.DefaultLimit
	}
	if o.WriteParallelism <= 0 {
		o.WriteParallelism = 16
	}
	if o.ConfigGC.Keep < 0 {
		o.ConfigGC.Keep = 1
	}
	switch {
	case o.ConfigGC.MinAge == 0:
		o.ConfigGC.MinAge = 10 * time.Minute
	case o.ConfigGC.MinAge < 0:
		o.ConfigGC.MinAge = 0
	}
	if o.ConfigGC.Interval <= 0 {
		o.ConfigGC.Interval = time.Minute
	}
	return nil
}

// Controller is the hub controller.
type Controller struct {
	opts Options
	hub  *hubcache.Cache

	addon    addonclient.Interface
	recorder record.EventRecorder

	// writtenCMAs and writtenMCAs overlay the hub cache's CMAs and MCAs with what this
	// controller wrote and the cache does not show yet (see overlay).
	writtenCMAs *overlay[*addonv1alpha1.ClusterManagementAddOn]
	writtenMCAs *overlay[*addonv1alpha1.ManagedClusterAddOn]
	// writtenHistories overlays the version history ConfigMaps likewise, by name.
	writtenHistories *overlay[*corev1.ConfigMap]

	// rolloutQ is the rollout reconciler's queue, set when it starts: config changes and access
	// problems reach every add-on's rollout through it.
	rolloutQ atomic.Pointer[hubcache.Queue]

	// forbiddenMu guards forbiddenTold: per config kind the controller may not read, the CMAs
	// already told so by an event.
	forbiddenMu   sync.Mutex
	forbiddenTold map[configref.GroupResource]map[string]bool

	// toldMu guards told: per object, the problem last told by an event (tellOnce).
	toldMu sync.Mutex
	told   map[string]string
}

const indexByAddon = hubcache.IndexMCAsByAddon // MCAs by name (= add-on name)

// New builds a controller talking to the hub cfg points at: its hub cache and reconcilers (and
// with Options.DeployTemplates the template reconcilers), run by Run.
func New(cfg *rest.Config, opts Options) (*Controller, error) {
	if err := opts.Complete(); err != nil {
		return nil, err
	}
	hub, err := hubcache.New(cfg, hubcache.Options{Addons: opts.Addons, Only: opts.Only, Resync: opts.Resync,
		DeployTemplates: opts.DeployTemplates != nil, HistoryNamespace: opts.HistoryNamespace})
	if err != nil {
		return nil, err
	}
	c := &Controller{opts: opts, hub: hub, addon: hub.Clients.Addon,
		writtenCMAs:      newOverlay[*addonv1alpha1.ClusterManagementAddOn](),
		writtenMCAs:      newOverlay[*addonv1alpha1.ManagedClusterAddOn](),
		writtenHistories: newOverlay[*corev1.ConfigMap]()}

	scheme := runtime.NewScheme()
	utilruntime.Must(addonv1alpha1.Install(scheme))
	utilruntime.Must(corev1.AddToScheme(scheme))
	events := record.NewBroadcaster()
	c.recorder = events.NewRecorder(scheme, corev1.EventSource{Component: "addonops-controller"})
	if err := hub.AddEvents(events); err != nil {
		return nil, err
	}
	hub.OnUndecodable(c.undecodableEvent)
	hub.Configs.OnChange(c.enqueueAllRollouts)
	hub.Configs.OnAccess(c.configAccess)

	for _, r := range []hubcache.Reconciler{
		{Name: "install", Workers: 2, Sync: c.syncInstall, Watch: c.watchInstall},
		{Name: "rollout", Workers: 2, Sync: c.syncRollout, Watch: c.watchRollout},
		{Name: "progress", Workers: opts.Workers, Sync: c.syncProgress, Watch: c.watchProgress},
	} {
		if err := hub.Add(r); err != nil {
			return nil, err
		}
	}
	if !opts.ConfigGC.Disabled {
		if err := hub.AddLoop(func(ctx context.Context) { c.collectConfigsEvery(ctx, opts.ConfigGC.Interval) }); err != nil {
			return nil, err
		}
	}
	if t := opts.DeployTemplates; t != nil {
		topts := *t
		if topts.Workers <= 0 {
			topts.Workers = opts.Workers
		}
		if err := deploytemplates.Register(hub, topts); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Run runs the hub cache and every reconciler on it until ctx is done.
func (c *Controller) Run(ctx context.Context) error { return c.hub.Run(ctx) }

// managed reports whether this controller manages cma (see AddonsSelf).
func (c *Controller) managed(cma *addonv1alpha1.ClusterManagementAddOn) bool {
	return c.hub.Selected(cma)
}

// managedCMA returns the CMA of that name if this controller manages it.
func (c *Controller) managedCMA(name string) (*addonv1alpha1.ClusterManagementAddOn, bool) {
	cached, err := c.hub.CMAs.Get(name)
	if err != nil {
		return nil, false
	}
	cma := c.writtenCMAs.get(name, cached)
	if cma.DeletionTimestamp != nil || !c.managed(cma) {
		return nil, false
	}
	return cma, true
}

// addonMCAs returns the add-on's MCAs, each at its freshest known version.
func (c *Controller) addonMCAs(addon string) []*addonv1alpha1.ManagedClusterAddOn {
	objs, _ := c.hub.MCAInformer.GetIndexer().ByIndex(indexByAddon, addon)
	out := make([]*addonv1alpha1.ManagedClusterAddOn, 0, len(objs))
	for _, o := range objs {
		m := o.(*addonv1alpha1.ManagedClusterAddOn)
		out = append(out, c.writtenMCAs.get(m.Namespace+"/"+m.Name, m))
	}
	return out
}

func (c *Controller) addonWorks(namespace, addon string) []*workv1.ManifestWork {
	return c.hub.AddonWorks(namespace, addon)
}

// placementsOf lists the placement keys a CMA depends on: its install placements and canaries.
func placementsOf(cma *addonv1alpha1.ClusterManagementAddOn) []rolloutplan.PlacementKey {
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

// cmaChanged tells whether a CMA update needs a new decision: our own status writes do not;
// spec, annotation, deletion and resync events do.
func cmaChanged(old, cur any) bool {
	o, n := old.(*addonv1alpha1.ClusterManagementAddOn), cur.(*addonv1alpha1.ClusterManagementAddOn)
	return o.ResourceVersion == n.ResourceVersion || o.Generation != n.Generation ||
		!equalMaps(o.Annotations, n.Annotations) || n.DeletionTimestamp != nil
}

func cmaHandler(q hubcache.Queue) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { q.Add(obj.(*addonv1alpha1.ClusterManagementAddOn).Name) },
		UpdateFunc: func(old, cur any) {
			if cmaChanged(old, cur) {
				q.Add(cur.(*addonv1alpha1.ClusterManagementAddOn).Name)
			}
		},
	}
}

// dependents enqueues, after the coalescing delay, every managed CMA that depends on the
// placement (or placement decision) obj.
func (c *Controller) dependents(q hubcache.Queue) cache.ResourceEventHandler {
	enqueue := func(obj any) {
		m, ok := hubcache.Tombstone[metav1.Object](obj)
		if !ok {
			return
		}
		key := rolloutplan.PlacementKey{Namespace: m.GetNamespace(), Name: m.GetName()}
		if _, decision := m.(*clusterv1beta1.PlacementDecision); decision {
			key.Name = m.GetLabels()[clusterv1beta1.PlacementLabel]
		}
		cmas, _ := c.hub.CMAs.List(labels.Everything())
		for _, cma := range cmas {
			if !c.managed(cma) {
				continue
			}
			for _, k := range placementsOf(cma) {
				if k == key {
					q.AddAfter(cma.Name, c.opts.Coalesce)
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

// watchInstall: MCAs are created and deleted from CMAs, placements and clusters; an MCA appearing,
// going or changing labels is checked against them.
func (c *Controller) watchInstall(q hubcache.Queue) error {
	allCMAs := func() {
		cmas, _ := c.hub.CMAs.List(labels.Everything())
		for _, cma := range cmas {
			if c.managed(cma) {
				q.AddAfter(cma.Name, c.opts.Coalesce)
			}
		}
	}
	return register(
		registration{c.hub.CMAInformer, cmaHandler(q)},
		registration{c.hub.MCAInformer, cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) { q.Add(obj.(*addonv1alpha1.ManagedClusterAddOn).Name) },
			UpdateFunc: func(old, cur any) {
				o, m := old.(*addonv1alpha1.ManagedClusterAddOn), cur.(*addonv1alpha1.ManagedClusterAddOn)
				if (o.DeletionTimestamp == nil) != (m.DeletionTimestamp == nil) || !equalMaps(o.Labels, m.Labels) {
					q.Add(m.Name)
				}
			},
			DeleteFunc: func(obj any) {
				if m, ok := hubcache.Tombstone[*addonv1alpha1.ManagedClusterAddOn](obj); ok {
					q.Add(m.Name)
				}
			},
		}},
		registration{c.hub.ClusterInformer, cache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { allCMAs() },
			UpdateFunc: func(old, cur any) {
				o, n := old.(*clusterv1.ManagedCluster), cur.(*clusterv1.ManagedCluster)
				if (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) || !equalMaps(o.Annotations, n.Annotations) {
					allCMAs()
				}
			},
			DeleteFunc: func(any) { allCMAs() },
		}},
		registration{c.hub.PlacementInformer, c.dependents(q)},
		registration{c.hub.DecisionInformer, c.dependents(q)},
	)
}

// watchRollout: a decision is taken again when the CMA, its placements, an MCA (its status
// reports progress) or a config changes; MCA and placement bursts are coalesced. Deleted objects
// leave the overlay of written ones.
func (c *Controller) watchRollout(q hubcache.Queue) error {
	c.rolloutQ.Store(&q)
	mca := func(obj any) {
		if m, ok := hubcache.Tombstone[*addonv1alpha1.ManagedClusterAddOn](obj); ok {
			q.AddAfter(m.Name, c.opts.Coalesce)
		}
	}
	cma := cmaHandler(q)
	cma.DeleteFunc = func(obj any) {
		if m, ok := hubcache.Tombstone[*addonv1alpha1.ClusterManagementAddOn](obj); ok {
			c.writtenCMAs.forget(m.Name)
		}
	}
	regs := []registration{
		{c.hub.CMAInformer, cma},
		{c.hub.MCAInformer, cache.ResourceEventHandlerFuncs{AddFunc: mca, UpdateFunc: func(_, cur any) { mca(cur) }, DeleteFunc: func(obj any) {
			if m, ok := hubcache.Tombstone[*addonv1alpha1.ManagedClusterAddOn](obj); ok {
				c.writtenMCAs.forget(m.Namespace + "/" + m.Name)
			}
			mca(obj)
		}}},
		{c.hub.PlacementInformer, c.dependents(q)},
		{c.hub.DecisionInformer, c.dependents(q)},
	}
	if c.hub.HistoryInformer != nil {
		// A history edited or deleted by a person is read (or started) again.
		hist := func(obj any) {
			if cm, ok := hubcache.Tombstone[*corev1.ConfigMap](obj); ok && cm.Annotations[history.AddonAnnotation] != "" {
				q.Add(cm.Annotations[history.AddonAnnotation])
			}
		}
		regs = append(regs, registration{c.hub.HistoryInformer, cache.ResourceEventHandlerFuncs{AddFunc: hist, UpdateFunc: func(_, cur any) { hist(cur) },
			DeleteFunc: func(obj any) {
				if cm, ok := hubcache.Tombstone[*corev1.ConfigMap](obj); ok {
					c.writtenHistories.forget(cm.Name)
				}
				hist(obj)
			}}})
	}
	return register(regs...)
}

// watchProgress: an MCA's progress follows its own changes and its works'.
func (c *Controller) watchProgress(q hubcache.Queue) error {
	mca := func(obj any) {
		m := obj.(*addonv1alpha1.ManagedClusterAddOn)
		q.Add(m.Namespace + "/" + m.Name)
	}
	work := func(obj any) {
		w, ok := hubcache.Tombstone[*workv1.ManifestWork](obj)
		if !ok {
			return
		}
		if _, hosted := w.Labels[addonv1alpha1.AddonNamespaceLabelKey]; hosted {
			return
		}
		q.Add(w.Namespace + "/" + w.Labels[addonv1alpha1.AddonLabelKey])
	}
	return register(
		registration{c.hub.MCAInformer, cache.ResourceEventHandlerFuncs{AddFunc: mca, UpdateFunc: func(_, cur any) { mca(cur) }}},
		registration{c.hub.WorkInformer, cache.ResourceEventHandlerFuncs{AddFunc: work, UpdateFunc: func(_, cur any) { work(cur) }, DeleteFunc: work}},
	)
}

func (c *Controller) enqueueAllRollouts() {
	q := c.rolloutQ.Load()
	if q == nil {
		return // the rollout reconciler sees every CMA when it starts
	}
	cmas, _ := c.hub.CMAs.List(labels.Everything())
	for _, cma := range cmas {
		if c.managed(cma) {
			(*q).AddAfter(cma.Name, c.opts.Coalesce)
		}
	}
}

type registration struct {
	informer cache.SharedIndexInformer
	handler  cache.ResourceEventHandler
}

func register(regs ...registration) error {
	for _, r := range regs {
		if _, err := r.informer.AddEventHandler(r.handler); err != nil {
			return fmt.Errorf("registering event handlers: %w", err)
		}
	}
	return nil
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func splitKey(key string) (namespace, name string) {
	ns, n, ok := strings.Cut(key, "/")
	if !ok {
		return "", key
	}
	return ns, n
}

// Running under controller-runtime's manager (cmd/addonops-controller).

// Start runs the controller until ctx is done: it makes the controller a manager.Runnable, the
// one runnable of the process that holds a cache.
func (c *Controller) Start(ctx context.Context) error { return c.Run(ctx) }

// NeedLeaderElection tells the manager to run the controller only on the leader replica: two
// controllers writing the same statuses would fight.
func (c *Controller) NeedLeaderElection() bool { return true }

// Synced reports whether Run has started and every informer cache has synced: the controller's
// decisions rest on complete caches from then on (readiness).
func (c *Controller) Synced() bool { return c.hub.Synced() }

// EventReasonConfigurationForbidden is the reason of the Warning event on a CMA whose configs the
// controller may not read (hubcache.ForbiddenError).
const EventReasonConfigurationForbidden = addonstatus.ReasonConfigurationForbidden

// configAccess is the config cache's OnAccess: it raises a Warning event on every managed CMA
// that references a config kind the controller may not read, once per CMA and problem (the
// informer calls it at every retry, so CMAs that start referencing the kind later are told too),
// and forgets them when the permission is granted.
func (c *Controller) configAccess(gr configref.GroupResource, ferr *hubcache.ForbiddenError) {
	c.forbiddenMu.Lock()
	defer c.forbiddenMu.Unlock()
	if ferr == nil {
		delete(c.forbiddenTold, gr)
		return
	}
	if c.forbiddenTold == nil {
		c.forbiddenTold = map[configref.GroupResource]map[string]bool{}
	}
	told := c.forbiddenTold[gr]
	if told == nil {
		told = map[string]bool{}
		c.forbiddenTold[gr] = told
	}
	cmas, _ := c.hub.CMAs.List(labels.Everything())
	for _, cma := range cmas {
		if !c.managed(cma) || told[cma.Name] {
			continue
		}
		for _, ref := range referencedResources(cma, c.addonMCAs(cma.Name)) {
			if ref == gr {
				told[cma.Name] = true
				c.recorder.Event(cma, corev1.EventTypeWarning, EventReasonConfigurationForbidden, "config kind "+ferr.Error())
				break
			}
		}
	}
}

// RolloutClusterCounts counts, for every managed add-on and install placement, the clusters the
// placement selects by the state of their MCA (rolloutmetrics.StateOf); a cluster in two
// placements counts in both. It returns nothing until the caches have synced (a replica that is
// not the leader never syncs them).
func (c *Controller) RolloutClusterCounts() []rolloutmetrics.ClusterCount {
	if !c.Synced() {
		return nil
	}
	var out []rolloutmetrics.ClusterCount
	cmas, _ := c.hub.CMAs.List(labels.Everything())
	for _, cma := range cmas {
		if !c.managed(cma) {
			continue
		}
		mcas := map[string]*addonv1alpha1.ManagedClusterAddOn{}
		for _, m := range c.addonMCAs(cma.Name) {
			mcas[m.Namespace] = m
		}
		for _, p := range cma.Spec.InstallStrategy.Placements {
			sel := labels.SelectorFromSet(labels.Set{clusterv1beta1.PlacementLabel: p.Name})
			decisions, _ := c.hub.Decisions.PlacementDecisions(p.Namespace).List(sel)
			seen := map[string]bool{}
			counts := map[string]int{}
			for _, d := range decisions {
				for _, cd := range d.Status.Decisions {
					if cd.ClusterName == "" || seen[cd.ClusterName] {
						continue
					}
					seen[cd.ClusterName] = true
					counts[rolloutmetrics.StateOf(mcas[cd.ClusterName])]++
				}
			}
			for state, n := range counts {
				out = append(out, rolloutmetrics.ClusterCount{Addon: cma.Name, Placement: p.Namespace + "/" + p.Name, State: state, Count: n})
			}
		}
	}
	return out
}
