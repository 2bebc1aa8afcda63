// Package rolloutplan decides, for one ClusterManagementAddOn, which configs every
// ManagedClusterAddOn should run now and what the CMA's status says about it: configuration
// resolution (seed 003, reference §2), the rollout of each placement with sdk-go's RolloutHandler
// (reference §4), canary placements (seed 000's RollingUpdateWithCanary, through CanaryAnnotation)
// and the install progressions (seed 000's status). It is a pure function of the hub state; the
// rollout reconciler reads that state from informers and writes the plan.
//
// # When a cluster is done
//
// A cluster is done with a change (Progress) only when every one of its add-on's works
// carries exactly its desired config hashes and is Applied and Available at its current
// generation, the deployer reports ManifestApplied=True, and the add-on is healthy: the MCA's
// Available condition is True (written by OCM's health prober, or by addonhealth under
// --deploy-templates). Health is not checked for an add-on whose prober type is None (MCA
// status.healthCheck.mode Customized and no Available condition at all) or whose CMA is annotated
// addonops.io/health-check: none. Health counts only once seen after the works reported the
// desired configs, and only once it held for the add-on's health soak (GateOf: 10s, or
// the CMA annotation addonops.io/health-soak). A lastAppliedConfig carried over to a new desired
// config never counts until the works were checked again.
//
// # What fails
//
// A cluster's change fails (InstallFailed, UpgradeFailed or RollbackFailed, with the cause in the
// message) when a work with its desired configs reports Applied=False or Available=False at its
// generation, when the deployer reports ManifestApplied=False (a render error, a rejected work)
// for DeployerGrace (15s: a deployer that lost a write race says True again at once), or when its
// works are applied but the add-on stays unhealthy for the placement's progressDeadline
// (DefaultUnhealthyDeadline, 5m, when the strategy has none). Failures and timeouts count toward
// maxFailures and are named, with their causes, in the install progression's message.
//
// # maxFailures
//
// sdk-go's RolloutHandler picks every batch, so maxFailures means what it means in OCM: the rollout
// stops (MaxFailureBreach) only when failed and timed-out clusters exceed it; a percentage is of the
// placement's clusters (of each decision group under ProgressivePerGroup) rounded up, a number
// larger than the clusters counts as 0, mandatory decision groups tolerate none, and All never
// breaches. A failed cluster keeps its place in the batch until it recovers or its progressDeadline
// passes, and then counts as timed out. Two things differ from OCM on purpose: a failure counts at
// once (OCM never reports one, so there only timeouts count), and within maxFailures the
// progression reports the failed reason once nothing will move by itself — every other cluster
// finished, or the clusters left wait behind failed clusters that keep their places for ever
// (progressDeadline None) — where OCM reports progressing for ever (rollResult.stopped). Such a
// rollout is not complete: the placement's last applied configs stay, as in OCM.
//
// # maxConcurrency
//
// sdk-go's Progressive batch is the first maxConcurrency clusters in name order that are not done;
// it never looks at clusters in flight later in that order, which exist whenever clusters earlier in
// the order join a rollout under way (MCAs that appear after the first batch started, clusters a
// placement selects since). Here every cluster in flight takes a slot and every failure and timeout
// counts toward maxFailures (pastTheCut), so no more than maxConcurrency clusters are ever in flight.
//
// # Rollback wins
//
// A change of a placement's desired configs to a version the add-on already ran successfully is a
// rollback: a version the add-on's version history (Input.History) lists as completed on that
// placement, or on another placement that has left it since; or the last applied or last known
// good configs of its own install progression, or of another's that has left them. Only what the
// controller writes counts: what a cluster reports in its MCA status (its lastAppliedConfig, its
// desiredConfig) is evidence about that cluster alone and never makes a version known good (a
// cluster could otherwise let the next version skip the canary for everyone). (A version another
// placement completed and still runs, the one a canary just proved, is the gated placement's
// upgrade.) So is every later decision
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
// reported as WaitingForCanary naming the problem, with a Warning event (a canary install
// placement whose Placement is missing only once its placement grace is over, see placementMissing). A rollout stopped on
// maxFailures restarts when the desired configs change (fix forward or revert).
//
// # Manual, unplaced MCAs and config types
//
// MCAs no placement owns (all of them under Manual) keep the configs a placement gave them (recorded
// in an install progression) as long as their own spec is unchanged (ConfiguredGeneration):
// switching to Manual or removing a placement re-targets nothing. The others (new MCAs, MCAs whose
// spec changed, MCAs that followed the defaults) take the CMA's defaults and their own configs at
// once, as OCM's defaults node does. Under Manual the install progressions are kept,
// with reason Manual. An MCA config of a group/resource not in the CMA's spec.supportedConfigs gets
// Configured=False, reason ConfigurationUnsupported, and OCM's Progressing=False with the same
// reason, while the MCA is told to run the rest as OCM does (the unsupported reference listed with
// an empty spec hash, see unsupportedTarget); one that cannot be read gets Configured=False,
// reason ConfigurationNotFound, naming it (ConfigurationForbidden when the controller may not read
// its kind: RBAC); the placement names such clusters and never completes while they remain. A
// placement whose own configs cannot be read waits with the same reasons; among several problems a
// refused permission decides the reason (a person must grant it whatever else is missing), and
// the message lists them all.
//
// # Status details
//
// Every MCA's status.configReferences[].lastObservedGeneration follows its configs' generation
// (Input.Generations, WithObservedGenerations). Clusters told to run their configs on
// which no deployer reported ManifestApplied for Input.DeployerWait are named in their placement's
// progression message and in Plan.DeployerWaits, for one Warning event (DeployerWaitEvent).
package rolloutplan

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	clustersdk "open-cluster-management.io/sdk-go/pkg/apis/cluster/v1beta1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/operations"
)

// ConfigLookup returns the spec hash of the config a reference points at, as the API server holds
// it now, or an error saying why it cannot (not found, resource not served, not synced yet).
type ConfigLookup func(configref.Ref) (string, error)

// Input is the hub state one decision is taken on.
type Input struct {
	// Now is the decision's clock (whole seconds, see Now). sdk-go's rollout code reads
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
	// Generations looks up the metadata.generation of configs for the MCAs'
	// status.configReferences[].lastObservedGeneration (WithObservedGenerations); nil
	// leaves it as it is.
	Generations GenerationLookup
	// History is the add-on's version history (package history); nil when none was recorded yet.
	// A version it lists as completed is a rollback target.
	History *history.Record
	// HistoryLimit is how many versions per placement the history keeps (history.DefaultLimit
	// when 0).
	HistoryLimit int
	// Raw, when set, tells what the objects say beyond their Go types (raw.go).
	Raw Raw
	// DeployerWait is how long an MCA told to run its configs may go without any ManifestApplied
	// before it counts as waiting for a deployer (WaitingForDeployer); 0 means
	// DefaultDeployerWait.
	DeployerWait time.Duration
	// PlacementGrace is how long a Placement that spec.installStrategy names may be missing
	// before its placement is Degraded (PlacementNotFound, Progressing=False); within it the
	// placement is Progressing. Zero means DefaultPlacementGrace.
	PlacementGrace time.Duration
	// MaxPushes bounds how many clusters one decision moves to a new version; 0 means
	// DefaultMaxPushes.
	MaxPushes int
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
	// History is the add-on's version history after this decision; nil when it did not change.
	History *history.Record
	// DeployerWaits are the clusters whose MCA waits for a deployer (WaitingForDeployer),
	// sorted: the reconciler raises DeployerWaitEvent when they appear.
	DeployerWaits []string
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
		health: GateOf(in.CMA), supported: sets.New[configref.GroupResource](),
		requests: operations.Parse(in.CMA.Annotations)}
	d.health.DeployerWait = in.DeployerWait
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
	// health is what clusters must show besides their works to count as done (GateOf).
	health Gate
	// supported are the config group/resources the CMA declares (spec.supportedConfigs); an MCA
	// config of any other is not supported (OCM: ConfigurationUnsupported).
	supported sets.Set[configref.GroupResource]
	// byKey, owner and gatedBy index the install placements: by key, by the clusters they own,
	// and the placements each canary gates.
	byKey   map[PlacementKey]*placementState
	owner   map[string]*placementState
	gatedBy map[PlacementKey][]PlacementKey
	// requests are the day-2 requests on the add-on (package operations).
	requests operations.Requests
	// history is the version history as this decision leaves it.
	history *history.Record
	// waiting are the clusters waiting for a deployer (deployerWaits).
	waiting []string
	// pushed counts the clusters this decision moves to a new version (Input.MaxPushes).
	pushed int
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

	if cma.Spec.InstallStrategy.Type != StrategyPlacements {
		// Manual: no placement rolls anything out. New MCAs (and MCAs whose own spec changed) take
		// the defaults and their own configs at once, as in OCM's "defaults" node; the others keep
		// what they run (rolloutUnplaced). The install progressions stay as history.
		if len(defaultProblems) == 0 {
			d.rolloutUnplaced(defaultCfgs)
		}
		for _, old := range cma.Status.InstallProgressions {
			ip := *old.DeepCopy()
			SetCondition(&ip.Conditions, metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionFalse, Reason: addonstatus.ReasonManual,
				Message: "the install strategy is Manual: this placement is no longer rolled out; each ManagedClusterAddOn keeps the configs it runs until its own spec changes"}, d.in.Now, false)
			status.InstallProgressions = append(status.InstallProgressions, ip)
		}
		d.waiting = d.deployerWaits(nil)
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
		d.rolloutUnplaced(defaultCfgs)
	}

	d.recordHistory(states)
	d.waiting = d.deployerWaits(states)
	for _, p := range states {
		ip := d.progression(p)
		d.progressionEvents(p, oldProgression(cma, p.key), &ip)
		status.InstallProgressions = append(status.InstallProgressions, ip)
	}
	return d.plan(status)
}

func (d *decider) plan(status addonv1alpha1.ClusterManagementAddOnStatus) Plan {
	d.observeGenerations()
	// Updates sized once: at fleet scale a decision updates thousands of MCAs, and appending would
	// hold up to twice their statuses.
	p := Plan{Status: status, RecheckAfter: d.recheck, Events: d.events, DeployerWaits: d.waiting, Updates: make([]Update, 0, len(d.updates))}
	if d.history != nil && !equality.Semantic.DeepEqual(d.history, d.in.History) {
		p.History = d.history
	}
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

// observeGenerations writes, into every MCA's status as this decision leaves it, the generation of
// each supported config it references (WithObservedGenerations): in the same write as new
// desired configs, and on its own for a config edited in place, as addon-framework's addonconfig
// controller does for every MCA of the add-on, whatever its rollout turn. MCAs that do not decode
// are never written.
func (d *decider) observeGenerations() {
	if d.in.Generations == nil {
		return
	}
	// Supported here: the CMA's supportedConfigs and every type its install strategy configures
	// (OCM's upgrade suite configures add-ons through placements alone and still expects
	// generations); only an MCA's own config of another type stays at 0, as OCM lists it.
	supported := d.supported.Clone()
	for _, p := range d.in.CMA.Spec.InstallStrategy.Placements {
		for _, c := range p.Configs {
			supported.Insert(configref.GroupResource{Group: c.Group, Resource: c.Resource})
		}
	}
	for ns, m := range d.mcas {
		if d.undecodable(m) != "" {
			continue
		}
		st, updated := d.updates[ns]
		if !updated {
			st = m.Status
		}
		refs, changed := WithObservedGenerations(st.ConfigReferences, supported.Has, d.in.Generations)
		if !changed {
			continue
		}
		if !updated {
			st = *m.Status.DeepCopy()
		}
		st.ConfigReferences = refs
		d.updates[ns] = st
	}
}
