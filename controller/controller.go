// Package controller is addonops' hub controller: it installs ManagedClusterAddOns from placements,
// rolls new config versions out across clusters with OCM's rollout strategies and canary
// placements, tracks the add-on's ManifestWorks and reports progress in the add-on's status.
//
// Three reconcilers share one set of informers:
//   - install (key: CMA name): creates and deletes MCAs (decision: package installplan);
//   - rollout (key: CMA name): desired configs of every MCA, batches, CMA status (rolloutplan);
//   - progress (key: MCA namespace/name): lastAppliedConfig and Progressing from works (mcastatus).
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
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	addoninformers "open-cluster-management.io/api/client/addon/informers/externalversions"
	addonlisters "open-cluster-management.io/api/client/addon/listers/addon/v1alpha1"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterinformers "open-cluster-management.io/api/client/cluster/informers/externalversions"
	clusterlistersv1 "open-cluster-management.io/api/client/cluster/listers/cluster/v1"
	clusterlisters "open-cluster-management.io/api/client/cluster/listers/cluster/v1beta1"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	workinformers "open-cluster-management.io/api/client/work/informers/externalversions"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/controller/hubcache"
	"github.com/addonops/addonops/controller/rolloutmetrics"
	"github.com/addonops/addonops/controller/rolloutplan"
	"github.com/addonops/addonops/internal/configref"
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

	addon    addonclient.Interface
	recorder record.EventRecorder
	events   record.EventBroadcaster

	addonFactory   addoninformers.SharedInformerFactory
	clusterFactory clusterinformers.SharedInformerFactory
	workFactory    workinformers.SharedInformerFactory

	cmas       addonlisters.ClusterManagementAddOnLister
	mcaIndex   cache.Indexer
	clusters   clusterlistersv1.ManagedClusterLister
	placements clusterlisters.PlacementLister
	decisions  clusterlisters.PlacementDecisionLister
	workIndex  cache.Indexer
	configs    *configSource

	freshCMA *fresh[*addonv1alpha1.ClusterManagementAddOn]
	freshMCA *fresh[*addonv1alpha1.ManagedClusterAddOn]

	installQ  workqueue.TypedRateLimitingInterface[string]
	rolloutQ  workqueue.TypedRateLimitingInterface[string]
	progressQ workqueue.TypedRateLimitingInterface[string]

	// only, when set, restricts the controller to these add-on names: tests run several controllers
	// on one hub, each on its own add-on.
	only map[string]bool

	// started is set when Run has started the informers (Synced).
	started atomic.Bool
	// forbiddenMu guards forbiddenTold: per config kind the controller may not read, the CMAs
	// already told so by an event.
	forbiddenMu   sync.Mutex
	forbiddenTold map[configref.GroupResource]map[string]bool
}

const (
	indexByAddon = "addon"      // MCAs by name (= add-on name)
	indexByMCA   = "addonWorks" // works by <namespace>/<addon-name label>
)

// New builds a controller talking to the hub cfg points at.
func New(cfg *rest.Config, opts Options) (*Controller, error) {
	if err := opts.Complete(); err != nil {
		return nil, err
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the HTTP client for %s: %w", cfg.Host, err)
	}
	kube, err := kubernetes.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("building the Kubernetes client: %w", err)
	}
	addon, err := addonclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("building the add-on client: %w", err)
	}
	cluster, err := clusterclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("building the cluster client: %w", err)
	}
	work, err := workclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("building the work client: %w", err)
	}
	dyn, err := dynamic.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("building the dynamic client: %w", err)
	}

	c := &Controller{
		opts:     opts,
		addon:    addon,
		freshCMA: newFresh[*addonv1alpha1.ClusterManagementAddOn](),
		freshMCA: newFresh[*addonv1alpha1.ManagedClusterAddOn](),
		installQ: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "install"}),
		rolloutQ: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "rollout"}),
		progressQ: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "progress"}),
	}

	scheme := runtime.NewScheme()
	utilruntime.Must(addonv1alpha1.Install(scheme))
	utilruntime.Must(corev1.AddToScheme(scheme))
	c.events = record.NewBroadcaster()
	c.events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	c.recorder = c.events.NewRecorder(scheme, corev1.EventSource{Component: "addonops-controller"})

	// Objects are cached without managedFields (and works without their manifests): at thousands of
	// clusters that is most of the memory.
	stripManaged := addoninformers.WithTransform(stripManagedFields)
	c.addonFactory = addoninformers.NewSharedInformerFactoryWithOptions(addon, opts.Resync, stripManaged)
	c.clusterFactory = clusterinformers.NewSharedInformerFactoryWithOptions(cluster, opts.Resync, clusterinformers.WithTransform(stripManagedFields))
	addonWorks, err := labels.NewRequirement(addonv1alpha1.AddonLabelKey, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	c.workFactory = workinformers.NewSharedInformerFactoryWithOptions(work, opts.Resync,
		workinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = addonWorks.String() }),
		workinformers.WithTransform(stripWork))

	cmaInf := c.addonFactory.Addon().V1alpha1().ClusterManagementAddOns()
	mcaInf := c.addonFactory.Addon().V1alpha1().ManagedClusterAddOns()
	clusterInf := c.clusterFactory.Cluster().V1().ManagedClusters()
	placementInf := c.clusterFactory.Cluster().V1beta1().Placements()
	decisionInf := c.clusterFactory.Cluster().V1beta1().PlacementDecisions()
	workInf := c.workFactory.Work().V1().ManifestWorks()

	if err := mcaInf.Informer().AddIndexers(cache.Indexers{indexByAddon: func(obj any) ([]string, error) {
		return []string{obj.(*addonv1alpha1.ManagedClusterAddOn).Name}, nil
	}}); err != nil {
		return nil, fmt.Errorf("indexing ManagedClusterAddOns: %w", err)
	}
	if err := workInf.Informer().AddIndexers(cache.Indexers{indexByMCA: func(obj any) ([]string, error) {
		w := obj.(*workv1.ManifestWork)
		return []string{w.Namespace + "/" + w.Labels[addonv1alpha1.AddonLabelKey]}, nil
	}}); err != nil {
		return nil, fmt.Errorf("indexing ManifestWorks: %w", err)
	}
	c.cmas = cmaInf.Lister()
	c.mcaIndex = mcaInf.Informer().GetIndexer()
	c.clusters = clusterInf.Lister()
	c.placements = placementInf.Lister()
	c.decisions = decisionInf.Lister()
	c.workIndex = workInf.Informer().GetIndexer()
	c.configs = newConfigSource(kube.Discovery(), dyn, opts.Resync, c.enqueueAllRollouts, c.configAccess)

	for _, reg := range []func() error{
		func() error { _, err := cmaInf.Informer().AddEventHandler(c.cmaHandler()); return err },
		func() error { _, err := mcaInf.Informer().AddEventHandler(c.mcaHandler()); return err },
		func() error { _, err := clusterInf.Informer().AddEventHandler(c.clusterHandler()); return err },
		func() error { _, err := placementInf.Informer().AddEventHandler(c.placementHandler()); return err },
		func() error { _, err := decisionInf.Informer().AddEventHandler(c.placementHandler()); return err },
		func() error { _, err := workInf.Informer().AddEventHandler(c.workHandler()); return err },
	} {
		if err := reg(); err != nil {
			return nil, fmt.Errorf("registering event handlers: %w", err)
		}
	}
	return c, nil
}

func stripManagedFields(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

func stripWork(obj any) (any, error) {
	if w, ok := obj.(*workv1.ManifestWork); ok {
		w.SetManagedFields(nil)
		w.Spec = workv1.ManifestWorkSpec{}
		w.Status.ResourceStatus = workv1.ManifestResourceStatus{}
	}
	return obj, nil
}

// Run starts the informers and workers and blocks until ctx is done.
func (c *Controller) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	defer c.installQ.ShutDown()
	defer c.rolloutQ.ShutDown()
	defer c.progressQ.ShutDown()
	defer c.events.Shutdown()

	c.addonFactory.Start(ctx.Done())
	c.clusterFactory.Start(ctx.Done())
	c.workFactory.Start(ctx.Done())
	c.started.Store(true)
	if !cache.WaitForCacheSync(ctx.Done(), c.hasSynced()...) {
		// Only a stop ends the wait early: a stop before the caches synced is a clean shutdown.
		logger.Info("Stopped before the informer caches synced", "reason", context.Cause(ctx))
		return nil
	}
	logger.Info("Caches synced", "addons", c.opts.Addons, "workers", c.opts.Workers)

	var wg sync.WaitGroup
	run := func(n int, q workqueue.TypedRateLimitingInterface[string], name string, sync func(context.Context, string) (time.Duration, error)) {
		for range n {
			wg.Go(func() { c.worker(ctx, q, name, sync) })
		}
	}
	run(2, c.installQ, "install", c.syncInstall)
	run(2, c.rolloutQ, "rollout", c.syncRollout)
	run(c.opts.Workers, c.progressQ, "progress", c.syncProgress)
	if !c.opts.ConfigGC.Disabled {
		wg.Go(func() { c.collectConfigsEvery(ctx, c.opts.ConfigGC.Interval) })
	}
	<-ctx.Done()
	logger.Info("Shutting down")
	c.installQ.ShutDown()
	c.rolloutQ.ShutDown()
	c.progressQ.ShutDown()
	wg.Wait()
	c.addonFactory.Shutdown()
	c.clusterFactory.Shutdown()
	c.workFactory.Shutdown()
	return nil
}

func (c *Controller) hasSynced() []cache.InformerSynced {
	return []cache.InformerSynced{
		c.addonFactory.Addon().V1alpha1().ClusterManagementAddOns().Informer().HasSynced,
		c.addonFactory.Addon().V1alpha1().ManagedClusterAddOns().Informer().HasSynced,
		c.clusterFactory.Cluster().V1().ManagedClusters().Informer().HasSynced,
		c.clusterFactory.Cluster().V1beta1().Placements().Informer().HasSynced,
		c.clusterFactory.Cluster().V1beta1().PlacementDecisions().Informer().HasSynced,
		c.workFactory.Work().V1().ManifestWorks().Informer().HasSynced,
	}
}

// worker processes one queue. A sync returning an error is retried with backoff; one returning a
// positive duration is looked at again after it (soak times, progress deadlines).
func (c *Controller) worker(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], name string, sync func(context.Context, string) (time.Duration, error)) {
	for {
		key, shutdown := q.Get()
		if shutdown {
			return
		}
		func() {
			defer q.Done(key)
			logger := klog.FromContext(ctx).WithValues("reconciler", name, "key", key)
			after, err := sync(klog.NewContext(ctx, logger), key)
			switch {
			case err != nil:
				if isConflict(err) {
					logger.V(4).Info("Conflict, retrying", "err", err.Error())
				} else {
					logger.Error(err, "Reconcile failed, retrying")
				}
				q.AddRateLimited(key)
			default:
				q.Forget(key)
				if after > 0 {
					q.AddAfter(key, after)
				}
			}
		}()
	}
}

// managed reports whether this controller manages cma (see AddonsSelf).
func (c *Controller) managed(cma *addonv1alpha1.ClusterManagementAddOn) bool {
	if c.only != nil && !c.only[cma.Name] {
		return false
	}
	return hubcache.Selects(c.opts.Addons, cma)
}

// managedCMA returns the CMA of that name if this controller manages it.
func (c *Controller) managedCMA(name string) (*addonv1alpha1.ClusterManagementAddOn, bool) {
	cached, err := c.cmas.Get(name)
	if err != nil {
		return nil, false
	}
	cma := c.freshCMA.get(name, cached)
	if cma.DeletionTimestamp != nil || !c.managed(cma) {
		return nil, false
	}
	return cma, true
}

// addonMCAs returns the add-on's MCAs, each at its freshest known version.
func (c *Controller) addonMCAs(addon string) []*addonv1alpha1.ManagedClusterAddOn {
	objs, _ := c.mcaIndex.ByIndex(indexByAddon, addon)
	out := make([]*addonv1alpha1.ManagedClusterAddOn, 0, len(objs))
	for _, o := range objs {
		m := o.(*addonv1alpha1.ManagedClusterAddOn)
		out = append(out, c.freshMCA.get(m.Namespace+"/"+m.Name, m))
	}
	return out
}

func (c *Controller) addonWorks(namespace, addon string) []*workv1.ManifestWork {
	objs, _ := c.workIndex.ByIndex(indexByMCA, namespace+"/"+addon)
	out := make([]*workv1.ManifestWork, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*workv1.ManifestWork))
	}
	return out
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

// Event handlers.

func (c *Controller) enqueueCMA(name string) {
	c.installQ.Add(name)
	c.rolloutQ.Add(name)
}

func (c *Controller) enqueueAllRollouts() {
	cmas, _ := c.cmas.List(labels.Everything())
	for _, cma := range cmas {
		if c.managed(cma) {
			c.rolloutQ.AddAfter(cma.Name, c.opts.Coalesce)
		}
	}
}

func (c *Controller) cmaHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.enqueueCMA(obj.(*addonv1alpha1.ClusterManagementAddOn).Name) },
		UpdateFunc: func(old, cur any) {
			o, n := old.(*addonv1alpha1.ClusterManagementAddOn), cur.(*addonv1alpha1.ClusterManagementAddOn)
			// Our own status writes need no new decision; spec, annotation and resync events do.
			if o.ResourceVersion != n.ResourceVersion && o.Generation == n.Generation &&
				equalMaps(o.Annotations, n.Annotations) && n.DeletionTimestamp == nil {
				return
			}
			c.enqueueCMA(n.Name)
		},
		DeleteFunc: func(obj any) {
			if cma, ok := tombstone[*addonv1alpha1.ClusterManagementAddOn](obj); ok {
				c.freshCMA.forget(cma.Name)
			}
		},
	}
}

func (c *Controller) mcaHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			m := obj.(*addonv1alpha1.ManagedClusterAddOn)
			c.installQ.Add(m.Name)
			c.rolloutQ.AddAfter(m.Name, c.opts.Coalesce)
			c.progressQ.Add(m.Namespace + "/" + m.Name)
		},
		UpdateFunc: func(old, cur any) {
			o, m := old.(*addonv1alpha1.ManagedClusterAddOn), cur.(*addonv1alpha1.ManagedClusterAddOn)
			if (o.DeletionTimestamp == nil) != (m.DeletionTimestamp == nil) || !equalMaps(o.Labels, m.Labels) {
				c.installQ.Add(m.Name)
			}
			c.rolloutQ.AddAfter(m.Name, c.opts.Coalesce)
			c.progressQ.Add(m.Namespace + "/" + m.Name)
		},
		DeleteFunc: func(obj any) {
			m, ok := tombstone[*addonv1alpha1.ManagedClusterAddOn](obj)
			if !ok {
				return
			}
			c.freshMCA.forget(m.Namespace + "/" + m.Name)
			c.installQ.Add(m.Name)
			c.rolloutQ.AddAfter(m.Name, c.opts.Coalesce)
		},
	}
}

func (c *Controller) clusterHandler() cache.ResourceEventHandler {
	all := func() {
		cmas, _ := c.cmas.List(labels.Everything())
		for _, cma := range cmas {
			if c.managed(cma) {
				c.installQ.AddAfter(cma.Name, c.opts.Coalesce)
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { all() },
		UpdateFunc: func(old, cur any) {
			o, n := old.(*clusterv1.ManagedCluster), cur.(*clusterv1.ManagedCluster)
			if (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) || !equalMaps(o.Annotations, n.Annotations) {
				all()
			}
		},
		DeleteFunc: func(any) { all() },
	}
}

// placementHandler handles Placements and PlacementDecisions: the CMAs depending on the placement
// are looked at again.
func (c *Controller) placementHandler() cache.ResourceEventHandler {
	enqueue := func(obj any) {
		m, ok := tombstone[metav1.Object](obj)
		if !ok {
			return
		}
		key := rolloutplan.PlacementKey{Namespace: m.GetNamespace(), Name: m.GetName()}
		if _, decision := obj.(*clusterv1beta1.PlacementDecision); decision {
			key.Name = m.GetLabels()[clusterv1beta1.PlacementLabel]
		}
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			if pd, ok := d.Obj.(*clusterv1beta1.PlacementDecision); ok {
				key.Name = pd.Labels[clusterv1beta1.PlacementLabel]
			}
		}
		cmas, _ := c.cmas.List(labels.Everything())
		for _, cma := range cmas {
			if !c.managed(cma) {
				continue
			}
			for _, k := range placementsOf(cma) {
				if k == key {
					c.installQ.AddAfter(cma.Name, c.opts.Coalesce)
					c.rolloutQ.AddAfter(cma.Name, c.opts.Coalesce)
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

func (c *Controller) workHandler() cache.ResourceEventHandler {
	enqueue := func(obj any) {
		w, ok := tombstone[*workv1.ManifestWork](obj)
		if !ok {
			return
		}
		if _, hosted := w.Labels[addonv1alpha1.AddonNamespaceLabelKey]; hosted {
			return
		}
		c.progressQ.Add(w.Namespace + "/" + w.Labels[addonv1alpha1.AddonLabelKey])
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, cur any) { enqueue(cur) },
		DeleteFunc: enqueue,
	}
}

// tombstone unwraps the object of a delete event.
func tombstone[T any](obj any) (T, bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	t, ok := obj.(T)
	return t, ok
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

// Start runs the controller until ctx is done: it makes the controller a manager.Runnable.
func (c *Controller) Start(ctx context.Context) error { return c.Run(ctx) }

// NeedLeaderElection tells the manager to run the controller only on the leader replica: two
// controllers writing the same statuses would fight.
func (c *Controller) NeedLeaderElection() bool { return true }

// Synced reports whether Run has started and every informer cache has synced: the controller's
// decisions rest on complete caches from then on (readiness).
func (c *Controller) Synced() bool {
	if !c.started.Load() {
		return false
	}
	for _, synced := range c.hasSynced() {
		if !synced() {
			return false
		}
	}
	return true
}

// EventReasonConfigurationForbidden is the reason of the Warning event on a CMA whose configs the
// controller may not read (ForbiddenError).
const EventReasonConfigurationForbidden = "ConfigurationForbidden"

// configAccess is the config source's onAccess: it raises a Warning event on every managed CMA
// that references a config kind the controller may not read, once per CMA and problem (the
// informer calls it at every retry, so CMAs that start referencing the kind later are told too),
// and forgets them when the permission is granted.
func (c *Controller) configAccess(gr configref.GroupResource, ferr *ForbiddenError) {
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
	cmas, _ := c.cmas.List(labels.Everything())
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
	cmas, _ := c.cmas.List(labels.Everything())
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
			decisions, _ := c.decisions.PlacementDecisions(p.Namespace).List(sel)
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
