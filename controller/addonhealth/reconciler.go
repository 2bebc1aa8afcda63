package addonhealth

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/controller/hubcache"
	"github.com/addonops/addonops/controller/mcawrite"
	"github.com/addonops/addonops/internal/addonwork"
)

// Reconciler writes the Available condition of template add-ons. Key: MCA "<namespace>/<name>".
type Reconciler struct {
	hub *hubcache.Cache
}

// New builds the reconciler and adds it, with workers concurrent reconciles, to the shared cache,
// which runs it.
func New(hub *hubcache.Cache, workers int) (*Reconciler, error) {
	r := &Reconciler{hub: hub}
	handlers := []hubcache.Handler{
		{Informer: hub.MCAInformer, Keys: func(obj any) []string {
			if m, ok := obj.(*addonv1alpha1.ManagedClusterAddOn); ok {
				return []string{m.Namespace + "/" + m.Name}
			}
			return nil
		}},
		{Informer: hub.WorkInformer, Keys: func(obj any) []string {
			if w, ok := obj.(*workv1.ManifestWork); ok {
				return []string{w.Namespace + "/" + w.Labels[addonv1alpha1.AddonLabelKey]}
			}
			return nil
		}},
		{Informer: hub.ClusterInformer, Keys: hub.MCAsOfCluster},
		{Informer: hub.CMAInformer, Keys: hub.MCAsOfCMA},
	}
	if err := hub.Add(hubcache.Reconciler{Name: "addonhealth", Workers: workers, Sync: r.sync,
		Watch: func(q hubcache.Queue) error { return hubcache.Watch(q, handlers...) }}); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Reconciler) sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil || name == "" || !r.hub.Managed(name) {
		return 0, nil
	}
	mca, err := r.hub.MCAs.ManagedClusterAddOns(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if mca.DeletionTimestamp != nil || r.hub.DesiredOf(mca).Template == nil {
		return 0, nil
	}
	cluster, err := r.hub.Clusters.Get(ns)
	if err != nil {
		cluster = nil
	}
	cond := Available(mca, cluster, DeployWorks(name, r.hub.AddonWorks(ns, name)))
	_, err = mcawrite.Status(ctx, r.hub.Clients.Addon, mca, func(m *addonv1alpha1.ManagedClusterAddOn) {
		m.Status.HealthCheck.Mode = addonv1alpha1.HealthCheckModeCustomized
		switch {
		case cond != nil:
			meta.SetStatusCondition(&m.Status.Conditions, *cond)
		case meta.FindStatusCondition(m.Status.Conditions, ConditionAvailable) == nil:
			// Mode Customized without any Available condition is how an add-on without health
			// prober (type None) looks, which a rollout takes as healthy (mcastatus.Healthy): so the
			// mode never goes out alone, and health stays unknown until the works tell.
			meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: ConditionAvailable, Status: metav1.ConditionUnknown,
				Reason: ReasonWorkNotFound, Message: MessageWorkNotFound})
		}
	})
	return 0, err
}

// DeployWorks picks the add-on's deploy works ("addon-<name>-deploy-<i>") from works.
func DeployWorks(addon string, works []*workv1.ManifestWork) []*workv1.ManifestWork {
	var out []*workv1.ManifestWork
	for _, w := range works {
		if _, hosted := w.Labels[addonv1alpha1.AddonNamespaceLabelKey]; hosted {
			continue
		}
		if _, ok := addonwork.DeployWorkIndex(addon, w.Name); ok {
			out = append(out, w)
		}
	}
	return out
}
