package addonrollout

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/hubcache"
)

// CollectorOptions configure the garbage collection of superseded config versions.
type CollectorOptions struct {
	// Keep is how many unused versions per base name are kept, newest first (--config-gc-keep).
	Keep int
	// MinAge is how old a version must be before it is deleted (--config-gc-min-age).
	MinAge time.Duration
	// DryRun only reports what would be deleted (events, logs, metric), deleting nothing.
	DryRun bool
	// Interval is how often it runs.
	Interval time.Duration
}

// Collector is the config garbage collector: it runs Decide on the hub cache every interval and
// deletes what it says to.
type Collector struct {
	*View
	opts CollectorOptions
}

// NewCollector returns the collector on v.
func NewCollector(v *View, opts CollectorOptions) *Collector {
	return &Collector{View: v, opts: opts}
}

// configGCDeletions counts the config versions the garbage collector deleted (or, in dry-run mode,
// would have deleted).
var configGCDeletions = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "addonops_config_gc_deletions_total",
	Help: "Superseded config versions deleted by the garbage collector (dry_run=\"true\": reported only).",
}, []string{"group", "resource", "dry_run"})

func init() { crmetrics.Registry.MustRegister(configGCDeletions) }

// Run runs the garbage collection of superseded config versions every interval
// until ctx is done.
func (c *Collector) Run(ctx context.Context) {
	interval := c.opts.Interval
	logger := klog.FromContext(ctx).WithValues("reconciler", "config-gc")
	ctx = klog.NewContext(ctx, logger)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := c.collectConfigs(ctx, time.Now()); err != nil && ctx.Err() == nil {
			logger.Error(err, "Garbage collection of superseded config versions failed; retrying at the next interval", "interval", interval)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// collectConfigs deletes the config versions Decide says to, from the cached state of
// every CMA, MCA and watched config kind. A deletion is conditional on the object's UID and
// resourceVersion, so a version re-created (a git revert) or changed since is never deleted.
func (c *Collector) collectConfigs(ctx context.Context, now time.Time) error {
	logger := klog.FromContext(ctx)
	// What a CMA or MCA that does not decode references is unknown: collect nothing meanwhile.
	if undecodable := append(c.Hub.Undecodable(hubcache.KindClusterManagementAddOn), c.Hub.Undecodable(hubcache.KindManagedClusterAddOn)...); len(undecodable) > 0 {
		var names []string
		for _, e := range undecodable {
			names = append(names, e.GVK.Kind+" "+e.Key())
		}
		logger.Info("Not collecting config versions: the references of add-on objects that cannot be decoded are unknown", "objects", names)
		return nil
	}
	cmas, err := c.Hub.CMAs.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("listing ClusterManagementAddOns: %w", err)
	}
	var mcas []*addonv1alpha1.ManagedClusterAddOn
	for _, o := range c.Hub.MCAInformer.GetStore().List() {
		mcas = append(mcas, o.(*addonv1alpha1.ManagedClusterAddOn))
	}
	referenced, rolling := References(cmas, mcas, c.histories(cmas))
	objects, byRef := versions(c.Hub.Configs.Cached())
	plan := Decide(Input{Now: now, Objects: objects, Referenced: referenced, Rolling: rolling,
		Keep: c.opts.Keep, MinAge: c.opts.MinAge})
	dry := fmt.Sprint(c.opts.DryRun)
	var errs []error
	for _, d := range plan {
		obj := byRef[d.Ref]
		if c.opts.DryRun {
			logger.Info("Would delete a superseded config version (dry run)", "config", d.Ref.String(), "reason", d.Reason)
			c.Recorder.Event(obj, corev1.EventTypeNormal, "ConfigVersionWouldBeDeleted", "dry run: would delete: "+d.Reason)
			configGCDeletions.WithLabelValues(d.Group, d.Resource, dry).Inc()
			continue
		}
		uid, rv := obj.GetUID(), obj.GetResourceVersion()
		err := c.Hub.Configs.Delete(ctx, d.Ref, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
		switch {
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
			continue // gone or changed since: the next run decides again
		case err != nil:
			errs = append(errs, fmt.Errorf("deleting %s: %w", d.Ref, err))
			c.Recorder.Event(obj, corev1.EventTypeWarning, "ConfigVersionDeleteFailed", fmt.Sprintf("cannot delete this superseded version: %v", err))
			continue
		}
		logger.Info("Deleted a superseded config version", "config", d.Ref.String(), "reason", d.Reason)
		c.Recorder.Event(obj, corev1.EventTypeNormal, "ConfigVersionDeleted", "deleted: "+d.Reason)
		configGCDeletions.WithLabelValues(d.Group, d.Resource, dry).Inc()
	}
	return errors.Join(errs...)
}

// histories are the add-ons' version histories that can be read and are their add-on's: the
// ConfigMap the controller names for it, owned by its CMA with its UID (history.CheckOwner), as the
// rollout reconciler reads them (it reports the others).
func (c *Collector) histories(cmas []*addonv1alpha1.ClusterManagementAddOn) []*history.Record {
	if c.Hub.HistoryInformer == nil {
		return nil
	}
	uids := make(map[string]types.UID, len(cmas))
	for _, cma := range cmas {
		uids[cma.Name] = cma.UID
	}
	var out []*history.Record
	for _, o := range c.Hub.HistoryInformer.GetStore().List() {
		cm := o.(*corev1.ConfigMap)
		rec, err := history.Decode(cm.Data[history.DataKey])
		if err != nil {
			continue
		}
		if uid, ok := uids[rec.Addon]; ok && cm.Name == history.ConfigMapName(rec.Addon) && history.CheckOwner(cm.OwnerReferences, rec.Addon, uid) == nil {
			out = append(out, rec)
		}
	}
	return out
}

// versions lists the cached config objects with config-hash's annotations, and the objects by
// reference.
func versions(cached map[configref.GroupResource][]*unstructured.Unstructured) ([]Object, map[configref.Ref]*unstructured.Unstructured) {
	var out []Object
	byRef := map[configref.Ref]*unstructured.Unstructured{}
	for gr, objs := range cached {
		for _, u := range objs {
			ann := u.GetAnnotations()
			ref := configref.Ref{GroupResource: gr, Namespace: u.GetNamespace(), Name: u.GetName()}
			byRef[ref] = u
			out = append(out, Object{Ref: ref, BaseName: ann[configref.BaseNameAnnotation], ContentHash: ann[configref.ContentHashAnnotation],
				Created: u.GetCreationTimestamp().Time})
		}
	}
	return out, byRef
}
