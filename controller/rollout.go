package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterlisters "open-cluster-management.io/api/client/cluster/listers/cluster/v1beta1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/controller/hubcache"
	"github.com/addonops/addonops/controller/mcastatus"
	"github.com/addonops/addonops/controller/rolloutmetrics"
	"github.com/addonops/addonops/controller/rolloutplan"
	"github.com/addonops/addonops/internal/configref"
)

// notSyncedRetry is how soon a decision is retried while a config informer has not synced yet.
const notSyncedRetry = 200 * time.Millisecond

// syncRollout takes the rollout decision for one add-on (package rolloutplan) and writes it: the
// CMA status first, since it records what the decision rests on (a canary-gated placement's last
// known good configs), then the MCAs whose status changes.
func (c *Controller) syncRollout(ctx context.Context, name string) (time.Duration, error) {
	logger := klog.FromContext(ctx)
	cma, ok := c.managedCMA(name)
	if !ok {
		return 0, nil
	}
	raw, done, retry, rawErr := c.beforeRollout(ctx, cma) // undecodable.go
	if done {
		return retry, rawErr
	}
	mcas := c.addonMCAs(name)
	synced, unserved := c.hub.Configs.Ensure(ctx, referencedResources(cma, mcas))
	if !synced {
		// Deciding now would report configs as missing that are only not cached yet.
		return notSyncedRetry, nil
	}
	placements := map[rolloutplan.PlacementKey]*clusterv1beta1.Placement{}
	for _, k := range placementsOf(cma) {
		p, err := c.hub.Placements.Placements(k.Namespace).Get(k.Name)
		switch {
		case err == nil:
			placements[k] = p
		case !apierrors.IsNotFound(err):
			return 0, fmt.Errorf("reading Placement %s: %w", k, err)
		}
	}

	hist, histOK := c.readHistory(cma)
	plan := rolloutplan.Decide(rolloutplan.Input{
		Now:        mcastatus.Now(time.Now()),
		CMA:        cma,
		Placements: placements,
		Decisions:  decisionGetter{c.hub.Decisions},
		MCAs:       mcas,
		Works:      func(ns string) []*workv1.ManifestWork { return c.addonWorks(ns, name) },
		Configs:    c.hub.Configs.Lookup,
		History:    hist, HistoryLimit: c.opts.HistoryLimit,
		Raw: raw,
	})

	// The history first: it records what the status and MCAs are about to say (a version
	// started, completed, rolled back). A failed write does not hold the rollout up; it is
	// reported and retried.
	var histErr error
	if plan.History != nil && histOK {
		if histErr = c.writeHistory(ctx, cma, plan.History); histErr != nil {
			c.recorder.Event(cma, corev1.EventTypeWarning, EventReasonHistoryWriteFailed, histErr.Error())
		}
	}

	if !equality.Semantic.DeepEqual(cma.Status, plan.Status) {
		updated := cma.DeepCopy()
		updated.Status = plan.Status
		res, err := c.addon.AddonV1alpha1().ClusterManagementAddOns().UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		if err != nil {
			return 0, fmt.Errorf("writing the status of ClusterManagementAddOn %s: %w", name, err)
		}
		c.writtenCMAs.wrote(name, cma.ResourceVersion, res)
		rolloutmetrics.ObserveProgressions(name, cma.Status.InstallProgressions, plan.Status.InstallProgressions, time.Now())
	}

	if len(plan.Updates) > 0 {
		logger.V(2).Info("Updating MCA status", "count", len(plan.Updates))
	}
	byNamespace := map[string]rolloutplan.Update{}
	namespaces := make([]string, 0, len(plan.Updates))
	for _, u := range plan.Updates {
		byNamespace[u.MCA.Namespace] = u
		namespaces = append(namespaces, u.MCA.Namespace)
	}
	err := c.parallel(namespaces, func(ns string) error {
		u := byNamespace[ns]
		updated := u.MCA.DeepCopy()
		updated.Status = u.Status
		res, err := c.addon.AddonV1alpha1().ManagedClusterAddOns(ns).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("writing the status of ManagedClusterAddOn %s/%s: %w", ns, name, err)
		}
		c.writtenMCAs.wrote(ns+"/"+name, u.MCA.ResourceVersion, res)
		return nil
	})

	// Events once the decision is written: a person reads them next to the status they describe.
	if err == nil {
		for _, ev := range plan.Events {
			typ := corev1.EventTypeNormal
			if ev.Warning {
				typ = corev1.EventTypeWarning
				logger.Info("Placement waits or failed", "reason", ev.Reason, "message", ev.Message)
			}
			c.recorder.Event(cma, typ, ev.Reason, ev.Message)
		}
	}

	err = errors.Join(err, histErr)
	after := plan.RecheckAfter
	if unserved && (after == 0 || after > hubcache.RediscoverAfter) {
		// A config kind may get its CRD later; look again.
		after = hubcache.RediscoverAfter
	}
	return after, err
}

// referencedResources lists the group/resources of every config the add-on references.
func referencedResources(cma *addonv1alpha1.ClusterManagementAddOn, mcas []*addonv1alpha1.ManagedClusterAddOn) []configref.GroupResource {
	seen := map[configref.GroupResource]bool{}
	var out []configref.GroupResource
	add := func(group, resource string) {
		gr := configref.GroupResource{Group: group, Resource: resource}
		if !seen[gr] {
			seen[gr] = true
			out = append(out, gr)
		}
	}
	for _, sc := range cma.Spec.SupportedConfigs {
		if sc.DefaultConfig != nil && sc.DefaultConfig.Name != "" && sc.DefaultConfig.Name != configref.ReservedNoDefault {
			add(sc.Group, sc.Resource)
		}
	}
	for _, p := range cma.Spec.InstallStrategy.Placements {
		for _, cf := range p.Configs {
			add(cf.Group, cf.Resource)
		}
	}
	for _, m := range mcas {
		for _, cf := range m.Spec.Configs {
			add(cf.Group, cf.Resource)
		}
	}
	return out
}

// decisionGetter adapts the PlacementDecision lister to sdk-go's PlacementDecisionGetter.
type decisionGetter struct {
	lister clusterlisters.PlacementDecisionLister
}

func (g decisionGetter) List(selector labels.Selector, namespace string) ([]*clusterv1beta1.PlacementDecision, error) {
	return g.lister.PlacementDecisions(namespace).List(selector)
}
