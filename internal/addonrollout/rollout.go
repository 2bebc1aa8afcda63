// Rollout is the rollout reconciler (key: ClusterManagementAddOn name): it takes the rollout
// decision for one add-on (package rolloutplan) and writes it: the add-on's version history
// (package history), the CMA status, then the MCAs whose status changes. It also reports the
// add-ons it cannot read: a CMA OCM's Go types cannot hold, config kinds it may not read.

package addonrollout

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterlisters "open-cluster-management.io/api/client/cluster/listers/cluster/v1beta1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/hubcache"
	"github.com/addonops/addonops/internal/notify"
	"github.com/addonops/addonops/internal/rolloutmetrics"
	"github.com/addonops/addonops/internal/rolloutplan"
)

// RolloutOptions configure the rollout reconciler.
type RolloutOptions struct {
	// HistoryNamespace is where the add-ons' version histories are kept; empty turns them off.
	HistoryNamespace string
	// HistoryLimit is how many versions per placement a history keeps.
	HistoryLimit int
	// DeployerWait is rolloutplan.Input.DeployerWait: how long a cluster told to run its configs
	// may go without any ManifestApplied before it counts as waiting for a deployer.
	DeployerWait time.Duration
	// PlacementGrace is rolloutplan.Input.PlacementGrace.
	PlacementGrace time.Duration
	// Notifier, when set, sends the notifications of the decisions' moments (package notify).
	Notifier *notify.Notifier
	// Verifier runs the batches' verifications (verify.go); nil: a placement with a verification
	// waits at its first finished batch.
	Verifier Verifier
}

// Rollout is the rollout reconciler.
type Rollout struct {
	*View
	opts RolloutOptions
	// queue is the reconciler's queue, set when it starts: config changes and access problems
	// reach every add-on's rollout through it.
	queue atomic.Pointer[hubcache.Queue]

	// forbiddenMu guards forbiddenTold: per config kind the controller may not read, the CMAs
	// already told so by an event.
	forbiddenMu   sync.Mutex
	forbiddenTold map[configref.GroupResource]map[string]bool

	// deployerMu guards deployerTold: the CMAs (by UID) whose clusters waiting for a deployer were
	// already reported by an event (rolloutplan.DeployerWaitEvent), until none waits any more.
	deployerMu   sync.Mutex
	deployerTold map[string]bool

	// pace spaces an add-on's decisions triggered by MCA events by what its last one cost.
	pace *Pacer
}

// NewRollout returns the rollout reconciler on v.
func NewRollout(v *View, opts RolloutOptions) *Rollout {
	return &Rollout{View: v, opts: opts, pace: NewPacer(v.Coalesce)}
}

// rolloutStaleRecheck is how soon a decision is taken again when some of its MCAs changed before they
// were written (their events usually bring it sooner).
const rolloutStaleRecheck = time.Second

// notSyncedRetry is how soon a decision is retried while a config informer has not synced yet.
const notSyncedRetry = 200 * time.Millisecond

// Sync takes the rollout decision for one add-on (package rolloutplan) and writes it: the
// CMA status first, since it records what the decision rests on (a canary-gated placement's last
// known good configs), then the MCAs whose status changes.
func (c *Rollout) Sync(ctx context.Context, name string) (time.Duration, error) {
	logger := klog.FromContext(ctx)
	cma, ok := c.ManagedCMA(name)
	if !ok {
		return 0, nil
	}
	raw, done, retry, rawErr := c.beforeRollout(ctx, cma) // undecodable.go
	if done {
		return retry, rawErr
	}
	mcas := c.AddonMCAs(name)
	synced, unserved := c.Hub.Configs.Ensure(ctx, referencedResources(cma, mcas))
	if !synced {
		// Deciding now would report configs as missing that are only not cached yet.
		return notSyncedRetry, nil
	}
	placements := map[rolloutplan.PlacementKey]*clusterv1beta1.Placement{}
	for _, k := range PlacementsOf(cma) {
		p, err := c.Hub.Placements.Placements(k.Namespace).Get(k.Name)
		switch {
		case err == nil:
			placements[k] = p
		case !apierrors.IsNotFound(err):
			return 0, fmt.Errorf("reading Placement %s: %w", k, err)
		}
	}

	hist, histOK := c.readHistory(cma)
	started := time.Now()
	plan := rolloutplan.Decide(rolloutplan.Input{
		Now:        rolloutplan.Now(time.Now()),
		CMA:        cma,
		Placements: placements,
		Decisions:  decisionGetter{c.Hub.Decisions},
		MCAs:       mcas,
		Works:      func(ns string) []*workv1.ManifestWork { return c.AddonWorks(ns, name) },
		Configs:    c.Hub.Configs.Lookup,
		// lastObservedGeneration, as addon-framework's addonconfig controller writes it.
		Generations: c.Hub.Configs.Generation,
		History:     hist, HistoryLimit: c.opts.HistoryLimit,
		Raw:            raw,
		DeployerWait:   c.opts.DeployerWait,
		PlacementGrace: c.opts.PlacementGrace,
		Verifications:  c.lookupVerifications(),
	})
	c.pace.Took(name, time.Since(started))

	writeCMA := !equality.Semantic.DeepEqual(cma.Status, plan.Status)
	if len(plan.Updates) > 0 && !writeCMA {
		// The MCAs' new status rests on the CMA as the cache holds it, and the cache may lag: a
		// person who set addonops.io/pause or handed the add-on back to OCM's addon-manager a
		// moment ago must not see a batch pushed, or OCM's status overwritten, on the old CMA.
		// A CMA status write is fenced by its resourceVersion; without one, the CMA is read live
		// and the decision taken again once the cache holds what the server does.
		live, err := c.Addon.AddonV1alpha1().ClusterManagementAddOns().Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return 0, nil
		case err != nil:
			return 0, fmt.Errorf("reading ClusterManagementAddOn %s before writing the status of its ManagedClusterAddOns: %w", name, err)
		case live.ResourceVersion != cma.ResourceVersion:
			logger.V(2).Info("ClusterManagementAddOn changed since the decision read it; deciding again", "cached", cma.ResourceVersion, "live", live.ResourceVersion)
			return rolloutStaleRecheck, nil
		}
	}
	// The history first: it records what the status and MCAs are about to say (a version
	// started, completed, rolled back). A failed write does not hold the rollout up; it is
	// reported and retried.
	var histErr error
	if plan.History != nil && histOK {
		if histErr = c.writeHistory(ctx, cma, plan.History); histErr != nil {
			c.Recorder.Event(cma, corev1.EventTypeWarning, EventReasonHistoryWriteFailed, histErr.Error())
		}
	}

	if writeCMA {
		updated := cma.DeepCopy()
		updated.Status = plan.Status
		res, err := c.Addon.AddonV1alpha1().ClusterManagementAddOns().UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		if err != nil {
			return 0, fmt.Errorf("writing the status of ClusterManagementAddOn %s: %w", name, err)
		}
		c.WrittenCMAs.Wrote(name, cma.ResourceVersion, res)
		rolloutmetrics.ObserveProgressions(name, cma.Status.InstallProgressions, plan.Status.InstallProgressions, time.Now())
	}

	// Notifications once the CMA status records the moments they announce, whatever happens to
	// the MCA writes: the next decision, on this status, does not see those moments again.
	recorded := hist
	if plan.History != nil && histErr == nil {
		recorded = plan.History
	}
	c.notify(ctx, cma, plan.Events, recorded, histOK && (plan.History == nil || histErr == nil))

	if len(plan.Updates) > 0 {
		logger.V(2).Info("Updating MCA status", "count", len(plan.Updates))
	}
	// Each update is let go once written: at fleet scale the updates (the version decided on and
	// the new status, per cluster) are the largest thing in memory while a batch of thousands is
	// written, 32 at a time. Goroutines clear distinct elements.
	updates := plan.Updates
	plan.Updates = nil
	index := make(map[string]int, len(updates))
	namespaces := make([]string, 0, len(updates))
	for i, u := range updates {
		index[u.MCA.Namespace] = i
		namespaces = append(namespaces, u.MCA.Namespace)
	}
	var stale atomic.Int32
	err := c.Parallel(namespaces, func(ns string) error {
		i := index[ns]
		u := updates[i]
		updates[i] = rolloutplan.Update{}
		cached, err := c.Hub.MCAs.ManagedClusterAddOns(ns).Get(name)
		if err != nil {
			cached = nil // not cached (yet): the decision's version is the freshest known
		}
		_, skipped, err := c.Hub.MCAWriter.StatusFrom(ctx, cached, u.MCA, u.Status)
		if err != nil {
			return fmt.Errorf("writing the status of ManagedClusterAddOn %s/%s: %w", ns, name, err)
		}
		if skipped {
			stale.Add(1)
		}
		return nil
	})

	// Verifications once the decision is written: a run's end takes the decision again, which
	// must see the status that asked for it.
	if err == nil {
		c.startVerifications(plan.Verify)
	}
	// Events once the decision is written: a person reads them next to the status they describe.
	if err == nil {
		for _, ev := range plan.Events {
			typ := eventType(ev)
			if typ == corev1.EventTypeWarning {
				logger.Info("Placement waits or failed", "reason", ev.Reason, "message", ev.Message)
			}
			c.Recorder.Event(cma, typ, ev.Reason, ev.Message)
		}
		if ev, ok := c.deployerEvent(cma, plan.DeployerWaits); ok {
			logger.Info("Clusters wait for the add-on's deployer", "clusters", len(plan.DeployerWaits))
			c.Recorder.Event(cma, corev1.EventTypeWarning, ev.Reason, ev.Message)
		}
	}

	err = errors.Join(err, histErr)
	n := stale.Load()
	if n > 0 {
		logger.V(2).Info("MCAs changed since the decision read them; deciding again", "count", n)
	}
	return rolloutRecheck(plan.RecheckAfter, n > 0, unserved), err
}

// eventType is the type of the event a decision's event is recorded as.
func eventType(ev rolloutplan.Event) string {
	if ev.Warning {
		return corev1.EventTypeWarning
	}
	return corev1.EventTypeNormal
}

// rolloutRecheck is when an add-on's decision is taken again: when the decision asks (planned, 0:
// not), sooner when some of its MCAs changed before they were written (stale) and, when a config
// kind it references is not served (unserved: its CRD may come later), after
// hubcache.RediscoverAfter at the latest.
func rolloutRecheck(planned time.Duration, stale, unserved bool) time.Duration {
	after := planned
	if stale && (after == 0 || after > rolloutStaleRecheck) {
		after = rolloutStaleRecheck
	}
	if unserved && (after == 0 || after > hubcache.RediscoverAfter) {
		// A config kind may get its CRD later; look again.
		after = hubcache.RediscoverAfter
	}
	return after
}

// deployerEvent decides the Warning event on cma for its clusters waiting for a deployer
// (rolloutplan.DeployerWaitEvent): one per episode, remembered in memory, so a restarted
// controller reports an ongoing episode once more.
func (c *Rollout) deployerEvent(cma *addonv1alpha1.ClusterManagementAddOn, waiting []string) (rolloutplan.Event, bool) {
	c.deployerMu.Lock()
	defer c.deployerMu.Unlock()
	key := string(cma.UID)
	ev, emit, told := rolloutplan.DeployerWaitEvent(waiting, c.deployerTold[key], c.opts.DeployerWait)
	switch {
	case told && c.deployerTold == nil:
		c.deployerTold = map[string]bool{key: true}
	case told:
		c.deployerTold[key] = true
	default:
		delete(c.deployerTold, key)
	}
	return ev, emit
}

// referencedResources lists the group/resources of the configs the decision reads: the CMA's
// default and placement configs, and the MCAs' own configs of a type the CMA supports
// (spec.supportedConfigs). An MCA's config of any other type is never read (the decision reports
// it ConfigurationUnsupported), so its type is never looked up either: an MCA's spec may name any
// number of made-up types, and each unknown one would cost the API server a discovery request.
func referencedResources(cma *addonv1alpha1.ClusterManagementAddOn, mcas []*addonv1alpha1.ManagedClusterAddOn) []configref.GroupResource {
	seen := map[configref.GroupResource]bool{}
	var out []configref.GroupResource
	add := func(gr configref.GroupResource) {
		if !seen[gr] {
			seen[gr] = true
			out = append(out, gr)
		}
	}
	supported := make(map[configref.GroupResource]bool, len(cma.Spec.SupportedConfigs))
	for _, sc := range cma.Spec.SupportedConfigs {
		gr := configref.GroupResource{Group: sc.Group, Resource: sc.Resource}
		supported[gr] = true
		if sc.DefaultConfig != nil && sc.DefaultConfig.Name != "" && sc.DefaultConfig.Name != configref.ReservedNoDefault {
			add(gr)
		}
	}
	for _, p := range cma.Spec.InstallStrategy.Placements {
		for _, cf := range p.Configs {
			add(configref.GroupResource{Group: cf.Group, Resource: cf.Resource})
		}
	}
	for _, m := range mcas {
		for _, cf := range m.Spec.Configs {
			if gr := (configref.GroupResource{Group: cf.Group, Resource: cf.Resource}); supported[gr] {
				add(gr)
			}
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

// Watch: a decision is taken again when the CMA, its placements, an MCA (its status
// reports progress) or a config changes; MCA and placement bursts are coalesced. Deleted objects
// leave the overlay of written ones.
func (c *Rollout) Watch(q hubcache.Queue) error {
	c.queue.Store(&q)
	mca := func(obj any) {
		if m, ok := hubcache.Tombstone[*addonv1alpha1.ManagedClusterAddOn](obj); ok {
			q.AddAfter(m.Name, c.pace.Wait(m.Name))
		}
	}
	cma := CMAHandler(q)
	cma.DeleteFunc = func(obj any) {
		if m, ok := hubcache.Tombstone[*addonv1alpha1.ClusterManagementAddOn](obj); ok {
			c.WrittenCMAs.Forget(m.Name)
			c.pace.Forget(m.Name)
			c.deployerMu.Lock()
			delete(c.deployerTold, string(m.UID))
			c.deployerMu.Unlock()
		}
	}
	regs := []Registration{
		{Informer: c.Hub.CMAInformer, Handler: cma},
		{Informer: c.Hub.MCAInformer, Handler: cache.ResourceEventHandlerFuncs{AddFunc: mca, UpdateFunc: func(_, cur any) { mca(cur) }, DeleteFunc: func(obj any) {
			if m, ok := hubcache.Tombstone[*addonv1alpha1.ManagedClusterAddOn](obj); ok {
				c.WrittenMCAs.Forget(m.Namespace + "/" + m.Name)
				c.Held.Forget(m.Namespace + "/" + m.Name)
			}
			mca(obj)
		}}},
		{Informer: c.Hub.PlacementInformer, Handler: c.Dependents(q)},
		{Informer: c.Hub.DecisionInformer, Handler: c.Dependents(q)},
	}
	if c.Hub.HistoryInformer != nil {
		// A history edited or deleted by a person is read (or started) again.
		hist := func(obj any) {
			if addon, ok := historyAddon(obj); ok {
				q.Add(addon)
			}
		}
		regs = append(regs, Registration{Informer: c.Hub.HistoryInformer, Handler: cache.ResourceEventHandlerFuncs{AddFunc: hist, UpdateFunc: func(_, cur any) { hist(cur) },
			DeleteFunc: func(obj any) {
				if cm, ok := hubcache.Tombstone[*corev1.ConfigMap](obj); ok {
					c.WrittenHistories.Forget(cm.Name)
				}
				hist(obj)
			}}})
	}
	return Register(regs...)
}

// historyAddon is the add-on a version history ConfigMap event (a ConfigMap or its tombstone) is
// about: the one its addonops.io/addon annotation names; none without it.
func historyAddon(obj any) (string, bool) {
	cm, ok := hubcache.Tombstone[*corev1.ConfigMap](obj)
	if !ok || cm.Annotations[history.AddonAnnotation] == "" {
		return "", false
	}
	return cm.Annotations[history.AddonAnnotation], true
}

func (c *Rollout) EnqueueAll() {
	q := c.queue.Load()
	if q == nil {
		return // the rollout reconciler sees every CMA when it starts
	}
	c.View.EnqueueAll(*q)
}

// EventReasonConfigurationForbidden is the reason of the Warning event on a CMA whose configs the
// controller may not read (hubcache.ForbiddenError).
const EventReasonConfigurationForbidden = addonstatus.ReasonConfigurationForbidden

// ConfigAccess is the config cache's OnAccess: it raises a Warning event on every managed CMA
// that references a config kind the controller may not read, once per CMA and problem (the
// informer calls it at every retry, so CMAs that start referencing the kind later are told too),
// and forgets them when the permission is granted.
func (c *Rollout) ConfigAccess(gr configref.GroupResource, ferr *hubcache.ForbiddenError) {
	c.forbiddenMu.Lock()
	defer c.forbiddenMu.Unlock()
	if ferr == nil {
		delete(c.forbiddenTold, gr)
		return
	}
	if c.forbiddenTold == nil {
		c.forbiddenTold = map[configref.GroupResource]map[string]bool{}
	}
	told := c.forbiddenTold[gr]
	if told == nil {
		told = map[string]bool{}
		c.forbiddenTold[gr] = told
	}
	cmas, _ := c.Hub.CMAs.List(labels.Everything())
	for _, cma := range forbiddenNews(gr, cmas, c.Managed, c.AddonMCAs, told) {
		c.Recorder.Event(cma, corev1.EventTypeWarning, EventReasonConfigurationForbidden, "config kind "+ferr.Error())
	}
}

// forbiddenNews picks the CMAs to tell that the controller may not read config kind gr: of cmas,
// the managed ones that reference it (referencedResources, with their MCAs: mcasOf) and are not in
// told yet, which it adds them to.
func forbiddenNews(gr configref.GroupResource, cmas []*addonv1alpha1.ClusterManagementAddOn, managed func(*addonv1alpha1.ClusterManagementAddOn) bool,
	mcasOf func(string) []*addonv1alpha1.ManagedClusterAddOn, told map[string]bool) []*addonv1alpha1.ClusterManagementAddOn {
	var out []*addonv1alpha1.ClusterManagementAddOn
	for _, cma := range cmas {
		if !managed(cma) || told[cma.Name] {
			continue
		}
		if slices.Contains(referencedResources(cma, mcasOf(cma.Name)), gr) {
			told[cma.Name] = true
			out = append(out, cma)
		}
	}
	return out
}
