// Package rolloutplan decides, for one ClusterManagementAddOn, which configs every
// ManagedClusterAddOn should run now and what the CMA's status says about it: configuration
// resolution (seed 003, reference §2), the rollout of each placement with sdk-go's RolloutHandler
// (reference §4), canary placements (seed 000's RollingUpdateWithCanary, through CanaryAnnotation)
// and the install progressions (seed 000's status). It is a pure function of the hub state; the
// rollout reconciler reads that state from informers and writes the plan.
//
// # When a cluster is done
//
// A cluster is done with a change (mcastatus.Progress) only when every one of its add-on's works
// carries exactly its desired config hashes and is Applied and Available at its current
// generation, the deployer reports ManifestApplied=True, and the add-on is healthy: the MCA's
// Available condition is True (written by OCM's health prober, or by addonhealth under
// --deploy-templates). Health is not checked for an add-on whose prober type is None (MCA
// status.healthCheck.mode Customized and no Available condition at all) or whose CMA is annotated
// addonops.io/health-check: none. Health counts only once seen after the works reported the
// desired configs, and only once it held for the add-on's health soak (mcastatus.GateOf: 10s, or
// the CMA annotation addonops.io/health-soak). A lastAppliedConfig carried over to a new desired
// config never counts until the works were checked again.
//
// # What fails
//
// A cluster's change fails (InstallFailed, UpgradeFailed or RollbackFailed, with the cause in the
// message) when a work with its desired configs reports Applied=False or Available=False at its
// generation, when the deployer reports ManifestApplied=False (a render error, a rejected work)
// for mcastatus.DeployerGrace (15s: a deployer that lost a write race says True again at once), or when its
// works are applied but the add-on stays unhealthy for the placement's progressDeadline
// (DefaultUnhealthyDeadline, 5m, when the strategy has none). Failures and timeouts count toward
// maxFailures and are named, with their causes, in the install progression's message.
//
// # Rollback wins
//
// A change of a placement's desired configs to a version the add-on already ran successfully (the
// last applied or last known good configs of one of its install progressions, or what one of the
// placement's clusters last applied or still runs) is a rollback, and so is every later decision
// while the placement reports RollingBack, RollbackFailed or RollbackSucceeded for the same
// desired configs. A rollback never waits for the canary or for the abandoned version's rollout:
// its target is the desired configs at once (they become the last known good). Clusters that run
// the abandoned version go back paced by the placement's strategy (maxConcurrency still holds;
// failures of the abandoned version no longer count, as they are measured against the target);
// clusters still on the old version are done at once and untouched. MCAs and the progression
// report RollingBack, then RollbackSucceeded or RollbackFailed.
//
// # Forward changes and the canary
//
// A forward change of a placement gated by a canary placement keeps seed 000's rule: its clusters
// move only to its last known good configs, and it adopts its desired configs as the new last known
// good once the canary passed them and its rollout of the previous last known good is complete
// (corner case 3) — or stopped on failures: a fix forward replaces a failed version. Cluster churn
// in the canary never restarts an adopted rollout (corner case 2); a cluster in both placements
// follows the canary first (corner case 1). The canary passed configs v when every cluster its
// Placement selects has an MCA that runs v, done as above, whichever install placement or MCA spec
// gave them the configs: the canary need not be an install placement. A missing or empty canary, a
// canary cluster without MCA, or one that gets its configs only from the gated placement itself is
// reported as WaitingForCanary naming the problem, with a Warning event. A rollout stopped on
// maxFailures restarts when the desired configs change (fix forward or revert).
//
// # Manual, unplaced MCAs and config types
//
// MCAs no placement owns (all of them under Manual) keep the configs a placement gave them (recorded
// in an install progression) as long as their own spec is unchanged (mcastatus.ConfiguredGeneration):
// switching to Manual or removing a placement re-targets nothing. The others (new MCAs, MCAs whose
// spec changed, MCAs that followed the defaults) take the CMA's defaults and their own configs at
// once, as OCM's defaults node does. Under Manual the install progressions are kept,
// with reason Manual. An MCA config of a group/resource not in the CMA's spec.supportedConfigs gets
// Configured=False, reason ConfigurationUnsupported; one that cannot be read gets Configured=False,
// reason ConfigurationNotFound, naming it (ConfigurationForbidden when the controller may not read
// its kind: RBAC); the placement names such clusters and never completes while they remain. A
// placement whose own configs cannot be read waits with the same reasons; among several problems a
// refused permission decides the reason (a person must grant it whatever else is missing), and
// the message lists them all.
package rolloutplan

import (
	"cmp"
	"fmt"
	"github.com/addonops/addonops/internal/addonstatus"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// DefaultUnhealthyDeadline is how long a cluster whose works are applied may stay unhealthy before
// its change fails (FailUnhealthy), when its placement's rollout strategy sets no progressDeadline.
const DefaultUnhealthyDeadline = 5 * time.Minute

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
	// Events are what a person cares about in this decision (a rollout or rollback started, a batch
	// moved, the canary passed or failed, a rollout failed or finished, a placement waits for a
	// problem to be fixed), to be recorded on the CMA once the decision is written.
	Events []Event
}

// Event is a Kubernetes event on the CMA.
type Event struct {
	Warning bool
	Reason  string
	Message string
}

// Decide takes the decision for in.CMA.
func Decide(in Input) Plan {
	d := &decider{in: in, res: resolver{lookup: in.Configs, memo: map[configref.Ref]lookupResult{}},
		mcas: map[string]*addonv1alpha1.ManagedClusterAddOn{}, updates: map[string]addonv1alpha1.ManagedClusterAddOnStatus{},
		health: mcastatus.GateOf(in.CMA), supported: sets.New[configref.GroupResource]()}
	for _, sc := range in.CMA.Spec.SupportedConfigs {
		d.supported.Insert(configref.GroupResource{Group: sc.Group, Resource: sc.Resource})
	}
	return d.decide()
}

type decider struct {
	in      Input
	res     resolver
	mcas    map[string]*addonv1alpha1.ManagedClusterAddOn // by cluster namespace, not deleting
	updates map[string]addonv1alpha1.ManagedClusterAddOnStatus
	recheck time.Duration
	events  []Event
	// health is what clusters must show besides their works to count as done (mcastatus.GateOf).
	health mcastatus.Gate
	// supported are the config group/resources the CMA declares (spec.supportedConfigs); an MCA
	// config of any other is not supported (OCM: ConfigurationUnsupported).
	supported sets.Set[configref.GroupResource]
	// byKey, owner and gatedBy index the install placements: by key, by the clusters they own,
	// and the placements each canary gates.
	byKey   map[PlacementKey]*placementState
	owner   map[string]*placementState
	gatedBy map[PlacementKey][]PlacementKey
}

// status is the MCA's status as this decision leaves it so far: a canary-gated placement judges
// its canary's clusters by what they run after the canary placement's own decision.
func (d *decider) status(ns string) *addonv1alpha1.ManagedClusterAddOn {
	m := d.mcas[ns]
	if m == nil {
		return nil
	}
	if st, ok := d.updates[ns]; ok {
		return &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: m.ObjectMeta, Spec: m.Spec, Status: st}
	}
	return m
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
		// Manual: no placement rolls anything out. New MCAs (and MCAs whose own spec changed) take
		// the defaults and their own configs at once, as in OCM's "defaults" node; the others keep
		// what they run (rolloutUnplaced). The install progressions stay as history.
		if len(defaultProblems) == 0 {
			d.rolloutUnplaced(defaultCfgs, nil)
		}
		for _, old := range cma.Status.InstallProgressions {
			ip := *old.DeepCopy()
			mcastatus.SetCondition(&ip.Conditions, metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionFalse, Reason: addonstatus.ReasonManual,
				Message: "the install strategy is Manual: this placement is no longer rolled out; each ManagedClusterAddOn keeps the configs it runs until its own spec changes"}, d.in.Now, false)
			status.InstallProgressions = append(status.InstallProgressions, ip)
		}
		return d.plan(status)
	}

	states := d.placementStates(defaults)
	canaries, canaryErr := ParseCanaries(cma.Annotations)
	keys := make([]PlacementKey, 0, len(states))
	byKey := map[PlacementKey]*placementState{}
	d.byKey, d.gatedBy = byKey, map[PlacementKey][]PlacementKey{}
	for _, p := range states {
		keys = append(keys, p.key)
		byKey[p.key] = p
		if c, ok := canaries[p.key]; ok && canaryErr == nil {
			p.canary = &c
			d.gatedBy[c] = append(d.gatedBy[c], p.key)
		}
	}
	d.assignOwners(states)

	order, cyclic := canaryOrder(keys, canaries)
	for k := range cyclic {
		byKey[k].wait(addonstatus.ReasonInvalidCanaryPlacements, fmt.Sprintf("the canary placements of %s form a cycle in annotation %s; fix the annotation", k, CanaryAnnotation))
	}
	if canaryErr != nil {
		for _, p := range states {
			p.wait(addonstatus.ReasonInvalidCanaryPlacements, canaryErr.Error()+"; no placement rolls out until it is fixed")
		}
	}
	for _, k := range order {
		d.evaluate(byKey[k])
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
		ip := d.progression(p)
		d.progressionEvents(p, oldProgression(cma, p.key), &ip)
		status.InstallProgressions = append(status.InstallProgressions, ip)
	}
	return d.plan(status)
}

func (d *decider) plan(status addonv1alpha1.ClusterManagementAddOnStatus) Plan {
	p := Plan{Status: status, RecheckAfter: d.recheck, Events: d.events}
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

// blocked says why an MCA cannot be configured: the reason and message of its Configured=False.
type blocked struct{ reason, message string }

// mcaTarget is what an MCA runs when its placement runs base: base overridden, per group/resource,
// by the MCA's own spec.configs (highest precedence). Group/resources the MCA names get the current
// hash of its configs; the others keep base's hashes, which for a canary-gated placement are the
// versions the canary proved. A non-nil blocked says why the MCA cannot be configured: one of its
// configs is of a type the add-on does not support, or cannot be read.
func (d *decider) mcaTarget(base []mcastatus.Config, mca *addonv1alpha1.ManagedClusterAddOn) ([]mcastatus.Config, *blocked) {
	if len(mca.Spec.Configs) == 0 {
		return base, nil
	}
	own := addOnConfigRefs(mca.Spec.Configs)
	overridden := map[configref.GroupResource]bool{}
	var unsupported []string
	for _, r := range own {
		overridden[r.GroupResource] = true
		if !d.supported.Has(r.GroupResource) {
			unsupported = append(unsupported, fmt.Sprintf("Configuration with gvr %s/%s is not supported for this addon", r.Group, r.Resource))
		}
	}
	if len(unsupported) > 0 {
		return nil, &blocked{addonstatus.ReasonConfigurationUnsupported, strings.Join(unsupported, "; ") +
			"; add the type to the ClusterManagementAddOn's spec.supportedConfigs or remove it from the ManagedClusterAddOn's spec.configs"}
	}
	hashes := map[configref.Ref]string{}
	for _, c := range base {
		hashes[c.Ref] = c.SpecHash
	}
	var out []mcastatus.Config
	var problems []error
	for _, r := range configref.Merge(refsOf(base), own) {
		if !overridden[r.GroupResource] {
			out = append(out, mcastatus.Config{Ref: r, SpecHash: hashes[r]})
			continue
		}
		cfgs, probs := d.res.resolve([]configref.Ref{r})
		out = append(out, cfgs...)
		problems = append(problems, probs...)
	}
	if len(problems) > 0 {
		return nil, &blocked{configReason(problems, addonstatus.ReasonConfigurationNotFound, addonstatus.ReasonConfigurationForbidden),
			"the ManagedClusterAddOn's own config cannot be used: " + joinErrors(problems)}
	}
	return out, nil
}

// block marks an MCA that cannot be configured (Configured=False naming the config); its works
// stay as they are.
func (d *decider) block(ns string, mca *addonv1alpha1.ManagedClusterAddOn, b *blocked) {
	if !mcastatus.IsBlocked(mca, b.reason, b.message) {
		d.updates[ns] = mcastatus.Blocked(mca, b.reason, b.message, d.in.Now)
	}
}

// rolloutUnplaced handles the MCAs no placement owns (every MCA under Manual), all at once: OCM's
// "defaults" node, with one rule OCM lacks (seed 002: switching to Manual must not re-target
// anything): an MCA that runs configs a placement gave it keeps them as long as its own spec is
// unchanged (keepsPlacementConfigs); the others take the defaults and their own configs. MCAs this controller created for a cluster that left the
// placements are skipped: the install controller deletes them.
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
		if d.keepsPlacementConfigs(mca) {
			if !mcastatus.IsConfigured(mca, true) {
				d.updates[ns] = mcastatus.Keep(mca, d.in.Now)
			}
			continue
		}
		target, b := d.mcaTarget(defaults, mca)
		if b != nil {
			d.block(ns, mca, b)
			continue
		}
		st := mcastatus.RolloutStatus(ns, mca, target)
		if st.Status == rollout.ToApply {
			kind := addonstatus.Upgrade
			if mcastatus.NeverApplied(mca) {
				kind = addonstatus.Install
			}
			d.updates[ns] = mcastatus.Push(mca, target, mcastatus.AddonWorks(mca.Name, d.works(ns)), kind, d.health, d.in.Now)
		} else if !mcastatus.IsConfigured(mca, true) {
			d.updates[ns] = mcastatus.Keep(mca, d.in.Now)
		}
	}
}

// keepsPlacementConfigs reports whether an MCA no placement owns keeps the configs it runs: a
// placement gave them to it (they are the desired, last known good or last applied configs of one
// of the add-on's install progressions) and its own spec did not change since
// (mcastatus.ConfiguredGeneration). Configs it got as an unplaced MCA follow the defaults.
func (d *decider) keepsPlacementConfigs(mca *addonv1alpha1.ManagedClusterAddOn) bool {
	desired := mcastatus.Desired(mca)
	if gen, ok := mcastatus.ConfiguredGeneration(mca); !ok || gen != mca.Generation || len(desired) == 0 {
		return false
	}
	for i := range d.in.CMA.Status.InstallProgressions {
		lkg, applied, want := progressionConfigs(&d.in.CMA.Status.InstallProgressions[i])
		for _, v := range [][]mcastatus.Config{want, lkg, applied} {
			if len(v) == 0 {
				continue
			}
			if t, b := d.mcaTarget(v, mca); b == nil && mcastatus.Equal(t, desired) {
				return true
			}
		}
	}
	return false
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
func (r *resolver) resolve(refs []configref.Ref) ([]mcastatus.Config, []error) {
	out := make([]mcastatus.Config, 0, len(refs))
	var problems []error
	for _, ref := range refs {
		res, ok := r.memo[ref]
		if !ok {
			res.hash, res.err = r.lookup(ref)
			r.memo[ref] = res
		}
		if res.err != nil {
			problems = append(problems, res.err)
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
	problems  []error            // configs that cannot be read
	placement *clusterv1beta1.Placement
	tracker   *clustersdk.PlacementDecisionClustersTracker
	trackErr  error
	canary    *PlacementKey
	owned     []string // clusters whose configs this placement decides, sorted
	oldCond   *metav1.Condition
	oldDesir  []mcastatus.Config // the desired configs of the previous decision
	rollback  bool               // desired is a version the add-on ran successfully (isRollback)
	problem   bool               // cond names a problem a person must fix (a Warning event)

	// Results.
	blocked  bool // a problem keeps every MCA of the placement as it is
	cond     metav1.Condition
	target   []mcastatus.Config // what the placement's clusters are moved to
	lkg      []mcastatus.Config
	applied  []mcastatus.Config
	complete bool
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
	d.owner = owner
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

// progressionConfigs reads the last known good, last applied and desired configs of a progression.
func progressionConfigs(ip *addonv1alpha1.InstallProgression) (lkg, applied, desired []mcastatus.Config) {
	for _, r := range ip.ConfigReferences {
		if r.DesiredConfig != nil {
			desired = append(desired, mcastatus.FromSpecHash(r.ConfigGroupResource, r.DesiredConfig))
		}
		if r.LastKnownGoodConfig != nil {
			lkg = append(lkg, mcastatus.FromSpecHash(r.ConfigGroupResource, r.LastKnownGoodConfig))
		}
		if r.LastAppliedConfig != nil {
			applied = append(applied, mcastatus.FromSpecHash(r.ConfigGroupResource, r.LastAppliedConfig))
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
		p.wait(addonstatus.ReasonPlacementNotFound, fmt.Sprintf("Placement %s not found; its clusters keep their configs and no MCA of theirs is deleted until it exists or is removed from spec.installStrategy.placements", p.key))
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
	if p.canary == nil || len(p.desired) == 0 || p.rollback {
		// Not gated, or a rollback, which never waits for a canary or for the abandoned version's
		// rollout: every cluster is moved to desired, paced by the placement's strategy.
		p.target = p.desired
		r, ok := d.roll(p, p.target)
		if !ok {
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
		p.cond = r.condition(d.placementKind(p, p.target), "")
		return
	}

	// Canary-gated placement (seed 000's RollingUpdateWithCanary). Its clusters move only to its
	// last known good configs: a version every cluster of its canary placement runs, healthy,
	// whichever placement or MCA gave them the configs. It adopts its desired configs as the new
	// last known good once the canary runs them, and only when its own rollout of the previous one
	// is complete (or it never had one): a config change after the canary passed lets the ongoing
	// rollout finish first, and cluster churn in the canary never restarts it (seed 000, corner
	// cases 2 and 3). A rollout of the last known good that stopped on failures is abandoned for a
	// newer version the canary passed (fix forward).
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
	if (len(target) == 0 || r.complete || r.stopped()) && !mcastatus.Equal(target, p.desired) && passed {
		d.events = append(d.events, Event{Reason: "CanaryPassed", Message: fmt.Sprintf("placement %s: canary placement %s runs %s on every cluster; rolling it out", p.key, canaryKey, describe(p.desired))})
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
		p.cond, p.problem = waitingForCanary(waitMsg), problem
		return
	}
	kind := d.placementKind(p, target)
	if r.complete {
		p.applied = target
	}
	p.complete = r.complete
	if !mcastatus.Equal(target, p.desired) && (r.complete || r.stopped()) {
		state := fmt.Sprintf("%d/%d clusters run the last known good configs", r.done, r.total)
		if !r.complete {
			state = "the rollout of the last known good configs stopped: " + r.counts()
		}
		p.cond, p.problem = waitingForCanary(state+"; "+waitMsg), problem
		return
	}
	note := ""
	if !mcastatus.Equal(target, p.desired) {
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
	if mcastatus.Equal(p.desired, p.oldDesir) {
		if p.oldCond == nil {
			return false
		}
		k, ok := addonstatus.KindOfReason(p.oldCond.Reason)
		return ok && k == addonstatus.Rollback
	}
	return d.knownGood(p, p.desired)
}

// knownGood reports whether configs v are a version the add-on ran successfully: the last applied
// or last known good configs of one of its install progressions, or what a cluster of placement p
// last applied or still runs.
func (d *decider) knownGood(p *placementState, v []mcastatus.Config) bool {
	for i := range d.in.CMA.Status.InstallProgressions {
		lkg, applied, _ := progressionConfigs(&d.in.CMA.Status.InstallProgressions[i])
		if len(applied) > 0 && mcastatus.Equal(applied, v) || len(lkg) > 0 && mcastatus.Equal(lkg, v) {
			return true
		}
	}
	for _, c := range p.owned {
		mca := d.mcas[c]
		if mca == nil {
			continue
		}
		t, b := d.mcaTarget(v, mca)
		if b != nil {
			continue
		}
		if mcastatus.Equal(mcastatus.LastApplied(mca), t) || addonstatus.Applied(mca) && mcastatus.Equal(mcastatus.Desired(mca), t) {
			return true
		}
	}
	return false
}

// placementKind tells what moving placement p to target is: a rollback (isRollback), an install
// (none of its clusters ever applied anything, or target is what was applied and the placement
// reported an install so far: an installed placement keeps saying InstallSucceed until its configs
// change), or an upgrade. A placement without applied history of its own (a canary placement added
// next to a running add-on) upgrades clusters that already run the add-on, as seed 000's canary
// example shows; so without its own history it asks its clusters.
func (d *decider) placementKind(p *placementState, target []mcastatus.Config) addonstatus.Kind {
	if p.rollback {
		return addonstatus.Rollback
	}
	if len(p.applied) == 0 {
		if p.oldCond != nil {
			if k, ok := addonstatus.KindOfReason(p.oldCond.Reason); ok && k == addonstatus.Upgrade && !addonstatus.IsDoneReason(p.oldCond.Reason) {
				return addonstatus.Upgrade // an upgrade stays one until it completes
			}
		}
		for _, c := range p.owned {
			mca := d.mcas[c]
			if mca == nil || len(mcastatus.LastApplied(mca)) == 0 {
				continue
			}
			if !mcastatus.Equal(mcastatus.Desired(mca), target) || !addonstatus.Applied(mca) {
				return addonstatus.Upgrade // it ran another version before
			}
		}
		return addonstatus.Install
	}
	if !mcastatus.Equal(p.applied, target) || p.oldCond == nil {
		return addonstatus.Upgrade
	}
	if k, ok := addonstatus.KindOfReason(p.oldCond.Reason); ok && k == addonstatus.Install {
		return addonstatus.Install
	}
	return addonstatus.Upgrade
}

// mcaKind is what moving one MCA of placement p is.
func (d *decider) mcaKind(p *placementState, mca *addonv1alpha1.ManagedClusterAddOn) addonstatus.Kind {
	switch {
	case mcastatus.NeverApplied(mca):
		return addonstatus.Install
	case p.rollback:
		return addonstatus.Rollback
	}
	return addonstatus.Upgrade
}

func waitingForCanary(msg string) metav1.Condition {
	return metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionTrue, Reason: addonstatus.ReasonWaitingForCanary, Message: msg}
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
		target, b := d.mcaTarget(p.desired, mca)
		if b != nil {
			d.block(c, mca, b)
			continue
		}
		running := mcastatus.Equal(mcastatus.Desired(mca), target)
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
	total, done, inProgress, failed, timedOut int
	breach                                    bool
	complete                                  bool
	// failures, timeouts and blocked name the clusters that failed, timed out or cannot be
	// configured, with the cause: "cluster7 (upgrade failed: ...)".
	failures, timeouts, blocked []string
	moved                       []string // clusters moved to the target in this decision
}

// stopped reports whether the rollout stopped on failures: maxFailures breached, or nothing left in
// progress while some cluster failed or timed out.
func (r rollResult) stopped() bool {
	return !r.complete && (r.breach || r.failed+r.timedOut > 0 && r.inProgress == 0)
}

// maxListed bounds the clusters a progression message names per list.
const maxListed = 5

func listed(items []string) string {
	if len(items) <= maxListed {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:maxListed], ", ") + fmt.Sprintf(" and %d more", len(items)-maxListed)
}

// counts is the progress line of a progression message, with the clusters that failed, timed out
// or cannot be configured named with their causes.
func (r rollResult) counts() string {
	out := fmt.Sprintf("%d/%d clusters done, %d in progress, %d failed, %d timed out", r.done, r.total, r.inProgress, r.failed, r.timedOut)
	if len(r.blocked) > 0 {
		out += fmt.Sprintf(", %d cannot be configured", len(r.blocked))
	}
	if len(r.failures) > 0 {
		out += "; failed: " + listed(r.failures)
	}
	if len(r.timeouts) > 0 {
		out += "; timed out: " + listed(r.timeouts)
	}
	if len(r.blocked) > 0 {
		out += "; cannot be configured: " + listed(r.blocked)
	}
	return out
}

// condition is the progression's Progressing condition for r; note is appended to progress
// messages.
func (r rollResult) condition(k addonstatus.Kind, note string) metav1.Condition {
	noun := k.Noun()
	verb := map[addonstatus.Kind]string{addonstatus.Install: "installing", addonstatus.Upgrade: "upgrading", addonstatus.Rollback: "rolling back"}[k]
	switch {
	case r.complete:
		return metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionFalse, Reason: k.DoneReason(),
			Message: fmt.Sprintf("%d/%d %s completed with no errors.", r.done, r.total, noun)}
	case r.breach:
		return metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionFalse, Reason: k.FailedReason(),
			Message: fmt.Sprintf("%s stopped: more clusters failed than maxFailures allows; %s%s", noun, r.counts(), note)}
	case r.failed+r.timedOut > 0 && r.inProgress == 0:
		return metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionFalse, Reason: k.FailedReason(),
			Message: fmt.Sprintf("%s failed: %s%s", noun, r.counts(), note)}
	case r.total == 0:
		return metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionTrue, Reason: k.BusyReason(),
			Message: fmt.Sprintf("%s... no cluster selected yet%s", verb, note)}
	}
	return metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionTrue, Reason: k.BusyReason(),
		Message: fmt.Sprintf("%s... %s%s", verb, r.counts(), note)}
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

// cause is what an MCA's Progressing condition says went wrong, for progression messages.
func cause(st addonv1alpha1.ManagedClusterAddOnStatus) string {
	c := meta.FindStatusCondition(st.Conditions, addonstatus.ConditionProgressing)
	if c == nil {
		return "no Progressing condition"
	}
	msg := c.Message
	if len(msg) > 160 {
		// At a word boundary: a cut word reads as a different word.
		cut := strings.LastIndex(msg[:157], " ")
		if cut < 100 {
			cut = 157
		}
		msg = msg[:cut] + " ..."
	}
	return msg
}

// roll runs sdk-go's rollout for placement p towards target and records the MCA updates. ok is false
// when the rollout strategy is invalid (the placement then waits, with a condition saying why).
func (d *decider) roll(p *placementState, target []mcastatus.Config) (rollResult, bool) {
	handler, err := rollout.NewRolloutHandler(p.tracker, clusterRolloutStatus)
	if err != nil {
		p.wait(addonstatus.ReasonPlacementDecisionInvalid, err.Error())
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
		t, b := d.mcaTarget(target, mca)
		if b != nil {
			d.block(c, mca, b)
			r.blocked = append(r.blocked, fmt.Sprintf("%s (%s)", c, b.message))
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
	deadline := unhealthyDeadline(strategy)
	_, result, err := handler.GetRolloutCluster(strategy, statuses)
	if err != nil {
		p.wait(addonstatus.ReasonInvalidRolloutStrategy, fmt.Sprintf("rollout strategy of placement %s: %v", p.key, err))
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
			pushed := mcastatus.Push(w.mca, w.target, mcastatus.AddonWorks(w.mca.Name, d.works(c)), d.mcaKind(p, w.mca), d.health, d.in.Now)
			d.updates[c] = pushed
			r.moved = append(r.moved, c)
			// A cluster that already runs target (a rollback to the version it kept) is done now, unless it must soak.
			if soak == 0 && addonstatus.Applied(&addonv1alpha1.ManagedClusterAddOn{Status: pushed}) {
				r.done++
			} else {
				r.inProgress++
			}
		case st.Status == rollout.ToApply:
			if !mcastatus.IsConfigured(w.mca, false) {
				d.updates[c] = mcastatus.Hold(w.mca, d.in.Now)
			}
		default:
			cur := w.mca
			if !mcastatus.IsConfigured(w.mca, true) {
				d.updates[c] = mcastatus.Keep(w.mca, d.in.Now)
				cur = &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: w.mca.ObjectMeta, Spec: w.mca.Spec, Status: d.updates[c]}
			}
			status, failedNow := st.Status, false
			if status == rollout.Progressing && (rolling || timedOut.Has(c)) {
				// A cluster whose works are applied but whose add-on stays unhealthy fails.
				failedSt, failed, after := mcastatus.FailUnhealthy(cur, mcastatus.AddonWorks(cur.Name, d.works(c)), d.health.Checked, deadline, d.in.Now)
				d.noteRecheck(&after)
				if failed {
					d.updates[c] = failedSt
					cur = &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: w.mca.ObjectMeta, Spec: w.mca.Spec, Status: failedSt}
					status, failedNow = rollout.Failed, true
				}
			}
			switch {
			case timedOut.Has(c) && !failedNow:
				r.timedOut++
				r.timeouts = append(r.timeouts, fmt.Sprintf("%s (%s)", c, cause(cur.Status)))
			case status == rollout.Failed:
				r.failed++
				r.failures = append(r.failures, fmt.Sprintf("%s (%s)", c, cause(cur.Status)))
			case status == rollout.Succeeded && !rolling:
				r.done++
			case rolling:
				r.inProgress++
			}
		}
	}
	r.complete = r.total > 0 && r.done == r.total
	if len(r.moved) > 0 {
		d.events = append(d.events, Event{Reason: "BatchStarted", Message: fmt.Sprintf("placement %s: moving %d cluster(s) to %s: %s", p.key, len(r.moved), describe(target), listed(r.moved))})
	}
	return r, true
}

// unhealthyDeadline is how long a cluster may stay unhealthy with its works applied: the rollout
// strategy's progressDeadline, or DefaultUnhealthyDeadline when it has none.
func unhealthyDeadline(s clusterv1alpha1.RolloutStrategy) time.Duration {
	var cfg clusterv1alpha1.RolloutConfig
	switch {
	case s.Type == clusterv1alpha1.All && s.All != nil:
		cfg = s.All.RolloutConfig
	case s.Type == clusterv1alpha1.Progressive && s.Progressive != nil:
		cfg = s.Progressive.RolloutConfig
	case s.Type == clusterv1alpha1.ProgressivePerGroup && s.ProgressivePerGroup != nil:
		cfg = s.ProgressivePerGroup.RolloutConfig
	}
	if cfg.ProgressDeadline == "" || cfg.ProgressDeadline == "None" {
		return DefaultUnhealthyDeadline
	}
	d, err := time.ParseDuration(cfg.ProgressDeadline)
	if err != nil || d <= 0 {
		return DefaultUnhealthyDeadline // sdk-go rejects the strategy; the placement waits
	}
	return d
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
	ip.Conditions = slices.DeleteFunc(ip.Conditions, func(c metav1.Condition) bool { return c.Type != addonstatus.ConditionProgressing })
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
	return meta.FindStatusCondition(ip.Conditions, addonstatus.ConditionProgressing)
}

// configReason is the reason for configs that cannot be read: forbidden when the controller may
// not read one of them (RBAC; the lookup's error wraps the API server's Forbidden), else notFound.
func configReason(problems []error, notFound, forbidden string) string {
	for _, err := range problems {
		if apierrors.IsForbidden(err) {
			return forbidden
		}
	}
	return notFound
}

func joinErrors(errs []error) string {
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}
