// Package progress is the progress reconciler (key: ManagedClusterAddOn namespace/name): it tracks
// one MCA's ManifestWorks, its deployer's ManifestApplied and its health, and writes its
// lastAppliedConfig and Progressing condition (the rules: package mcastatus).
package progress

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/controller/addonview"
	"github.com/addonops/addonops/controller/hubcache"
	"github.com/addonops/addonops/controller/mcastatus"
)

// Reconciler is the progress reconciler.
type Reconciler struct {
	*addonview.View
	// deployerWait is mcastatus.Gate.DeployerWait.
	deployerWait time.Duration
}

// New returns the progress reconciler on v; deployerWait is how long an MCA told to run its
// configs may go without any ManifestApplied before its message asks for a deployer
// (mcastatus.WaitingForDeployer; 0: mcastatus.DefaultDeployerWait).
func New(v *addonview.View, deployerWait time.Duration) *Reconciler {
	return &Reconciler{View: v, deployerWait: deployerWait}
}

// Sync tracks one MCA's ManifestWorks, its deployer's ManifestApplied and its health:
// lastAppliedConfig and the Progressing condition (mcastatus.Progress). It writes only when they
// change, and looks again when a deployer's grace or a health soak runs out.
func (c *Reconciler) Sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name := addonview.SplitKey(key)
	cma, ok := c.ManagedCMA(name)
	if !ok {
		return 0, nil
	}
	obj, exists, err := c.Hub.MCAInformer.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return 0, err
	}
	if c.Hub.DecodeError(obj) != nil {
		return 0, nil // only its metadata is known: never written (the cache reported it)
	}
	mca := c.WrittenMCAs.Get(key, obj.(*addonv1alpha1.ManagedClusterAddOn))
	if mca.DeletionTimestamp != nil {
		return 0, nil
	}
	works := c.AddonWorks(ns, name)
	for _, w := range works {
		if c.Hub.DecodeError(w) != nil {
			return 0, nil // its state is unknown: the MCA's progress stays where it is
		}
	}
	gate := mcastatus.GateOf(cma)
	gate.DeployerWait = c.deployerWait
	st, recheck := mcastatus.Progress(mca, mcastatus.AddonWorks(name, works), gate, mcastatus.Now(time.Now()))
	if equality.Semantic.DeepEqual(mca.Status, st) {
		return recheck, nil
	}
	updated := mca.DeepCopy()
	updated.Status = st
	res, err := c.Addon.AddonV1alpha1().ManagedClusterAddOns(ns).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		return 0, fmt.Errorf("writing the status of ManagedClusterAddOn %s: %w", key, err)
	}
	c.WrittenMCAs.Wrote(key, mca.ResourceVersion, res)
	return recheck, nil
}

// Watch: an MCA's progress follows its own changes, its works' and its CMA's spec and
// annotations: a CMA that becomes managed (addon.open-cluster-management.io/lifecycle, an add-on
// taken over from OCM's addon-manager) gets its MCAs' Progressing in this controller's words at
// once, not at their next event, and a changed health soak or health check applies at once too.
// The controller's own status writes on the CMA enqueue nothing (addonview.CMAChanged).
func (c *Reconciler) Watch(q hubcache.Queue) error {
	mca := func(obj any) {
		m := obj.(*addonv1alpha1.ManagedClusterAddOn)
		q.Add(m.Namespace + "/" + m.Name)
	}
	cma := func(obj any) {
		for _, key := range c.Hub.MCAsOfCMA(obj) {
			q.Add(key)
		}
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
	return addonview.Register(
		addonview.Registration{Informer: c.Hub.MCAInformer, Handler: cache.ResourceEventHandlerFuncs{AddFunc: mca, UpdateFunc: func(_, cur any) { mca(cur) }}},
		addonview.Registration{Informer: c.Hub.CMAInformer, Handler: cache.ResourceEventHandlerFuncs{AddFunc: cma, UpdateFunc: func(old, cur any) {
			if addonview.CMAChanged(old, cur) {
				cma(cur)
			}
		}}},
		addonview.Registration{Informer: c.Hub.WorkInformer, Handler: cache.ResourceEventHandlerFuncs{AddFunc: work, UpdateFunc: func(_, cur any) { work(cur) }, DeleteFunc: work}},
	)
}
