// Package rolloutplan decides, for one ClusterManagementAddOn, which configs every
// ManagedClusterAddOn should run now and what the CMA's status says about it: configuration
// resolution (seed 003, reference §2), the rollout of each placement with sdk-go's RolloutHandler
// (reference §4), canary placements (seed 000's RollingUpdateWithCanary, through CanaryAnnotation)
// and the install progressions (seed 000's status). It is a pure function of the hub state; the
// rollout reconciler reads that state from informers and writes the plan.
package rolloutplan

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	rollout "open-cluster-management.io/sdk-go/pkg/apis/cluster/v1alpha1"
	clustersdk "open-cluster-management.io/sdk-go/pkg/apis/cluster/v1beta1"

	"github.com/addonops/addonops/controller/installplan"
	"github.com/addonops/addonops/controller/mcastatus"
	"github.com/addonops/addonops/internal/configref"
)

// Reasons of an install progression's Progressing condition besides the seed's (mcastatus): they
// say why a placement waits and name what is missing.
const (
	ReasonPlacementNotFound        = "PlacementNotFound"
	ReasonPlacementDecisionInvalid = "PlacementDecisionInvalid"
	ReasonConfigurationNotFound    = "ConfigurationNotFound"
	ReasonInvalidRolloutStrategy   = "InvalidRolloutStrategy"
	ReasonInvalidCanaryPlacements  = "InvalidCanaryPlacements"
)

// WaitingReasons are the progression reasons that mean "this placement is blocked by a problem a
// person must fix"; the reconciler raises a warning event when a progression enters one.
var WaitingReasons = sets.New(ReasonPlacementNotFound, ReasonPlacementDecisionInvalid,
	ReasonConfigurationNotFound, ReasonInvalidRolloutStrategy, ReasonInvalidCanaryPlacements)

// ConfigLookup returns the spec hash of the config a reference points at, as the API server holds
// it now, or an error saying why it cannot (not found, resource not served, not synced yet).
type ConfigLookup func(configref.Ref) (string, error)

// Input is the hub state one decision is taken on.
type Input struct {
	// Now is the decision's clock (whole seconds, see mcastatus.Now). sdk-go's rollout code reads
	// its own clock (rollout.RolloutClock); tests set both.
	Now metav1.Time
	// CMA is the add-on, status included (install progressions hold the canary state).
	CMA *addonv1alpha1.ClusterManagementAddOn
	// Placements holds the Placements that exist, by key; a referenced placement missing here does
	// not exist.
	Placements map[PlacementKey]*clusterv1beta1.Placement
	// Decisions lists PlacementDecisions (a lister in the controller).
	Decisions clustersdk.PlacementDecisionGetter
	// MCAs are the add-on's ManagedClusterAddOns (every one named like the CMA).
	MCAs []*addonv1alpha1.ManagedClusterAddOn
	// Works returns the ManifestWorks in a cluster namespace labelled with the add-on's name.
	Works func(namespace string) []*workv1.ManifestWork
	// Configs resolves config references to spec hashes.
	Configs ConfigLookup
}

// Update is a new status for one MCA.
type Update struct {
	MCA    *addonv1alpha1.ManagedClusterAddOn
	Status addonv1alpha1.ManagedClusterAddOnStatus
}

// Plan is the decision.
type Plan struct {
	// Status is the CMA status to hold (defaultconfigReferences and installProgressions).
	Status addonv1alpha1.ClusterManagementAddOnStatus
	// Updates are the MCAs whose status changes, sorted by namespace.
	Updates []Update
	// RecheckAfter, when positive, is when the decision must be taken again although nothing
	// changed: a soak time ends or a progress deadline passes.
	RecheckAfter time.Duration
}

// Decide takes the decision for in.CMA.
func Decide(in Input) Plan {
	d := &decider{in: in, res: resolver{lookup: in.Configs, memo: map[configref.Ref]lookupResult{}},
		mcas: map[string]*addonv1alpha1.ManagedClusterAddOn{}, updates: map[string]addonv1alpha1.ManagedClusterAddOnStatus{}}
	return d.decide()
}

type decider struct {
	in      Input
	res     resolver
	mcas    map[string]*addonv1alpha1.ManagedClusterAddOn // by cluster namespace, not deleting
	updates map[string]addonv1alpha1.ManagedClusterAddOnStatus
	recheck time.Duration
}

func (d *decider) decide() Plan {
	cma := d.in.CMA
	for _, m := range d.in.MCAs {
		if m.DeletionTimestamp == nil && m.Name == cma.Name {
			d.mcas[m.Namespace] = m
		}
	}

	defaults := defaultRefs(cma)
	defaultCfgs, defaultProblems := d.res.resolve(defaults)
	status := addonv1alpha1.ClusterManagementAddOnStatus{}
	for _, c := range defaultCfgs {
		status.DefaultConfigReferences = append(status.DefaultConfigReferences, addonv1alpha1.DefaultConfigReference{
			ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: c.Group, Resource: c.Resource},
			DesiredConfig:       c.SpecHashOf(),
		})
	}

	if cma.Spec.InstallStrategy.Type != installplan.StrategyPlacements {
		// Manual: no placement, so every MCA takes the defaults (and its own configs) at once, as
		// in OCM's "defaults" node.
		if len(defaultProblems) == 0 {
			d.rolloutUnplaced(defaultCfgs, nil)
		}
		return d.plan(status)
	}

	states := d.placementStates(defaults)
	canaries, canaryErr := ParseCanaries(cma.Annotations)
	keys := make([]PlacementKey, 0, len(states))
	byKey := map[PlacementKey]*placementState{}
	for _, p := range states {
		keys = append(keys, p.key)
		byKey[p.key] = p
		if c, ok := canaries[p.key]; ok && canaryErr == nil {
			p.canary = &c
		}
	}
	d.assignOwners(states)

	order, cyclic := canaryOrder(keys, canaries)
	for k := range cyclic {
		byKey[k].wait(ReasonInvalidCanaryPlacements, fmt.Sprintf("the canary placements of %s form a cycle in annotation %s; fix the annotation", k, CanaryAnnotation))
	}
	if canaryErr != nil {
		for _, p := range states {
			p.wait(ReasonInvalidCanaryPlacements, canaryErr.Error()+"; no placement rolls out until it is fixed")
		}
	}
	for _, k := range order {
		d.evaluate(byKey[k], byKey)
	}

	unknown := false
	for _, p := range states {
		unknown = unknown || p.placement == nil || p.trackErr != nil
	}
	// MCAs that no placement owns take the defaults, unless some placement's clusters are unknown:
	// they might be its clusters, which must wait rather than be moved to other configs.
	if !unknown && canaryErr == nil && len(defaultProblems) == 0 {
		d.rolloutUnplaced(defaultCfgs, states)
	}

	for _, p := range states {
		status.InstallProgressions = append(status.InstallProgressions, d.progression(p))
	}
	return d.plan(status)
}

func (d *decider) plan(status addonv1alpha1.ClusterManagementAddOnStatus) Plan {
	p := Plan{Status: status, RecheckAfter: d.recheck}
	for ns, st := range d.updates {
		m := d.mcas[ns]
		if equality.Semantic.DeepEqual(m.Status, st) {
			continue
		}
		p.Updates = append(p.Updates, Update{MCA: m, Status: st})
	}
	slices.SortFunc(p.Updates, func(a, b Update) int { return strings.Compare(a.MCA.Namespace, b.MCA.Namespace) })
	return p
}

func (d *decider) noteRecheck(after *time.Duration) {
	if after != nil && *after > 0 && (d.recheck == 0 || *after < d.recheck) {
		d.recheck = *after
	}
}

// defaultRefs are the CMA's default configs (v1alpha1 supportedConfigs[].defaultConfig).
func defaultRefs(cma *addonv1alpha1.ClusterManagementAddOn) []configref.Ref {
	var refs []configref.Ref
	for _, sc := range cma.Spec.SupportedConfigs {
		if sc.DefaultConfig == nil {
			continue
		}
		refs = append(refs, configref.Ref{
			GroupResource: configref.GroupResource{Group: sc.Group, Resource: sc.Resource},
			Namespace:     sc.DefaultConfig.Namespace, Name: sc.DefaultConfig.Name,
		})
	}
	return configref.Merge(refs)
}

func addOnConfigRefs(cfgs []addonv1alpha1.AddOnConfig) []configref.Ref {
	refs := make([]configref.Ref, 0, len(cfgs))
	for _, c := range cfgs {
		refs = append(refs, configref.Ref{
			GroupResource: configref.GroupResource{Group: c.Group, Resource: c.Resource},
			Namespace:     c.Namespace, Name: c.Name,
		})
	}
	return refs
}

func refsOf(cfgs []mcastatus.Config) []configref.Ref {
	refs := make([]configref.Ref, len(cfgs))
	for i, c := range cfgs {
		refs[i] = c.Ref
	}
	return refs
}

// mcaTarget is what an MCA runs when its placement runs base: base overridden, per group/resource,
// by the MCA's own spec.configs (highest precedence). Group/resources the MCA names get the current
// hash of its configs; the others keep base's hashes, which for a canary-gated placement are the
// versions the canary proved. ok is false, with the reasons, when one of the MCA's configs cannot
// be read.
func (d *decider) mcaTarget(base []mcastatus.Config, mca *addonv1alpha1.ManagedClusterAddOn) ([]mcastatus.Config, []string) {
	if len(mca.Spec.Configs) == 0 {
		return base, nil
	}
	own := addOnConfigRefs(mca.Spec.Configs)
	overridden := map[configref.GroupResource]bool{}
	for _, r := range own {
		overridden[r.GroupResource] = true
	}
	hashes := map[configref.Ref]string{}
	for _, c := range base {
		hashes[c.Ref] = c.SpecHash
	}
	var out []mcastatus.Config
	var problems []string
	for _, r := range configref.Merge(refsOf(base), own) {
		if !overridden[r.GroupResource] {
			out = append(out, mcastatus.Config{Ref: r, SpecHash: hashes[r]})
			continue
		}
		cfgs, probs := d.res.resolve([]configref.Ref{r})
		out = append(out, cfgs...)
		problems = append(problems, probs...)
	}
	return out, problems
}

// rolloutUnplaced rolls out, all at once, the MCAs no placement owns (every MCA under Manual): OCM's
// "defaults" node. MCAs this controller created for a cluster that left the placements are skipped:
// the install controller deletes them.
func (d *decider) rolloutUnplaced(defaults []mcastatus.Config, states []*placementState) {
	owned := sets.New[string]()
	for _, p := range states {
		owned.Insert(p.owned...)
	}
	placements := d.in.CMA.Spec.InstallStrategy.Type == installplan.StrategyPlacements
	for ns, mca := range d.mcas {
		if owned.Has(ns) || placements && mca.Labels[installplan.CreatedByLabel] == installplan.CreatedByValue {
			continue
		}
		target, problems := d.mcaTarget(defaults, mca)
		if len(problems) > 0 {
			continue
		}
		st := mcastatus.RolloutStatus(ns, mca, target)
		if st.Status == rollout.ToApply {
			d.updates[ns] = mcastatus.Push(mca, target, mcastatus.AddonWorks(mca.Name, d.works(ns)), d.in.Now)
		} else if !mcastatus.IsConfigured(mca, true) {
			d.updates[ns] = mcastatus.Keep(mca, d.in.Now)
		}
	}
}

func (d *decider) works(ns string) []*workv1.ManifestWork {
	if d.in.Works == nil {
		return nil
	}
	return d.in.Works(ns)
}

// resolver resolves config references to spec hashes, once per reference per decision.
type resolver struct {
	lookup ConfigLookup
	memo   map[configref.Ref]lookupResult
}

type lookupResult struct {
	hash string
	err  error
}

// resolve returns refs with their hashes (empty for a config that cannot be read, as OCM clears the
// hash of a missing config) and one problem per config that cannot be read.
func (r *resolver) resolve(refs []configref.Ref) ([]mcastatus.Config, []string) {
	out := make([]mcastatus.Config, 0, len(refs))
	var problems []string
	for _, ref := range refs {
		res, ok := r.memo[ref]
		if !ok {
			res.hash, res.err = r.lookup(ref)
			r.memo[ref] = res
		}
		if res.err != nil {
			problems = append(problems, res.err.Error())
			res.hash = ""
		}
		out = append(out, mcastatus.Config{Ref: ref, SpecHash: res.hash})
	}
	return out, problems
}

// placementState is one install placement during a decision.
type placementState struct {
	index     int
	key       PlacementKey
	spec      addonv1alpha1.PlacementStrategy
	desired   []mcastatus.Config // the placement's configs over the defaults, current hashes
	problems  []string           // configs that cannot be read
	placement *clusterv1beta1.Placement
	tracker   *clustersdk.PlacementDecisionClustersTracker
	trackErr  error
	canary    *PlacementKey
	owned     []string // clusters whose configs this placement decides, sorted
	oldCond   *metav1.Condition

	// Results.
	blocked   bool // a problem keeps every MCA of the placement as it is
	cond      metav1.Condition
	target    []mcastatus.Config // what the placement's clusters are moved to
	lkg       []mcastatus.Config
	applied   []mcastatus.Config
	evaluated bool
	complete  bool
}

func (p *placementState) wait(reason, msg string) {
	if p.blocked {
		return
	}
	p.blocked = true
	p.cond = metav1.Condition{Type: mcastatus.ConditionProgressing, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
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
			p.lkg, p.applied = progressionConfigs(old)
			p.oldCond = ProgressingOf(old)
		}
		states = append(states, p)
	}
	return states
}

// assignOwners gives every selected cluster to one placement: the last one in the list that
// selects it (OCM: "the latter strategy overrides the previous one"), except that a canary-gated
// placement never takes a cluster from its canary placement: a cluster in both follows the canary
// first (seed 000, corner case 1), and the gated placement then finds it at the canary's version.
func (d *decider) assignOwners(states []*placementState) {
	owner := map[string]*placementState{}
	for _, p := range states {
		if p.tracker == nil || p.trackErr != nil {
			continue
		}
		for c := range p.tracker.ExistingClusterGroupsBesides().GetClusters() {
			if cur := owner[c]; cur != nil && p.canary != nil && *p.canary == cur.key {
				continue
			}
			owner[c] = p
		}
	}
	for c, p := range owner {
		p.owned = append(p.owned, c)
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

// progressionConfigs reads the last known good and last applied configs of a progression.
func progressionConfigs(ip *addonv1alpha1.InstallProgression) (lkg, applied []mcastatus.Config) {
	for _, r := range ip.ConfigReferences {
		if r.LastKnownGoodConfig != nil {
			lkg = append(lkg, mcastatus.FromSpecHash(r.ConfigGroupResource, r.LastKnownGoodConfig))
		}
		if r.LastAppliedConfig != nil {
			applied = append(applied, mcastatus.FromSpecHash(r.ConfigGroupResource, r.LastAppliedConfig))
		}
	}
	return lkg, applied
}

// evaluate decides one placement: its target, the MCAs it moves, its progression condition.
func (d *decider) evaluate(p *placementState, byKey map[PlacementKey]*placementState) {
	defer func() { p.evaluated = true }()
	switch {
	case p.blocked:
		return
	case p.placement == nil:
		p.wait(ReasonPlacementNotFound, fmt.Sprintf("Placement %s not found; its clusters keep their configs and no MCA of theirs is deleted until it exists or is removed from spec.installStrategy.placements", p.key))
		return
	case p.trackErr != nil:
		p.wait(ReasonPlacementDecisionInvalid, fmt.Sprintf("cannot read the PlacementDecisions of %s: %v", p.key, p.trackErr))
		return
	case len(p.problems) > 0:
		p.wait(ReasonConfigurationNotFound, fmt.Sprintf("placement %s waits for its configs: %s", p.key, strings.Join(p.problems, "; ")))
		return
	}

	if p.canary == nil || len(p.desired) == 0 {
		p.target = p.desired
		r, ok := d.roll(p, p.target)
		if !ok {
			return
		}
		install := d.installing(p, p.target)
		if r.complete {
			p.applied, p.lkg = p.target, p.target
		}
		p.complete = r.complete
		p.cond = r.condition(install, "")
		return
	}

	// Canary-gated placement. Its clusters move only to its last known good configs: a version
	// its canary placement applied on every cluster. It adopts its desired configs as the new last
	// known good once the canary passed them, and only when its own rollout to the previous one is
	// complete (or it never had one): a config change after the canary passed lets the ongoing
	// rollout finish first, and cluster churn in the canary never restarts it (seed 000, corner
	// cases 2 and 3).
	canary := byKey[*p.canary]
	if canary == nil {
		p.target = p.lkg
		d.holdAll(p)
		p.cond = waitingForCanary(fmt.Sprintf("canary placement %s (annotation %s) is not one of this add-on's install placements; add it to spec.installStrategy.placements so its clusters are rolled out and checked first", p.canary, CanaryAnnotation))
		return
	}
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
	if (len(target) == 0 || r.complete) && !mcastatus.Equal(target, p.desired) && canary.evaluated &&
		len(canary.lkg) > 0 && mcastatus.Equal(canary.lkg, p.desired) {
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
		p.cond = waitingForCanary(fmt.Sprintf("waiting for canary placement %s to apply %s on every cluster; no version was proven yet", canary.key, describe(p.desired)))
		return
	}
	install := d.installing(p, target)
	if r.complete {
		p.applied = target
	}
	p.complete = r.complete
	if !mcastatus.Equal(target, p.desired) && r.complete {
		p.cond = waitingForCanary(fmt.Sprintf("%d/%d clusters run the last known good configs; waiting for canary placement %s to apply %s on every cluster", r.done, r.total, canary.key, describe(p.desired)))
		return
	}
	note := ""
	if !mcastatus.Equal(target, p.desired) {
		note = fmt.Sprintf("; rolling out the last known good configs first, then %s once canary placement %s applied it", describe(p.desired), canary.key)
	}
	p.cond = r.condition(install, note)
}

// installing tells an install from an upgrade of placement p to target: none of its clusters ever
// applied anything, or target is what was applied and the placement reported an install so far (an
// installed placement keeps saying InstallSucceed until its configs change). A placement without
// applied history of its own (a canary placement added next to a running add-on) upgrades clusters
// that already run the add-on, as seed 000's canary example shows; so without its own history it
// asks its clusters.
func (d *decider) installing(p *placementState, target []mcastatus.Config) bool {
	if len(p.applied) == 0 {
		if p.oldCond != nil {
			switch p.oldCond.Reason {
			case mcastatus.ReasonUpgrading, mcastatus.ReasonUpgradeFailed:
				return false // an upgrade stays one until it completes
			}
		}
		for _, c := range p.owned {
			mca := d.mcas[c]
			if mca == nil || len(mcastatus.LastApplied(mca)) == 0 {
				continue
			}
			if !mcastatus.Equal(mcastatus.Desired(mca), target) || !mcastatus.Applied(mca) {
				return false // it ran another version before
			}
		}
		return true
	}
	if !mcastatus.Equal(p.applied, target) || p.oldCond == nil {
		return false
	}
	switch p.oldCond.Reason {
	case mcastatus.ReasonInstalling, mcastatus.ReasonInstallSucceed, mcastatus.ReasonInstallFailed:
		return true
	}
	return false
}

func waitingForCanary(msg string) metav1.Condition {
	return metav1.Condition{Type: mcastatus.ConditionProgressing, Status: metav1.ConditionTrue, Reason: mcastatus.ReasonWaitingForCanary, Message: msg}
}

// describe names configs for messages: "addondeploymentconfigs.addon.open-cluster-management.io
// default/cfg-b (3f2a9c1d)".
func describe(cfgs []mcastatus.Config) string {
	if len(cfgs) == 0 {
		return "no configs"
	}
	parts := make([]string, len(cfgs))
	for i, c := range cfgs {
		h := c.SpecHash
		if len(h) > 8 {
			h = h[:8]
		}
		parts[i] = fmt.Sprintf("%s (%s)", c.Ref, h)
	}
	return strings.Join(parts, ", ")
}

// holdAll keeps every MCA of a placement that has nothing proven to move to: those that do not run
// the placement's desired configs wait (Configured=False).
func (d *decider) holdAll(p *placementState) {
	for _, c := range p.owned {
		mca := d.mcas[c]
		if mca == nil {
			continue
		}
		target, problems := d.mcaTarget(p.desired, mca)
		running := len(problems) == 0 && mcastatus.Equal(mcastatus.Desired(mca), target)
		if !mcastatus.IsConfigured(mca, running) {
			if running {
				d.updates[c] = mcastatus.Keep(mca, d.in.Now)
			} else {
				d.updates[c] = mcastatus.Hold(mca, d.in.Now)
			}
		}
	}
}

// rollResult sums up one placement's rollout.
type rollResult struct {
	install                                   bool
	total, done, inProgress, failed, timedOut int
	breach                                    bool
	complete                                  bool
}

// condition is the progression's Progressing condition for r. install tells installing from
// upgrading; note is appended to progress messages.
func (r rollResult) condition(install bool, note string) metav1.Condition {
	verb, noun := "upgrading", "upgrade"
	reasonBusy, reasonDone, reasonFailed := mcastatus.ReasonUpgrading, mcastatus.ReasonUpgradeSucceed, mcastatus.ReasonUpgradeFailed
	if install {
		verb, noun = "installing", "install"
		reasonBusy, reasonDone, reasonFailed = mcastatus.ReasonInstalling, mcastatus.ReasonInstallSucceed, mcastatus.ReasonInstallFailed
	}
	counts := fmt.Sprintf("%d/%d clusters done, %d in progress, %d failed, %d timed out", r.done, r.total, r.inProgress, r.failed, r.timedOut)
	switch {
	case r.complete:
		return metav1.Condition{Type: mcastatus.ConditionProgressing, Status: metav1.ConditionFalse, Reason: reasonDone,
			Message: fmt.Sprintf("%d/%d %s completed with no errors.", r.done, r.total, noun)}
	case r.breach:
		return metav1.Condition{Type: mcastatus.ConditionProgressing, Status: metav1.ConditionFalse, Reason: reasonFailed,
			Message: fmt.Sprintf("%s stopped: more clusters failed than maxFailures allows; %s%s", noun, counts, note)}
	case r.failed+r.timedOut > 0 && r.inProgress == 0:
		return metav1.Condition{Type: mcastatus.ConditionProgressing, Status: metav1.ConditionFalse, Reason: reasonFailed,
			Message: fmt.Sprintf("%s failed: %s%s", noun, counts, note)}
	case r.total == 0:
		return metav1.Condition{Type: mcastatus.ConditionProgressing, Status: metav1.ConditionTrue, Reason: reasonBusy,
			Message: fmt.Sprintf("%s... no cluster selected yet%s", verb, note)}
	}
	return metav1.Condition{Type: mcastatus.ConditionProgressing, Status: metav1.ConditionTrue, Reason: reasonBusy,
		Message: fmt.Sprintf("%s... %s%s", verb, counts, note)}
}

// clusterTarget is the workload sdk-go's RolloutHandler is instantiated with: an MCA and the
// configs it should run.
type clusterTarget struct {
	mca    *addonv1alpha1.ManagedClusterAddOn
	target []mcastatus.Config
}

// clusterRolloutStatus is the ClusterRolloutStatusFunc built from MCA status (mcastatus.RolloutStatus).
var clusterRolloutStatus rollout.ClusterRolloutStatusFunc[clusterTarget] = func(cluster string, w clusterTarget) (rollout.ClusterRolloutStatus, error) {
	return mcastatus.RolloutStatus(cluster, w.mca, w.target), nil
}

// roll runs sdk-go's rollout for placement p towards target and records the MCA updates. ok is false
// when the rollout strategy is invalid (the placement then waits, with a condition saying why).
func (d *decider) roll(p *placementState, target []mcastatus.Config) (rollResult, bool) {
	handler, err := rollout.NewRolloutHandler(p.tracker, clusterRolloutStatus)
	if err != nil {
		p.wait(ReasonPlacementDecisionInvalid, err.Error())
		return rollResult{}, false
	}
	owned := sets.New(p.owned...)
	targets := map[string]clusterTarget{}
	var statuses []rollout.ClusterRolloutStatus
	r := rollResult{total: len(p.owned)}
	for _, c := range sets.List(p.tracker.ExistingClusterGroupsBesides().GetClusters()) {
		mca := d.mcas[c]
		if !owned.Has(c) || mca == nil {
			// Not this placement's to move (owned by another placement) or no MCA yet: Skip keeps
			// it out of the batch, so it never takes a slot of maxConcurrency.
			statuses = append(statuses, rollout.ClusterRolloutStatus{ClusterName: c, Status: rollout.Skip})
			continue
		}
		t, problems := d.mcaTarget(target, mca)
		if len(problems) > 0 {
			statuses = append(statuses, rollout.ClusterRolloutStatus{ClusterName: c, Status: rollout.Skip})
			continue
		}
		w := clusterTarget{mca: mca, target: t}
		st, err := clusterRolloutStatus(c, w)
		if err != nil {
			statuses = append(statuses, rollout.ClusterRolloutStatus{ClusterName: c, Status: rollout.Skip})
			continue
		}
		targets[c] = w
		statuses = append(statuses, st)
	}
	strategy := effectiveStrategy(p.spec.RolloutStrategy, p.placement)
	soak := minSuccessTime(strategy)
	_, result, err := handler.GetRolloutCluster(strategy, statuses)
	if err != nil {
		p.wait(ReasonInvalidRolloutStrategy, fmt.Sprintf("rollout strategy of placement %s: %v", p.key, err))
		return rollResult{}, false
	}
	d.noteRecheck(result.RecheckAfter)
	r.breach = result.MaxFailureBreach

	inRollout := map[string]rollout.RolloutStatus{}
	for _, s := range result.ClustersToRollout {
		inRollout[s.ClusterName] = s.Status
	}
	timedOut := sets.New[string]()
	for _, s := range result.ClustersTimeOut {
		timedOut.Insert(s.ClusterName)
	}
	for _, st := range statuses {
		w, ok := targets[st.ClusterName]
		if !ok {
			continue
		}
		c := st.ClusterName
		_, rolling := inRollout[c]
		switch {
		case st.Status == rollout.ToApply && rolling:
			pushed := mcastatus.Push(w.mca, w.target, mcastatus.AddonWorks(w.mca.Name, d.works(c)), d.in.Now)
			d.updates[c] = pushed
			// A cluster that already runs target (a rollback) is done now, unless it must soak.
			if soak == 0 && mcastatus.Applied(&addonv1alpha1.ManagedClusterAddOn{Status: pushed}) {
				r.done++
			} else {
				r.inProgress++
			}
		case st.Status == rollout.ToApply:
			if !mcastatus.IsConfigured(w.mca, false) {
				d.updates[c] = mcastatus.Hold(w.mca, d.in.Now)
			}
		default:
			if !mcastatus.IsConfigured(w.mca, true) {
				d.updates[c] = mcastatus.Keep(w.mca, d.in.Now)
			}
			switch {
			case timedOut.Has(c):
				r.timedOut++
			case st.Status == rollout.Failed:
				r.failed++
			case st.Status == rollout.Succeeded && !rolling:
				r.done++
			case rolling:
				r.inProgress++
			}
		}
	}
	r.complete = r.total > 0 && r.done == r.total
	return r, true
}

// effectiveStrategy fills what OCM fills before calling sdk-go: type All when unset, and for
// Progressive without maxConcurrency the placement's clustersPerDecisionGroup (reference §4.3).
func effectiveStrategy(s clusterv1alpha1.RolloutStrategy, placement *clusterv1beta1.Placement) clusterv1alpha1.RolloutStrategy {
	out := *s.DeepCopy()
	if out.Type == "" {
		out.Type = clusterv1alpha1.All
	}
	if out.Type == clusterv1alpha1.Progressive {
		if out.Progressive == nil {
			out.Progressive = &clusterv1alpha1.RolloutProgressive{}
		}
		mc := out.Progressive.MaxConcurrency
		if mc.Type == intstr.Int && mc.IntVal == 0 && mc.StrVal == "" && placement != nil {
			out.Progressive.MaxConcurrency = placement.Spec.DecisionStrategy.GroupStrategy.ClustersPerDecisionGroup
		}
	}
	return out
}

func minSuccessTime(s clusterv1alpha1.RolloutStrategy) time.Duration {
	switch {
	case s.Type == clusterv1alpha1.Progressive && s.Progressive != nil:
		return s.Progressive.MinSuccessTime.Duration
	case s.Type == clusterv1alpha1.ProgressivePerGroup && s.ProgressivePerGroup != nil:
		return s.ProgressivePerGroup.MinSuccessTime.Duration
	}
	// sdk-go ignores minSuccessTime under All.
	return 0
}

// progression builds the install progression of p from its results, keeping the old condition's
// transition time when its status does not change.
func (d *decider) progression(p *placementState) addonv1alpha1.InstallProgression {
	ip := addonv1alpha1.InstallProgression{
		PlacementRef:     addonv1alpha1.PlacementRef{Namespace: p.key.Namespace, Name: p.key.Name},
		ConfigReferences: configSlots(p.desired, p.lkg, p.applied),
	}
	if old := oldProgression(d.in.CMA, p.key); old != nil {
		ip.Conditions = slices.Clone(old.Conditions)
	}
	mcastatus.SetCondition(&ip.Conditions, p.cond, d.in.Now, false)
	// Only the Progressing condition is ours; drop anything else an older writer left.
	ip.Conditions = slices.DeleteFunc(ip.Conditions, func(c metav1.Condition) bool { return c.Type != mcastatus.ConditionProgressing })
	return ip
}

// configSlots lays desired, last known good and last applied configs out as install progression
// config references: per group/resource, the i-th entry holds the i-th config of each list (the
// seed shows desired hub-config-yyy next to lastApplied hub-config-xxx). Nothing is lost when the
// lists differ in names or group/resources, so the last known good configs, which a canary-gated
// placement moves its clusters to, survive a controller restart.
func configSlots(desired, lkg, applied []mcastatus.Config) []addonv1alpha1.InstallConfigReference {
	type slots struct{ desired, lkg, applied []mcastatus.Config }
	byGR := map[configref.GroupResource]*slots{}
	get := func(gr configref.GroupResource) *slots {
		if byGR[gr] == nil {
			byGR[gr] = &slots{}
		}
		return byGR[gr]
	}
	for _, c := range desired {
		get(c.GroupResource).desired = append(get(c.GroupResource).desired, c)
	}
	for _, c := range lkg {
		get(c.GroupResource).lkg = append(get(c.GroupResource).lkg, c)
	}
	for _, c := range applied {
		get(c.GroupResource).applied = append(get(c.GroupResource).applied, c)
	}
	grs := make([]configref.GroupResource, 0, len(byGR))
	for gr := range byGR {
		grs = append(grs, gr)
	}
	slices.SortFunc(grs, func(a, b configref.GroupResource) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Resource, b.Resource))
	})
	var out []addonv1alpha1.InstallConfigReference
	for _, gr := range grs {
		s := byGR[gr]
		n := max(len(s.desired), len(s.lkg), len(s.applied))
		for i := range n {
			ref := addonv1alpha1.InstallConfigReference{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: gr.Group, Resource: gr.Resource}}
			if i < len(s.desired) {
				ref.DesiredConfig = s.desired[i].SpecHashOf()
			}
			if i < len(s.lkg) {
				ref.LastKnownGoodConfig = s.lkg[i].SpecHashOf()
			}
			if i < len(s.applied) {
				ref.LastAppliedConfig = s.applied[i].SpecHashOf()
			}
			out = append(out, ref)
		}
	}
	return out
}

// ProgressingOf returns the Progressing condition of a progression, or nil.
func ProgressingOf(ip *addonv1alpha1.InstallProgression) *metav1.Condition {
	if ip == nil {
		return nil
	}
	return meta.FindStatusCondition(ip.Conditions, mcastatus.ConditionProgressing)
}
