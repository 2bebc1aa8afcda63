// Package hubcache holds the hub state the template reconcilers (agentdeploy, registration,
// addonhealth) read: one set of informers they share, the lookups they need (an add-on's
// ManifestWorks, the AddOnTemplate and AddOnDeploymentConfigs a ManagedClusterAddOn was told to
// run), and which add-ons they may act on.
//
// The rollout controller (package controller) keeps its informers private and strips ManifestWork
// specs from its cache, so the template reconcilers cannot share its informers: they need the
// works' manifests (to keep manifests in the work that holds them and to find the workloads to
// probe). This cache therefore watches ManagedClusterAddOns, ClusterManagementAddOns,
// ManagedClusters and add-on ManifestWorks a second time.
package hubcache

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	addoninformers "open-cluster-management.io/api/client/addon/informers/externalversions"
	addonlisters "open-cluster-management.io/api/client/addon/listers/addon/v1alpha1"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterinformers "open-cluster-management.io/api/client/cluster/informers/externalversions"
	clusterlisters "open-cluster-management.io/api/client/cluster/listers/cluster/v1"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	workinformers "open-cluster-management.io/api/client/work/informers/externalversions"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/spechash"
)

// Add-on selections, the values of the rollout controller's --addons (AddonsSelf and
// AddonsAll; not imported, so the controller package can run these reconcilers itself).
const (
	AddonsSelf = "self"
	AddonsAll  = "all"
)

// Options configure the cache.
type Options struct {
	// Addons selects the ClusterManagementAddOns the reconcilers act on, with the rollout
	// controller's meaning (AddonsSelf, the default, or AddonsAll).
	Addons string
	// Only, when set, further restricts them to these add-on names (tests sharing a hub).
	Only []string
	// Resync is the informers' resync period. Default 10m.
	Resync time.Duration
}

// Clients are the typed clients the reconcilers write with.
type Clients struct {
	Kube    kubernetes.Interface
	Addon   addonclient.Interface
	Cluster clusterclient.Interface
	Work    workclient.Interface
	Dynamic dynamic.Interface
}

// Group/versions/resources of the configs a template add-on renders with.
var (
	AddOnTemplatesGVR         = addonv1alpha1.SchemeGroupVersion.WithResource("addontemplates")
	AddOnDeploymentConfigsGVR = addonv1alpha1.SchemeGroupVersion.WithResource("addondeploymentconfigs")
)

// Index names.
const (
	// IndexWorksByAddon indexes add-on ManifestWorks by "<namespace>/<addon-name label>".
	IndexWorksByAddon = "addonWorks"
	// IndexMCAsByAddon indexes ManagedClusterAddOns by name (= add-on name).
	IndexMCAsByAddon = "addon"
	// IndexMCAsByConfig indexes ManagedClusterAddOns by the configs they were told to run
	// (ConfigKey of each desired config).
	IndexMCAsByConfig = "desiredConfig"
	// IndexByAddonCluster indexes RoleBindings and CertificateSigningRequests by
	// "<cluster>/<addon>" from their labels.
	IndexByAddonCluster = "addonCluster"
)

// ClusterNameLabel names the managed cluster a hub object belongs to (OCM's
// open-cluster-management.io/cluster-name, set on add-on CSRs by the registration agent and on the
// RoleBindings the registration reconciler creates).
const ClusterNameLabel = clusterv1.ClusterNameLabelKey

// Cache is the shared hub state.
type Cache struct {
	Clients Clients
	opts    Options
	only    map[string]bool

	addonFactory   addoninformers.SharedInformerFactory
	clusterFactory clusterinformers.SharedInformerFactory
	workFactory    workinformers.SharedInformerFactory
	kubeFactory    kubeinformers.SharedInformerFactory
	csrFactory     kubeinformers.SharedInformerFactory
	dynFactory     dynamicinformer.DynamicSharedInformerFactory

	CMAs     addonlisters.ClusterManagementAddOnLister
	MCAs     addonlisters.ManagedClusterAddOnLister
	Clusters clusterlisters.ManagedClusterLister

	// Informers, for event handlers and indexes.
	CMAInformer         cache.SharedIndexInformer
	MCAInformer         cache.SharedIndexInformer
	ClusterInformer     cache.SharedIndexInformer
	WorkInformer        cache.SharedIndexInformer
	TemplateInformer    cache.SharedIndexInformer
	ADCInformer         cache.SharedIndexInformer
	RoleBindingInformer cache.SharedIndexInformer
	CSRInformer         cache.SharedIndexInformer

	startOnce sync.Once

	hashMu sync.Mutex
	hashes map[string]memo // by config UID
}

// New builds the cache for the hub cfg points at. Informers start with Start.
func New(cfg *rest.Config, opts Options) (*Cache, error) {
	switch opts.Addons {
	case "":
		opts.Addons = AddonsSelf
	case AddonsSelf, AddonsAll:
	default:
		return nil, fmt.Errorf("add-on selection %q: want %q or %q", opts.Addons, AddonsSelf, AddonsAll)
	}
	if opts.Resync <= 0 {
		opts.Resync = 10 * time.Minute
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the HTTP client for %s: %w", cfg.Host, err)
	}
	c := &Cache{opts: opts, hashes: map[string]memo{}}
	if len(opts.Only) > 0 {
		c.only = map[string]bool{}
		for _, n := range opts.Only {
			c.only[n] = true
		}
	}
	if c.Clients.Kube, err = kubernetes.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("building the Kubernetes client: %w", err)
	}
	if c.Clients.Addon, err = addonclient.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("building the add-on client: %w", err)
	}
	if c.Clients.Cluster, err = clusterclient.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("building the cluster client: %w", err)
	}
	if c.Clients.Work, err = workclient.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("building the work client: %w", err)
	}
	if c.Clients.Dynamic, err = dynamic.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("building the dynamic client: %w", err)
	}

	addonLabelExists, err := labels.NewRequirement(addonv1alpha1.AddonLabelKey, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	byAddonLabel := func(o *metav1.ListOptions) { o.LabelSelector = addonLabelExists.String() }
	strip := func(obj any) (any, error) {
		if m, ok := obj.(metav1.Object); ok {
			m.SetManagedFields(nil)
		}
		return obj, nil
	}
	c.addonFactory = addoninformers.NewSharedInformerFactoryWithOptions(c.Clients.Addon, opts.Resync, addoninformers.WithTransform(strip))
	c.clusterFactory = clusterinformers.NewSharedInformerFactoryWithOptions(c.Clients.Cluster, opts.Resync, clusterinformers.WithTransform(strip))
	c.workFactory = workinformers.NewSharedInformerFactoryWithOptions(c.Clients.Work, opts.Resync,
		workinformers.WithTransform(strip), workinformers.WithTweakListOptions(byAddonLabel))
	// Only RoleBindings and CSRs labelled with an add-on name are add-on business.
	c.kubeFactory = kubeinformers.NewSharedInformerFactoryWithOptions(c.Clients.Kube, opts.Resync,
		kubeinformers.WithTransform(strip), kubeinformers.WithTweakListOptions(byAddonLabel))
	c.csrFactory = c.kubeFactory
	c.dynFactory = dynamicinformer.NewDynamicSharedInformerFactory(c.Clients.Dynamic, opts.Resync)

	cmas := c.addonFactory.Addon().V1alpha1().ClusterManagementAddOns()
	mcas := c.addonFactory.Addon().V1alpha1().ManagedClusterAddOns()
	clusters := c.clusterFactory.Cluster().V1().ManagedClusters()
	c.CMAs, c.MCAs, c.Clusters = cmas.Lister(), mcas.Lister(), clusters.Lister()
	c.CMAInformer, c.MCAInformer, c.ClusterInformer = cmas.Informer(), mcas.Informer(), clusters.Informer()
	c.WorkInformer = c.workFactory.Work().V1().ManifestWorks().Informer()
	c.RoleBindingInformer = c.kubeFactory.Rbac().V1().RoleBindings().Informer()
	c.CSRInformer = c.csrFactory.Certificates().V1().CertificateSigningRequests().Informer()
	c.TemplateInformer = c.dynFactory.ForResource(AddOnTemplatesGVR).Informer()
	c.ADCInformer = c.dynFactory.ForResource(AddOnDeploymentConfigsGVR).Informer()
	for _, inf := range []cache.SharedIndexInformer{c.TemplateInformer, c.ADCInformer} {
		if err := inf.SetTransform(strip); err != nil {
			return nil, fmt.Errorf("setting the config informer transform: %w", err)
		}
	}

	forget := cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if m, ok := obj.(metav1.Object); ok {
			c.hashMu.Lock()
			delete(c.hashes, string(m.GetUID()))
			c.hashMu.Unlock()
		}
	}}
	for _, inf := range []cache.SharedIndexInformer{c.TemplateInformer, c.ADCInformer} {
		if _, err := inf.AddEventHandler(forget); err != nil {
			return nil, fmt.Errorf("watching configs: %w", err)
		}
	}

	if err := c.MCAInformer.AddIndexers(cache.Indexers{
		IndexMCAsByAddon: func(obj any) ([]string, error) {
			return []string{obj.(*addonv1alpha1.ManagedClusterAddOn).Name}, nil
		},
		IndexMCAsByConfig: func(obj any) ([]string, error) {
			var keys []string
			for _, r := range obj.(*addonv1alpha1.ManagedClusterAddOn).Status.ConfigReferences {
				if r.DesiredConfig != nil {
					keys = append(keys, ConfigKey(configref.GroupResource{Group: r.Group, Resource: r.Resource}, r.DesiredConfig.Namespace, r.DesiredConfig.Name))
				}
			}
			return keys, nil
		},
	}); err != nil {
		return nil, fmt.Errorf("indexing ManagedClusterAddOns: %w", err)
	}
	if err := c.WorkInformer.AddIndexers(cache.Indexers{IndexWorksByAddon: func(obj any) ([]string, error) {
		w := obj.(*workv1.ManifestWork)
		return []string{w.Namespace + "/" + w.Labels[addonv1alpha1.AddonLabelKey]}, nil
	}}); err != nil {
		return nil, fmt.Errorf("indexing ManifestWorks: %w", err)
	}
	byAddonCluster := cache.Indexers{IndexByAddonCluster: func(obj any) ([]string, error) {
		m, ok := obj.(metav1.Object)
		if !ok {
			return nil, nil
		}
		l := m.GetLabels()
		if l[ClusterNameLabel] == "" || l[addonv1alpha1.AddonLabelKey] == "" {
			return nil, nil
		}
		return []string{l[ClusterNameLabel] + "/" + l[addonv1alpha1.AddonLabelKey]}, nil
	}}
	for _, inf := range []cache.SharedIndexInformer{c.RoleBindingInformer, c.CSRInformer} {
		if err := inf.AddIndexers(byAddonCluster); err != nil {
			return nil, fmt.Errorf("indexing by cluster and add-on: %w", err)
		}
	}
	return c, nil
}

// Start starts every informer (once; later calls do nothing) and waits for their caches.
func (c *Cache) Start(ctx context.Context) error {
	var err error
	c.startOnce.Do(func() {
		c.addonFactory.Start(ctx.Done())
		c.clusterFactory.Start(ctx.Done())
		c.workFactory.Start(ctx.Done())
		c.kubeFactory.Start(ctx.Done())
		c.dynFactory.Start(ctx.Done())
		for _, synced := range []map[reflect.Type]bool{
			c.addonFactory.WaitForCacheSync(ctx.Done()), c.clusterFactory.WaitForCacheSync(ctx.Done()),
			c.workFactory.WaitForCacheSync(ctx.Done()), c.kubeFactory.WaitForCacheSync(ctx.Done()),
		} {
			for typ, ok := range synced {
				if !ok {
					err = fmt.Errorf("the informer cache of %v did not sync: %w", typ, ctx.Err())
				}
			}
		}
		for gvr, ok := range c.dynFactory.WaitForCacheSync(ctx.Done()) {
			if !ok {
				err = fmt.Errorf("the informer cache of %v did not sync: %w", gvr, ctx.Err())
			}
		}
	})
	return err
}

// Shutdown waits for the informers to stop after the context given to Start is done.
func (c *Cache) Shutdown() {
	c.addonFactory.Shutdown()
	c.clusterFactory.Shutdown()
	c.workFactory.Shutdown()
	c.kubeFactory.Shutdown()
	c.dynFactory.Shutdown()
}

// Managed reports whether the reconcilers act on the add-on of that name: its CMA exists, is not
// being deleted and is selected by Options.Addons with the rollout controller's rule (AddonsSelf:
// annotated addon.open-cluster-management.io/lifecycle with any value but "addon-manager").
func (c *Cache) Managed(addon string) bool {
	if c.only != nil && !c.only[addon] {
		return false
	}
	cma, err := c.CMAs.Get(addon)
	if err != nil || cma.DeletionTimestamp != nil {
		return false
	}
	return Selects(c.opts.Addons, cma)
}

// Selects is the one add-on selection rule, used by the rollout controller and the template
// reconcilers alike: AddonsAll takes every CMA, AddonsSelf those annotated
// addon.open-cluster-management.io/lifecycle with any value but "addon-manager".
func Selects(addons string, cma *addonv1alpha1.ClusterManagementAddOn) bool {
	if addons == AddonsAll {
		return true
	}
	v, ok := cma.Annotations[addonv1alpha1.AddonLifecycleAnnotationKey]
	return ok && v != addonv1alpha1.AddonLifecycleAddonManagerAnnotationValue
}

// AddonWorks returns the ManifestWorks in namespace labelled with the add-on's name, sorted by
// name. They are cached objects: copy before changing them.
func (c *Cache) AddonWorks(namespace, addon string) []*workv1.ManifestWork {
	objs, _ := c.WorkInformer.GetIndexer().ByIndex(IndexWorksByAddon, namespace+"/"+addon)
	out := make([]*workv1.ManifestWork, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*workv1.ManifestWork))
	}
	slices.SortFunc(out, func(a, b *workv1.ManifestWork) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// MCAsByIndex returns the keys ("<namespace>/<name>") of the ManagedClusterAddOns with that index
// value.
func (c *Cache) MCAsByIndex(index, value string) []string {
	keys, _ := c.MCAInformer.GetIndexer().IndexKeys(index, value)
	return keys
}

// ByAddonCluster returns the cached objects of inf (RoleBindings or CSRs) labelled for cluster and
// add-on.
func ByAddonCluster(inf cache.SharedIndexInformer, cluster, addon string) []any {
	objs, _ := inf.GetIndexer().ByIndex(IndexByAddonCluster, cluster+"/"+addon)
	return objs
}

// ConfigKey identifies a config object across group/resources: "<resource>[.<group>]/<namespace>/<name>".
func ConfigKey(gr configref.GroupResource, namespace, name string) string {
	return gr.String() + "/" + namespace + "/" + name
}

// Config is one config a ManagedClusterAddOn was told to run, as the hub holds it now.
type Config struct {
	configref.Ref
	// DesiredHash is the spec hash the MCA status asks for.
	DesiredHash string
	// Object is the config as cached, nil when it does not exist.
	Object *unstructured.Unstructured
	// Hash is Object's spec hash.
	Hash string
}

// Current reports whether the config exists with the content the MCA was told to run. An
// AddOnTemplate or AddOnDeploymentConfig edited in place has a new hash before the rollout reaches
// the cluster; rendering it then would upgrade a cluster outside its rollout turn.
func (c Config) Current() bool {
	return c.Object != nil && c.DesiredHash != "" && c.Hash == c.DesiredHash
}

// Problem says why a config is not current, "" when it is.
func (c Config) Problem() string {
	switch {
	case c.DesiredHash == "":
		return fmt.Sprintf("%s has no desired spec hash yet", c.Ref)
	case c.Object == nil:
		return fmt.Sprintf("%s not found", c.Ref)
	case c.Hash != c.DesiredHash:
		return fmt.Sprintf("%s has changed (spec hash %s) and this cluster's rollout turn for it has not come (desired spec hash %s)",
			c.Ref, spechash.Short(c.Hash), spechash.Short(c.DesiredHash))
	}
	return ""
}

// Desired are the template and deployment configs a ManagedClusterAddOn was told to run.
type Desired struct {
	// Template is the first desired AddOnTemplate (the one OCM renders), nil when the add-on has
	// none: then it is not a template add-on.
	Template *Config
	// DeploymentConfigs are the desired AddOnDeploymentConfigs in status order.
	DeploymentConfigs []Config
}

// Current reports whether every desired config exists with its desired content.
func (d Desired) Current() bool {
	if d.Template == nil || !d.Template.Current() {
		return false
	}
	for _, a := range d.DeploymentConfigs {
		if !a.Current() {
			return false
		}
	}
	return true
}

// Problem says why Current is false.
func (d Desired) Problem() string {
	if d.Template == nil {
		return "no AddOnTemplate among the desired configs"
	}
	var out []string
	if p := d.Template.Problem(); p != "" {
		out = append(out, p)
	}
	for _, a := range d.DeploymentConfigs {
		if p := a.Problem(); p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "; ")
}

// DesiredOf looks up the configs mca was told to run (status.configReferences[].desiredConfig).
func (c *Cache) DesiredOf(mca *addonv1alpha1.ManagedClusterAddOn) Desired {
	var d Desired
	for _, r := range mca.Status.ConfigReferences {
		if r.DesiredConfig == nil {
			continue
		}
		gr := configref.GroupResource{Group: r.Group, Resource: r.Resource}
		cfg := Config{Ref: configref.Ref{GroupResource: gr, Namespace: r.DesiredConfig.Namespace, Name: r.DesiredConfig.Name}, DesiredHash: r.DesiredConfig.SpecHash}
		switch gr {
		case configref.AddOnTemplates:
			if d.Template != nil {
				continue // OCM renders the first one
			}
			cfg.Namespace = "" // cluster-scoped
			c.fill(&cfg, c.TemplateInformer, cfg.Name)
			d.Template = &cfg
		case configref.AddOnDeploymentConfigs:
			c.fill(&cfg, c.ADCInformer, cfg.Namespace+"/"+cfg.Name)
			d.DeploymentConfigs = append(d.DeploymentConfigs, cfg)
		}
	}
	return d
}

func (c *Cache) fill(cfg *Config, inf cache.SharedIndexInformer, key string) {
	obj, ok, err := inf.GetIndexer().GetByKey(key)
	if err != nil || !ok {
		return
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	h, err := c.hashOf(u)
	if err != nil {
		return
	}
	cfg.Object, cfg.Hash = u, h
}

// hashOf is the spec hash of a cached config, computed once per resourceVersion: templates can be
// hundreds of kilobytes and every reconcile of every MCA looks theirs up.
func (c *Cache) hashOf(u *unstructured.Unstructured) (string, error) {
	key := string(u.GetUID())
	c.hashMu.Lock()
	m, ok := c.hashes[key]
	c.hashMu.Unlock()
	if ok && m.resourceVersion == u.GetResourceVersion() && key != "" {
		return m.hash, nil
	}
	h, err := spechash.Of(u.Object)
	if err != nil {
		return "", err
	}
	c.hashMu.Lock()
	c.hashes[key] = memo{resourceVersion: u.GetResourceVersion(), hash: h}
	c.hashMu.Unlock()
	return h, nil
}

type memo struct{ resourceVersion, hash string }

// Typed converts the cached configs to their Go types for rendering.
func (d Desired) Typed() (*addonv1alpha1.AddOnTemplate, []*addonv1alpha1.AddOnDeploymentConfig, error) {
	if d.Template == nil || d.Template.Object == nil {
		return nil, nil, fmt.Errorf("no AddOnTemplate to render")
	}
	t := &addonv1alpha1.AddOnTemplate{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(d.Template.Object.Object, t); err != nil {
		return nil, nil, fmt.Errorf("decoding %s: %w", d.Template.Ref, err)
	}
	var adcs []*addonv1alpha1.AddOnDeploymentConfig
	for _, a := range d.DeploymentConfigs {
		if a.Object == nil {
			return nil, nil, fmt.Errorf("%s not found", a.Ref)
		}
		adc := &addonv1alpha1.AddOnDeploymentConfig{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(a.Object.Object, adc); err != nil {
			return nil, nil, fmt.Errorf("decoding %s: %w", a.Ref, err)
		}
		adcs = append(adcs, adc)
	}
	return t, adcs, nil
}

// Enqueue adds key to q unless it is empty.
func Enqueue(q workqueue.TypedInterface[string], keys ...string) {
	for _, k := range keys {
		if k != "" {
			q.Add(k)
		}
	}
}

// MCAHandlers returns event handlers that enqueue, for every event on the informer's objects, the
// ManagedClusterAddOn keys keysOf returns.
func MCAHandlers(q workqueue.TypedInterface[string], keysOf func(obj any) []string) cache.ResourceEventHandler {
	add := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		Enqueue(q, keysOf(obj)...)
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, cur any) { add(cur) }, DeleteFunc: add}
}

// Sync reconciles one key. A positive duration asks to look again after it.
type Sync func(ctx context.Context, key string) (time.Duration, error)

// RunWorkers runs n workers on q until ctx is done, then shuts q down and waits for them. A sync
// that fails is retried with the queue's backoff.
func RunWorkers(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], n int, name string, reconcile Sync) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				key, shutdown := q.Get()
				if shutdown {
					return
				}
				func() {
					defer q.Done(key)
					logger := klog.FromContext(ctx).WithValues("reconciler", name, "key", key)
					after, err := reconcile(klog.NewContext(ctx, logger), key)
					if err != nil {
						switch {
						case ctx.Err() != nil:
						case apierrors.IsConflict(err):
							logger.V(4).Info("Conflict, retrying", "err", err.Error())
						default:
							logger.Error(err, "Reconcile failed, retrying")
						}
						q.AddRateLimited(key)
						return
					}
					q.Forget(key)
					if after > 0 {
						q.AddAfter(key, after)
					}
				}()
			}
		})
	}
	<-ctx.Done()
	q.ShutDown()
	wg.Wait()
}

// NewQueue is a rate-limited queue named for its reconciler.
func NewQueue(name string) workqueue.TypedRateLimitingInterface[string] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name})
}

// Event-to-MCA mappings every reconciler on the cache needs, for MCAHandlers.

// MCAsOfCluster maps a ManagedCluster event to the MCAs in its namespace (its annotations and
// availability feed rendering and health).
func (c *Cache) MCAsOfCluster(obj any) []string {
	mc, ok := obj.(*clusterv1.ManagedCluster)
	if !ok {
		return nil
	}
	keys, _ := c.MCAInformer.GetIndexer().IndexKeys(cache.NamespaceIndex, mc.Name)
	return keys
}

// MCAsOfCMA maps a ClusterManagementAddOn event to its MCAs: a CMA that becomes managed (or
// stops being so) changes what is done for them.
func (c *Cache) MCAsOfCMA(obj any) []string {
	if cma, ok := obj.(*addonv1alpha1.ClusterManagementAddOn); ok {
		return c.MCAsByIndex(IndexMCAsByAddon, cma.Name)
	}
	return nil
}

// MCAsOfConfig returns a mapping from an event of a config of group/resource gr to the MCAs told
// to run that config.
func (c *Cache) MCAsOfConfig(gr configref.GroupResource) func(any) []string {
	return func(obj any) []string {
		m, ok := obj.(metav1.Object)
		if !ok {
			return nil
		}
		return c.MCAsByIndex(IndexMCAsByConfig, ConfigKey(gr, m.GetNamespace(), m.GetName()))
	}
}
