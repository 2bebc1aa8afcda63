package rolloutplan

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	rollout "open-cluster-management.io/sdk-go/pkg/apis/cluster/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/history"
)

// world is an in-memory hub for multi-step decision tests: Decide's plan is "written" into it, and
// a simulated add-on deployer and work agent move MCAs on through Progress.
type world struct {
	t          *testing.T
	now        time.Time
	cma        *addonv1alpha1.ClusterManagementAddOn
	placements map[PlacementKey]*clusterv1beta1.Placement
	decisions  map[PlacementKey][][]string // groups of clusters
	groupNames map[PlacementKey][]string
	mcas       map[string]*addonv1alpha1.ManagedClusterAddOn
	works      map[string]*workv1.ManifestWork
	configs    map[configref.Ref]string
	// generations, when set, are the configs' metadata.generation (Input.Generations).
	generations map[configref.Ref]int64
	// refused are config kinds the controller may not read (RBAC).
	refused  map[configref.GroupResource]bool
	lookups  int
	lastPlan Plan
	// history is the add-on's version history as the controller would store it.
	history *history.Record
	// maxPushes is Input.MaxPushes (0: the default).
	maxPushes int
	// verifications is Input.Verifications (verify_test.go).
	verifications VerificationLookup
}

var adcGR = configref.GroupResource{Group: configref.AddonGroup, Resource: "addondeploymentconfigs"}

func adcRef(name string) configref.Ref {
	return configref.Ref{GroupResource: adcGR, Namespace: "default", Name: name}
}

func newWorld(t *testing.T) *world {
	w := &world{
		t: t, now: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC),
		cma: &addonv1alpha1.ClusterManagementAddOn{
			// No health soak: the tests that are not about it settle in one step per batch (TestHealthSoak*
			// set one).
			ObjectMeta: metav1.ObjectMeta{Name: "hello", Annotations: map[string]string{addonv1alpha1.AddonLifecycleAnnotationKey: "self",
				HealthSoakAnnotation: "0s"}},
			Spec: addonv1alpha1.ClusterManagementAddOnSpec{
				SupportedConfigs: []addonv1alpha1.ConfigMeta{{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: adcGR.Group, Resource: adcGR.Resource}}},
				InstallStrategy:  addonv1alpha1.InstallStrategy{Type: StrategyPlacements},
			},
		},
		placements: map[PlacementKey]*clusterv1beta1.Placement{},
		decisions:  map[PlacementKey][][]string{},
		groupNames: map[PlacementKey][]string{},
		mcas:       map[string]*addonv1alpha1.ManagedClusterAddOn{},
		works:      map[string]*workv1.ManifestWork{},
		configs:    map[configref.Ref]string{},
	}
	prev := rollout.RolloutClock
	t.Cleanup(func() { rollout.RolloutClock = prev })
	return w
}

func (w *world) config(name string) {
	w.configs[adcRef(name)] = "hash-" + name
}

func cfgOf(name string) Config {
	return Config{Ref: adcRef(name), SpecHash: "hash-" + name}
}

// placement adds an install placement with config cfgName and strategy s, selecting groups of
// clusters (group i gets decision-group-index i).
func (w *world) placement(name, cfgName string, s clusterv1alpha1.RolloutStrategy, groups ...[]string) PlacementKey {
	k := PlacementKey{Namespace: "default", Name: name}
	ps := addonv1alpha1.PlacementStrategy{PlacementRef: addonv1alpha1.PlacementRef{Namespace: k.Namespace, Name: k.Name}, RolloutStrategy: s}
	if cfgName != "" {
		ps.Configs = []addonv1alpha1.AddOnConfig{{
			ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: adcGR.Group, Resource: adcGR.Resource},
			ConfigReferent:      addonv1alpha1.ConfigReferent{Namespace: "default", Name: cfgName},
		}}
	}
	w.cma.Spec.InstallStrategy.Placements = append(w.cma.Spec.InstallStrategy.Placements, ps)
	w.placements[k] = &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name},
		Spec: clusterv1beta1.PlacementSpec{DecisionStrategy: clusterv1beta1.DecisionStrategy{GroupStrategy: clusterv1beta1.GroupStrategy{
			ClustersPerDecisionGroup: intstr.FromString("100%")}}}}
	w.decide(k, groups...)
	for _, g := range groups {
		for _, c := range g {
			w.mca(c)
		}
	}
	return k
}

func (w *world) decide(k PlacementKey, groups ...[]string) { w.decisions[k] = groups }

// setConfig points placement k at config cfgName.
func (w *world) setConfig(k PlacementKey, cfgName string) {
	for i := range w.cma.Spec.InstallStrategy.Placements {
		p := &w.cma.Spec.InstallStrategy.Placements[i]
		if p.Name == k.Name {
			p.Configs[0].Name = cfgName
			return
		}
	}
	w.t.Fatalf("no placement %s", k)
}

func (w *world) mca(cluster string) *addonv1alpha1.ManagedClusterAddOn {
	if m := w.mcas[cluster]; m != nil {
		return m
	}
	m := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: cluster, Generation: 1,
		Labels: map[string]string{CreatedByLabel: CreatedByValue}}}
	w.mcas[cluster] = m
	return m
}

// List implements sdk-go's PlacementDecisionGetter the way OCM's placement controller lays
// decisions out.
func (w *world) List(selector labels.Selector, namespace string) ([]*clusterv1beta1.PlacementDecision, error) {
	var out []*clusterv1beta1.PlacementDecision
	for k, groups := range w.decisions {
		for i, g := range groups {
			name := ""
			if n := w.groupNames[k]; i < len(n) {
				name = n[i]
			}
			d := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: fmt.Sprintf("%s-decision-%d", k.Name, i),
				Labels: map[string]string{clusterv1beta1.PlacementLabel: k.Name, clusterv1beta1.DecisionGroupIndexLabel: strconv.Itoa(i), clusterv1beta1.DecisionGroupNameLabel: name}}}
			for _, c := range g {
				d.Status.Decisions = append(d.Status.Decisions, clusterv1beta1.ClusterDecision{ClusterName: c})
			}
			if d.Namespace == namespace && selector.Matches(labels.Set(d.Labels)) {
				out = append(out, d)
			}
		}
	}
	return out, nil
}

func (w *world) input() Input {
	rollout.RolloutClock = clocktesting.NewFakeClock(w.now)
	var mcas []*addonv1alpha1.ManagedClusterAddOn
	for _, m := range w.mcas {
		mcas = append(mcas, m)
	}
	var generations GenerationLookup
	if w.generations != nil {
		generations = func(r configref.Ref) (int64, bool) { g, ok := w.generations[r]; return g, ok }
	}
	return Input{
		Now: Now(w.now), CMA: w.cma, Placements: w.placements, Decisions: w, MCAs: mcas, History: w.history,
		Generations: generations, MaxPushes: w.maxPushes, Verifications: w.verifications,
		Works: func(ns string) []*workv1.ManifestWork {
			if wk := w.works[ns]; wk != nil {
				return []*workv1.ManifestWork{wk}
			}
			return nil
		},
		Configs: func(r configref.Ref) (string, error) {
			w.lookups++
			if w.refused[r.GroupResource] {
				return "", fmt.Errorf("config %s: %w", r, apierrors.NewForbidden(schema.GroupResource{Group: r.Group, Resource: r.Resource}, "", errors.New("RBAC: list refused")))
			}
			if h, ok := w.configs[r]; ok {
				return h, nil
			}
			return "", fmt.Errorf("%s not found", r)
		},
	}
}

// step takes a decision and writes it; it returns the plan.
func (w *world) step() Plan {
	w.t.Helper()
	plan := Decide(w.input())
	w.lastPlan = plan
	if plan.History != nil {
		w.history = roundTrip(w.t, plan.History)
	}
	w.cma = w.cma.DeepCopy()
	w.cma.Status = plan.Status
	for _, u := range plan.Updates {
		m := w.mcas[u.MCA.Namespace].DeepCopy()
		m.Status = u.Status
		w.mcas[u.MCA.Namespace] = m
	}
	return plan
}

type outcome int

const (
	succeed outcome = iota
	fail
	never
	unhealthy   // works applied and available, the agent never becomes ready
	renderError // the deployer cannot render the desired configs: works unchanged, ManifestApplied=False
)

// agent plays add-on deployer and work agent for a cluster: when the MCA is Configured, its work
// is (re)rendered from the MCA's desired configs and reports the outcome; then the progress tracker
// (Progress) updates the MCA.
func (w *world) agent(cluster string, o outcome) {
	w.t.Helper()
	m := w.mcas[cluster]
	if !meta.IsStatusConditionTrue(m.Status.Conditions, addonstatus.ConditionConfigured) {
		w.t.Fatalf("agent on %s: MCA not Configured", cluster)
	}
	now := Now(w.now)
	m = m.DeepCopy()
	if o == renderError {
		meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: addonstatus.ConditionManifestApplied, Status: metav1.ConditionFalse,
			Reason: "ManifestWorkApplyFailed", Message: "failed to render: boom", LastTransitionTime: now})
		var works []*workv1.ManifestWork
		if wk := w.works[cluster]; wk != nil {
			works = append(works, wk)
		}
		m.Status, _ = Track(m, works, GateOf(w.cma), w.recorded, now)
		w.mcas[cluster] = m
		return
	}
	ann, _ := json.Marshal(ConfigSpecHashes(m.Status.ConfigReferences))
	wk := w.works[cluster]
	if wk == nil {
		wk = &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: "addon-hello-deploy-0", Labels: map[string]string{addonv1alpha1.AddonLabelKey: "hello"}}}
	} else {
		wk = wk.DeepCopy()
	}
	if wk.Annotations[ConfigSpecHashAnnotation] != string(ann) {
		wk.Generation++
		wk.Annotations = map[string]string{ConfigSpecHashAnnotation: string(ann)}
	}
	wk.Status.Conditions = nil
	health := metav1.Condition{Type: addonstatus.ConditionAvailable, Status: metav1.ConditionTrue, Reason: "ProbeAvailable", LastTransitionTime: now}
	switch o {
	case unhealthy:
		health = metav1.Condition{Type: addonstatus.ConditionAvailable, Status: metav1.ConditionFalse, Reason: "ProbeUnavailable", Message: "agent has no ready replica", LastTransitionTime: now}
		fallthrough
	case succeed:
		wk.Status.Conditions = []metav1.Condition{
			{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, Reason: "Applied", ObservedGeneration: wk.Generation},
			{Type: workv1.WorkAvailable, Status: metav1.ConditionTrue, Reason: "Available", ObservedGeneration: wk.Generation},
		}
	case fail:
		wk.Status.Conditions = []metav1.Condition{{Type: workv1.WorkApplied, Status: metav1.ConditionFalse, Reason: "AppliedManifestWorkFailed", Message: "boom", ObservedGeneration: wk.Generation}}
		health = metav1.Condition{Type: addonstatus.ConditionAvailable, Status: metav1.ConditionFalse, Reason: "WorkNotApplied", Message: "boom", LastTransitionTime: now}
	case never:
		health = metav1.Condition{Type: addonstatus.ConditionAvailable, Status: metav1.ConditionUnknown, Reason: "WorkNotApplied", LastTransitionTime: now}
	}
	w.works[cluster] = wk
	// The deployer reports the apply, the health prober the add-on's health (set like
	// meta.SetStatusCondition: the transition time moves only when the status flips).
	meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: addonstatus.ConditionManifestApplied, Status: metav1.ConditionTrue, Reason: "AddonManifestApplied", LastTransitionTime: now})
	meta.SetStatusCondition(&m.Status.Conditions, health)
	m.Status, _ = Track(m, []*workv1.ManifestWork{wk}, GateOf(w.cma), w.recorded, now)
	w.mcas[cluster] = m
}

// recorded is the version history as the progress tracker reads it (Track).
func (w *world) recorded() *history.Record { return w.history }

// recheck is the progress tracker looking at a cluster again (its recheck time came).
func (w *world) recheck(cluster string) {
	m := w.mcas[cluster].DeepCopy()
	var works []*workv1.ManifestWork
	if wk := w.works[cluster]; wk != nil {
		works = append(works, wk)
	}
	m.Status, _ = Track(m, works, GateOf(w.cma), w.recorded, Now(w.now))
	w.mcas[cluster] = m
}

// run lets every configured, not yet applied cluster of the list succeed.
func (w *world) agents(o outcome, clusters ...string) {
	w.t.Helper()
	for _, c := range clusters {
		w.agent(c, o)
	}
}

func (w *world) advance(d time.Duration) { w.now = w.now.Add(d) }

// mcaReason is the reason of a cluster's Progressing condition ("" for none).
func (w *world) mcaReason(cluster string) string {
	if c := meta.FindStatusCondition(w.mcas[cluster].Status.Conditions, addonstatus.ConditionProgressing); c != nil {
		return c.Reason
	}
	return ""
}

// eventReasons lists the reasons of the last decision's events.
func (w *world) eventReasons() []string {
	var out []string
	for _, e := range w.lastPlan.Events {
		out = append(out, e.Reason)
	}
	return out
}

// desiredOf names the config an MCA is told to run ("" for none).
func (w *world) desiredOf(cluster string) string {
	d := Desired(w.mcas[cluster])
	if len(d) == 0 {
		return ""
	}
	return d[0].Name
}

func (w *world) appliedOf(cluster string) string {
	d := LastApplied(w.mcas[cluster])
	if len(d) == 0 {
		return ""
	}
	return d[0].Name
}

// states renders every cluster as name=desired/applied/configured, sorted, for compact assertions.
func (w *world) states() string {
	var parts []string
	for c := range w.mcas {
		conf := "-"
		if cc := meta.FindStatusCondition(w.mcas[c].Status.Conditions, addonstatus.ConditionConfigured); cc != nil {
			conf = map[metav1.ConditionStatus]string{metav1.ConditionTrue: "T", metav1.ConditionFalse: "F"}[cc.Status]
		}
		parts = append(parts, fmt.Sprintf("%s=%s/%s/%s", c, w.desiredOf(c), w.appliedOf(c), conf))
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

func (w *world) expectStates(want string) {
	w.t.Helper()
	if got := w.states(); got != want {
		w.t.Fatalf("states:\n got %s\nwant %s", got, want)
	}
}

func (w *world) progression(k PlacementKey) *addonv1alpha1.InstallProgression {
	return oldProgression(w.cma, k)
}

// expectProgression checks a progression's Progressing reason, that its message contains msg, and
// its desired / last known good / last applied config names ("" for none).
func (w *world) expectProgression(k PlacementKey, reason, msg, desired, lkg, applied string) {
	w.t.Helper()
	ip := w.progression(k)
	if ip == nil {
		w.t.Fatalf("no progression for %s", k)
	}
	c := ProgressingOf(ip)
	if c == nil || c.Reason != reason || !strings.Contains(c.Message, msg) {
		w.t.Fatalf("progression %s: condition %+v, want reason %s with message containing %q", k, c, reason, msg)
	}
	name := func(h *addonv1alpha1.ConfigSpecHash) string {
		if h == nil {
			return ""
		}
		return h.Name
	}
	var d, l, a string
	if len(ip.ConfigReferences) > 0 {
		r := ip.ConfigReferences[0]
		d, l, a = name(r.DesiredConfig), name(r.LastKnownGoodConfig), name(r.LastAppliedConfig)
	}
	if d != desired || l != lkg || a != applied {
		w.t.Fatalf("progression %s: desired/lkg/applied = %s/%s/%s, want %s/%s/%s", k, d, l, a, desired, lkg, applied)
	}
}

func all() clusterv1alpha1.RolloutStrategy {
	return clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All}
}

func progressive(maxConcurrency intstr.IntOrString, cfg clusterv1alpha1.RolloutConfig, mandatory ...clusterv1alpha1.MandatoryDecisionGroup) clusterv1alpha1.RolloutStrategy {
	return clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.Progressive, Progressive: &clusterv1alpha1.RolloutProgressive{
		RolloutConfig: cfg, MaxConcurrency: maxConcurrency,
		MandatoryDecisionGroups: clusterv1alpha1.MandatoryDecisionGroups{MandatoryDecisionGroups: mandatory}}}
}

func roundTrip[T any](t *testing.T, v *T) *T {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out := new(T)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
	return out
}
