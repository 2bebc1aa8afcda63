// Progress is the progress reconciler (key: ManagedClusterAddOn namespace/name): it tracks
// one MCA's ManifestWorks, its deployer's ManifestApplied and its health, and writes its
// lastAppliedConfig, Progressing and HealthSoak conditions (the rules: package rolloutplan) and, when
// the controller deploys the add-on's template (--deploy-templates), its health: Available from
// the works' status feedback (rolloutplan.Available).
//
// It writes what changed together, once per transition: an interim status (rolloutplan.Interim: a
// health soak under way, health not known yet for the new generation, a message about either) is
// held in memory (Held), where every decision reads it, and written only with the next
// settled change (done, failed) or once it has lasted the hold (Options.InterimHold), so a
// cluster's move to a new version costs two status writes: its desired configs (the rollout's),
// then applied, healthy and done.

package addonrollout

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/hubcache"
	"github.com/addonops/addonops/internal/rolloutplan"
)

// ProgressOptions configure the progress reconciler.
type ProgressOptions struct {
	// DeployerWait is rolloutplan.Gate.DeployerWait: how long an MCA told to run its configs may go
	// without any ManifestApplied before its message asks for a deployer (0: the default).
	DeployerWait time.Duration
	// ProbeHealth makes the reconciler the health prober of template add-ons (--deploy-templates):
	// it computes their Available condition from the works (addonhealth) and writes it with the
	// rest. Without it, Available is whoever's probes the add-on (OCM's addon-manager) and only read.
	ProbeHealth bool
	// InterimHold is how long an interim status may stay unwritten (rolloutplan.Interim); 0 means
	// rolloutplan.DefaultInterimHold, negative writes every change at once.
	InterimHold time.Duration
}

// Progress is the progress reconciler.
type Progress struct {
	*View
	opts ProgressOptions
}

// NewProgress returns the progress reconciler on v.
func NewProgress(v *View, opts ProgressOptions) *Progress {
	if opts.InterimHold == 0 {
		opts.InterimHold = rolloutplan.DefaultInterimHold
	}
	return &Progress{View: v, opts: opts}
}

// probesHealth tells whether the reconciler computes mca's Available condition: the controller
// deploys its template.
func (c *Progress) probesHealth(mca *addonv1alpha1.ManagedClusterAddOn) bool {
	return c.opts.ProbeHealth && c.Hub.DesiredOf(mca).Template != nil
}

// progressStaleRecheck is how soon an MCA that changed between its read and its write is looked at again
// (its event usually brings it sooner).
const progressStaleRecheck = 500 * time.Millisecond

// Sync tracks one MCA's ManifestWorks, its deployer's ManifestApplied and its health:
// lastAppliedConfig, the Progressing and HealthSoak conditions (rolloutplan.Progress) and, as the
// add-on's health prober, Available (rolloutplan.Available). It writes only when they change and
// the change is not interim (or was held long enough), and looks again when a deployer's grace, a
// health soak or a hold runs out.
func (c *Progress) Sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name := SplitKey(key)
	cma, ok := c.ManagedCMA(name)
	if !ok {
		return 0, nil
	}
	obj, exists, err := c.Hub.MCAInformer.GetIndexer().GetByKey(key)
	if err != nil {
		return 0, err
	}
	if !exists {
		c.Held.Forget(key)
		c.Hub.MCAWriter.Drop(key, "")
		return 0, nil
	}
	if c.Hub.DecodeError(obj) != nil {
		return 0, nil // only its metadata is known: never written (the cache reported it)
	}
	// What this process wrote or will write with its next write: a deferred ManifestApplied is the
	// deployer's word as much as a written one.
	written := c.Hub.MCAWriter.View(key, obj.(*addonv1alpha1.ManagedClusterAddOn))
	if written.DeletionTimestamp != nil {
		c.Held.Forget(key)
		return 0, nil
	}
	works := c.AddonWorks(ns, name)
	for _, w := range works {
		if c.Hub.DecodeError(w) != nil {
			return 0, nil // its state is unknown: the MCA's progress stays where it is
		}
	}
	now := time.Now()
	clock := rolloutplan.Now(now)
	mca := c.Held.Apply(key, written)
	probes := c.probesHealth(mca)
	if probes {
		cluster, err := c.Hub.Clusters.Get(ns)
		if err != nil {
			cluster = nil // not known: the cluster's own availability says nothing
		}
		cond := rolloutplan.Available(mca, cluster, rolloutplan.DeployWorks(name, works))
		probed := mca.DeepCopy()
		rolloutplan.Set(&probed.Status, cond, clock)
		mca = probed
	}
	gate := rolloutplan.GateOf(cma)
	gate.DeployerWait = c.opts.DeployerWait
	st, recheck := rolloutplan.Progress(mca, rolloutplan.AddonWorks(name, works), gate, clock)
	if equality.Semantic.DeepEqual(written.Status, st) {
		c.Held.Forget(key)
		return recheck, nil
	}
	if c.opts.InterimHold > 0 && rolloutplan.Interim(written.Status, st, probes) {
		held, ok := c.Held.Get(key, written)
		since := held.Since
		if !ok || since.IsZero() {
			since = now
		}
		if left := c.opts.InterimHold - now.Sub(since); left > 0 {
			c.Held.Set(key, HeldStatus{Attempt: rolloutplan.Attempt(written), Conditions: heldConditions(st, probes), Since: since})
			return minPositive(recheck, left), nil
		}
	}
	// Another writer of this process may have written the MCA since it was read: then it is looked
	// at again from that version (statuswrite.Writer.StatusFrom).
	var cached *addonv1alpha1.ManagedClusterAddOn
	if cur, ok, err := c.Hub.MCAInformer.GetIndexer().GetByKey(key); err == nil && ok {
		cached = cur.(*addonv1alpha1.ManagedClusterAddOn)
	}
	_, skipped, err := c.Hub.MCAWriter.StatusFrom(ctx, cached, written, st)
	if err != nil {
		return 0, fmt.Errorf("writing the status of ManagedClusterAddOn %s: %w", key, err)
	}
	if skipped {
		return progressStaleRecheck, nil
	}
	c.Held.Forget(key)
	return recheck, nil
}

// heldConditions are the interim conditions of st that decisions must read from memory.
func heldConditions(st addonv1alpha1.ManagedClusterAddOnStatus, probes bool) []metav1.Condition {
	var out []metav1.Condition
	types := []string{addonstatus.ConditionHealthSoak}
	if probes {
		types = append(types, addonstatus.ConditionAvailable)
	}
	for _, t := range types {
		if c := meta.FindStatusCondition(st.Conditions, t); c != nil {
			out = append(out, *c)
		}
	}
	return out
}

// minPositive is the earlier of two durations, 0 meaning none.
func minPositive(a, b time.Duration) time.Duration {
	if a <= 0 || b > 0 && b < a {
		return b
	}
	return a
}

// Watch: an MCA's progress follows its own changes, its works' and its CMA's spec and
// annotations: a CMA that becomes managed (addon.open-cluster-management.io/lifecycle, an add-on
// taken over from OCM's addon-manager) gets its MCAs' Progressing in this controller's words at
// once, not at their next event, and a changed health soak or health check applies at once too.
// The controller's own status writes on the CMA enqueue nothing (hubcache.CMAChanged). As the
// health prober it follows the clusters too: a cluster that stops reporting makes its add-ons'
// health Unknown.
func (c *Progress) Watch(q hubcache.Queue) error {
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
	regs := []Registration{
		{Informer: c.Hub.MCAInformer, Handler: cache.ResourceEventHandlerFuncs{AddFunc: mca, UpdateFunc: func(_, cur any) { mca(cur) }}},
		{Informer: c.Hub.CMAInformer, Handler: cache.ResourceEventHandlerFuncs{AddFunc: cma, UpdateFunc: func(old, cur any) {
			if hubcache.CMAChanged(old, cur) {
				cma(cur)
			}
		}}},
		{Informer: c.Hub.WorkInformer, Handler: cache.ResourceEventHandlerFuncs{AddFunc: work, UpdateFunc: func(_, cur any) { work(cur) }, DeleteFunc: work}},
	}
	if c.opts.ProbeHealth {
		cluster := func(obj any) {
			for _, key := range c.Hub.MCAsOfCluster(obj) {
				q.Add(key)
			}
		}
		regs = append(regs, Registration{Informer: c.Hub.ClusterInformer, Handler: cache.ResourceEventHandlerFuncs{
			AddFunc: cluster, UpdateFunc: func(_, cur any) { cluster(cur) }, DeleteFunc: cluster}})
	}
	// A change deferred to the MCA's next write (the deployer's first ManifestApplied) is one this
	// reconciler decides on, like a written one.
	c.Hub.MCAWriter.OnDefer(q.Add)
	return Register(regs...)
}
