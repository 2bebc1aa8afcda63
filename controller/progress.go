package controller

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/controller/mcastatus"
)

// syncProgress tracks one MCA's ManifestWorks, its deployer's ManifestApplied and its health:
// lastAppliedConfig and the Progressing condition (mcastatus.Progress). It writes only when they
// change, and looks again when a deployer's grace or a health soak runs out.
func (c *Controller) syncProgress(ctx context.Context, key string) (time.Duration, error) {
	ns, name := splitKey(key)
	cma, ok := c.managedCMA(name)
	if !ok {
		return 0, nil
	}
	obj, exists, err := c.hub.MCAInformer.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return 0, err
	}
	if c.hub.DecodeError(obj) != nil {
		return 0, nil // only its metadata is known: never written (the cache reported it)
	}
	mca := c.writtenMCAs.get(key, obj.(*addonv1alpha1.ManagedClusterAddOn))
	if mca.DeletionTimestamp != nil {
		return 0, nil
	}
	works := c.addonWorks(ns, name)
	for _, w := range works {
		if c.hub.DecodeError(w) != nil {
			return 0, nil // its state is unknown: the MCA's progress stays where it is
		}
	}
	st, recheck := mcastatus.Progress(mca, mcastatus.AddonWorks(name, works), mcastatus.GateOf(cma), mcastatus.Now(time.Now()))
	if equality.Semantic.DeepEqual(mca.Status, st) {
		return recheck, nil
	}
	updated := mca.DeepCopy()
	updated.Status = st
	res, err := c.addon.AddonV1alpha1().ManagedClusterAddOns(ns).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		return 0, fmt.Errorf("writing the status of ManagedClusterAddOn %s: %w", key, err)
	}
	c.writtenMCAs.wrote(key, mca.ResourceVersion, res)
	return recheck, nil
}
