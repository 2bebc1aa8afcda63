// The Deployer deploys template add-ons: for every ManagedClusterAddOn of a managed add-on
// whose desired configs include an AddOnTemplate, it renders the template for the cluster
// (internal/render) and keeps the add-on's ManifestWorks (internal/addonwork) in line with it,
// paced by the rollout: a cluster is only touched while its MCA is Configured=True. It also runs
// the template's pre-delete hooks when the MCA is deleted. Decide is the pure decision; the
// Reconciler reads the hub and writes the plan.
//
// It replaces, for hubs without OCM's addon-manager (controller flag --deploy-templates),
// addon-framework's agentdeploy controller running inside OCM's per-template manager.

package templatedeploy

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/hubcache"
	"github.com/addonops/addonops/internal/manifesthead"
)

// DeployerOptions configure the deployer.
type DeployerOptions struct {
	// ManifestLimit is the manifests size limit per work before addonwork.Threshold; 0 means
	// addonwork.DefaultManifestLimit (OCM's 500 KiB).
	ManifestLimit int
}

// Deployer deploys template add-ons. Key: MCA "<namespace>/<name>".
type Deployer struct {
	opts     DeployerOptions
	hub      *hubcache.Cache
	events   record.EventBroadcaster
	recorder record.EventRecorder
	// pending are the work writes the cache may not show yet (pendingWrites).
	pending *pendingWrites
}

// NewDeployer builds the deployer and adds it, with workers concurrent reconciles, to the shared cache,
// which runs it.
func NewDeployer(hub *hubcache.Cache, opts DeployerOptions, workers int) (*Deployer, error) {
	r := &Deployer{opts: opts, hub: hub, pending: newPendingWrites()}
	scheme := runtime.NewScheme()
	utilruntime.Must(addonv1alpha1.Install(scheme))
	r.events = record.NewBroadcaster()
	r.recorder = r.events.NewRecorder(scheme, corev1.EventSource{Component: "addonops-agentdeploy"})

	mcaKey := func(obj any) []string {
		if m, ok := obj.(*addonv1alpha1.ManagedClusterAddOn); ok {
			return []string{m.Namespace + "/" + m.Name}
		}
		return nil
	}
	handlers := []hubcache.Handler{
		{Informer: hub.MCAInformer, Keys: mcaKey, Changed: hub.MCAUpdates(MCAChanged)},
		// A work event looks at its add-on's MCA (status for ManifestApplied, hook completion,
		// and a work changed or deleted by someone else is put back).
		{Informer: hub.WorkInformer, Keys: func(obj any) []string {
			if w, ok := obj.(*workv1.ManifestWork); ok {
				return []string{w.Namespace + "/" + w.Labels[addonv1alpha1.AddonLabelKey]}
			}
			return nil
		}},
		{Informer: hub.TemplateInformer, Keys: hub.MCAsOfConfig(configref.AddOnTemplates)},
		{Informer: hub.ADCInformer, Keys: hub.MCAsOfConfig(configref.AddOnDeploymentConfigs)},
		// The cluster's image-registries annotation is rendered in.
		{Informer: hub.ClusterInformer, Keys: hub.MCAsOfCluster},
		// A CMA that becomes managed (or stops being so) changes what is done for its MCAs.
		{Informer: hub.CMAInformer, Keys: hub.MCAsOfCMA, Changed: hubcache.CMAChanged},
	}
	if err := hub.Add(hubcache.Reconciler{Name: "agentdeploy", Workers: workers, Sync: r.sync,
		Watch: func(q hubcache.Queue) error { return hubcache.Watch(q, handlers...) }}); err != nil {
		return nil, err
	}
	if err := hub.AddEvents(r.events); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Deployer) sync(ctx context.Context, key string) (time.Duration, error) {
	logger := klog.FromContext(ctx)
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil || name == "" {
		return 0, nil
	}
	if !r.hub.Managed(name) {
		return 0, nil
	}
	works := r.hub.AddonWorks(ns, name)
	mca, err := r.hub.MCAs.ManagedClusterAddOns(ns).Get(name)
	if apierrors.IsNotFound(err) {
		r.pending.forget(key)
		return 0, r.deleteWorks(ctx, key, Orphans(name, works))
	}
	if err != nil {
		return 0, err
	}
	// An MCA or work that does not decode is only its metadata in the cache (which reported it):
	// its works stay as they are.
	if r.hub.DecodeError(mca) != nil {
		return 0, nil
	}
	for _, w := range works {
		if r.hub.DecodeError(w) != nil {
			return 0, nil
		}
	}
	cluster, err := r.hub.Clusters.Get(ns)
	if err != nil {
		cluster = nil
	}
	desired := r.hub.DesiredOf(mca)
	if refused, wait, err := r.hub.Refuse(ctx, key, mca, desired, func(msg string) {
		r.recorder.Event(mca, corev1.EventTypeWarning, hubcache.EventReasonConfigsRefused, msg)
	}); refused && (wait > 0 || err != nil) {
		return wait, err
	}
	plan := Decide(Input{MCA: mca, Cluster: cluster, Desired: desired, Works: works, ManifestLimit: r.opts.ManifestLimit})
	// Looked at on every sync, so what the cache caught up with is forgotten at once.
	behind := r.pending.behind(key, works)
	if plan.writesWorks() && behind {
		// Informer caches lag behind writes: a plan built on a cache that misses a work just
		// written would move manifests between works (and a manifest stays where it is put). So
		// while the cache does not show one of our writes (pendingWrites), decide again on the
		// live MCA and works.
		live, err := r.hub.Clients.Addon.AddonV1alpha1().ManagedClusterAddOns(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return 0, nil // the delete event brings us back
		}
		if err != nil {
			return 0, fmt.Errorf("reading ManagedClusterAddOn %s: %w", key, err)
		}
		list, err := r.hub.Clients.Work.WorkV1().ManifestWorks(ns).List(ctx, metav1.ListOptions{LabelSelector: addonv1alpha1.AddonLabelKey + "=" + name})
		if err != nil {
			return 0, fmt.Errorf("listing the ManifestWorks of %s: %w", key, err)
		}
		mca, works = live, make([]*workv1.ManifestWork, 0, len(list.Items))
		for i := range list.Items {
			works = append(works, &list.Items[i])
		}
		plan = Decide(Input{MCA: mca, Cluster: cluster, Desired: r.hub.DesiredOf(mca), Works: works, ManifestLimit: r.opts.ManifestLimit})
	}
	if plan.Skip != "" {
		logger.V(4).Info("Not deploying", "why", plan.Skip)
	}
	if plan.writesWorks() || len(plan.RemoveFinalizers) > 0 {
		// Warnings go with a change only: every resync would repeat them otherwise.
		for _, w := range plan.Warnings {
			r.recorder.Event(mca, corev1.EventTypeWarning, "AddOnTemplateWarning", w)
		}
	}

	// Finalizer first: it must be there before anything could need a hook at deletion; removing it
	// is the last step of a deletion.
	if len(plan.AddFinalizers) > 0 {
		if mca, err = r.hub.MCAWriter.Finalizers(ctx, mca, plan.AddFinalizers, plan.RemoveFinalizers); err != nil || mca == nil {
			return 0, err
		}
	}

	written, writeErr := r.writeWorks(ctx, key, plan)
	if err := r.deleteWorks(ctx, key, plan.Delete); err != nil {
		writeErr = errors.Join(writeErr, err)
	}

	conds := plan.Conditions
	if len(conds) > 0 || plan.TrackApplied || writeErr != nil {
		deploy := DeployWorks(name, mergeWorks(works, written, plan.Delete))
		change := func(m *addonv1alpha1.ManagedClusterAddOn) {
			for _, c := range conds {
				meta.SetStatusCondition(&m.Status.Conditions, c)
			}
			switch {
			case writeErr != nil:
				meta.SetStatusCondition(&m.Status.Conditions, ApplyFailed(writeErr))
			case plan.TrackApplied:
				SetManifestApplied(&m.Status.Conditions, deploy)
			}
		}
		// Only an MCA without any ManifestApplied yet can take a first one: the rest (every sync of
		// an upgrade) skip the copy.
		applied, first := metav1.Condition{}, false
		if view := r.hub.MCAWriter.View(key, mca); meta.FindStatusCondition(view.Status.Conditions, ConditionManifestApplied) == nil {
			next := view.DeepCopy()
			change(next)
			applied, first = FirstApplied(view.Status, next.Status)
		}
		if first {
			// The progress reconciler writes the MCA again when the agent is healthy, usually
			// within seconds: this goes with that write (statuswrite.Writer.Defer).
			r.hub.MCAWriter.Defer(key, deferOwner, func(m *addonv1alpha1.ManagedClusterAddOn) {
				meta.SetStatusCondition(&m.Status.Conditions, applied)
			})
		} else if mca, err = r.hub.MCAWriter.Status(ctx, mca, change); err != nil || mca == nil {
			return 0, errors.Join(writeErr, err)
		}
	}
	if writeErr != nil {
		return 0, writeErr
	}
	if len(plan.RemoveFinalizers) > 0 && len(plan.AddFinalizers) == 0 {
		if _, err := r.hub.MCAWriter.Finalizers(ctx, mca, nil, plan.RemoveFinalizers); err != nil {
			return 0, err
		}
	}
	// A deferred ManifestApplied that no other write took is written once it has waited long
	// enough.
	if left, ok := r.hub.MCAWriter.Deferred(key, deferOwner); ok {
		if left > 0 {
			return left, nil
		}
		if _, err := r.hub.MCAWriter.Flush(ctx, mca); err != nil {
			return 0, err
		}
	}
	return 0, nil
}

// deferOwner names the deployer's changes deferred to an MCA's next write (statuswrite.Writer.Defer).
const deferOwner = "deployer"

// FirstApplied reports whether next, the status the deployer computed for an MCA whose status
// (as this process knows it) is cur, differs from it only by the first ManifestApplied=True of
// an MCA under way (Progressing True with an installing, upgrading or rolling back reason), and
// returns that condition. Such a report may wait for the MCA's next write, which comes when the
// agent is healthy on the works (done): any other change of the deployer's (a False, a True
// again after a False, another condition) is written at once.
func FirstApplied(cur, next addonv1alpha1.ManagedClusterAddOnStatus) (metav1.Condition, bool) {
	p := meta.FindStatusCondition(cur.Conditions, addonstatus.ConditionProgressing)
	if p == nil || p.Status != metav1.ConditionTrue || !addonstatus.IsBusyReason(p.Reason) {
		return metav1.Condition{}, false
	}
	if meta.FindStatusCondition(cur.Conditions, ConditionManifestApplied) != nil {
		return metav1.Condition{}, false
	}
	applied := meta.FindStatusCondition(next.Conditions, ConditionManifestApplied)
	if applied == nil || applied.Status != metav1.ConditionTrue {
		return metav1.Condition{}, false
	}
	without := next.DeepCopy()
	meta.RemoveStatusCondition(&without.Conditions, ConditionManifestApplied)
	if !equality.Semantic.DeepEqual(cur, *without) {
		return metav1.Condition{}, false
	}
	return *applied, true
}

func (p Plan) writesWorks() bool { return len(p.Create)+len(p.Update)+len(p.Delete) > 0 }

// writeWorks creates and updates works and returns them as the API server returned them.
// Each accepted write is recorded in r.pending.
func (r *Deployer) writeWorks(ctx context.Context, mcaKey string, plan Plan) ([]*workv1.ManifestWork, error) {
	logger := klog.FromContext(ctx)
	var out []*workv1.ManifestWork
	var errs []error
	for _, w := range plan.Create {
		if err := notStandIns(w); err != nil {
			errs = append(errs, err)
			continue
		}
		res, err := r.hub.Clients.Work.WorkV1().ManifestWorks(w.Namespace).Create(ctx, w, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// Our cache lags: the informer will show it and requeue.
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("creating ManifestWork %s/%s: %w", w.Namespace, w.Name, err))
			continue
		}
		r.pending.created(mcaKey, res)
		logger.V(2).Info("Created ManifestWork", "work", w.Name, "manifests", len(w.Spec.Workload.Manifests), "configs", w.Annotations[workv1.ManifestConfigSpecHashAnnotationKey])
		out = append(out, res)
	}
	for _, w := range plan.Update {
		if err := notStandIns(w); err != nil {
			errs = append(errs, err)
			continue
		}
		res, err := r.hub.Clients.Work.WorkV1().ManifestWorks(w.Namespace).Update(ctx, w, metav1.UpdateOptions{})
		if err != nil {
			errs = append(errs, fmt.Errorf("updating ManifestWork %s/%s: %w", w.Namespace, w.Name, err))
			continue
		}
		r.pending.updated(mcaKey, res, w.ResourceVersion)
		logger.V(2).Info("Updated ManifestWork", "work", w.Name, "generation", res.Generation, "manifests", len(w.Spec.Workload.Manifests), "configs", w.Annotations[workv1.ManifestConfigSpecHashAnnotationKey])
		out = append(out, res)
	}
	return out, errors.Join(errs...)
}

func (r *Deployer) deleteWorks(ctx context.Context, mcaKey string, works []*workv1.ManifestWork) error {
	var errs []error
	for _, w := range works {
		if w.DeletionTimestamp != nil {
			continue // the work agent is removing it
		}
		uid := w.UID
		err := r.hub.Clients.Work.WorkV1().ManifestWorks(w.Namespace).Delete(ctx, w.Name,
			metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("deleting ManifestWork %s/%s: %w", w.Namespace, w.Name, err))
			continue
		}
		r.pending.deleted(mcaKey, w)
		klog.FromContext(ctx).V(2).Info("Deleted ManifestWork", "work", w.Namespace+"/"+w.Name)
	}
	return errors.Join(errs...)
}

// notStandIns refuses a work that holds a manifest's stand-in (package manifesthead), which only
// the cache holds: written, the agent would apply the head alone. Works are built from the
// rendered manifests, so this is a bug of the deployer, reported rather than written.
func notStandIns(w *workv1.ManifestWork) error {
	for i, m := range w.Spec.Workload.Manifests {
		if _, ok := manifesthead.StandInDigest(m.Raw); ok {
			return fmt.Errorf("not writing ManifestWork %s/%s: its manifest %d is the cache's stand-in (head and digest), not the rendered manifest; this is a bug of addonops' deployer", w.Namespace, w.Name, i)
		}
	}
	return nil
}

// mergeWorks is the cached works with the written ones replacing them and the deleted ones left
// out.
func mergeWorks(cached, written, deleted []*workv1.ManifestWork) []*workv1.ManifestWork {
	byName := map[string]*workv1.ManifestWork{}
	var names []string
	for _, w := range cached {
		byName[w.Name] = w
		names = append(names, w.Name)
	}
	for _, w := range written {
		if _, ok := byName[w.Name]; !ok {
			names = append(names, w.Name)
		}
		byName[w.Name] = w
	}
	for _, w := range deleted {
		delete(byName, w.Name)
	}
	var out []*workv1.ManifestWork
	for _, n := range names {
		if w, ok := byName[n]; ok {
			out = append(out, w)
		}
	}
	return out
}
