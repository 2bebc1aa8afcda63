// Package rolloutplan decides, for one ClusterManagementAddOn, which configs every
// ManagedClusterAddOn should run now and what the CMA's status says about it: configuration
// resolution, the rollout of each placement with sdk-go's RolloutHandler, canary placements
// (CanaryAnnotation) and the install progressions. It is a pure function of the hub state; the
// rollout reconciler reads that state from informers and writes the plan.
//
// The rules it implements (when a cluster is done, the health soak, what fails, maxFailures,
// maxConcurrency, rollback, the canary, Manual and config types) are docs/spec/rollout.md, one
// heading per rule; the table tests of this package check each of them.
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
	"github.com/addonops/addonops/internal/maintwindow"
	"github.com/addonops/addonops/internal/operations"
	"github.com/addonops/addonops/internal/verification"
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
	// Verifications looks up the results of verification runs (verify.go); nil: none ended.
	Verifications VerificationLookup
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
	// Verify are the batches whose verification must run (verify.go); the reconciler hands them
	// to the runner, which takes the decision again when a run ends.
	Verify []VerifyRequest
}

// Event is a Kubernetes event on the CMA.
type Event struct {
	Warning bool
	Reason  string
	Message string
	// Subject is what a placement's event is about (nil for an event of the whole add-on): the
	// notifications (package notify) send it to templates.
	Subject *EventSubject
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
	// byKey, owners (with ownerStates: ownerOf) and gatedBy index the install placements: by key,
	// by the clusters they own, and the placements each canary gates.
	byKey       map[PlacementKey]*placementState
	owners      map[string]int
	ownerStates []*placementState
	gatedBy     map[PlacementKey][]PlacementKey
	// requests are the day-2 requests on the add-on (package operations).
	requests operations.Requests
	// history is the version history as this decision leaves it.
	history *history.Record
	// waiting are the clusters waiting for a deployer (deployerWaits).
	waiting []string
	// pushed counts the clusters this decision moves to a new version (Input.MaxPushes).
	pushed int
	// windows are the add-on's maintenance windows (package maintwindow).
	windows maintwindow.Windows
	// verifs are the add-on's verification references (package verification); verify the runs
	// this decision asks for.
	verifs verification.Refs
	verify []VerifyRequest
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
	windows, windowErr := parseWindows(cma.Annotations, keys)
	if windowErr != nil {
		// Fail closed: a window meant to keep a freeze must not let a rollout through because of
		// a typo.
		for _, p := range states {
			p.wait(addonstatus.ReasonInvalidMaintenanceWindows, invalidWindows(cma.Name, windowErr))
		}
	}
	d.windows = windows
	verifs, verifyErr := parseVerifications(cma.Annotations, keys)
	if verifyErr != nil {
		// Fail closed: a gate meant to stop a bad version must not let it through because of a typo.
		for _, p := range states {
			p.wait(addonstatus.ReasonInvalidVerification, invalidVerification(cma.Name, verifyErr))
		}
	}
	d.verifs = verifs
	for _, k := range order {
		p := byKey[k]
		n := len(d.events)
		d.evaluate(p)
		d.windowCondition(p)
		d.windowOverrideEvent(p)
		d.verifyCondition(p)
		d.verifyEvents(p)
		d.continuousCondition(p)
		d.continuousEvents(p)
		d.subject(p, n)
	}

	unknown := false
	for _, p := range states {
		unknown = unknown || p.placement == nil || p.trackErr != nil
	}
	// MCAs that no placement owns take the defaults, unless some placement's clusters are unknown:
	// they might be its clusters, which must wait rather than be moved to other configs.
	// Maintenance windows that do not parse hold them too (fail closed).
	if !unknown && canaryErr == nil && windowErr == nil && verifyErr == nil && len(defaultProblems) == 0 {
		d.rolloutUnplaced(defaultCfgs)
	}

	d.recordHistory(states)
	d.waiting = d.deployerWaits(states)
	for _, p := range states {
		ip := d.progression(p)
		n := len(d.events)
		d.progressionEvents(p, oldProgression(cma, p.key), &ip)
		d.subject(p, n)
		status.InstallProgressions = append(status.InstallProgressions, ip)
	}
	return d.plan(status)
}

func (d *decider) plan(status addonv1alpha1.ClusterManagementAddOnStatus) Plan {
	d.observeGenerations()
	// Updates sized once: at fleet scale a decision updates thousands of MCAs, and appending would
	// hold up to twice their statuses.
	p := Plan{Status: status, RecheckAfter: d.recheck, Events: d.events, DeployerWaits: d.waiting, Updates: make([]Update, 0, len(d.updates)), Verify: d.verify}
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
