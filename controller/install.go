package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/addonops/addonops/controller/hubcache"
	"github.com/addonops/addonops/controller/installplan"
)

// syncInstall creates and deletes the MCAs of one add-on (package installplan decides which).
func (c *Controller) syncInstall(ctx context.Context, name string) (time.Duration, error) {
	logger := klog.FromContext(ctx)
	cma, ok := c.managedCMA(name)
	if !ok || c.hub.DecodeError(cma) != nil {
		// A CMA that does not decode is only its metadata here: nothing is created or deleted for
		// it (the rollout reconciler reports it).
		return 0, nil
	}
	in := installplan.Input{
		Strategy: cma.Spec.InstallStrategy.Type,
		Decided:  map[string][]string{},
		Unknown:  map[string]string{},
		Clusters: map[string]installplan.Cluster{},
	}
	if in.Strategy != installplan.StrategyPlacements {
		return 0, nil
	}
	for _, p := range cma.Spec.InstallStrategy.Placements {
		key := p.Namespace + "/" + p.Name
		if _, err := c.hub.Placements.Placements(p.Namespace).Get(p.Name); err != nil {
			if apierrors.IsNotFound(err) {
				in.Unknown[key] = "not found"
				continue
			}
			return 0, fmt.Errorf("reading Placement %s: %w", key, err)
		}
		decisions, err := c.hub.Decisions.PlacementDecisions(p.Namespace).List(labels.SelectorFromSet(labels.Set{clusterv1beta1.PlacementLabel: p.Name}))
		var undecodable *hubcache.DecodeError
		switch {
		case errors.As(err, &undecodable):
			// Its clusters are unknown: their MCAs are kept (the cache reported the decision).
			in.Unknown[key] = undecodable.Error()
			continue
		case err != nil:
			return 0, fmt.Errorf("listing the PlacementDecisions of %s: %w", key, err)
		}
		for _, d := range decisions {
			for _, cd := range d.Status.Decisions {
				in.Decided[key] = append(in.Decided[key], cd.ClusterName)
			}
		}
	}
	clusters, err := c.hub.Clusters.List(labels.Everything())
	if err != nil {
		return 0, fmt.Errorf("listing ManagedClusters: %w", err)
	}
	annotations := map[string]map[string]string{}
	for _, mc := range clusters {
		in.Clusters[mc.Name] = installplan.Cluster{Deleting: mc.DeletionTimestamp != nil}
		annotations[mc.Name] = mc.Annotations
	}
	for _, m := range c.addonMCAs(name) {
		in.Existing = append(in.Existing, installplan.MCA{
			Namespace: m.Namespace,
			Ours:      m.Labels[installplan.CreatedByLabel] == installplan.CreatedByValue,
			Deleting:  m.DeletionTimestamp != nil,
		})
	}

	plan := installplan.Decide(in)
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

	mcas := c.addon.AddonV1alpha1()
	owner := metav1.NewControllerRef(cma, addonv1alpha1.SchemeGroupVersion.WithKind("ClusterManagementAddOn"))
	createErr := c.parallel(plan.Create, func(ns string) error {
		mca := &addonv1alpha1.ManagedClusterAddOn{
			ObjectMeta: metav1.ObjectMeta{
				Name: name, Namespace: ns,
				Labels: map[string]string{installplan.CreatedByLabel: installplan.CreatedByValue},
				// The CMA owns what we create, so deleting the add-on cleans its MCAs up. MCAs created
				// by users or GitOps never get this reference (OCM adds it to every MCA, which stops
				// Argo CD from pruning them).
				OwnerReferences: []metav1.OwnerReference{*owner},
				Annotations:     clusterAddonAnnotations(annotations[ns]),
			},
		}
		_, err := mcas.ManagedClusterAddOns(ns).Create(ctx, mca, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil // a user or GitOps was faster: theirs is kept as it is
		}
		return err
	})
	deleteErr := c.parallel(plan.Delete, func(ns string) error {
		err := mcas.ManagedClusterAddOns(ns).Delete(ctx, name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	if n := len(plan.Create) - countErrs(createErr); n > 0 {
		c.recorder.Eventf(cma, corev1.EventTypeNormal, "ManagedClusterAddOnsCreated", "created %d ManagedClusterAddOns for the clusters its placements select", n)
	}
	if n := len(plan.Delete) - countErrs(deleteErr); n > 0 {
		c.recorder.Eventf(cma, corev1.EventTypeNormal, "ManagedClusterAddOnsDeleted", "deleted %d ManagedClusterAddOns whose clusters left its placements or are being deleted", n)
	}
	return 0, errors.Join(createErr, deleteErr)
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

// parallel runs fn for every item with at most WriteParallelism at a time and joins the errors.
func (c *Controller) parallel(items []string, fn func(string) error) error {
	sem := make(chan struct{}, c.opts.WriteParallelism)
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

func countErrs(err error) int {
	if err == nil {
		return 0
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return len(j.Unwrap())
	}
	return 1
}
