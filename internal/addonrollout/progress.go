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
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/history"
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
// lastAppliedConfig, the Progressing and HealthSoak conditions (rolloutplan.Progress; an MCA a
// failed verification judged keeps its failure while the version history records it:
// rolloutplan.Track) and, as the add-on's health prober, Available (rolloutplan.Available). It
// writes only when they change and
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
		mca = withProbedHealth(mca, name, cluster, works, clock)
	}
	gate := rolloutplan.GateOf(cma)
	gate.DeployerWait = c.opts.DeployerWait
	// A cluster a failed verification judged stays failed while the version history says so.
	st, recheck := rolloutplan.Track(mca, rolloutplan.AddonWorks(name, works), gate, func() *history.Record { return c.History(cma) }, clock)
	held, heldOK := c.Held.Get(key, written)
	d := decideProgress(written, st, recheck, probes, c.opts.InterimHold, held, heldOK, now)
	switch d.action {
	case progressUnchanged:
		c.Held.Forget(key)
		return d.after, nil
	case progressHold:
		c.Held.Set(key, d.held)
		return d.after, nil
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
	after, forget := progressWritten(skipped, recheck)
	if forget {
		c.Held.Forget(key)
	}
	return after, nil
}

// withProbedHealth returns a copy of mca with the Available condition the health prober computes
// from the cluster (nil when not known) and the add-on's deploy works; mca itself, which may be
// the cache's, is left as it is.
func withProbedHealth(mca *addonv1alpha1.ManagedClusterAddOn, addon string, cluster *clusterv1.ManagedCluster, works []*workv1.ManifestWork, now metav1.Time) *addonv1alpha1.ManagedClusterAddOn {
	cond := rolloutplan.Available(mca, cluster, rolloutplan.DeployWorks(addon, works))
	probed := mca.DeepCopy()
	rolloutplan.Set(&probed.Status, cond, now)
	return probed
}

// progressAction is what the progress reconciler does with the status it computed.
type progressAction int

const (
	// progressUnchanged: the written status already says it; nothing stays held.
	progressUnchanged progressAction = iota
	// progressHold: an interim change, held in memory (Held) until the hold runs out.
	progressHold
	// progressWrite: written now (with whatever was held).
	progressWrite
)

// progressDecision is decideProgress's verdict.
type progressDecision struct {
	action progressAction
	// held is what to hold (progressHold).
	held HeldStatus
	// after is when to look again (progressUnchanged, progressHold; after a write see
	// progressWritten).
	after time.Duration
}

// decideProgress decides what becomes of st, the status computed at now for the MCA whose written
// status (with what this process will write next) is written's, recheck being when the computation
// wants another look: nothing when it is the written status; held when it is interim
// (rolloutplan.Interim, probes: the controller owns Available) and the hold has not run out since
// the written status first fell behind (held.Since when something is held for written's attempt,
// heldOK, else now), looking again when the hold runs out at the latest; else written. A hold of 0
// or less writes every change.
func decideProgress(written *addonv1alpha1.ManagedClusterAddOn, st addonv1alpha1.ManagedClusterAddOnStatus, recheck time.Duration,
	probes bool, hold time.Duration, held HeldStatus, heldOK bool, now time.Time) progressDecision {
	if equality.Semantic.DeepEqual(written.Status, st) {
		return progressDecision{action: progressUnchanged, after: recheck}
	}
	if hold > 0 && rolloutplan.Interim(written.Status, st, probes) {
		since := held.Since
		if !heldOK || since.IsZero() {
			since = now
		}
		if left := hold - now.Sub(since); left > 0 {
			return progressDecision{action: progressHold, after: minPositive(recheck, left),
				held: HeldStatus{Attempt: rolloutplan.Attempt(written), Conditions: heldConditions(st, probes), Since: since}}
		}
	}
	return progressDecision{action: progressWrite}
}

// progressWritten says when to look again at an MCA after its status write, and whether what was
// held for it is dropped: a write skipped because the MCA changed since it was read
// (statuswrite.Writer.StatusFrom) keeps it and looks again soon, from the newer version.
func progressWritten(skipped bool, recheck time.Duration) (after time.Duration, forget bool) {
	if skipped {
		return progressStaleRecheck, false
	}
	return recheck, true
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
		if key, ok := workMCAKey(obj); ok {
			q.Add(key)
		}
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

// workMCAKey is the key of the MCA a ManifestWork event (a work or its tombstone) concerns: the
// add-on label in the work's namespace. A hosted work (addon namespace label: it lives in the
// hosting cluster's namespace, not the add-on's cluster's) and anything else concern none.
func workMCAKey(obj any) (string, bool) {
	w, ok := hubcache.Tombstone[*workv1.ManifestWork](obj)
	if !ok {
		return "", false
	}
	if _, hosted := w.Labels[addonv1alpha1.AddonNamespaceLabelKey]; hosted {
		return "", false
	}
	return w.Namespace + "/" + w.Labels[addonv1alpha1.AddonLabelKey], true
}
