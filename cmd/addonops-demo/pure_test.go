package main

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/rolloutview"
	"github.com/addonops/addonops/internal/testing/ssapply"
)

func TestPickFailing(t *testing.T) {
	for _, tc := range []struct {
		n    int
		rate float64
		want []int
	}{
		{20, 0, nil},
		{20, 0.1, []int{9, 19}},
		{6, 0.2, []int{5}},          // round(1.2) = 1
		{20, 0.01, []int{19}},       // rounds to 0: at least one when failures are asked for
		{4, 1, []int{0, 1, 2, 3}},   // every cluster
		{10, 0.25, []int{2, 5, 9}},  // round(2.5) = 3, half away from zero
		{3, 0.67, []int{0, 2}},      // round(2.01) = 2
		{0, 0.5, nil},               // no cluster
		{1000, 0.001, []int{999}},   // one in a thousand
		{7, 0.5, []int{0, 2, 4, 6}}, // round(3.5) = 4, spread
	} {
		got := pickFailing(tc.n, tc.rate)
		if !slices.Equal(got, tc.want) {
			t.Errorf("pickFailing(%d, %g) = %v, want %v", tc.n, tc.rate, got, tc.want)
		}
		if len(got) > 0 && (got[0] < 0 || got[len(got)-1] >= tc.n || !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got)) {
			t.Errorf("pickFailing(%d, %g) = %v: want distinct sorted indices in [0, %d)", tc.n, tc.rate, got, tc.n)
		}
	}
}

func TestNewFleet(t *testing.T) {
	f := newFleet(20, 2, 0.1)
	if len(f.names) != 20 || f.names[0] != "cluster-01" || f.names[19] != "cluster-20" {
		t.Fatalf("names = %v", f.names)
	}
	if got := f.sorted(f.canary); !slices.Equal(got, []string{"cluster-01", "cluster-02"}) {
		t.Errorf("canaries = %v", got)
	}
	if got := f.sorted(f.failing); !slices.Equal(got, []string{"cluster-10", "cluster-20"}) {
		t.Errorf("failing = %v", got)
	}
	cls := f.clusters()
	if len(cls) != 20 || cls[0].Name != "cluster-01" || cls[0].Labels[CanaryLabel] != "true" {
		t.Errorf("first cluster registered = %+v, want cluster-01 labelled %s=true", cls[0], CanaryLabel)
	}
	if cls[2].Labels[CanaryLabel] != "" {
		t.Errorf("labels of a non-canary = %v", cls[2].Labels)
	}
	if f := newFleet(2000, defaultCanaries(2000), 0); f.names[0] != "cluster-0001" || len(f.canary) != 200 {
		t.Errorf("2000 clusters: first %s, %d canaries", f.names[0], len(f.canary))
	}
}

func placement(name, health, reason, canary string, failed ...string) rolloutview.Placement {
	p := rolloutview.Placement{Namespace: "default", Name: name, Health: rolloutview.Verdict{Health: rolloutview.Health(health)}, Reason: reason}
	if canary != "" {
		p.Canary = &rolloutview.Canary{Canary: canary, State: "x"}
	}
	for _, f := range failed {
		p.FailedClusters = append(p.FailedClusters, rolloutview.ClusterProblem{Cluster: f, Reason: "UpgradeFailed", Message: "boom"})
	}
	return p
}

func TestJudge(t *testing.T) {
	view := func(ps ...rolloutview.Placement) []rolloutview.View {
		return []rolloutview.View{{Addon: "a", Health: rolloutview.Verdict{Health: rolloutview.Progressing}, Placements: ps}}
	}
	for _, tc := range []struct {
		name  string
		views []rolloutview.View
		want  verdict
	}{
		{"nothing read yet", nil, verdict{}},
		{"no placement status yet", []rolloutview.View{{Addon: "a", Health: rolloutview.Verdict{Health: rolloutview.Progressing}}}, verdict{}},
		{"all healthy", view(placement("g", "Healthy", "UpgradeSucceed", ""), placement("c", "Healthy", "InstallSucceed", "")), verdict{Ended: true}},
		{"one still progressing", view(placement("g", "Progressing", "Upgrading", ""), placement("c", "Healthy", "InstallSucceed", "")), verdict{}},
		{"one degraded, the other done", view(placement("g", "Degraded", "UpgradeFailed", "", "c5"), placement("c", "Healthy", "UpgradeSucceed", "")),
			verdict{Ended: true, Failed: true}},
		{"degraded but another still moves", view(placement("g", "Degraded", "UpgradeFailed", ""), placement("c", "Progressing", "Upgrading", "")),
			verdict{Failed: true}},
		{"held by a failed canary ends the step", view(placement("g", "Progressing", "WaitingForCanary", "default/c"), placement("c", "Degraded", "UpgradeFailed", "")),
			verdict{Ended: true, Failed: true, Notes: []string{"default/g is held by its canary default/c, which failed"}}},
		{"waiting for a canary that is still rolling out", view(placement("g", "Progressing", "WaitingForCanary", "default/c"), placement("c", "Progressing", "Upgrading", "")),
			verdict{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := judge(tc.views)
			if got.Ended != tc.want.Ended || got.Failed != tc.want.Failed || !slices.Equal(got.Notes, tc.want.Notes) {
				t.Errorf("judge = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestSummaryExitCode(t *testing.T) {
	ok := StepResult{Result: Succeeded, Expected: true}
	bad := StepResult{Result: TimedOut}
	for _, tc := range []struct {
		name string
		s    Summary
		want int
	}{
		{"all as expected", Summary{Steps: []StepResult{ok, ok}}, exitOK},
		{"one step not as expected", Summary{Steps: []StepResult{ok, bad}}, exitUnexpected},
		{"something left running", Summary{Steps: []StepResult{ok}, Leftovers: []string{"hub process 1"}}, exitUnexpected},
		{"interrupted", Summary{Steps: []StepResult{ok}, Interrupted: true}, exitInterrupted},
	} {
		if got := tc.s.ExitCode(); got != tc.want {
			t.Errorf("%s: ExitCode = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func cma(placements ...map[string]any) *unstructured.Unstructured {
	ps := make([]any, len(placements))
	for i, p := range placements {
		ps[i] = p
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "addon.open-cluster-management.io/v1alpha1", "kind": "ClusterManagementAddOn",
		"metadata": map[string]any{"name": "a"},
		"spec":     map[string]any{"installStrategy": map[string]any{"type": "Placements", "placements": ps}},
	}}
}

func TestScaleRollouts(t *testing.T) {
	obj := cma(
		map[string]any{"name": "p1", "rolloutStrategy": map[string]any{"type": "Progressive",
			"progressive": map[string]any{"maxConcurrency": "25%", "minSuccessTime": "2m", "progressDeadline": "None"}}},
		map[string]any{"name": "p2", "rolloutStrategy": map[string]any{"type": "All", "all": map[string]any{"progressDeadline": "10s"}}},
		map[string]any{"name": "p3", "rolloutStrategy": map[string]any{"type": "All"}},
	)
	notes, err := scaleRollouts([]*unstructured.Unstructured{obj}, 4)
	if err != nil {
		t.Fatal(err)
	}
	ps, _, _ := unstructured.NestedSlice(obj.Object, "spec", "installStrategy", "placements")
	get := func(i int, fields ...string) string {
		v, _, _ := unstructured.NestedString(ps[i].(map[string]any), fields...)
		return v
	}
	if got := get(0, "rolloutStrategy", "progressive", "minSuccessTime"); got != "30s" {
		t.Errorf("minSuccessTime 2m at speed 4 = %q, want 30s", got)
	}
	if got := get(0, "rolloutStrategy", "progressive", "progressDeadline"); got != "None" {
		t.Errorf("progressDeadline None changed to %q", got)
	}
	if got := get(0, "rolloutStrategy", "progressive", "maxConcurrency"); got != "25%" {
		t.Errorf("maxConcurrency changed to %q", got)
	}
	if got := get(1, "rolloutStrategy", "all", "progressDeadline"); got != "3s" {
		t.Errorf("progressDeadline 10s at speed 4 = %q, want 3s (rounded)", got)
	}
	if len(notes) != 2 {
		t.Errorf("notes = %q, want one per scaled duration", notes)
	}

	// Speed 1 leaves the objects exactly as rendered.
	same := cma(map[string]any{"name": "p", "rolloutStrategy": map[string]any{"type": "All", "all": map[string]any{"minSuccessTime": "1m"}}})
	before := same.DeepCopy()
	if notes, err := scaleRollouts([]*unstructured.Unstructured{same}, 1); err != nil || len(notes) > 0 || !equalObjects(before, same) {
		t.Errorf("speed 1 changed the object (notes %q, err %v)", notes, err)
	}

	bad := cma(map[string]any{"name": "p", "rolloutStrategy": map[string]any{"type": "All", "all": map[string]any{"minSuccessTime": "soon"}}})
	if _, err := scaleRollouts([]*unstructured.Unstructured{bad}, 2); err == nil || !strings.Contains(err.Error(), `"soon"`) {
		t.Errorf("invalid duration: err = %v, want one quoting it", err)
	}
}

func equalObjects(a, b *unstructured.Unstructured) bool {
	ja, _ := a.MarshalJSON()
	jb, _ := b.MarshalJSON()
	return bytes.Equal(ja, jb)
}

func TestParseAndApplyPhases(t *testing.T) {
	objs, err := ssapply.Decode(strings.NewReader(`
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ClusterManagementAddOn
metadata: {name: a}
---
# only a comment
---
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: p, namespace: default}
---
apiVersion: v1
kind: Namespace
metadata: {name: ns}
`))
	if err != nil {
		t.Fatal(err)
	}
	first, last := applyPhases(objs)
	var order []string
	for _, o := range append(first, last...) {
		order = append(order, o.GetKind())
	}
	if want := []string{"Namespace", "Placement", "ClusterManagementAddOn"}; !slices.Equal(order, want) {
		t.Errorf("apply order %v, want %v", order, want)
	}
	if _, err := ssapply.Decode(strings.NewReader("kind: Foo\n")); err == nil || !strings.Contains(err.Error(), "document 1") {
		t.Errorf("an object without apiVersion: err = %v", err)
	}
}

// The live progress is rolloutview's summary of each add-on, as `addonops status` prints it.
func TestDisplay(t *testing.T) {
	v1, v2 := &rolloutview.Version{Namespace: "default", Name: "cfg-a"}, &rolloutview.Version{Namespace: "default", Name: "cfg-b"}
	g := placement("global-placement", "Progressing", "Upgrading", "default/canary-placement")
	g.Progress = rolloutview.Progress{Total: 8, Done: 2, InProgress: 2, Failed: 1, Source: "controller"}
	g.Configs = []rolloutview.Configs{{Resource: "addondeploymentconfigs.addon.open-cluster-management.io", Desired: v2, LastApplied: v1}}
	g.Clusters = []rolloutview.Cluster{{Cluster: "c1", State: rolloutview.StateDone}}
	view := rolloutview.View{Addon: "a", InstallStrategy: "Placements", Phase: rolloutview.PhaseProgressing, Placements: []rolloutview.Placement{g}}
	f := frame{Views: []rolloutview.View{view}, Extra: []string{"engine: fine"}}
	now := time.Now()
	var want strings.Builder
	if err := rolloutview.RenderSummary(&want, view, now); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.lines(now), "\n"); got != strings.TrimSuffix(want.String(), "\n")+"\nengine: fine" {
		t.Fatalf("frame:\n%s\nwant rolloutview.RenderSummary's, then the extra line:\n%s", got, want.String())
	}

	// Plain output prints a frame when what it shows changed, at most once per interval: ages and
	// per-cluster states (not shown) change nothing.
	var out bytes.Buffer
	d := newDisplay(&out, false, 0, time.Second)
	t0 := time.Now()
	d.update("s", time.Second, f, t0)
	later := f
	later.Views = []rolloutview.View{view}
	later.Views[0].Placements = []rolloutview.Placement{g}
	later.Views[0].Placements[0].Clusters = []rolloutview.Cluster{{Cluster: "c1", State: rolloutview.StateInProgress}}
	d.update("s", 2*time.Second, later, t0.Add(2*time.Second)) // the same summary: nothing
	changed := f
	changed.Extra = []string{"engine: changed"}
	d.update("s", 2*time.Second, changed, t0.Add(2500*time.Millisecond)) // within the interval: nothing yet
	d.finish("s", 3*time.Second, changed)                                // the change, once
	got := out.String()
	if strings.Count(got, "  --- ") != 2 || strings.Count(got, "PLACEMENT default/global-placement") != 2 ||
		strings.Count(got, "engine: fine") != 1 || strings.Count(got, "engine: changed") != 1 {
		t.Errorf("plain output:\n%s", got)
	}

	// A terminal gets the frame redrawn in place, cut to its width.
	out.Reset()
	d = newDisplay(&out, true, 40, time.Second)
	d.update("s", time.Second, f, t0)
	n := len(f.lines(t0)) + 1
	d.update("s", 2*time.Second, f, t0)
	redraw := fmt.Sprintf("\033[%dF\033[J", n)
	if !strings.Contains(out.String(), redraw) {
		t.Errorf("terminal output does not redraw the %d-line frame: %q", n, out.String())
	}
	for _, l := range strings.Split(strings.ReplaceAll(out.String(), redraw, ""), "\n") {
		if len(l) >= 40 {
			t.Errorf("line of %d columns on a 40-column terminal: %q", len(l), l)
		}
	}
}

func TestOptionsComplete(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Clusters: -1}, "--clusters -1"},
		{Options{Clusters: 5, Canaries: 6}, "--canaries 6"},
		{Options{FailRate: 1.5}, "--fail-rate 1.5"},
		{Options{Speed: -2}, "--speed -2"},
		{Options{StepTimeout: -time.Second}, "--step-timeout"},
		{Options{Steps: []string{"99-nope"}}, `step "99-nope"`},
	} {
		if err := tc.o.complete(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("complete(%+v) = %v, want an error containing %q", tc.o, err, tc.want)
		}
	}
	var o Options
	if err := o.complete(); err != nil {
		t.Fatal(err)
	}
	if o.Clusters != 20 || o.Canaries != 2 || o.Speed != 1 || o.StepTimeout != 10*time.Minute ||
		!slices.Equal(o.Steps, []string{"01-fresh-install", "02-rolling-update", "03-rolling-update-with-canary", "04-rollback",
			"05-pause-resume", "06-gates", "07-bad-version", "08-revert"}) {
		t.Errorf("defaults: %+v", o)
	}
	o = Options{NoDemoSteps: true}
	if err := o.complete(); err != nil || len(o.Steps) != 4 {
		t.Errorf("without the demo's steps: %v, %v; want the four examples", o.Steps, err)
	}
	if dir, err := o.stepDir("06-gates"); err != nil || !strings.HasSuffix(dir, "cmd/addonops-demo/steps/06-gates") {
		t.Errorf("stepDir(06-gates) = %s, %v; want the demo's own folder", dir, err)
	}
}

func mca(cluster, desired, applied string) *addonv1alpha1.ManagedClusterAddOn {
	m := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: "helloworld"}}
	ref := addonv1alpha1.ConfigReference{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"}}
	if desired != "" {
		ref.DesiredConfig = &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "default", Name: desired}, SpecHash: "h-" + desired}
	}
	if applied != "" {
		ref.LastAppliedConfig = &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "default", Name: applied}, SpecHash: "h-" + applied}
	}
	m.Status.ConfigReferences = []addonv1alpha1.ConfigReference{ref}
	return m
}

func TestStepClusters(t *testing.T) {
	snaps := []snapshot{{
		Clusters: map[string][]string{"default/global": {"c1", "c2", "c3", "c4", "c5"}, "default/canary": {"c1"}},
		MCAs: []*addonv1alpha1.ManagedClusterAddOn{
			mca("c1", "v2", "v2"), // the canary, done
			mca("c2", "v2", "v1"), // in progress
			mca("c3", "v1", "v1"), // held at the old version
			mca("c4", "v2", "v2"), // done
			mca("c5", "v2", "v2"), // reported failed (a later work generation failed)
			mca("c9", "v2", "v2"), // not decided by the step's placements
		},
	}}
	total, running := stepClusters(snaps, []string{"v2"}, []string{"c5"})
	if total != 5 || running != 2 {
		t.Errorf("stepClusters = %d total, %d running; want 5 (the canary counted once), 2", total, running)
	}
	// A rollback: clusters still at the old version run it at once.
	if _, running := stepClusters(snaps, []string{"v1"}, nil); running != 1 {
		t.Errorf("running v1 = %d, want 1 (c3)", running)
	}
}

func TestDescribeDeployer(t *testing.T) {
	if short, detail := describeDeployer(false); !strings.Contains(short, "--deploy-templates") || strings.Contains(detail, "SIMULATED") {
		t.Errorf("controller deploys: %q, %q", short, detail)
	}
	if short, detail := describeDeployer(true); !strings.Contains(short, "simulated add-on manager") || !strings.Contains(detail, "SIMULATED") {
		t.Errorf("simulated manager: %q, %q", short, detail)
	}
}

func TestSetHealthSoak(t *testing.T) {
	unset := cma()
	set := cma()
	set.SetName("b")
	set.SetAnnotations(map[string]string{"addonops.io/health-soak": "30s"})
	notes := setHealthSoak([]*unstructured.Unstructured{unset, set}, 1)
	if got := unset.GetAnnotations()["addonops.io/health-soak"]; got != "2s" {
		t.Errorf("health soak at speed 1 = %q, want 2s", got)
	}
	if got := set.GetAnnotations()["addonops.io/health-soak"]; got != "30s" {
		t.Errorf("a CMA's own health soak changed to %q", got)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "a: addonops.io/health-soak 2s (demo; the controller's default is 10s)") {
		t.Errorf("notes %q", notes)
	}
	fast := cma()
	setHealthSoak([]*unstructured.Unstructured{fast}, 10)
	if got := fast.GetAnnotations()["addonops.io/health-soak"]; got != "0s" {
		t.Errorf("health soak at speed 10 = %q, want 0s (rounded)", got)
	}
}
