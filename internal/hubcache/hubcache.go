// Package hubcache is the controller's one view of the hub: one set of informers (ClusterManagementAddOns,
// ManagedClusterAddOns, ManagedClusters, Placements, PlacementDecisions, add-on ManifestWorks, the
// configs add-ons reference, and under --deploy-templates add-on RoleBindings and CSRs) shared by
// every reconciler in the process — the rollout controller's install, rollout and progress, and the
// template reconcilers (templatedeploy's Deployer, registration) — with the lookups they need and
// the rule of which add-ons they may act on. Every reconciler runs on it as a controller-runtime
// controller (Add, Run).
package hubcache

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/dynamic"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	addonlisters "open-cluster-management.io/api/client/addon/listers/addon/v1alpha1"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterlisters "open-cluster-management.io/api/client/cluster/listers/cluster/v1"
	clusterlistersv1beta1 "open-cluster-management.io/api/client/cluster/listers/cluster/v1beta1"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/manifesthead"
	"github.com/addonops/addonops/internal/spechash"
	"github.com/addonops/addonops/internal/statuswrite"
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
	// DeployTemplates caches what the template reconcilers need besides the rollout's objects:
	// ManifestWorks with a stand-in of each manifest (its head and the digest of its content,
	// package manifesthead) and their manifests' status feedback (otherwise the cache drops them,
	// most of a work's size),
	// AddOnTemplates and AddOnDeploymentConfigs from the start, and add-on RoleBindings and CSRs.
	DeployTemplates bool
	// HistoryNamespace, when set, caches the add-ons' version history ConfigMaps (package
	// history) in that namespace.
	HistoryNamespace string
	// DisableInterning leaves decoded objects' strings, maps and slices as decoded (intern.go), for
	// the cache benchmark (internal/testing/cachebench) to measure what interning saves. The
	// controller never sets it.
	DisableInterning bool
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
	// IndexWorksByAddon indexes add-on ManifestWorks by "<namespace>/<addon-name label>", but
	// for each one's deploy work 0 (a sparse index: AddonWorks reads both).
	IndexWorksByAddon = "addonWorks"
	// IndexMCAsByAddon indexes ManagedClusterAddOns by name (= add-on name).
	IndexMCAsByAddon = "addon"
	// IndexMCAsByConfig indexes ManagedClusterAddOns by the configs they were told to run
	// (ConfigKey of each desired config).
	IndexMCAsByConfig = "desiredConfig"
	// IndexByAddonCluster indexes RoleBindings (but for the hubPermission binding in the
	// cluster namespace: AddonBindings reads both) and CertificateSigningRequests by
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
	// MCAWriter is how every reconciler of this process writes MCAs: one at a time per MCA, from
	// the freshest version the process knows (statuswrite.Writer).
	MCAWriter *statuswrite.Writer
	opts      Options
	// refused tracks desired configs seen refused (Refuse).
	refused refusals
	only    map[string]bool

	// decodedInformers are the informers of the kinds read per object (decode.go), by kind.
	decodedInformers map[string]cache.SharedIndexInformer
	// restConfig and httpClient build the decoded kinds' watch clients (watchdecode.go).
	restConfig  *rest.Config
	httpClient  *http.Client
	kubeFactory kubeinformers.SharedInformerFactory
	// undecodable records the objects the decoded informers hold placeholders for.
	undecodable   undecodable
	onUndecodable func(*DecodeError)
	// trimmed records the object versions the cache keeps less of than the API server returned
	// (bound.go).
	trimmed   trims
	onTrimmed func(*Trimmed)
	// logger is Run's, for what the informers log (decode errors).
	logger atomic.Pointer[klog.Logger]
	// interned holds the strings decoded objects share (intern.go).
	interned interner
	// strategies are the CMAs' rollout strategies as the API server returned them, by CMA name.
	strategiesMu sync.Mutex
	strategies   map[string]rolloutStrategies
	// historyFactory caches the version history ConfigMaps (Options.HistoryNamespace), or is nil.
	historyFactory kubeinformers.SharedInformerFactory
	// typed are the templates and deployment configs converted and compiled (typed.go).
	typed *typedConfigs

	// Listers of the decoded kinds. They hand out placeholders for objects that do not decode (see
	// DecodeError), but for Decisions, which returns an error naming such a decision instead.
	CMAs       addonlisters.ClusterManagementAddOnLister
	MCAs       addonlisters.ManagedClusterAddOnLister
	Clusters   clusterlisters.ManagedClusterLister
	Placements clusterlistersv1beta1.PlacementLister
	Decisions  clusterlistersv1beta1.PlacementDecisionLister
	// Configs caches the configs add-ons reference, of any kind.
	Configs *Configs

	// Informers, for event handlers and indexes.
	CMAInformer       cache.SharedIndexInformer
	MCAInformer       cache.SharedIndexInformer
	ClusterInformer   cache.SharedIndexInformer
	PlacementInformer cache.SharedIndexInformer
	DecisionInformer  cache.SharedIndexInformer
	WorkInformer      cache.SharedIndexInformer
	// With Options.DeployTemplates only (nil otherwise).
	TemplateInformer    cache.SharedIndexInformer
	ADCInformer         cache.SharedIndexInformer
	RoleBindingInformer cache.SharedIndexInformer
	CSRInformer         cache.SharedIndexInformer
	// With Options.HistoryNamespace only (nil otherwise): the version history ConfigMaps.
	HistoryInformer cache.SharedIndexInformer
	Histories       corelisters.ConfigMapNamespaceLister

	mu          sync.Mutex
	started     bool
	reconcilers []Reconciler
	loops       []func(context.Context)
	closers     []func()
	// synced is set once every informer has synced after Run started them.
	synced atomic.Bool
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
	c := &Cache{opts: opts, restConfig: cfg, httpClient: httpClient, typed: newTypedConfigs(), undecodable: undecodable{byKey: map[string]map[string]*DecodeError{}, told: map[string]string{}},
		strategies: map[string]rolloutStrategies{}}
	c.interned.off = opts.DisableInterning
	if len(opts.Only) > 0 {
		c.only = map[string]bool{}
		for _, n := range opts.Only {
			c.only[n] = true
		}
	}
	// Kubernetes' own kinds (RoleBindings, CSRs, ConfigMaps, Secrets, Events) travel as protobuf,
	// as kube-controller-manager's do: cheaper to encode and decode than JSON on both ends. OCM's
	// kinds are custom resources, which the API server serves as JSON only.
	if c.Clients.Kube, err = kubernetes.NewForConfigAndClient(protobuf(cfg), httpClient); err != nil {
		return nil, fmt.Errorf("building the Kubernetes client: %w", err)
	}
	if c.Clients.Addon, err = addonclient.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("building the add-on client: %w", err)
	}
	c.MCAWriter = statuswrite.NewWriter(c.Clients.Addon)
	c.MCAWriter.Compact = func(m *addonv1alpha1.ManagedClusterAddOn) {
		// Bounded as the cache bounds it (bound.go; the cache's informer reports what it drops when
		// it sees this version).
		bound(m)
		c.interned.object(m)
	}
	c.MCAWriter.Cached = func(key string) *addonv1alpha1.ManagedClusterAddOn {
		obj, ok, err := c.MCAInformer.GetIndexer().GetByKey(key)
		if err != nil || !ok || c.DecodeError(obj) != nil {
			return nil
		}
		m, _ := obj.(*addonv1alpha1.ManagedClusterAddOn)
		return m
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
	// Objects are cached without managedFields (decode drops them), and works without their
	// manifests, or with stand-ins of them when the template reconcilers need them: at thousands of
	// clusters that is most of the memory.
	stripWork := workStandInsStripper
	stripClusters := clusterStripper
	if !opts.DeployTemplates {
		stripWork = workManifestsStripper
		stripClusters = clusterStatusStripper
	}
	// Only RoleBindings and CSRs labelled with an add-on name are add-on business. They share
	// strings and maps as the decoded kinds do (a RoleBinding per cluster and add-on, its labels,
	// role and owner the same on every cluster).
	c.kubeFactory = kubeinformers.NewSharedInformerFactoryWithOptions(c.Clients.Kube, opts.Resync,
		kubeinformers.WithTransform(c.stripAndIntern), kubeinformers.WithTweakListOptions(byAddonLabel))
	c.Configs = newConfigs(c.Clients.Kube.Discovery(), c.Clients.Dynamic, opts.Resync)

	// OCM's kinds are decoded per object (decode.go): one that does not decode cannot fail a list.
	for _, d := range []struct {
		inf   *cache.SharedIndexInformer
		kind  decodedKind
		tweak func(*metav1.ListOptions)
		strip stripper
		after func(*unstructured.Unstructured, runtime.Object)
		// byNamespace indexes the objects by namespace, for the kinds looked up by namespace (an
		// index entry per namespace: 5,000 of them for MCAs or works at 5,000 clusters). Works
		// are looked up by namespace and add-on (IndexWorksByAddon), MCAs by key.
		byNamespace bool
	}{
		{&c.CMAInformer, kindCMA, nil, stripper{}, c.noteRolloutStrategies, false},
		{&c.MCAInformer, kindMCA, nil, stripper{}, nil, false},
		{&c.ClusterInformer, kindCluster, nil, stripClusters, nil, false},
		{&c.PlacementInformer, kindPlacement, nil, stripper{}, nil, true},
		{&c.DecisionInformer, kindDecision, nil, stripper{}, nil, true},
		{&c.WorkInformer, kindWork, byAddonLabel, stripWork, nil, false},
	} {
		if *d.inf, err = c.decodedInformer(d.kind, d.tweak, d.strip, d.after, d.byNamespace); err != nil {
			return nil, err
		}
	}
	if _, err := c.CMAInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: c.forgetRolloutStrategies}); err != nil {
		return nil, fmt.Errorf("watching ClusterManagementAddOns: %w", err)
	}
	// What this process wrote of an MCA is kept (MCAWriter.Written) only until the cache shows it.
	settle := func(obj any) {
		m, ok := obj.(*addonv1alpha1.ManagedClusterAddOn)
		if !ok {
			return
		}
		key := statuswrite.Key(m)
		if now, exists, _ := c.MCAInformer.GetIndexer().GetByKey(key); exists {
			if cur, ok := now.(*addonv1alpha1.ManagedClusterAddOn); ok {
				c.MCAWriter.Written.Settle(key, cur)
			}
		}
	}
	if _, err := c.MCAInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: settle, UpdateFunc: func(_, cur any) { settle(cur) }}); err != nil {
		return nil, fmt.Errorf("watching ManagedClusterAddOns: %w", err)
	}
	c.CMAs = addonlisters.NewClusterManagementAddOnLister(c.CMAInformer.GetIndexer())
	c.MCAs = addonlisters.NewManagedClusterAddOnLister(c.MCAInformer.GetIndexer())
	c.Clusters = clusterlisters.NewManagedClusterLister(c.ClusterInformer.GetIndexer())
	c.Placements = clusterlistersv1beta1.NewPlacementLister(c.PlacementInformer.GetIndexer())
	c.Decisions = decisionLister{clusterlistersv1beta1.NewPlacementDecisionLister(c.DecisionInformer.GetIndexer()), c}
	if opts.DeployTemplates {
		c.RoleBindingInformer = c.kubeFactory.Rbac().V1().RoleBindings().Informer()
		c.CSRInformer = c.kubeFactory.Certificates().V1().CertificateSigningRequests().Informer()
		if c.TemplateInformer, err = c.Configs.Watch(configref.AddOnTemplates); err != nil {
			return nil, err
		}
		if c.ADCInformer, err = c.Configs.Watch(configref.AddOnDeploymentConfigs); err != nil {
			return nil, err
		}
	}

	if opts.HistoryNamespace != "" {
		c.watchHistories(opts.HistoryNamespace)
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
	if err := c.WorkInformer.AddIndexers(worksByAddon.indexer()); err != nil {
		return nil, fmt.Errorf("indexing ManifestWorks: %w", err)
	}
	if c.RoleBindingInformer != nil {
		if err := c.RoleBindingInformer.AddIndexers(bindingsByAddonCluster.indexer()); err != nil {
			return nil, fmt.Errorf("indexing RoleBindings by cluster and add-on: %w", err)
		}
	}
	if c.CSRInformer != nil {
		// CSRs are named by the agent that files them: every one is indexed.
		if err := c.CSRInformer.AddIndexers(cache.Indexers{IndexByAddonCluster: func(obj any) ([]string, error) {
			if m, ok := obj.(metav1.Object); ok {
				if v := byAddonCluster(m); v != "" {
					return []string{v}, nil
				}
			}
			return nil, nil
		}}); err != nil {
			return nil, fmt.Errorf("indexing CSRs by cluster and add-on: %w", err)
		}
	}
	return c, nil
}

// protobuf returns a copy of cfg for clients of Kubernetes' built-in kinds: protobuf requests,
// protobuf answers (JSON accepted too, for an API that has no protobuf form).
func protobuf(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.ContentType = runtime.ContentTypeProtobuf
	out.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return out
}

// stripAndIntern is the transform of the add-on RoleBinding and CSR informers.
func (c *Cache) stripAndIntern(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
		c.interned.object(m)
	}
	return obj, nil
}

func stripManagedFields(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// stripCluster drops what no reconciler reads of a ManagedCluster, most of its size on a real
// fleet: the hub's client configs (CA bundles), taints, and of its status all but the Available
// condition (capacity, allocatable, version, cluster claims, managed namespaces, the registration
// agent's other conditions). The reconcilers read its metadata (deletion, the image registries
// annotation) and, as the health prober (--deploy-templates), its Available condition; nothing
// writes a ManagedCluster. The rest of its spec stays: it is small, and a value there that does not
// decode still makes the cluster one (DecodeError).
func stripCluster(u *unstructured.Unstructured) {
	stripClusterSpec(u)
	status, ok := u.Object["status"].(map[string]any)
	if !ok {
		return
	}
	for k := range status {
		if k != "conditions" {
			delete(status, k)
		}
	}
	conds, ok := status["conditions"].([]any)
	if !ok {
		return
	}
	var kept []any
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == clusterv1.ManagedClusterConditionAvailable {
			kept = append(kept, c)
		}
	}
	status["conditions"] = kept
}

// stripClusterStatus is stripCluster where no reconciler probes health (OCM's addon-manager
// deploys): then nothing reads a ManagedCluster's status at all. At 5,000 clusters its conditions
// were ~1.5 MB of the live heap.
func stripClusterStatus(u *unstructured.Unstructured) {
	stripClusterSpec(u)
	delete(u.Object, "status")
}

func stripClusterSpec(u *unstructured.Unstructured) {
	unstructured.RemoveNestedField(u.Object, "spec", "managedClusterClientConfigs")
	unstructured.RemoveNestedField(u.Object, "spec", "taints")
}

// stripWorkManifests keeps what the rollout reads of a ManifestWork: metadata and conditions.
func stripWorkManifests(u *unstructured.Unstructured) {
	unstructured.RemoveNestedField(u.Object, "spec")
	unstructured.RemoveNestedField(u.Object, "status", "resourceStatus")
}

// standInWorkManifests replaces each manifest of a ManifestWork with its stand-in (package
// manifesthead): its head and the digest of its content, which is what the template reconcilers
// read of it (the deployer which work holds a manifest and whether its content is the desired one,
// the health prober which workloads to ask about). A manifest without a head a stand-in can hold
// stays whole.
func standInWorkManifests(u *unstructured.Unstructured) {
	eachObject(u, func(i int, v map[string]any, list []any) {
		if s, ok := manifesthead.StandInValue(v); ok {
			list[i] = s
		}
	}, "spec", "workload", "manifests")
}

// eachObject calls f with each object of the list at path in u (and the list, for replacing it);
// anything else there is left as it is.
func eachObject(u *unstructured.Unstructured, f func(i int, v map[string]any, list []any), path ...string) {
	field, ok, _ := unstructured.NestedFieldNoCopy(u.Object, path...)
	if !ok {
		return
	}
	list, ok := field.([]any)
	if !ok {
		return
	}
	for i, m := range list {
		if v, ok := m.(map[string]any); ok {
			f(i, v, list)
		}
	}
}

// stripWorkResourceConditions keeps what the template reconcilers read of a ManifestWork: all but
// the conditions of each manifest in status.resourceStatus (the deployer and health prober read
// a manifest's identity and status feedback there, and the work's own conditions). A work agent
// reports three conditions per manifest: some 3 MB at 5,000 clusters by the structs' size (too
// little to tell apart in the benchmark's peak RSS).
func stripWorkResourceConditions(u *unstructured.Unstructured) {
	eachObject(u, func(_ int, m map[string]any, _ []any) { delete(m, "conditions") }, "status", "resourceStatus", "manifests")
}

// Managed reports whether the reconcilers act on the add-on of that name: its CMA exists, is not
// being deleted and is selected by Options.Addons with the rollout controller's rule (AddonsSelf:
// annotated addon.open-cluster-management.io/lifecycle with any value but "addon-manager").
func (c *Cache) Managed(addon string) bool {
	cma, err := c.CMAs.Get(addon)
	if err != nil || cma.DeletionTimestamp != nil {
		return false
	}
	return c.Selected(cma)
}

// Selected reports whether cma is one of the add-ons this process acts on (Options.Addons and
// Options.Only), whatever its deletion state.
func (c *Cache) Selected(cma *addonv1alpha1.ClusterManagementAddOn) bool {
	if c.only != nil && !c.only[cma.Name] {
		return false
	}
	return Selects(c.opts.Addons, cma)
}

// Selects is the one add-on selection rule, used by the rollout controller and the template
// reconcilers alike: AddonsAll takes every CMA, AddonsSelf those annotated
// addon.open-cluster-management.io/lifecycle with any value but "addon-manager".
func Selects(addons string, cma *addonv1alpha1.ClusterManagementAddOn) bool {
	return addons == AddonsAll || addonstatus.SelfManaged(cma)
}

// AddonWorks returns the ManifestWorks in namespace labelled with the add-on's name, sorted by
// name. They are cached objects: copy before changing them.
func (c *Cache) AddonWorks(namespace, addon string) []*workv1.ManifestWork {
	objs, _ := worksByAddon.lookup(c.WorkInformer, namespace+"/"+addon) // errors only for an unknown index
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

// AddonBindings returns the cached RoleBindings labelled for cluster and add-on.
func (c *Cache) AddonBindings(cluster, addon string) []any {
	objs, _ := bindingsByAddonCluster.lookup(c.RoleBindingInformer, cluster+"/"+addon) // errors only for an unknown index
	return objs
}

// AddonCSRs returns the cached CertificateSigningRequests labelled for cluster and add-on.
func (c *Cache) AddonCSRs(cluster, addon string) []any {
	objs, _ := c.CSRInformer.GetIndexer().ByIndex(IndexByAddonCluster, cluster+"/"+addon)
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
	// Refused, when set, says which of these configs the controller never decided for the MCA
	// (trust.go): a cluster's agent named them. Nothing may be deployed, bound or signed for them.
	Refused string
	// typed converts and compiles them once per version (typedConfigs); nil converts each time.
	typed *typedConfigs
}

// Current reports whether every desired config exists with its desired content and the controller
// decided them (no Refused).
func (d Desired) Current() bool {
	if d.Refused != "" || d.Template == nil || !d.Template.Current() {
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
	if d.Refused != "" {
		return d.Refused
	}
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

// DesiredOf looks up the configs mca was told to run (status.configReferences[].desiredConfig),
// and refuses (Desired.Refused) those the controller never decided for it (trust.go).
func (c *Cache) DesiredOf(mca *addonv1alpha1.ManagedClusterAddOn) Desired {
	d := Desired{typed: c.typed}
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
	d.Refused = c.refusal(mca, d)
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
	h, err := c.Configs.HashOf(u)
	if err != nil {
		return
	}
	cfg.Object, cfg.Hash = u, h
}

// Typed converts the cached configs to their Go types for rendering.
func (d Desired) Typed() (*addonv1alpha1.AddOnTemplate, []*addonv1alpha1.AddOnDeploymentConfig, error) {
	if d.Template == nil || d.Template.Object == nil {
		return nil, nil, fmt.Errorf("no AddOnTemplate to render")
	}
	t := d.typed.template(d.Template.Object)
	if t.err != nil {
		return nil, nil, fmt.Errorf("decoding %s: %w", d.Template.Ref, t.err)
	}
	var adcs []*addonv1alpha1.AddOnDeploymentConfig
	for _, a := range d.DeploymentConfigs {
		if a.Object == nil {
			return nil, nil, fmt.Errorf("%s not found", a.Ref)
		}
		adc := d.typed.adc(a.Object)
		if adc.err != nil {
			return nil, nil, fmt.Errorf("decoding %s: %w", a.Ref, adc.err)
		}
		adcs = append(adcs, adc.adc)
	}
	return t.t, adcs, nil
}

// Handler maps the events of one informer to the keys of a reconciler's queue.
type Handler struct {
	Informer cache.SharedIndexInformer
	Keys     func(obj any) []string
	// Changed, when set, tells which updates matter (old and new object); others enqueue nothing.
	Changed func(old, cur any) bool
}

// CMAChanged tells whether a CMA update matters to a reconciler that reads its spec, annotations
// and deletion: the rollout's own status writes (every progression change, a hundred per rollout)
// do not; spec, annotation, deletion and resync events do. Every CMA event maps to all its MCAs
// (MCAsOfCMA), so each status write of the CMA used to look at every cluster again.
func CMAChanged(old, cur any) bool {
	o, n := old.(*addonv1alpha1.ClusterManagementAddOn), cur.(*addonv1alpha1.ClusterManagementAddOn)
	return o.ResourceVersion == n.ResourceVersion || o.Generation != n.Generation ||
		!maps.Equal(o.Annotations, n.Annotations) || n.DeletionTimestamp != nil
}

// Watch registers handlers that enqueue, for every event on each informer's objects, the keys
// its Keys returns (empty keys skipped).
func Watch(q Queue, handlers ...Handler) error {
	for _, h := range handlers {
		keysOf := h.Keys
		add := func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			for _, k := range keysOf(obj) {
				if k != "" {
					q.Add(k)
				}
			}
		}
		changed := h.Changed
		update := func(old, cur any) {
			if changed == nil || changed(old, cur) {
				add(cur)
			}
		}
		if _, err := h.Informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: update, DeleteFunc: add}); err != nil {
			return fmt.Errorf("registering event handlers: %w", err)
		}
	}
	return nil
}

// MCAUpdates returns a Handler.Changed for MCAs: changed decides on decoded MCAs; an update of
// an MCA that does (or did) not decode, only its metadata in the cache, always matters.
func (c *Cache) MCAUpdates(changed func(old, cur *addonv1alpha1.ManagedClusterAddOn) bool) func(old, cur any) bool {
	return func(old, cur any) bool {
		o, okOld := old.(*addonv1alpha1.ManagedClusterAddOn)
		n, okCur := cur.(*addonv1alpha1.ManagedClusterAddOn)
		return !okOld || !okCur || c.DecodeError(o) != nil || c.DecodeError(n) != nil || changed(o, n)
	}
}

// SameDesiredConfigs reports whether two MCA statuses' config references tell the same desired
// configs (lastApplied and the rest aside): what the deployer and registration act on.
func SameDesiredConfigs(a, b []addonv1alpha1.ConfigReference) bool {
	return slices.EqualFunc(a, b, func(x, y addonv1alpha1.ConfigReference) bool {
		return x.ConfigGroupResource == y.ConfigGroupResource && equality.Semantic.DeepEqual(x.DesiredConfig, y.DesiredConfig)
	})
}

// Event-to-MCA mappings every reconciler on the cache needs, for Handler.Keys.

// MCAsOfCluster maps a ManagedCluster event to the MCAs in its namespace (its annotations and
// availability feed rendering and health).
func (c *Cache) MCAsOfCluster(obj any) []string {
	mc, ok := obj.(*clusterv1.ManagedCluster)
	if !ok {
		return nil
	}
	// An MCA's key is "<cluster>/<add-on>": one lookup per add-on rather than an index entry per
	// cluster (5,000 of them at 5,000 clusters, for a handful of add-ons).
	indexer := c.MCAInformer.GetIndexer()
	var keys []string
	for _, addon := range indexer.ListIndexFuncValues(IndexMCAsByAddon) {
		key := mc.Name + "/" + addon
		if _, ok, _ := indexer.GetByKey(key); ok {
			keys = append(keys, key)
		}
	}
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
