//go:build integration

package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/rolloutplan"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/simagent"
)

var envSeq atomic.Int32

// env is one test's slice of the shared hub.
type env struct {
	t    *testing.T
	ctx  context.Context
	hub  *localhub.Hub
	c    *localhub.Clients
	name string // add-on (CMA) name, namespace of placements and configs, prefix of cluster names
	rec  *recorder

	outMu    sync.Mutex
	outcomes map[string]simagent.Outcome // "<cluster>" or "<cluster>/<config name>"
	agent    *simagent.Agent
	stopLast func() // stops the controller startController started last
	// controllerConfig, when set, is how controllers reach the hub (another identity than the
	// test's own, e.g. for the API server's audit log); default: e.config().
	controllerConfig *rest.Config
}

// stopController stops the controller started last, as a crash or a rolling update would.
func (e *env) stopController() {
	e.t.Helper()
	if e.stopLast == nil {
		e.t.Fatal("no controller running")
	}
	e.stopLast()
}

type envOptions struct {
	agentDelay time.Duration
	noAgent    bool
}

var nonDNS = regexp.MustCompile(`[^a-z0-9]+`)

func newEnv(t *testing.T, o envOptions) *env {
	t.Helper()
	return newEnvOn(t, localhub.ForTest(t), o)
}

// newEnvOn is newEnv on a hub of the test's own (one started with other API server flags).
func newEnvOn(t *testing.T, hub *localhub.Hub, o envOptions) *env {
	t.Helper()
	short := nonDNS.ReplaceAllString(strings.ToLower(strings.TrimPrefix(t.Name(), "Test")), "-")
	if len(short) > 24 {
		short = short[:24]
	}
	name := fmt.Sprintf("%s-%d", strings.Trim(short, "-"), envSeq.Add(1))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e := &env{t: t, ctx: ctx, hub: hub, c: hub.Clients, name: name, outcomes: map[string]simagent.Outcome{}}
	if err := localhub.EnsureNamespace(ctx, e.c.Kube, name); err != nil {
		t.Fatal(err)
	}
	e.rec = startRecorder(t, ctx, e.c, name)
	if !o.noAgent {
		e.startAgent(o.agentDelay)
	}
	return e
}

func (e *env) startAgent(delay time.Duration) {
	e.t.Helper()
	agent, err := simagent.New(e.config(), simagent.Options{
		Addons: []string{e.name}, Delay: delay, Workers: 4,
		Outcome: func(cluster, _ string, configs map[string]string) simagent.Outcome {
			e.outMu.Lock()
			defer e.outMu.Unlock()
			for key := range configs {
				if o, ok := e.outcomes[cluster+"/"+key[strings.LastIndex(key, "/")+1:]]; ok {
					return o
				}
			}
			if o, ok := e.outcomes[cluster]; ok {
				return o
			}
			return simagent.Succeed
		},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := agent.Start(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	e.agent = agent
}

// outcome sets what the work agent reports for cluster: for every config, or (cfg non-empty) for
// works rendered from config cfg.
func (e *env) outcome(cluster, cfg string, o simagent.Outcome) {
	e.outMu.Lock()
	defer e.outMu.Unlock()
	key := e.cluster(cluster)
	if cfg != "" {
		key += "/" + cfg
	}
	e.outcomes[key] = o
}

func (e *env) config() *rest.Config {
	cfg := rest.CopyConfig(e.hub.Config)
	cfg.QPS, cfg.Burst = 500, 1000
	return cfg
}

// startController runs a controller restricted to this test's add-on; stop stops it and waits.
func (e *env) startController(opts Options) (stop func()) {
	e.t.Helper()
	_, stop = e.runController(opts)
	return stop
}

// runController is startController returning the controller too; opts.Only names add-ons it
// manages besides the test's own.
func (e *env) runController(opts Options) (_ *Controller, stop func()) {
	e.t.Helper()
	if opts.Coalesce == 0 {
		opts.Coalesce = 50 * time.Millisecond
	}
	opts.Only = append([]string{e.name}, opts.Only...)
	if opts.HistoryNamespace == "" {
		opts.HistoryNamespace = "default"
	}
	cfg := e.config()
	if e.controllerConfig != nil {
		cfg = rest.CopyConfig(e.controllerConfig)
	}
	c, err := New(cfg, opts)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	logger := ktesting.NewLogger(e.t, ktesting.NewConfig(ktesting.Verbosity(2)))
	ctx = klog.NewContext(ctx, logger)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					e.t.Errorf("controller: %v", err)
				}
			case <-time.After(30 * time.Second):
				e.t.Errorf("controller did not stop within 30s")
			}
		})
	}
	e.t.Cleanup(stop)
	e.stopLast = stop
	return c, stop
}

// cluster is the hub-wide name of the test's cluster short.
func (e *env) cluster(short string) string { return e.name + "-" + short }

func (e *env) clusters(shorts ...string) []string {
	out := make([]string, len(shorts))
	for i, s := range shorts {
		out[i] = e.cluster(s)
	}
	return out
}

func (e *env) ensureClusters(shorts ...string) {
	e.t.Helper()
	for _, s := range shorts {
		if _, err := localhub.EnsureManagedCluster(e.ctx, e.c, e.cluster(s), nil); err != nil {
			e.t.Fatal(err)
		}
	}
}

// adc creates or updates the AddOnDeploymentConfig name with one customized variable version=value.
func (e *env) adc(name, value string) {
	e.t.Helper()
	api := e.c.Addon.AddonV1alpha1().AddOnDeploymentConfigs(e.name)
	cur, err := api.Get(e.ctx, name, metav1.GetOptions{})
	if err == nil {
		cur.Spec.CustomizedVariables = []addonv1alpha1.CustomizedVariable{{Name: "version", Value: value}}
		if _, err := api.Update(e.ctx, cur, metav1.UpdateOptions{}); err != nil {
			e.t.Fatal(err)
		}
		return
	}
	_, err = api.Create(e.ctx, &addonv1alpha1.AddOnDeploymentConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.name},
		Spec:       addonv1alpha1.AddOnDeploymentConfigSpec{CustomizedVariables: []addonv1alpha1.CustomizedVariable{{Name: "version", Value: value}}},
	}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
}

// placement creates or updates a Placement and sets its decisions: groups of short cluster names
// (group i is decision group i, named by names[i] when given).
func (e *env) placement(name string, groups [][]string, names ...string) {
	e.t.Helper()
	if _, err := localhub.EnsurePlacement(e.ctx, e.c, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: e.name, Name: name}}); err != nil {
		e.t.Fatal(err)
	}
	e.decide(name, groups, names...)
}

func (e *env) decide(name string, groups [][]string, names ...string) {
	e.t.Helper()
	var dg []localhub.DecisionGroup
	for i, g := range groups {
		d := localhub.DecisionGroup{Clusters: e.clusters(g...)}
		if i < len(names) {
			d.Name = names[i]
		}
		dg = append(dg, d)
	}
	if err := localhub.SetPlacementDecisions(e.ctx, e.c, e.name, name, dg); err != nil {
		e.t.Fatal(err)
	}
}

// install is one install placement of the test CMA.
type install struct {
	placement string
	config    string // ADC name; "" for none
	strategy  clusterv1alpha1.RolloutStrategy
}

func (e *env) placementStrategy(in install) addonv1alpha1.PlacementStrategy {
	ps := addonv1alpha1.PlacementStrategy{PlacementRef: addonv1alpha1.PlacementRef{Namespace: e.name, Name: in.placement}, RolloutStrategy: in.strategy}
	if in.config != "" {
		ps.Configs = []addonv1alpha1.AddOnConfig{{
			ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"},
			ConfigReferent:      addonv1alpha1.ConfigReferent{Namespace: e.name, Name: in.config},
		}}
	}
	return ps
}

// cma creates the test's ClusterManagementAddOn, annotated lifecycle: self, with install placements.
// Without an addonops.io/health-soak annotation it gets "0s": the tests not about the health soak
// do not wait for it (the simulated prober never reports the old agent's health for a new version).
func (e *env) cma(annotations map[string]string, installs ...install) {
	e.t.Helper()
	if annotations == nil {
		annotations = map[string]string{addonv1alpha1.AddonLifecycleAnnotationKey: addonv1alpha1.AddonLifecycleSelfManageAnnotationValue}
	}
	if _, ok := annotations[rolloutplan.HealthSoakAnnotation]; !ok {
		annotations[rolloutplan.HealthSoakAnnotation] = "0s"
	}
	cma := &addonv1alpha1.ClusterManagementAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: e.name, Annotations: annotations},
		Spec: addonv1alpha1.ClusterManagementAddOnSpec{
			SupportedConfigs: []addonv1alpha1.ConfigMeta{{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"}}},
			InstallStrategy:  addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyPlacements},
		},
	}
	for _, in := range installs {
		cma.Spec.InstallStrategy.Placements = append(cma.Spec.InstallStrategy.Placements, e.placementStrategy(in))
	}
	if _, err := e.c.Addon.AddonV1alpha1().ClusterManagementAddOns().Create(e.ctx, cma, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		_ = e.c.Addon.AddonV1alpha1().ClusterManagementAddOns().Delete(context.Background(), e.name, metav1.DeleteOptions{})
	})
}

// updateCMA changes the CMA's spec/metadata with retries on conflict.
func (e *env) updateCMA(change func(*addonv1alpha1.ClusterManagementAddOn)) {
	e.t.Helper()
	api := e.c.Addon.AddonV1alpha1().ClusterManagementAddOns()
	for range 10 {
		cur, err := api.Get(e.ctx, e.name, metav1.GetOptions{})
		if err != nil {
			e.t.Fatal(err)
		}
		change(cur)
		if _, err = api.Update(e.ctx, cur, metav1.UpdateOptions{}); err == nil {
			return
		}
	}
	e.t.Fatal("updating the CMA kept conflicting")
}

// setConfig points install placement p at ADC cfg.
func (e *env) setConfig(p, cfg string) {
	e.t.Helper()
	e.updateCMA(func(cma *addonv1alpha1.ClusterManagementAddOn) {
		for i := range cma.Spec.InstallStrategy.Placements {
			if cma.Spec.InstallStrategy.Placements[i].Name == p {
				cma.Spec.InstallStrategy.Placements[i].Configs[0].Name = cfg
			}
		}
	})
}

func progressive(maxConcurrency intstr.IntOrString, cfg clusterv1alpha1.RolloutConfig, mandatory ...clusterv1alpha1.MandatoryDecisionGroup) clusterv1alpha1.RolloutStrategy {
	return clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.Progressive, Progressive: &clusterv1alpha1.RolloutProgressive{
		RolloutConfig: cfg, MaxConcurrency: maxConcurrency,
		MandatoryDecisionGroups: clusterv1alpha1.MandatoryDecisionGroups{MandatoryDecisionGroups: mandatory}}}
}

var allStrategy = clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All}

// waitFor polls cond until it holds or timeout passes; the failure names what was awaited and the
// recorder's view of the MCAs.
func (e *env) waitFor(timeout time.Duration, what string, cond func() bool) {
	e.t.Helper()
	harness.EventuallyTrue(e.t, timeout, what, cond, harness.Every(50*time.Millisecond), harness.Dump(e.dump))
}

// waitStates waits until the MCAs of the listed clusters are exactly in the given states
// (see recorder.state) and no other MCA exists.
func (e *env) waitStates(timeout time.Duration, want map[string]string) {
	e.t.Helper()
	full := map[string]string{}
	for k, v := range want {
		full[e.cluster(k)] = v
	}
	e.waitFor(timeout, fmt.Sprintf("MCA states %v", want), func() bool {
		got := e.rec.states()
		if len(got) != len(full) {
			return false
		}
		for k, v := range full {
			if got[k] != v {
				return false
			}
		}
		return true
	})
}

// waitProgression waits for placement's install progression to have the reason and a message
// containing msg.
func (e *env) waitProgression(timeout time.Duration, placement, reason, msg string) {
	e.t.Helper()
	e.waitFor(timeout, fmt.Sprintf("progression %s: %s %q", placement, reason, msg), func() bool {
		c := e.rec.progression(e.name, placement)
		return c != nil && c.Reason == reason && strings.Contains(c.Message, msg)
	})
}

// quiet waits d and fails if any MCA of the add-on was written meanwhile.
func (e *env) quiet(d time.Duration) {
	e.t.Helper()
	before := e.rec.count()
	harness.Consistently(e.t, d, "no MCA write", func() string {
		if n := e.rec.count() - before; n != 0 {
			return fmt.Sprintf("%d MCA writes", n)
		}
		return ""
	}, harness.Dump(func() string { return e.rec.eventsSince(before) }))
	if after := e.rec.count(); after != before {
		e.t.Fatalf("%d MCA writes while nothing changed:\n%s", after-before, e.rec.eventsSince(before))
	}
}

// recorder is the harness's recording of the test's MCAs and CMA: every change, in the API
// server's order.
type recorder struct {
	mcas *harness.Recorder[mcaEvent]
	cmas *harness.Recorder[cmaEvent]
}

type (
	mcaEvent = harness.MCAEvent
	cmaEvent = harness.CMAEvent
)

func startRecorder(t *testing.T, ctx context.Context, c *localhub.Clients, name string) *recorder {
	t.Helper()
	mcas, err := harness.RecordMCAs(ctx, c.Addon, name)
	r := &recorder{mcas: harness.ForTest(t, mcas, err)}
	cmas, err := harness.RecordCMA(ctx, c.Addon, name)
	r.cmas = harness.ForTest(t, cmas, err)
	return r
}

// state renders an MCA as "<desired>/<lastApplied>/<Configured>/<Progressing reason>" with config
// names ("-" for none).
func state(m *addonv1alpha1.ManagedClusterAddOn) string {
	name := func(cs []rolloutplan.Config) string {
		if len(cs) == 0 {
			return "-"
		}
		return cs[0].Name
	}
	conf, prog := "-", "-"
	if c := meta.FindStatusCondition(m.Status.Conditions, addonstatus.ConditionConfigured); c != nil {
		conf = string(c.Status)
	}
	if c := meta.FindStatusCondition(m.Status.Conditions, addonstatus.ConditionProgressing); c != nil {
		prog = c.Reason
	}
	return fmt.Sprintf("%s/%s/%s/%s", name(rolloutplan.Desired(m)), name(rolloutplan.LastApplied(m)), conf, prog)
}

func (r *recorder) states() map[string]string {
	out := map[string]string{}
	for c, ev := range r.mcas.Latest() {
		out[c] = state(ev.MCA)
	}
	return out
}

func (r *recorder) mca(cluster string) *addonv1alpha1.ManagedClusterAddOn {
	if ev, ok := r.mcas.Get(cluster); ok {
		return ev.MCA
	}
	return nil
}

func (r *recorder) summary() string {
	st := r.states()
	keys := slices.Sorted(mapsKeys(st))
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  %s: %s", k, st[k])
	}
	return b.String()
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func (r *recorder) cmaSummary() string {
	cma := r.cma()
	if cma == nil {
		return "(none)"
	}
	var b strings.Builder
	for _, ip := range cma.Status.InstallProgressions {
		c := meta.FindStatusCondition(ip.Conditions, addonstatus.ConditionProgressing)
		if c != nil {
			fmt.Fprintf(&b, "\n  %s: %s %s", ip.Name, c.Reason, c.Message)
		} else {
			fmt.Fprintf(&b, "\n  %s: no condition", ip.Name)
		}
	}
	return b.String()
}

func (r *recorder) progression(_ string, placement string) *metav1.Condition {
	cma := r.cma()
	if cma == nil {
		return nil
	}
	for i := range cma.Status.InstallProgressions {
		ip := &cma.Status.InstallProgressions[i]
		if ip.Name == placement {
			return rolloutplan.ProgressingOf(ip)
		}
	}
	return nil
}

func (r *recorder) count() int { return r.mcas.Mark() }

func (r *recorder) events() []mcaEvent { return r.mcas.Events() }

func (r *recorder) eventsSince(i int) string {
	var b strings.Builder
	for _, ev := range r.events()[i:] {
		fmt.Fprintf(&b, "  %s %s %s\n", ev.Type, ev.Cluster, state(ev.MCA))
	}
	return b.String()
}

// history is the sequence of distinct desired config names of cluster, in order.
func (r *recorder) history(cluster string) []string {
	var out []string
	for _, ev := range r.events() {
		if ev.Cluster != cluster || ev.Type == watch.Deleted {
			continue
		}
		d := rolloutplan.Desired(ev.MCA)
		name := "-"
		if len(d) > 0 {
			name = d[0].Name
		}
		if name != "-" && (len(out) == 0 || out[len(out)-1] != name) {
			out = append(out, name)
		}
	}
	return out
}

// maxInFlight replays the recorded events and returns the largest number of clusters that were,
// at one time, told to run cfg without having applied it.
func (r *recorder) maxInFlight(cfg string) int {
	n, _ := harness.MaxInFlight(nil, r.events(), nil, movingTo(cfg))
	return n
}

// firstTime returns when cluster was first seen told to run cfg (zero if never).
func (r *recorder) firstDesired(cluster, cfg string) (time.Time, int) {
	for i, ev := range r.events() {
		if ev.Cluster == cluster {
			if d := rolloutplan.Desired(ev.MCA); len(d) > 0 && d[0].Name == cfg {
				return ev.At, i
			}
		}
	}
	return time.Time{}, -1
}

// firstApplied returns the index of the event where cluster first had applied cfg (-1 if never).
func (r *recorder) firstApplied(cluster, cfg string) (time.Time, int) {
	for i, ev := range r.events() {
		if ev.Cluster == cluster {
			if a := rolloutplan.LastApplied(ev.MCA); len(a) > 0 && a[0].Name == cfg {
				return ev.At, i
			}
		}
	}
	return time.Time{}, -1
}

// writes counts the recorded modifications of cluster's MCA that changed what the controller
// writes (desired and applied configs, Configured, Progressing, HealthSoak); the simulated
// deployer's ManifestApplied and health prober's Available are other writers' budgets.
func (r *recorder) writes(cluster string, from int) int {
	n := 0
	prev := ""
	for i, ev := range r.events() {
		if ev.Cluster != cluster {
			continue
		}
		cur := controllerPart(ev.MCA)
		if i >= from && ev.Type == watch.Modified && cur != prev {
			n++
		}
		prev = cur
	}
	return n
}

// controllerPart renders the part of an MCA's status the controller writes.
func controllerPart(m *addonv1alpha1.ManagedClusterAddOn) string {
	var conds []metav1.Condition
	for _, c := range m.Status.Conditions {
		if c.Type == addonstatus.ConditionConfigured || c.Type == addonstatus.ConditionProgressing || c.Type == addonstatus.ConditionHealthSoak {
			conds = append(conds, c)
		}
	}
	b, _ := json.Marshal([]any{m.Status.ConfigReferences, conds})
	return string(b)
}

// reasonsSeen lists the distinct Progressing reasons the CMA's progression of placement had.
func (r *recorder) reasonsSeen(placement string) []string {
	var out []string
	for _, ev := range r.cmas.Events() {
		for i := range ev.CMA.Status.InstallProgressions {
			ip := &ev.CMA.Status.InstallProgressions[i]
			if c := rolloutplan.ProgressingOf(ip); ip.Name == placement && c != nil && !slices.Contains(out, c.Reason) {
				out = append(out, c.Reason)
			}
		}
	}
	return out
}

func newConfigMap(ns, name, version string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"version": version}}
}

// eventsOf renders the recorded events of one cluster.
func (r *recorder) eventsOf(cluster string) string {
	var b strings.Builder
	for _, ev := range r.events() {
		if ev.Cluster == cluster {
			fmt.Fprintf(&b, "\n    %s %s rv=%s", ev.Type, state(ev.MCA), ev.MCA.ResourceVersion)
		}
	}
	return b.String()
}

// maxInFlightAmong is maxInFlight restricted to some clusters.
func (r *recorder) maxInFlightAmong(cfg string, clusters []string) int {
	n, _ := harness.MaxInFlight(nil, r.events(), clusters, func(ev mcaEvent) bool {
		d, a := rolloutplan.Desired(ev.MCA), rolloutplan.LastApplied(ev.MCA)
		return ev.Type != watch.Deleted && len(d) > 0 && d[0].Name == cfg && (len(a) == 0 || a[0] != d[0])
	})
	return n
}

// lastApplyIndex is the largest event index at which one of clusters first applied cfg (-1 if one never did).
func (r *recorder) lastApplyIndex(cfg string, clusters []string) int {
	last := -1
	for _, c := range clusters {
		_, i := r.firstApplied(c, cfg)
		if i < 0 {
			return -1
		}
		last = max(last, i)
	}
	return last
}

// firstDesireIndex is the smallest event index at which one of clusters was first told to run cfg
// (-1 if none was).
func (r *recorder) firstDesireIndex(cfg string, clusters []string) int {
	first := -1
	for _, c := range clusters {
		if _, i := r.firstDesired(c, cfg); i >= 0 && (first < 0 || i < first) {
			first = i
		}
	}
	return first
}

// waitInstalled waits until the clusters run cfg after a fresh install.
func (e *env) waitInstalled(timeout time.Duration, cfg string, shorts ...string) {
	e.t.Helper()
	for _, s := range shorts {
		e.waitCluster(timeout, s, cfg+"/"+cfg+"/True/InstallSucceed")
	}
}

// waitCluster waits for one cluster's MCA state.
func (e *env) waitCluster(timeout time.Duration, short, want string) {
	e.t.Helper()
	c := e.cluster(short)
	e.waitFor(timeout, fmt.Sprintf("%s in state %s", c, want), func() bool {
		m := e.rec.mca(c)
		return m != nil && state(m) == want
	})
}

// dump is the recorder's view of the MCAs and CMA, and the CMA as the API server has it.
func (e *env) dump() string {
	live := "(not found)"
	if cma, err := e.c.Addon.AddonV1alpha1().ClusterManagementAddOns().Get(e.ctx, e.name, metav1.GetOptions{}); err == nil {
		var b strings.Builder
		for _, ip := range cma.Status.InstallProgressions {
			if c := rolloutplan.ProgressingOf(&ip); c != nil {
				fmt.Fprintf(&b, "\n  %s: %s %s", ip.Name, c.Reason, c.Message)
			}
		}
		live = b.String()
	}
	return fmt.Sprintf("MCAs: %s\nCMA (watched): %s\nCMA (live): %s", e.rec.summary(), e.rec.cmaSummary(), live)
}

// cma is the CMA as last recorded (nil before it exists or once deleted).
func (r *recorder) cma() *addonv1alpha1.ClusterManagementAddOn {
	for _, ev := range r.cmas.Latest() {
		return ev.CMA
	}
	return nil
}

// movingTo says whether an MCA's first desired config is cfg and it has not applied it (its name
// and spec hash).
func movingTo(cfg string) func(mcaEvent) bool {
	return func(ev mcaEvent) bool {
		d, a := rolloutplan.Desired(ev.MCA), rolloutplan.LastApplied(ev.MCA)
		return ev.Type != watch.Deleted && len(d) > 0 && d[0].Name == cfg && (len(a) == 0 || a[0].Name != cfg || a[0].SpecHash != d[0].SpecHash)
	}
}

// holds lets d pass, failing as soon as check reports something: what a test proving that a thing
// does NOT happen waits with. The failure adds the recorder's view of the MCAs.
func (e *env) holds(d time.Duration, what string, check func() string) {
	e.t.Helper()
	harness.Consistently(e.t, d, what, check, harness.Every(50*time.Millisecond), harness.Dump(e.dump))
}
