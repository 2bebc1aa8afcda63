// Install is the install reconciler (key: ClusterManagementAddOn name): it creates the
// ManagedClusterAddOns of the clusters an add-on's placements select and deletes those whose
// clusters left (the decision: rolloutplan.DecideInstall).

package addonrollout

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/addonops/addonops/internal/hubcache"
	"github.com/addonops/addonops/internal/rolloutplan"
)

// Install is the install reconciler.
type Install struct {
	*View
	created *createdMCAs
	// pace spaces an add-on's decisions triggered by MCA events by what its last one cost: while
	// an install creates thousands of MCAs, each one's add event asked for a decision that reads
	// every cluster and MCA (a third of what the controller allocated during a 5,000-cluster
	// install). No floor: at a few hundred clusters a decision still follows at once.
	pace *Pacer
}

// NewInstall returns the install reconciler on v.
func NewInstall(v *View) *Install {
	return &Install{View: v, created: newCreatedMCAs(), pace: NewPacer(0)}
}

// createdTTL bounds how long a created MCA the cache does not show counts as existing: the cache
// shows it within moments, or its delete event clears it; the bound only covers a relist that
// never showed it at all (created and deleted in between).
const createdTTL = 2 * time.Minute

// createdMCAs remembers the MCAs this reconciler created until the cache shows them. Creating
// 1,000 MCAs brings 1,000 add events, each of which asks for another decision; one taken on a
// cache that shows only some of them would create the others again (1,300 refused creates at
// 1,000 clusters in `make bench-controller`), each a write attempt the API server pays for.
type createdMCAs struct {
	mu sync.Mutex
	at map[string]map[string]time.Time // add-on → cluster namespace → when created
}

func newCreatedMCAs() *createdMCAs { return &createdMCAs{at: map[string]map[string]time.Time{}} }

func (c *createdMCAs) add(addon, ns string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at[addon] == nil {
		c.at[addon] = map[string]time.Time{}
	}
	c.at[addon][ns] = now
}

func (c *createdMCAs) forget(addon, ns string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.at[addon], ns)
}

// notCached returns the namespaces of the add-on's MCAs created here that cached (the namespaces
// the cache shows) misses, forgetting the others and the expired ones.
func (c *createdMCAs) notCached(addon string, cached map[string]bool, now time.Time) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for ns, at := range c.at[addon] {
		if cached[ns] || now.Sub(at) > createdTTL {
			delete(c.at[addon], ns)
			continue
		}
		out = append(out, ns)
	}
	if len(c.at[addon]) == 0 {
		delete(c.at, addon)
	}
	return out
}

// Sync creates and deletes the MCAs of one add-on (rolloutplan.DecideInstall decides which).
func (c *Install) Sync(ctx context.Context, name string) (time.Duration, error) {
	logger := klog.FromContext(ctx)
	started := time.Now()
	cma, ok := c.ManagedCMA(name)
	if !ok {
		c.pace.Forget(name)
	}
	if !ok || c.Hub.DecodeError(cma) != nil {
		// A CMA that does not decode is only its metadata here: nothing is created or deleted for
		// it (the rollout reconciler reports it).
		return 0, nil
	}
	in := rolloutplan.InstallInput{
		Strategy: cma.Spec.InstallStrategy.Type,
		Decided:  map[string][]string{},
		Unknown:  map[string]string{},
	}
	if in.Strategy != rolloutplan.StrategyPlacements {
		return 0, nil
	}
	for _, p := range cma.Spec.InstallStrategy.Placements {
		key := p.Namespace + "/" + p.Name
		_, getErr := c.Hub.Placements.Placements(p.Namespace).Get(p.Name)
		var decisions []*clusterv1beta1.PlacementDecision
		var listErr error
		if getErr == nil {
			decisions, listErr = c.Hub.Decisions.PlacementDecisions(p.Namespace).List(labels.SelectorFromSet(labels.Set{clusterv1beta1.PlacementLabel: p.Name}))
		}
		decided, unknown, err := placementClusters(key, getErr, decisions, listErr)
		if err != nil {
			return 0, err
		}
		if unknown != "" {
			in.Unknown[key] = unknown
			continue
		}
		if len(decided) > 0 {
			in.Decided[key] = append(in.Decided[key], decided...)
		}
	}
	clusters, err := c.Hub.Clusters.List(labels.Everything())
	if err != nil {
		return 0, fmt.Errorf("listing ManagedClusters: %w", err)
	}
	// Sized once: a decision reads every cluster and MCA, and growing these by doubling was most of
	// what it allocated.
	in.Clusters = make(map[string]rolloutplan.Cluster, len(clusters))
	annotations := make(map[string]map[string]string, len(clusters))
	for _, mc := range clusters {
		in.Clusters[mc.Name] = rolloutplan.Cluster{Deleting: mc.DeletionTimestamp != nil}
		annotations[mc.Name] = mc.Annotations
	}
	existing := c.AddonMCAs(name)
	cached := make(map[string]bool, len(existing))
	for _, m := range existing {
		cached[m.Namespace] = true
	}
	in.Existing = installExisting(existing, c.created.notCached(name, cached, time.Now()))

	plan := rolloutplan.DecideInstall(in)
	c.pace.Took(name, time.Since(started))
	if len(plan.Held) > 0 {
		logger.Info("Keeping MCAs no placement selects while a placement's clusters are unknown",
			"held", len(plan.Held), "unknownPlacements", in.Unknown)
	}
	for cluster, why := range plan.NotCreated {
		logger.V(2).Info("Not installing", "cluster", cluster, "why", why)
	}
	if len(plan.Create) == 0 && len(plan.Delete) == 0 {
		return 0, nil
	}
	logger.Info("Installing", "create", len(plan.Create), "delete", len(plan.Delete))

	mcas := c.Addon.AddonV1alpha1()
	createErr := c.Parallel(plan.Create, func(ns string) error {
		_, err := mcas.ManagedClusterAddOns(ns).Create(ctx, newInstalledMCA(cma, ns, annotations[ns]), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil // a user or GitOps was faster: theirs is kept as it is
		}
		if err == nil {
			c.created.add(name, ns, time.Now())
		}
		return err
	})
	deleteErr := c.Parallel(plan.Delete, func(ns string) error {
		err := mcas.ManagedClusterAddOns(ns).Delete(ctx, name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	if n := len(plan.Create) - countErrs(createErr); n > 0 {
		c.Recorder.Eventf(cma, corev1.EventTypeNormal, "ManagedClusterAddOnsCreated", "created %d ManagedClusterAddOns for the clusters its placements select", n)
	}
	if n := len(plan.Delete) - countErrs(deleteErr); n > 0 {
		c.Recorder.Eventf(cma, corev1.EventTypeNormal, "ManagedClusterAddOnsDeleted", "deleted %d ManagedClusterAddOns whose clusters left its placements or are being deleted", n)
	}
	return 0, errors.Join(createErr, deleteErr)
}

// placementClusters folds what the cache says of install placement key into the decision's input:
// the clusters its decisions select; or why they are unknown (unknown != ""): the placement is not
// found (getErr), or a decision does not decode (listErr, a hubcache.DecodeError: its MCAs are
// kept, the cache reported it); or an error that stops the decision (any other).
func placementClusters(key string, getErr error, decisions []*clusterv1beta1.PlacementDecision, listErr error) (clusters []string, unknown string, err error) {
	if getErr != nil {
		if apierrors.IsNotFound(getErr) {
			return nil, "not found", nil
		}
		return nil, "", fmt.Errorf("reading Placement %s: %w", key, getErr)
	}
	var undecodable *hubcache.DecodeError
	switch {
	case errors.As(listErr, &undecodable):
		return nil, undecodable.Error(), nil
	case listErr != nil:
		return nil, "", fmt.Errorf("listing the PlacementDecisions of %s: %w", key, listErr)
	}
	for _, d := range decisions {
		for _, cd := range d.Status.Decisions {
			clusters = append(clusters, cd.ClusterName)
		}
	}
	return clusters, "", nil
}

// installExisting is the decision's view of the add-on's MCAs: those the cache shows (ours when
// this controller's label says so) and those created here that it does not show yet (notCached).
func installExisting(cached []*addonv1alpha1.ManagedClusterAddOn, notCached []string) []rolloutplan.MCA {
	out := make([]rolloutplan.MCA, 0, len(cached)+len(notCached))
	for _, m := range cached {
		out = append(out, rolloutplan.MCA{
			Namespace: m.Namespace,
			Ours:      m.Labels[rolloutplan.CreatedByLabel] == rolloutplan.CreatedByValue,
			Deleting:  m.DeletionTimestamp != nil,
		})
	}
	for _, ns := range notCached {
		out = append(out, rolloutplan.MCA{Namespace: ns, Ours: true})
	}
	return out
}

// newInstalledMCA is the MCA the install reconciler creates for cma in cluster namespace ns, whose
// cluster has the annotations clusterAnnotations.
func newInstalledMCA(cma *addonv1alpha1.ClusterManagementAddOn, ns string, clusterAnnotations map[string]string) *addonv1alpha1.ManagedClusterAddOn {
	owner := metav1.NewControllerRef(cma, addonv1alpha1.SchemeGroupVersion.WithKind("ClusterManagementAddOn"))
	return &addonv1alpha1.ManagedClusterAddOn{
		ObjectMeta: metav1.ObjectMeta{
			Name: cma.Name, Namespace: ns,
			Labels: map[string]string{rolloutplan.CreatedByLabel: rolloutplan.CreatedByValue},
			// The CMA owns what we create, so deleting the add-on cleans its MCAs up. MCAs created
			// by users or GitOps never get this reference (OCM adds it to every MCA, which stops
			// Argo CD from pruning them).
			OwnerReferences: []metav1.OwnerReference{*owner},
			Annotations:     clusterAddonAnnotations(clusterAnnotations),
		},
	}
}

// mcaInstallChanged tells whether an MCA update matters to the install decision: the MCA started
// or stopped being deleted, or its labels (whose it is) changed.
func mcaInstallChanged(old, cur *addonv1alpha1.ManagedClusterAddOn) bool {
	return (old.DeletionTimestamp == nil) != (cur.DeletionTimestamp == nil) || !maps.Equal(old.Labels, cur.Labels)
}

// clusterInstallChanged tells whether a ManagedCluster update matters to the install decisions:
// the cluster started or stopped being deleted, or its annotations (copied to new MCAs) changed.
func clusterInstallChanged(old, cur *clusterv1.ManagedCluster) bool {
	return (old.DeletionTimestamp == nil) != (cur.DeletionTimestamp == nil) || !maps.Equal(old.Annotations, cur.Annotations)
}

// clusterAddonAnnotations copies the cluster's add-on annotations (prefix
// addon.open-cluster-management.io, e.g. hosting-cluster-name) to a new MCA, as OCM does.
func clusterAddonAnnotations(in map[string]string) map[string]string {
	var out map[string]string
	for k, v := range in {
		if strings.HasPrefix(k, "addon.open-cluster-management.io") {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

func countErrs(err error) int {
	if err == nil {
		return 0
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return len(j.Unwrap())
	}
	return 1
}

// Watch: MCAs are created and deleted from CMAs, placements and clusters; an MCA appearing,
// going or changing labels is checked against them.
func (c *Install) Watch(q hubcache.Queue) error {
	allCMAs := func() { c.EnqueueAll(q) }
	return Register(
		Registration{Informer: c.Hub.CMAInformer, Handler: CMAHandler(q)},
		Registration{Informer: c.Hub.MCAInformer, Handler: cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) {
				m := obj.(*addonv1alpha1.ManagedClusterAddOn)
				q.AddAfter(m.Name, c.pace.Wait(m.Name))
			},
			UpdateFunc: func(old, cur any) {
				o, m := old.(*addonv1alpha1.ManagedClusterAddOn), cur.(*addonv1alpha1.ManagedClusterAddOn)
				if mcaInstallChanged(o, m) {
					q.AddAfter(m.Name, c.pace.Wait(m.Name))
				}
			},
			DeleteFunc: func(obj any) {
				if m, ok := hubcache.Tombstone[*addonv1alpha1.ManagedClusterAddOn](obj); ok {
					c.created.forget(m.Name, m.Namespace)
					q.AddAfter(m.Name, c.pace.Wait(m.Name))
				}
			},
		}},
		Registration{Informer: c.Hub.ClusterInformer, Handler: cache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { allCMAs() },
			UpdateFunc: func(old, cur any) {
				if clusterInstallChanged(old.(*clusterv1.ManagedCluster), cur.(*clusterv1.ManagedCluster)) {
					allCMAs()
				}
			},
			DeleteFunc: func(any) { allCMAs() },
		}},
		Registration{Informer: c.Hub.PlacementInformer, Handler: c.Dependents(q)},
		Registration{Informer: c.Hub.DecisionInformer, Handler: c.Dependents(q)},
	)
}
