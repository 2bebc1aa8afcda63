package planner

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	clocktesting "k8s.io/utils/clock/testing"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	rollout "open-cluster-management.io/sdk-go/pkg/apis/cluster/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/hubcache"
	"github.com/addonops/addonops/internal/maintwindow"
	"github.com/addonops/addonops/internal/operations"
	"github.com/addonops/addonops/internal/rolloutplan"
	"github.com/addonops/addonops/internal/rolloutrules"
	"github.com/addonops/addonops/internal/verification"
)

// Options are the controller's settings the decision depends on.
type Options struct {
	// Addons is the controller's --addons (hubcache.AddonsSelf when empty).
	Addons string
	// HistoryLimit is the controller's --history-limit (history.DefaultLimit when 0).
	HistoryLimit int
	// Now is when the plan is taken: the state's age is measured to it.
	Now time.Time
	// Source names the state for the report ("snapshot FILE", "hub SERVER").
	Source string
	// MaxSteps bounds the decisions simulated per add-on (DefaultMaxSteps when 0).
	MaxSteps int
	// failing makes the simulated work agent fail every work of these clusters (tests build hub
	// states with failed clusters with it).
	failing map[string]bool
	// Prune plans the removal of the add-ons the controller manages that the rendered manifests
	// lack (as kubectl apply --prune and Flux's prune delete what the source no longer holds);
	// without it they are left as is.
	Prune bool
}

// DefaultMaxSteps bounds a simulation: a rollout of thousands of clusters one at a time takes two
// decisions per cluster.
const DefaultMaxSteps = 20000

// maxIdle is how many rechecks in a row may change nothing before the simulation calls the rollout
// stalled (paused, waiting on a canary that cannot pass, stopped on failures).
const maxIdle = 8

// sdkClock guards sdk-go's package-level RolloutClock, which the simulation sets to its own time.
var sdkClock sync.Mutex

// Plan applies the rendered manifests to the snapshot's state in memory and runs the
// controller's decisions on it until every rollout the change starts ends or stalls.
func Plan(s *Snapshot, rendered []*unstructured.Unstructured, o Options) (*Report, error) {
	rep, _, err := plan(s, rendered, o)
	return rep, err
}

// plan is Plan; it also returns the hub as the simulation leaves it.
func plan(s *Snapshot, rendered []*unstructured.Unstructured, o Options) (*Report, *hub, error) {
	h, err := newHub(s)
	if err != nil {
		return nil, nil, err
	}
	ch, err := h.apply(rendered)
	if err != nil {
		return nil, nil, err
	}
	complete := map[configref.GroupResource]bool{}
	for _, k := range s.ConfigKinds {
		complete[k.groupResource()] = true
	}
	if err := validate(rendered, h, complete); err != nil {
		return nil, nil, err
	}
	if o.HistoryLimit == 0 {
		o.HistoryLimit = history.DefaultLimit
	}
	if o.MaxSteps == 0 {
		o.MaxSteps = DefaultMaxSteps
	}
	if o.Addons == "" {
		o.Addons = hubcache.AddonsSelf
	}
	start := s.TakenAt.Time
	if start.IsZero() {
		start = o.Now
	}
	rep := &Report{SchemaVersion: SchemaVersion, Ignored: ch.ignored,
		State: State{Source: o.Source, TakenAt: s.TakenAt.UTC().Format(time.RFC3339), AgeSeconds: max(0, int64(o.Now.Sub(start).Seconds()))}}
	rep.Warnings = append(rep.Warnings, s.Problems...)
	for _, k := range ch.placementsChanged {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("the change edits Placement %s: the plan uses its current decisions; OCM's placement controller decides again once it is applied", k))
	}
	for _, name := range ch.addons {
		if cma := h.cmas[name]; cma != nil && !hubcache.Selects(o.Addons, cma) {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("add-on %s of the manifests is not managed by addonops: its annotation %s is missing or %q, and the plan takes the controller's --addons=%s (pass --addons %s if the controller runs so); the plan shows nothing of it",
				name, addonv1alpha1.AddonLifecycleAnnotationKey, addonv1alpha1.AddonLifecycleAddonManagerAnnotationValue, o.Addons, hubcache.AddonsAll))
		}
	}
	names := make([]string, 0, len(h.cmas))
	for n := range h.cmas {
		names = append(names, n)
	}
	slices.Sort(names)

	sdkClock.Lock()
	prev := rollout.RolloutClock
	defer func() { rollout.RolloutClock = prev; sdkClock.Unlock() }()
	inManifests := map[string]bool{}
	for _, name := range ch.addons {
		inManifests[name] = true
	}
	for _, name := range names {
		cma := h.cmas[name]
		if cma.DeletionTimestamp != nil || !hubcache.Selects(o.Addons, cma) {
			continue
		}
		sim := &simulation{h: h, addon: name, now: start, opts: o, ch: ch}
		if !inManifests[name] && o.Prune {
			rep.Addons = append(rep.Addons, sim.removal())
			continue
		}
		ap := sim.run()
		ap.NotInManifests = !inManifests[name]
		rep.Addons = append(rep.Addons, ap)
		if sim.hist != nil && sim.histOK {
			h.keepHistory(cma, sim.hist, s.HistoryNamespace)
		}
		if sim.now.After(h.now) {
			h.now = sim.now
		}
	}
	if o.Prune && len(ch.addons) == 0 && slices.ContainsFunc(rep.Addons, func(a AddonPlan) bool { return a.Removal }) {
		rep.Warnings = append(rep.Warnings, "--prune with manifests that hold no ClusterManagementAddOn removes every add-on addonops manages: is the render complete?")
	}
	rep.Warnings = append(rep.Warnings, h.problems...)
	return rep, h, nil
}

type simulation struct {
	h      *hub
	addon  string
	now    time.Time
	opts   Options
	ch     *change
	hist   *history.Record
	histOK bool
	// progressAfter is the soonest recheck the progress tracker asked for (a soak ends).
	progressAfter time.Duration
	// stuck are the clusters that failed their last change before the plan, with the configs
	// they failed on: told nothing new, they stay failed (the controller tells a failed cluster
	// the same version again only on a retry), so a canary that failed stays failed.
	stuck map[string][]rolloutplan.Config
	// verified are the verification runs the decisions asked for (by batch key), each taken as
	// passed when asked, as every cluster told a version is taken to apply it; verifiedBy counts
	// them by placement and names their templates.
	verified   map[string]verification.Result
	verifiedBy map[string]*verifiedRuns
}

// verifiedRuns are the verification runs of a placement the simulation took as passed: the
// batches' and the continuous ones', each with their templates.
type verifiedRuns struct {
	runs, continuous               int
	templates, continuousTemplates []string
}

// lookupVerification is the decision's Input.Verifications: the runs the simulation took as passed.
func (s *simulation) lookupVerification(b verification.Batch) (verification.Result, bool) {
	r, ok := s.verified[b.Key()]
	return r, ok
}

// verify takes the runs a decision asked for as passed at the simulation's time, and returns how
// many it had not seen.
func (s *simulation) verify(reqs []rolloutplan.VerifyRequest) int {
	if s.verified == nil {
		s.verified, s.verifiedBy = map[string]verification.Result{}, map[string]*verifiedRuns{}
	}
	added := 0
	for _, r := range reqs {
		k := r.Batch.Key()
		if _, ok := s.verified[k]; ok {
			continue
		}
		s.verified[k] = verification.Result{Phase: verification.Successful, Message: "taken as passed by addonops plan", Started: s.now, Finished: s.now}
		v := s.verifiedBy[r.Batch.Placement]
		if v == nil {
			v = &verifiedRuns{}
			s.verifiedBy[r.Batch.Placement] = v
		}
		runs, templates := &v.runs, &v.templates
		if r.Batch.Continuous != 0 {
			runs, templates = &v.continuous, &v.continuousTemplates
		}
		*runs++
		if t := r.Template.String(); !slices.Contains(*templates, t) {
			*templates = append(*templates, t)
		}
		added++
	}
	return added
}

func (s *simulation) noteProgress(after time.Duration) {
	if after > 0 && (s.progressAfter == 0 || after < s.progressAfter) {
		s.progressAfter = after
	}
}

func (s *simulation) input() rolloutplan.Input {
	rollout.RolloutClock = clocktesting.NewFakeClock(s.now)
	cma := s.h.cmas[s.addon]
	mcas := make([]*addonv1alpha1.ManagedClusterAddOn, 0, len(s.h.mcas[s.addon]))
	for _, m := range s.h.mcas[s.addon] {
		mcas = append(mcas, m)
	}
	placements := map[rolloutplan.PlacementKey]*clusterv1beta1.Placement{}
	for _, p := range cma.Spec.InstallStrategy.Placements {
		k := rolloutplan.PlacementKey{Namespace: p.Namespace, Name: p.Name}
		if pl := s.h.placements[k]; pl != nil {
			placements[k] = pl
		}
	}
	return rolloutplan.Input{
		Now: rolloutplan.Now(s.now), CMA: cma, Placements: placements, Decisions: s.h, MCAs: mcas,
		Works:   func(ns string) []*workv1.ManifestWork { return s.h.addonWorks(ns, s.addon) },
		Configs: s.h.lookup, Generations: s.h.generation,
		History: s.hist, HistoryLimit: s.opts.HistoryLimit, Raw: s.h.rawFor(s.addon),
		Verifications: s.lookupVerification,
	}
}

// install creates the MCAs the install reconciler creates (rolloutplan.DecideInstall) and returns
// why selected clusters get none.
func (s *simulation) install() map[string]string {
	cma := s.h.cmas[s.addon]
	if s.h.undecodable[objKey("ClusterManagementAddOn", "", cma.Name)] != "" {
		return nil
	}
	in := rolloutplan.InstallInput{Strategy: cma.Spec.InstallStrategy.Type, Decided: map[string][]string{}, Unknown: map[string]string{},
		Clusters: map[string]rolloutplan.Cluster{}}
	for _, p := range cma.Spec.InstallStrategy.Placements {
		key := p.Namespace + "/" + p.Name
		if s.h.placements[rolloutplan.PlacementKey{Namespace: p.Namespace, Name: p.Name}] == nil {
			in.Unknown[key] = "Placement " + key + " does not exist"
			continue
		}
		ds, _ := s.h.List(labels.SelectorFromSet(labels.Set{clusterv1beta1.PlacementLabel: p.Name}), p.Namespace)
		for _, d := range ds {
			for _, c := range d.Status.Decisions {
				in.Decided[key] = append(in.Decided[key], c.ClusterName)
			}
		}
	}
	for n, c := range s.h.clusters {
		in.Clusters[n] = rolloutplan.Cluster{Deleting: c.DeletionTimestamp != nil}
	}
	for ns, m := range s.h.mcas[s.addon] {
		in.Existing = append(in.Existing, rolloutplan.MCA{Namespace: ns, Ours: m.Labels[rolloutplan.CreatedByLabel] == rolloutplan.CreatedByValue, Deleting: m.DeletionTimestamp != nil})
	}
	plan := rolloutplan.DecideInstall(in)
	if s.h.mcas[s.addon] == nil {
		s.h.mcas[s.addon] = map[string]*addonv1alpha1.ManagedClusterAddOn{}
	}
	for _, ns := range plan.Create {
		s.h.mcas[s.addon][ns] = &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: s.addon, Namespace: ns, Generation: 1,
			Labels: map[string]string{rolloutplan.CreatedByLabel: rolloutplan.CreatedByValue}}}
	}
	for _, ns := range plan.Delete {
		delete(s.h.mcas[s.addon], ns)
	}
	return plan.NotCreated
}

// write stores a decision as the rollout reconciler writes it.
func (s *simulation) write(p rolloutplan.Plan) {
	if p.History != nil && s.histOK {
		s.hist = p.History
	}
	cma := s.h.cmas[s.addon].DeepCopy()
	cma.Status = p.Status
	s.h.cmas[s.addon] = cma
	for _, u := range p.Updates {
		m := s.h.mcas[s.addon][u.MCA.Namespace].DeepCopy()
		m.Status = u.Status
		s.h.mcas[s.addon][u.MCA.Namespace] = m
	}
}

// agent plays the add-on's deployer, work agent and health prober on a configured cluster whose
// works do not carry its desired configs yet: the works are rendered from them, applied and
// available, the add-on healthy. It reports whether it changed anything.
func (s *simulation) agent(ns string) bool {
	m := s.h.mcas[s.addon][ns]
	if !meta.IsStatusConditionTrue(m.Status.Conditions, addonstatus.ConditionConfigured) || len(rolloutplan.Desired(m)) == 0 {
		return false
	}
	if cfgs, ok := s.stuck[ns]; ok && rolloutplan.Equal(cfgs, rolloutplan.Desired(m)) {
		return false
	}
	applied := metav1.ConditionTrue
	if s.opts.failing[ns] {
		applied = metav1.ConditionFalse
	}
	now := rolloutplan.Now(s.now)
	ann, _ := json.Marshal(rolloutplan.ConfigSpecHashes(m.Status.ConfigReferences))
	works := s.h.addonWorks(ns, s.addon)
	if len(works) == 0 {
		works = []*workv1.ManifestWork{{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "addon-" + s.addon + "-deploy-0",
			Labels: map[string]string{addonNameLabel: s.addon}}}}
	}
	changed := false
	var out []*workv1.ManifestWork
	for _, w := range works {
		if w.Annotations[rolloutplan.ConfigSpecHashAnnotation] == string(ann) && (workv1Applied(w) || applied == metav1.ConditionFalse) {
			out = append(out, w)
			continue
		}
		changed = true
		w = w.DeepCopy()
		w.Generation++
		w.Annotations = merged(w.Annotations, map[string]string{rolloutplan.ConfigSpecHashAnnotation: string(ann)})
		w.Status.Conditions = []metav1.Condition{
			{Type: workv1.WorkApplied, Status: applied, Reason: "AppliedManifestWorkComplete", ObservedGeneration: w.Generation, LastTransitionTime: now},
			{Type: workv1.WorkAvailable, Status: applied, Reason: "ResourcesAvailable", ObservedGeneration: w.Generation, LastTransitionTime: now},
		}
		out = append(out, w)
	}
	if !changed && (addonstatus.Applied(m) || applied == metav1.ConditionFalse) {
		return false
	}
	others := slices.DeleteFunc(slices.Clone(s.h.works[ns]), func(w *workv1.ManifestWork) bool { return w.Labels[addonNameLabel] == s.addon })
	s.h.works[ns] = append(others, out...)
	m = m.DeepCopy()
	meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: addonstatus.ConditionManifestApplied, Status: applied, Reason: "AddonManifestApplied", LastTransitionTime: now})
	meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: addonstatus.ConditionAvailable, Status: applied, Reason: "ProbeAvailable", LastTransitionTime: now})
	st, after := rolloutplan.Progress(m, out, rolloutplan.GateOf(s.h.cmas[s.addon]), now)
	s.noteProgress(after)
	before := s.h.mcas[s.addon][ns].Status
	m.Status = st
	s.h.mcas[s.addon][ns] = m
	return changed || !equalJSON(before, st)
}

func workv1Applied(w *workv1.ManifestWork) bool {
	c := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied)
	a := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkAvailable)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == w.Generation &&
		a != nil && a.Status == metav1.ConditionTrue && a.ObservedGeneration == w.Generation
}

// recheck is the progress tracker looking at every MCA again (a soak ended).
func (s *simulation) recheck() bool {
	changed := false
	for ns, m := range s.h.mcas[s.addon] {
		st, after := rolloutplan.Progress(m, s.h.addonWorks(ns, s.addon), rolloutplan.GateOf(s.h.cmas[s.addon]), rolloutplan.Now(s.now))
		s.noteProgress(after)
		if !equalJSON(m.Status, st) {
			m = m.DeepCopy()
			m.Status = st
			s.h.mcas[s.addon][ns] = m
			changed = true
		}
	}
	return changed
}

// placementTrack is what the simulation records of one placement.
type placementTrack struct {
	plan    *PlacementPlan
	target  []rolloutplan.Config
	told    map[string]bool
	batches map[int][]string
	// window is the maintenance window closure the placement's next batch waits for, from the
	// decision that said WaitingForWindow until a cluster is told; windows are those of batches.
	window  *maintwindow.Closure
	windows map[int]*maintwindow.Closure
}

// windowClosure is why placement key's windows hold its clusters at the simulation's time, and
// until when (package maintwindow, as the decision reads them); nil when they do not.
func (s *simulation) windowClosure(key string, change string) *maintwindow.Closure {
	cma := s.h.cmas[s.addon]
	ws, err := maintwindow.Parse(cma.Annotations)
	if err != nil {
		return nil
	}
	k, err := canary.ParsePlacementKey(key)
	if err != nil {
		return nil
	}
	rollback := change == ChangeRollback || operations.Parse(cma.Annotations).Abort[k] != ""
	closed, c := ws.For(k, rollback).Closed(s.now)
	if !closed {
		return nil
	}
	return &c
}

func (s *simulation) run() AddonPlan {
	ap := AddonPlan{Addon: s.addon}
	cma := s.h.cmas[s.addon]
	old := s.ch.oldCMAs[s.addon]
	s.hist, s.histOK = s.h.readHistory(cma)
	initialHist := s.hist

	if cma.Spec.InstallStrategy.Type != rolloutplan.StrategyPlacements {
		ap.Warnings = append(ap.Warnings, "the install strategy is Manual: no placement rolls anything out; each ManagedClusterAddOn takes the defaults when its own spec changes")
	}
	req := operations.Parse(cma.Annotations)
	ap.Warnings = append(ap.Warnings, req.Problems...)
	if req.PauseAll {
		ap.Warnings = append(ap.Warnings, "the add-on is paused (annotation "+operations.PauseAnnotation+"): no placement starts a cluster")
	}
	for k, v := range req.Abort {
		ap.Warnings = append(ap.Warnings, fmt.Sprintf("an abort of version %s is in force on placement %s", v, k))
	}
	ap.Configs = s.configChanges()

	// The state before the change: each placement's version, and its canary's state.
	oldProg := map[string]*addonv1alpha1.InstallProgression{}
	if old != nil {
		for i := range old.Status.InstallProgressions {
			ip := &old.Status.InstallProgressions[i]
			oldProg[ip.Namespace+"/"+ip.Name] = ip
		}
	}
	// Clusters that failed before the change.
	var failed []string
	s.stuck = map[string][]rolloutplan.Config{}
	for ns, m := range s.h.mcas[s.addon] {
		if c := meta.FindStatusCondition(m.Status.Conditions, addonstatus.ConditionProgressing); c != nil && addonstatus.IsFailedReason(c.Reason) {
			failed = append(failed, ns)
			s.stuck[ns] = rolloutplan.Desired(m)
		}
	}
	slices.Sort(failed)
	if len(failed) > 0 {
		ap.Warnings = append(ap.Warnings, fmt.Sprintf("%d cluster(s) failed their last change: %s", len(failed), listed(failed)))
	}
	startApplied := map[string][]rolloutplan.Config{}
	for ns, m := range s.h.mcas[s.addon] {
		startApplied[ns] = rolloutplan.LastApplied(m)
	}

	hadMCA := map[string]bool{}
	for ns := range s.h.mcas[s.addon] {
		hadMCA[ns] = true
	}
	notCreated := s.install()
	owners := rolloutplan.Owners(s.input())
	canaries, _ := rolloutplan.ParseCanaries(cma.Annotations)

	tracks := map[string]*placementTrack{}
	var order []string
	for _, ps := range cma.Spec.InstallStrategy.Placements {
		k := rolloutplan.PlacementKey{Namespace: ps.Namespace, Name: ps.Name}
		pp := &PlacementPlan{Placement: k.String()}
		if c, ok := canaries[k]; ok {
			pp.Canary = &Canary{Placement: c.String()}
			if ip := oldProg[c.String()]; ip != nil {
				if cond := rolloutplan.ProgressingOf(ip); cond != nil {
					pp.Canary.State, pp.Canary.Message = cond.Reason, cond.Message
				}
			}
		}
		tracks[k.String()] = &placementTrack{plan: pp, told: map[string]bool{}, batches: map[int][]string{}, windows: map[int]*maintwindow.Closure{}}
		order = append(order, k.String())
	}
	for _, k := range owners {
		tracks[k.String()].plan.Clusters++
	}
	for _, ps := range cma.Spec.InstallStrategy.Placements {
		k := rolloutplan.PlacementKey{Namespace: ps.Namespace, Name: ps.Name}
		t := tracks[k.String()]
		t.plan.Strategy = strategyOf(ps.RolloutStrategy, s.h.placements[k], cma, t.plan.Clusters)
	}
	// Removed placements.
	if old != nil {
		for _, ps := range old.Spec.InstallStrategy.Placements {
			key := ps.Namespace + "/" + ps.Name
			if tracks[key] == nil {
				pp := PlacementPlan{Placement: key, Change: ChangeRemoval, Outcome: "Removed",
					OutcomeMessage: "the placement leaves spec.installStrategy: its clusters keep what they run unless another placement or the defaults configure them"}
				if ip := oldProg[key]; ip != nil {
					pp.FromConfigs, pp.FromVersion = progressionConfigs(ip, func(r addonv1alpha1.InstallConfigReference) *addonv1alpha1.ConfigSpecHash { return r.DesiredConfig })
				}
				ap.Placements = append(ap.Placements, pp)
				ap.Changed = true
			}
		}
	}

	unplaced := map[string]bool{}
	step, idle, round := 0, 0, 0
	first := true
	for ; step < s.opts.MaxSteps; step++ {
		if step > 0 {
			s.install()
		}
		in := s.input()
		before := map[string][]rolloutplan.Config{}
		for ns, m := range s.h.mcas[s.addon] {
			before[ns] = rolloutplan.Desired(m)
		}
		p := rolloutplan.Decide(in)
		s.write(p)
		verifying := s.verify(p.Verify)
		if first {
			first = false
			s.classify(tracks, oldProg, p)
			for _, t := range tracks {
				for c, k := range owners {
					if k.String() == t.plan.Placement && len(t.target) > 0 && rolloutplan.Equal(startApplied[c], t.target) {
						t.plan.AlreadyOnTarget = append(t.plan.AlreadyOnTarget, c)
					}
				}
				slices.Sort(t.plan.AlreadyOnTarget)
			}
		}
		for _, ip := range p.Status.InstallProgressions {
			t := tracks[ip.Namespace+"/"+ip.Name]
			if c := rolloutplan.ProgressingOf(&ip); t != nil && t.window == nil && c != nil && c.Reason == addonstatus.ReasonWaitingForWindow {
				t.window = s.windowClosure(t.plan.Placement, t.plan.Change)
			}
		}
		told := 0
		for _, u := range p.Updates {
			ns := u.MCA.Namespace
			now := rolloutplan.Desired(s.h.mcas[s.addon][ns])
			if len(now) == 0 || rolloutplan.Equal(now, before[ns]) {
				continue
			}
			k, ok := owners[ns]
			if !ok {
				unplaced[ns] = true
				continue
			}
			t := tracks[k.String()]
			if t.told[ns] || !rolloutplan.Equal(now, t.target) {
				continue
			}
			t.told[ns] = true
			t.batches[round] = append(t.batches[round], ns)
			if t.window != nil {
				t.windows[round], t.window = t.window, nil
			}
			told++
		}
		if told > 0 && p.RecheckAfter == rolloutplan.PushRecheck {
			continue // more of the same batch in the next decision (Input.MaxPushes)
		}
		moved := false
		namespaces := make([]string, 0, len(s.h.mcas[s.addon]))
		for ns := range s.h.mcas[s.addon] {
			namespaces = append(namespaces, ns)
		}
		slices.Sort(namespaces)
		for _, ns := range namespaces {
			if s.agent(ns) {
				moved = true
			}
		}
		if told > 0 || moved {
			round++
			idle = 0
			continue
		}
		if len(p.Updates) > 0 || verifying > 0 {
			continue
		}
		after := p.RecheckAfter
		if s.progressAfter > 0 && (after <= 0 || s.progressAfter < after) {
			after = s.progressAfter
		}
		if after <= 0 || idle >= maxIdle {
			break
		}
		idle++
		s.progressAfter = 0
		s.now = s.now.Add(after)
		if s.recheck() {
			idle = 0
		}
	}
	ap.Steps = step

	final := s.h.cmas[s.addon]
	for _, key := range order {
		t := tracks[key]
		rounds := make([]int, 0, len(t.batches))
		for r := range t.batches {
			rounds = append(rounds, r)
		}
		slices.Sort(rounds)
		for _, r := range rounds {
			cl := t.batches[r]
			slices.Sort(cl)
			b := Batch{Step: r + 1, Clusters: cl}
			if w := t.windows[r]; w != nil {
				b.NotBefore, b.Window = w.Opens.Format(time.RFC3339), w.Why
			}
			t.plan.Batches = append(t.plan.Batches, b)
		}
		var held []string
		for i, b := range t.plan.Batches {
			if b.Window != "" {
				held = append(held, fmt.Sprintf("batch %d until %s (%s)", i+1, b.NotBefore, b.Window))
			}
		}
		if len(held) > 0 {
			t.plan.Warnings = append(t.plan.Warnings, fmt.Sprintf("maintenance windows hold %d of %d batches, with the change applied when the hub state was read: %s",
				len(held), len(t.plan.Batches), strings.Join(held, "; ")))
		}
		var finalIP *addonv1alpha1.InstallProgression
		for i := range final.Status.InstallProgressions {
			ip := &final.Status.InstallProgressions[i]
			if ip.Namespace+"/"+ip.Name != key {
				continue
			}
			finalIP = ip
			if c := rolloutplan.ProgressingOf(ip); c != nil {
				t.plan.Outcome, t.plan.OutcomeMessage = c.Reason, c.Message
			}
		}
		t.settleKind(finalIP, initialHist)
		t.plan.Completes = len(t.target) > 0
		for c, k := range owners {
			if k.String() != key {
				continue
			}
			m := s.h.mcas[s.addon][c]
			if m == nil {
				t.plan.Completes = false
				continue
			}
			if !rolloutplan.LastAppliedIs(m, t.target) {
				t.plan.Completes = false
			}
			if why := s.h.undecodable[objKey("ManagedClusterAddOn", c, s.addon)]; why != "" {
				t.plan.NotConfigured = append(t.plan.NotConfigured, ClusterProblem{Cluster: c, Reason: addonstatus.ReasonUndecodable + ": the ManagedClusterAddOn does not decode: " + why})
				continue
			}
			if cond := meta.FindStatusCondition(m.Status.Conditions, addonstatus.ConditionConfigured); cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason != addonstatus.ReasonNotConfigured {
				t.plan.NotConfigured = append(t.plan.NotConfigured, ClusterProblem{Cluster: c, Reason: cond.Reason + ": " + cond.Message})
			}
		}
		for c, why := range notCreated {
			if owners[c].String() == key || !hasOwner(owners, c) {
				t.plan.NotConfigured = append(t.plan.NotConfigured, ClusterProblem{Cluster: c, Reason: why})
			}
		}
		slices.SortFunc(t.plan.NotConfigured, func(a, b ClusterProblem) int { return strings.Compare(a.Cluster, b.Cluster) })
		if t.plan.Change == ChangeInstall || t.plan.Change == ChangeUpgrade || t.plan.Change == ChangeRollback {
			var owned []string
			for c, k := range owners {
				if k.String() == key {
					owned = append(owned, c)
				}
			}
			slices.Sort(owned)
			t.plan.Manifests = s.manifestDiffs(owned, startApplied, t.target)
		}
		var fresh []string
		for c, k := range owners {
			if k.String() == key && !hadMCA[c] && s.h.mcas[s.addon][c] != nil {
				fresh = append(fresh, c)
			}
		}
		if len(fresh) > 1 && len(t.plan.Batches) > 1 {
			slices.Sort(fresh)
			t.plan.Warnings = append(t.plan.Warnings, fmt.Sprintf("%d clusters get their ManagedClusterAddOn from this change (%s): the controller's first decisions see those created so far, so which of them go first may differ from the batches shown; the batch sizes hold",
				len(fresh), listed(fresh)))
		}
		if !t.plan.Completes && t.plan.Change != ChangeNoOp {
			t.plan.Warnings = append(t.plan.Warnings, fmt.Sprintf("the rollout does not complete: %s (%s)", t.plan.Outcome, t.plan.OutcomeMessage))
		}
		// A placement the change leaves on its version warns too when it waits for a canary that
		// does not pass: merging does not move it on.
		if t.plan.Canary != nil && (t.plan.Canary.Gates || t.plan.Change == ChangeNoOp && !t.plan.Completes) && strings.Contains(t.plan.Outcome, "Canary") {
			t.plan.Warnings = append(t.plan.Warnings, "the canary "+t.plan.Canary.Placement+" does not pass: "+t.plan.OutcomeMessage)
		}
		if v := s.verifiedBy[t.plan.Placement]; v != nil && v.runs > 0 {
			t.plan.Warnings = append(t.plan.Warnings, fmt.Sprintf("%d batch(es) are verified (%s) before the next one starts; the plan takes every run as passed: a failed run fails its batch's clusters, an inconclusive one pauses the placement",
				v.runs, strings.Join(v.templates, ", ")))
		}
		if v := s.verifiedBy[t.plan.Placement]; v != nil && v.continuous > 0 {
			t.plan.Warnings = append(t.plan.Warnings, fmt.Sprintf("continuous verification (%s) runs while it rolls out; the plan takes every run as passed: a failed run fails every cluster told the version, an inconclusive one pauses the placement",
				strings.Join(v.continuousTemplates, ", ")))
		}
		if t.plan.Change != ChangeNoOp {
			ap.Changed = true
		}
		ap.Placements = append(ap.Placements, *t.plan)
	}
	for c := range unplaced {
		ap.Unplaced = append(ap.Unplaced, c)
	}
	slices.Sort(ap.Unplaced)
	ap.Changed = ap.Changed || len(ap.Unplaced) > 0
	ap.Warnings = append(ap.Warnings, s.prunedInUse()...)
	return ap
}

func hasOwner(owners map[string]rolloutplan.PlacementKey, c string) bool {
	_, ok := owners[c]
	return ok
}

// classify fills each placement's change from the first decision: its target version, and
// whether moving to it is an install, an upgrade or a rollback (the history the decision wrote
// says which).
func (s *simulation) classify(tracks map[string]*placementTrack, oldProg map[string]*addonv1alpha1.InstallProgression, p rolloutplan.Plan) {
	for _, ip := range p.Status.InstallProgressions {
		t := tracks[ip.Namespace+"/"+ip.Name]
		if t == nil {
			continue
		}
		for _, r := range ip.ConfigReferences {
			if r.DesiredConfig != nil {
				t.target = append(t.target, rolloutplan.FromSpecHash(r.ConfigGroupResource, r.DesiredConfig))
			}
		}
		t.plan.ToConfigs, t.plan.ToVersion = progressionConfigs(&ip, func(r addonv1alpha1.InstallConfigReference) *addonv1alpha1.ConfigSpecHash { return r.DesiredConfig })
		var from *addonv1alpha1.InstallProgression
		if o := oldProg[t.plan.Placement]; o != nil {
			from = o
			t.plan.FromConfigs, t.plan.FromVersion = progressionConfigs(o, func(r addonv1alpha1.InstallConfigReference) *addonv1alpha1.ConfigSpecHash { return r.DesiredConfig })
		}
		var last *history.Version
		if rec := s.hist; rec != nil {
			last = rec.Placement(t.plan.Placement).Last()
		}
		switch {
		case t.plan.ToVersion == "":
			t.plan.Change = ChangeNoOp
		case from != nil && t.plan.FromVersion == t.plan.ToVersion:
			t.plan.Change = ChangeNoOp
			if c := rolloutplan.ProgressingOf(from); c != nil && c.Status == metav1.ConditionTrue {
				t.plan.Change = ChangeContinue
			}
		case kindOf(rolloutplan.ProgressingOf(&ip)) != "":
			// The controller's own word: its Progressing reason names the kind of change.
			t.plan.Change = kindOf(rolloutplan.ProgressingOf(&ip))
		case last != nil && last.ID == t.plan.ToVersion:
			t.plan.Change = last.Kind
		case from == nil || t.plan.FromVersion == "":
			t.plan.Change = ChangeInstall
		default:
			t.plan.Change = ChangeUpgrade
		}
	}
}

// settleKind takes the kind of a placement's change from its Progressing reason at the end of
// the simulation when the first decision's did not name one (a placement that waited for its
// canary first), and names the history entry a rollback returns to.
func (t *placementTrack) settleKind(final *addonv1alpha1.InstallProgression, initial *history.Record) {
	switch t.plan.Change {
	case ChangeInstall, ChangeUpgrade, ChangeRollback:
		if final != nil {
			if k := kindOf(rolloutplan.ProgressingOf(final)); k != "" {
				t.plan.Change = k
			}
		}
	}
	if t.plan.Change == ChangeRollback && initial != nil {
		if v := initial.Placement(t.plan.Placement).Find(t.target4history()); v != nil {
			t.plan.RollbackTo = entry(v)
		}
	}
	if t.plan.Canary != nil {
		t.plan.Canary.Gates = t.plan.Change == ChangeInstall || t.plan.Change == ChangeUpgrade || t.plan.Change == ChangeContinue
	}
}

// kindOf is the change kind a Progressing condition's reason names ("" for none).
func kindOf(c *metav1.Condition) string {
	if c == nil {
		return ""
	}
	k, ok := addonstatus.KindOfReason(c.Reason)
	if !ok {
		return ""
	}
	return map[addonstatus.Kind]string{addonstatus.Install: ChangeInstall, addonstatus.Upgrade: ChangeUpgrade, addonstatus.Rollback: ChangeRollback}[k]
}

func (t *placementTrack) target4history() []history.Config {
	out := make([]history.Config, 0, len(t.target))
	for _, c := range t.target {
		out = append(out, history.Config{Group: c.Group, Resource: c.Resource, Namespace: c.Namespace, Name: c.Name, SpecHash: c.SpecHash})
	}
	return out
}

func entry(v *history.Version) *HistoryEntry {
	e := &HistoryEntry{Version: v.ID, Kind: v.Kind, Started: v.Started.UTC().Format(time.RFC3339), Result: string(v.Result)}
	if v.Completed != nil {
		e.Completed = v.Completed.UTC().Format(time.RFC3339)
	}
	return e
}

// progressionConfigs names a progression's configs (desired, or another field) and their version id.
func progressionConfigs(ip *addonv1alpha1.InstallProgression, field func(addonv1alpha1.InstallConfigReference) *addonv1alpha1.ConfigSpecHash) ([]string, string) {
	var names []string
	var cfgs []history.Config
	for _, r := range ip.ConfigReferences {
		h := field(r)
		if h == nil {
			continue
		}
		c := history.Config{Group: r.Group, Resource: r.Resource, Namespace: h.Namespace, Name: h.Name, SpecHash: h.SpecHash}
		cfgs = append(cfgs, c)
		names = append(names, c.String())
	}
	if len(cfgs) == 0 {
		return nil, ""
	}
	return names, history.VersionID(cfgs)
}

func strategyOf(rs clusterv1alpha1.RolloutStrategy, pl *clusterv1beta1.Placement, cma *addonv1alpha1.ClusterManagementAddOn, total int) Strategy {
	st := Strategy{Type: string(rs.Type)}
	if st.Type == "" {
		st.Type = string(clusterv1alpha1.All)
	}
	cfg := rolloutrules.ConfigOf(rs)
	if mf := cfg.MaxFailures.String(); mf != "0" {
		st.MaxFailures = mf
	}
	st.ProgressDeadline = cfg.ProgressDeadline
	var mandatory []clusterv1alpha1.MandatoryDecisionGroup
	switch {
	case rs.Type == clusterv1alpha1.Progressive && rs.Progressive != nil:
		st.MinSuccessTime = durationOrEmpty(rs.Progressive.MinSuccessTime.Duration)
		mandatory = rs.Progressive.MandatoryDecisionGroups.MandatoryDecisionGroups
	case rs.Type == clusterv1alpha1.ProgressivePerGroup && rs.ProgressivePerGroup != nil:
		st.MinSuccessTime = durationOrEmpty(rs.ProgressivePerGroup.MinSuccessTime.Duration)
		mandatory = rs.ProgressivePerGroup.MandatoryDecisionGroups.MandatoryDecisionGroups
	}
	for _, g := range mandatory {
		st.MandatoryGroups = append(st.MandatoryGroups, groupName(g))
	}
	if rs.Type == clusterv1alpha1.Progressive {
		st.MaxConcurrency = rolloutplan.MaxConcurrency(rs, pl, total)
	}
	st.HealthSoak = rolloutplan.GateOf(cma).Soak.String()
	return st
}

func groupName(g clusterv1alpha1.MandatoryDecisionGroup) string {
	if g.GroupName != "" {
		return g.GroupName
	}
	return fmt.Sprintf("index %d", g.GroupIndex)
}

func durationOrEmpty(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// configChanges lists the add-on's configs the change adds or edits, with their spec diffs.
func (s *simulation) configChanges() []ConfigChange {
	used := map[configref.Ref]bool{}
	cma := s.h.cmas[s.addon]
	for _, sc := range cma.Spec.SupportedConfigs {
		if sc.DefaultConfig != nil {
			used[configref.Ref{GroupResource: configref.GroupResource{Group: sc.Group, Resource: sc.Resource}, Namespace: sc.DefaultConfig.Namespace, Name: sc.DefaultConfig.Name}] = true
		}
	}
	for _, p := range cma.Spec.InstallStrategy.Placements {
		for _, c := range p.Configs {
			used[configref.Ref{GroupResource: configref.GroupResource{Group: c.Group, Resource: c.Resource}, Namespace: c.Namespace, Name: c.Name}] = true
		}
	}
	for _, m := range s.h.mcas[s.addon] {
		for _, c := range m.Spec.Configs {
			used[configref.Ref{GroupResource: configref.GroupResource{Group: c.Group, Resource: c.Resource}, Namespace: c.Namespace, Name: c.Name}] = true
		}
	}
	var out []ConfigChange
	for ref, after := range s.ch.newConfigs {
		if !used[ref] {
			continue
		}
		before := s.ch.oldConfigs[ref]
		cc := ConfigChange{Config: ref.String(), Action: "add"}
		if before != nil {
			cc.Action = "edit"
		} else if prev, prevRef := s.previousVersion(ref, after); prev != nil {
			// config-hash renames a config whose content changes: the diff that matters is against
			// the version of the same base name the add-on used.
			before = prev
			cc.Action = "edit"
			cc.RenamedFrom = prevRef.String()
		}
		d, err := specDiff(before, after)
		if err != nil {
			cc.Diff = "(no diff: " + err.Error() + ")"
		} else {
			cc.Diff = d
		}
		if before != nil && d == "" {
			continue
		}
		out = append(out, cc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Config < out[j].Config })
	return out
}

// previousVersion is the config the add-on referenced before the change (its CMA's defaults and
// placements) that has the same kind, namespace and base name (configref.BaseNameAnnotation, which
// config-hash writes) as after, a config the change adds.
func (s *simulation) previousVersion(ref configref.Ref, after *unstructured.Unstructured) (*unstructured.Unstructured, configref.Ref) {
	base := after.GetAnnotations()[configref.BaseNameAnnotation]
	old := s.ch.oldCMAs[s.addon]
	if base == "" || old == nil {
		return nil, configref.Ref{}
	}
	var refs []configref.Ref
	for _, sc := range old.Spec.SupportedConfigs {
		if sc.DefaultConfig != nil {
			refs = append(refs, configref.Ref{GroupResource: configref.GroupResource{Group: sc.Group, Resource: sc.Resource}, Namespace: sc.DefaultConfig.Namespace, Name: sc.DefaultConfig.Name})
		}
	}
	for _, p := range old.Spec.InstallStrategy.Placements {
		for _, c := range p.Configs {
			refs = append(refs, configref.Ref{GroupResource: configref.GroupResource{Group: c.Group, Resource: c.Resource}, Namespace: c.Namespace, Name: c.Name})
		}
	}
	for _, r := range refs {
		if r == ref || r.GroupResource != ref.GroupResource || r.Namespace != ref.Namespace {
			continue
		}
		if u := s.h.configs[r]; u != nil && u.GetAnnotations()[configref.BaseNameAnnotation] == base {
			if _, changed := s.ch.newConfigs[r]; !changed {
				return u, r
			}
		}
	}
	return nil, configref.Ref{}
}

// prunedInUse warns about configs clusters of the add-on still run that the rendered manifests
// leave out although they hold other configs of that kind in that namespace: a GitOps prune would
// delete them while they run.
func (s *simulation) prunedInUse() []string {
	users := map[configref.Ref][]string{}
	for ns, m := range s.h.mcas[s.addon] {
		for _, c := range append(rolloutplan.LastApplied(m), rolloutplan.Desired(m)...) {
			ref := c.Ref
			if !slices.Contains(users[ref], ns) {
				users[ref] = append(users[ref], ns)
			}
		}
	}
	var out []string
	for ref, clusters := range users {
		if !s.ch.renderedKinds[ref.GroupResource.String()+" "+ref.Namespace] {
			continue
		}
		if _, inChange := s.ch.newConfigs[ref]; inChange {
			continue
		}
		if _, onHub := s.h.configs[ref]; !onHub {
			continue
		}
		slices.Sort(clusters)
		out = append(out, fmt.Sprintf("config %s is not in the rendered manifests (a GitOps prune deletes it) but clusters still run or are told it: %s", ref, listed(clusters)))
	}
	slices.Sort(out)
	return out
}

func listed(s []string) string {
	const max = 10
	if len(s) <= max {
		return strings.Join(s, ", ")
	}
	return strings.Join(s[:max], ", ") + fmt.Sprintf(" and %d more", len(s)-max)
}

// removal is the plan of deleting the add-on's ClusterManagementAddOn (--prune): OCM's garbage
// collector deletes the ManagedClusterAddOns the CMA owns (OCM gives every MCA that owner
// reference; those addonops's install reconciler creates carry it from the start) and with them
// their ManifestWorks, so every such cluster loses the agent at once. The hub the simulation
// leaves has neither.
func (s *simulation) removal() AddonPlan {
	cma := s.h.cmas[s.addon]
	ap := AddonPlan{Addon: s.addon, Changed: true, Removal: true}
	owners := rolloutplan.Owners(s.input())
	lose := map[string][]string{}
	var kept []string
	for ns, m := range s.h.mcas[s.addon] {
		if !ownedBy(m, cma) {
			kept = append(kept, ns)
			continue
		}
		ap.LoseAgent = append(ap.LoseAgent, ns)
		if k, ok := owners[ns]; ok {
			lose[k.String()] = append(lose[k.String()], ns)
		}
	}
	slices.Sort(ap.LoseAgent)
	slices.Sort(kept)
	for _, ps := range cma.Spec.InstallStrategy.Placements {
		key := ps.Namespace + "/" + ps.Name
		pp := PlacementPlan{Placement: key, Change: ChangeRemoval, Outcome: "Removed", LoseAgent: lose[key], Clusters: len(lose[key])}
		slices.Sort(pp.LoseAgent)
		pp.OutcomeMessage = fmt.Sprintf("the add-on is deleted: %d cluster(s) of the placement lose the agent at once", len(pp.LoseAgent))
		if len(pp.LoseAgent) > 0 {
			pp.OutcomeMessage += ": " + listed(pp.LoseAgent)
		}
		for _, ip := range cma.Status.InstallProgressions {
			if ip.Namespace+"/"+ip.Name == key {
				pp.FromConfigs, pp.FromVersion = progressionConfigs(&ip, func(r addonv1alpha1.InstallConfigReference) *addonv1alpha1.ConfigSpecHash { return r.DesiredConfig })
			}
		}
		ap.Placements = append(ap.Placements, pp)
	}
	ap.Warnings = append(ap.Warnings, fmt.Sprintf("--prune: the rendered manifests lack add-on %s, so the change deletes its ClusterManagementAddOn: %d cluster(s) lose the agent at once, with no rollout, canary or maintenance window to hold it: %s",
		s.addon, len(ap.LoseAgent), orDash(listed(ap.LoseAgent))))
	if len(kept) > 0 {
		ap.Warnings = append(ap.Warnings, fmt.Sprintf("%d ManagedClusterAddOn(s) of the add-on are not owned by its ClusterManagementAddOn and stay, with no controller to roll them out: %s", len(kept), listed(kept)))
	}
	delete(s.h.cmas, s.addon)
	for _, ns := range ap.LoseAgent {
		delete(s.h.mcas[s.addon], ns)
		s.h.works[ns] = slices.DeleteFunc(s.h.works[ns], func(w *workv1.ManifestWork) bool { return w.Labels[addonNameLabel] == s.addon })
	}
	return ap
}

// ownedBy tells whether the garbage collector deletes m with cma: an owner reference to it, or
// addonops's created-by label (the install reconciler sets the owner reference with it).
func ownedBy(m *addonv1alpha1.ManagedClusterAddOn, cma *addonv1alpha1.ClusterManagementAddOn) bool {
	if m.Labels[rolloutplan.CreatedByLabel] == rolloutplan.CreatedByValue {
		return true
	}
	for _, o := range m.OwnerReferences {
		if o.Kind == "ClusterManagementAddOn" && o.Name == cma.Name && (cma.UID == "" || o.UID == cma.UID) {
			return true
		}
	}
	return false
}
