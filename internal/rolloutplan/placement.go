package rolloutplan

// One install placement: its state, owners, target (rollback, canary gate) and kind of change.

import (
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clustersdk "open-cluster-management.io/sdk-go/pkg/apis/cluster/v1beta1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/maintwindow"
	"github.com/addonops/addonops/internal/operations"
)

// placementState is one install placement during a decision.
type placementState struct {
	index     int
	key       PlacementKey
	spec      addonv1alpha1.PlacementStrategy
	desired   []Config // the placement's configs over the defaults, current hashes
	problems  []error  // configs that cannot be read
	placement *clusterv1beta1.Placement
	tracker   *clustersdk.PlacementDecisionClustersTracker
	trackErr  error
	canary    *PlacementKey
	owned     []string // clusters whose configs this placement decides, sorted
	oldCond   *metav1.Condition
	oldDesir  []Config // the desired configs of the previous decision
	rollback  bool     // desired is a version the add-on ran successfully (isRollback)
	problem   bool     // cond names a problem a person must fix (a Warning event)

	// Day-2 state (package operations) and what this decision observed for the history.
	paused     bool         // no new cluster starts (addonops pause)
	retriedAt  *metav1.Time // failures older than this are retried (addonops retry)
	retryToken string       // a retry request acted on in this decision
	aborted    bool         // the desired version's rollout is aborted (addonops abort, auto-abort)
	abortToken string       // an abort request acted on in this decision
	abortMsg   string       // who aborted it and why
	stopped    bool         // the rollout of the desired version stopped on failures
	stopMsg    string
	// Maintenance windows (maintenance.go), as the last roll of this decision left them.
	windowWait     *maintwindow.Closure // clusters whose turn came wait for a window; nil when none does
	windowOverride string               // a window override let this version id's clusters start
	// Verification (verify.go), as the last roll toward the desired version left it; nil when none
	// applies.
	verify *verifyState
	// Continuous verification (continuous.go), likewise.
	continuous *continuousState

	// Results.
	blocked  bool // a problem keeps every MCA of the placement as it is
	restart  bool // cond starts anew: its transition time is now even if its status stays
	cond     metav1.Condition
	target   []Config // what the placement's clusters are moved to
	lkg      []Config
	applied  []Config
	complete bool
}

// DefaultPlacementGrace is Input.PlacementGrace's default: how long a Placement that
// spec.installStrategy names may be missing while the placement still counts as Progressing; after
// it, the placement is Degraded (PlacementNotFound, Progressing=False). A GitOps engine applies an
// add-on and the Placement added with it in one sync, in an order of its own (Flux's
// kustomize-controller orders kinds it does not know by API group: addon.open-cluster-management.io
// before cluster.open-cluster-management.io), so a new Placement is missing for a moment that no
// person must act on; a health check that failed on that moment would report the sync failed
// (docs/gitops-engines.md).
const DefaultPlacementGrace = 30 * time.Second

// placementMissing decides a placement whose Placement does not exist: its clusters keep what they
// run. Within the grace (Input.PlacementGrace) of the moment it was first found missing (the
// transition time of the Progressing condition the grace began with) it is Progressing; then
// Degraded, with a warning event. The grace is not started again by a Placement that stays missing.
func (d *decider) placementMissing(p *placementState) {
	const keep = "its clusters keep their configs and no MCA of theirs is deleted until it exists or is removed from spec.installStrategy.placements"
	degraded := fmt.Sprintf("Placement %s not found; %s", p.key, keep)
	old := p.oldCond
	missing := old != nil && old.Reason == addonstatus.ReasonPlacementNotFound
	if missing && old.Status == metav1.ConditionFalse {
		p.wait(addonstatus.ReasonPlacementNotFound, degraded)
		return
	}
	since := d.in.Now.Time
	if missing {
		since = old.LastTransitionTime.Time
	}
	grace := d.placementGrace()
	left := since.Add(grace).Sub(d.in.Now.Time)
	if left <= 0 {
		p.wait(addonstatus.ReasonPlacementNotFound, degraded)
		return
	}
	p.blocked = true
	p.restart = !missing
	p.cond = metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionTrue, Reason: addonstatus.ReasonPlacementNotFound,
		Message: fmt.Sprintf("Placement %s not found yet (a GitOps sync may apply it after the add-on); %s; Degraded if it is still missing %s after it was first missed",
			p.key, keep, grace)}
	d.noteRecheck(&left)
}

func (d *decider) placementGrace() time.Duration {
	if d.in.PlacementGrace <= 0 {
		return DefaultPlacementGrace
	}
	return d.in.PlacementGrace
}

func (p *placementState) wait(reason, msg string) {
	if p.blocked {
		return
	}
	p.blocked = true
	p.cond = metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
}

func (d *decider) placementStates(defaults []configref.Ref) []*placementState {
	var states []*placementState
	for i, ps := range d.in.CMA.Spec.InstallStrategy.Placements {
		p := &placementState{index: i, key: PlacementKey{Namespace: ps.Namespace, Name: ps.Name}, spec: ps}
		p.desired, p.problems = d.res.resolve(configref.Merge(defaults, addOnConfigRefs(ps.Configs)))
		p.placement = d.in.Placements[p.key]
		if p.placement != nil {
			p.tracker = clustersdk.NewPlacementDecisionClustersTracker(p.placement, d.in.Decisions, nil)
			p.trackErr = p.tracker.Refresh()
		}
		// Old progression state: what was applied, and what the canary let through.
		if old := oldProgression(d.in.CMA, p.key); old != nil {
			p.lkg, p.applied, p.oldDesir = progressionConfigs(old)
			p.oldCond = ProgressingOf(old)
		}
		states = append(states, p)
	}
	return states
}

// ownerOf is the placement that owns cluster c, nil for none.
func (d *decider) ownerOf(c string) *placementState {
	if i, ok := d.owners[c]; ok {
		return d.ownerStates[i]
	}
	return nil
}

// assignOwners gives every selected cluster to one placement (canary.AssignOwners, the rule
// `addonops status` shows too); a placement whose decisions cannot be read selects none.
func (d *decider) assignOwners(states []*placementState) {
	var sels []canary.Selection
	var of []*placementState
	for _, p := range states {
		if p.tracker == nil || p.trackErr != nil {
			continue
		}
		sels = append(sels, canary.Selection{Placement: canary.PlacementKey(p.key), Clusters: p.tracker.ExistingClusterGroupsBesides().GetClusters(),
			Canary: (*canary.PlacementKey)(p.canary)})
		of = append(of, p)
	}
	d.owners, d.ownerStates = canary.AssignOwners(sels), of
	for c, i := range d.owners {
		of[i].owned = append(of[i].owned, c)
	}
	for _, p := range states {
		slices.Sort(p.owned)
	}
}

func oldProgression(cma *addonv1alpha1.ClusterManagementAddOn, key PlacementKey) *addonv1alpha1.InstallProgression {
	for i := range cma.Status.InstallProgressions {
		ip := &cma.Status.InstallProgressions[i]
		if ip.Namespace == key.Namespace && ip.Name == key.Name {
			return ip
		}
	}
	return nil
}

// progressionConfigs reads the last known good, last applied and desired configs of a progression.
func progressionConfigs(ip *addonv1alpha1.InstallProgression) (lkg, applied, desired []Config) {
	for _, r := range ip.ConfigReferences {
		if r.DesiredConfig != nil {
			desired = append(desired, FromSpecHash(r.ConfigGroupResource, r.DesiredConfig))
		}
		if r.LastKnownGoodConfig != nil {
			lkg = append(lkg, FromSpecHash(r.ConfigGroupResource, r.LastKnownGoodConfig))
		}
		if r.LastAppliedConfig != nil {
			applied = append(applied, FromSpecHash(r.ConfigGroupResource, r.LastAppliedConfig))
		}
	}
	return lkg, applied, desired
}

// evaluate decides one placement: its target, the MCAs it moves, its progression condition.
func (d *decider) evaluate(p *placementState) {
	switch {
	case p.blocked:
		return
	case p.placement == nil:
		d.placementMissing(p)
		return
	case p.trackErr != nil:
		p.wait(addonstatus.ReasonPlacementDecisionInvalid, fmt.Sprintf("cannot read the PlacementDecisions of %s: %v", p.key, p.trackErr))
		return
	case len(p.problems) > 0:
		p.wait(configReason(p.problems, addonstatus.ReasonConfigurationNotFound, addonstatus.ReasonConfigurationForbidden),
			fmt.Sprintf("placement %s waits for its configs: %s", p.key, joinErrors(p.problems)))
		return
	}

	p.rollback = d.isRollback(p)
	d.dayTwo(p)
	if len(p.desired) > 0 && d.abortRequested(p) {
		d.abort(p, "")
		return
	}
	if p.canary == nil || len(p.desired) == 0 || p.rollback {
		// Not gated, or a rollback, which never waits for a canary or for the abandoned version's
		// rollout: every cluster is moved to desired, paced by the placement's strategy.
		p.target = p.desired
		r, ok := d.roll(p, p.target)
		if !ok {
			return
		}
		if d.autoAbort(p, r) {
			return
		}
		if r.complete || p.rollback {
			// A rollback's target is known good by definition; the abandoned version is not.
			p.lkg = p.target
		}
		if r.complete {
			p.applied = p.target
		}
		p.complete = r.complete
		p.stopped, p.stopMsg = r.stopped(), r.counts()
		p.cond = r.condition(d.placementKind(p, p.target), "")
		if p.paused && !r.complete {
			p.cond = d.pausedCondition(p, r)
		}
		return
	}

	// Canary-gated placement (the design's RollingUpdateWithCanary, docs/design/lifecycle.md). Its
	// clusters move only to its last known good configs: a version every cluster of its canary
	// placement runs, healthy, whichever placement or MCA gave them the configs. It adopts its
	// desired configs as the new last known good once the canary runs them, and only when its own
	// rollout of the previous one is complete (or it never had one): a config change after the
	// canary passed lets the ongoing rollout finish first
	// (docs/design/lifecycle.md#a-newer-version-waits-for-the-rollout-under-way), and cluster churn
	// in the canary never restarts it
	// (docs/design/lifecycle.md#canary-cluster-churn-never-restarts-a-rollout). A rollout of the
	// last known good that stopped on failures is abandoned for a newer version the canary passed
	// (fix forward).
	canaryKey := *p.canary
	target := p.lkg
	var r rollResult
	ok := true
	if len(target) > 0 {
		r, ok = d.roll(p, target)
		if !ok {
			return
		}
		if r.complete {
			p.applied = target
		}
	}
	passed, waitMsg, problem := d.canaryVerdict(p, canaryKey, p.desired)
	promoted := !passed && d.requests.Promote[canary.PlacementKey(p.key)] == versionID(p.desired)
	if (len(target) == 0 || r.complete || r.stopped()) && !Equal(target, p.desired) && (passed || promoted) {
		if promoted {
			d.events = append(d.events, Event{Reason: "CanaryPromoted", Message: fmt.Sprintf("placement %s: a person passed the canary gate (annotation %s, %s) for version %s: %s; rolling it out",
				p.key, operations.PromoteAnnotation, d.setBy(operations.PromoteAnnotation), versionID(p.desired), describe(p.desired))})
		} else {
			d.events = append(d.events, Event{Reason: "CanaryPassed", Message: fmt.Sprintf("placement %s: canary placement %s runs %s on every cluster; rolling it out", p.key, canaryKey, describe(p.desired))})
		}
		target = p.desired
		// The decision is retaken with the new target; MCA updates of the first pass are replaced.
		r, ok = d.roll(p, target)
		if !ok {
			return
		}
	}
	p.target, p.lkg = target, target
	if len(target) == 0 {
		d.holdAll(p)
		p.cond, p.problem = waitingForCanary(waitMsg, problem), problem
		if p.paused {
			p.cond = d.pausedCondition(p, r)
		}
		return
	}
	if Equal(target, p.desired) && d.autoAbort(p, r) {
		return
	}
	kind := d.placementKind(p, target)
	if r.complete {
		p.applied = target
	}
	p.complete = r.complete
	p.stopped, p.stopMsg = Equal(target, p.desired) && r.stopped(), r.counts()
	defer func() {
		if p.paused && !r.complete {
			p.cond = d.pausedCondition(p, r)
		}
	}()
	if !Equal(target, p.desired) && (r.complete || r.stopped()) {
		state := fmt.Sprintf("%d/%d clusters run the last known good configs", r.done, r.total)
		if !r.complete {
			state = "the rollout of the last known good configs stopped: " + r.counts()
		}
		// Stopped on failures: a person must act (fix forward through the canary, or revert).
		blocked := problem || !r.complete
		p.cond, p.problem = waitingForCanary(state+"; "+waitMsg, blocked), blocked
		return
	}
	note := ""
	if Equal(target, p.desired) && d.requests.Promote[canary.PlacementKey(p.key)] == versionID(p.desired) && !r.complete {
		note = fmt.Sprintf("; canary gate passed by a person (annotation %s)", operations.PromoteAnnotation)
	}
	if !Equal(target, p.desired) {
		note = fmt.Sprintf("; rolling out the last known good configs first, then %s once canary placement %s runs it", describe(p.desired), canaryKey)
	}
	p.cond = r.condition(kind, note)
}

// isRollback tells whether placement p rolls back: its desired configs changed to a version the
// add-on already ran successfully (see knownGood), or it is still rolling back to them (reported
// RollingBack, RollbackFailed or RollbackSucceeded for these same desired configs).
func (d *decider) isRollback(p *placementState) bool {
	if len(p.oldDesir) == 0 || len(p.desired) == 0 {
		return false
	}
	if Equal(p.desired, p.oldDesir) {
		if p.oldCond == nil {
			return false
		}
		k, ok := addonstatus.KindOfReason(p.oldCond.Reason)
		if !ok && (p.oldCond.Reason == addonstatus.ReasonPaused || p.oldCond.Reason == addonstatus.ReasonWaitingForWindow ||
			p.oldCond.Reason == addonstatus.ReasonVerifying || p.oldCond.Reason == addonstatus.ReasonVerificationInconclusive) {
			// Paused (and WaitingForWindow) says nothing of the change's kind, and what is known good now may not be what
			// was when the change began (a gated placement's canary may pass the new version while
			// it is paused; the version may complete before a pause): the version history recorded
			// the kind when the change began.
			return d.historyKind(p, p.desired) == kindName(addonstatus.Rollback)
		}
		return ok && k == addonstatus.Rollback
	}
	return d.knownGood(p, p.desired)
}

// knownGood reports whether configs v are a version the add-on ran successfully, from what only the
// controller and Git write: the version history (completedHere), and the last applied or last
// known good configs of one of its install progressions (the CMA status this controller writes).
// What a cluster reports in its MCA status (lastAppliedConfig, desiredConfig) never counts: a
// cluster is believed only about itself, and a known good version decides for every cluster of
// the placement (a rollback skips the canary). Spec hashes are computable by anyone who reads the
// Git repository, so one cluster writing the next version's hash as its lastAppliedConfig would
// otherwise make that version skip the canary for all (docs/trust-model.md).
func (d *decider) knownGood(p *placementState, v []Config) bool {
	if d.completedHere(p, v) {
		return true
	}
	for i := range d.in.CMA.Status.InstallProgressions {
		ip := &d.in.CMA.Status.InstallProgressions[i]
		lkg, applied, desired := progressionConfigs(ip)
		if ip.Namespace != p.key.Namespace || ip.Name != p.key.Name {
			// Another placement's version counts once that placement left it: the version a canary
			// just proved is the gated placement's upgrade, not its rollback.
			if Equal(desired, v) {
				continue
			}
		}
		if len(applied) > 0 && Equal(applied, v) || len(lkg) > 0 && Equal(lkg, v) {
			return true
		}
	}
	return false
}

// placementKind tells what moving placement p to target is: a rollback (isRollback), an install
// (none of its clusters ever applied anything, or target is what was applied and the placement
// reported an install so far: an installed placement keeps saying InstallSucceed until its configs
// change), or an upgrade. A placement without applied history of its own (a canary placement added
// next to a running add-on) upgrades clusters that already run the add-on, as the design's canary
// example shows (docs/design/lifecycle.md#a-new-placement-over-running-clusters-upgrades-them); so
// without its own history it asks its clusters.
func (d *decider) placementKind(p *placementState, target []Config) addonstatus.Kind {
	if p.rollback {
		return addonstatus.Rollback
	}
	if len(p.applied) == 0 {
		if p.oldCond != nil {
			if k, ok := addonstatus.KindOfReason(d.oldKindReason(p)); ok && k == addonstatus.Upgrade && !addonstatus.IsDoneReason(p.oldCond.Reason) {
				return addonstatus.Upgrade // an upgrade stays one until it completes
			}
		}
		for _, c := range p.owned {
			mca := d.mcas[c]
			if mca == nil || !HasLastApplied(mca) {
				continue
			}
			if !DesiredIs(mca, target) || !addonstatus.Applied(mca) {
				return addonstatus.Upgrade // it ran another version before
			}
		}
		return addonstatus.Install
	}
	if !Equal(p.applied, target) || p.oldCond == nil {
		return addonstatus.Upgrade
	}
	if k, ok := addonstatus.KindOfReason(d.oldKindReason(p)); ok && k == addonstatus.Install {
		return addonstatus.Install
	}
	return addonstatus.Upgrade
}

// oldKindReason is the reason of p's previous Progressing condition as far as it tells the kind of
// change: Verifying and VerificationInconclusive tell none (a batch's verification interrupts an
// install, upgrade or rollback), so the busy reason of the kind the version history recorded for
// the desired version stands for them.
func (d *decider) oldKindReason(p *placementState) string {
	r := p.oldCond.Reason
	if r != addonstatus.ReasonVerifying && r != addonstatus.ReasonVerificationInconclusive {
		return r
	}
	hk := d.historyKind(p, p.desired)
	for _, k := range []addonstatus.Kind{addonstatus.Install, addonstatus.Upgrade, addonstatus.Rollback} {
		if kindName(k) == hk {
			return k.BusyReason()
		}
	}
	return r
}

// mcaKind is what moving one MCA of placement p is.
func (d *decider) mcaKind(p *placementState, mca *addonv1alpha1.ManagedClusterAddOn) addonstatus.Kind {
	switch {
	case NeverApplied(mca):
		return addonstatus.Install
	case p.rollback || p.aborted:
		return addonstatus.Rollback
	}
	return addonstatus.Upgrade
}

// holdAll keeps every MCA of a placement that has nothing proven to move to: those that do not run
// the placement's desired configs wait (Configured=False).
func (d *decider) holdAll(p *placementState) {
	for _, c := range p.owned {
		mca := d.mcas[c]
		if mca == nil {
			continue
		}
		target, b := d.mcaTarget(p.desired, mca)
		if b != nil {
			d.block(c, mca, b)
			continue
		}
		running := DesiredIs(mca, target)
		if !IsConfigured(mca, running) {
			if running {
				d.updates[c] = Keep(mca, d.in.Now)
			} else {
				d.updates[c] = Hold(mca, d.in.Now)
			}
		}
	}
}
