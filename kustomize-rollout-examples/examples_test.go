//go:build integration

// Package rolloutexamples tests the four rollout examples: the README's commands, run with a
// freshly built config-hash and the go.mod's kustomize, must print exactly the committed expected
// files, and the steps must do what the README says when applied in order.
package rolloutexamples

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/notifications-engine/pkg/api"
	"github.com/argoproj/notifications-engine/pkg/services"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/examples/exampletest"
	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/maintwindow"
	"github.com/addonops/addonops/internal/notify"
	"github.com/addonops/addonops/internal/rolloutplan"
	"github.com/addonops/addonops/internal/verification"
)

func TestMain(m *testing.M) { exampletest.Main(m) }

const (
	readme = "kustomize-rollout-examples/README.md"
	dir    = "kustomize-rollout-examples"
)

// steps in the order `make demo` applies them, with the agent version each one rolls out.
var steps = []struct{ name, version string }{
	{"01-fresh-install", "v0.10.0"},
	{"02-rolling-update", "v0.11.0"},
	{"03-rolling-update-with-canary", "v0.12.0"},
	{"04-rollback", "v0.10.0"},
}

func hubOutput(step string) string { return dir + "/" + step + "/expected/hub.yaml" }

// seedVocabulary is step 3 written in the design's rollout vocabulary, translated by
// rollout-strategy.
const seedVocabulary = "seed-vocabulary"

// weekendFreeze is step 2 with a maintenance window that holds new batches over the weekend.
const weekendFreeze = "weekend-freeze"

// The verification examples: step 3 with a Prometheus gate on its canary, step 2 with a webhook
// gate after every batch.
const (
	metricGatedCanary = "metric-gated-canary"
	webhookGate       = "webhook-gate"
)

func TestREADMECommandsPrintTheCommittedOutput(t *testing.T) {
	exampletest.CheckCommands(t, readme)
}

func TestREADMEBuildsEveryStep(t *testing.T) {
	tl := exampletest.Get(t)
	found, err := filepath.Glob(filepath.Join(tl.RepoRoot, dir, "[0-9][0-9]-*"))
	if err != nil {
		t.Fatal(err)
	}
	var onDisk, want []string
	for _, f := range found {
		onDisk = append(onDisk, filepath.Base(f))
	}
	for _, s := range steps {
		want = append(want, s.name)
	}
	if !slices.Equal(onDisk, want) {
		t.Errorf("step folders %v, want %v: a new step needs its README command and checks here", onDisk, want)
	}
	builds := map[string]string{}
	for _, r := range exampletest.Run(t, readme) {
		if d := r.BuildDir(); d != "" {
			builds[d] = r.Output
		}
	}
	for _, s := range append(steps, struct{ name, version string }{seedVocabulary, ""}, struct{ name, version string }{weekendFreeze, ""},
		struct{ name, version string }{metricGatedCanary, ""}, struct{ name, version string }{webhookGate, ""}) {
		if got := builds[dir+"/"+s.name]; got != hubOutput(s.name) {
			t.Errorf("%s: the build of %s must write %s, got %q", readme, s.name, hubOutput(s.name), got)
		}
	}
	exampletest.CheckExpectedCovered(t, dir, readme)
}

// step is what the hub gets from one example.
type step struct {
	name     string
	objs     []exampletest.Object
	cma      addonv1alpha1.ClusterManagementAddOn
	cmaObj   exampletest.Object
	adc      exampletest.Object
	template exampletest.Object
}

func load(t *testing.T, name string) step {
	t.Helper()
	objs := exampletest.Parse(t, exampletest.Output(t, readme, hubOutput(name)))
	exampletest.CheckTyped(t, objs)
	configs := exampletest.CheckHashedConfigs(t, objs)
	exampletest.CheckReferences(t, objs)
	exampletest.CheckPlacements(t, objs)
	s := step{name: name, objs: objs, cmaObj: exampletest.One(t, objs, "ClusterManagementAddOn")}
	s.cmaObj.Typed(t, &s.cma)
	var ok bool
	if s.adc, ok = configs["AddOnDeploymentConfig/helloworld-config"]; !ok {
		t.Fatalf("%s: no AddOnDeploymentConfig helloworld-config", name)
	}
	if s.template, ok = configs["AddOnTemplate/helloworld"]; !ok {
		t.Fatalf("%s: no AddOnTemplate helloworld", name)
	}
	if len(configs) != 2 {
		t.Errorf("%s: want the template and the deployment config, got %v", name, slices.Collect(maps.Keys(configs)))
	}
	return s
}

func loadAll(t *testing.T) []step {
	t.Helper()
	var all []step
	for _, s := range steps {
		all = append(all, load(t, s.name))
	}
	return all
}

// TestStepsApplyOnTopOfEachOther checks the names `make demo` relies on: one add-on, the same
// placements, the same shared objects in every step, configs referenced where the README says.
func TestStepsApplyOnTopOfEachOther(t *testing.T) {
	all := loadAll(t)
	first := all[0]
	for _, s := range all {
		if s.cma.Name != "helloworld" {
			t.Errorf("%s: ClusterManagementAddOn %q, want helloworld", s.name, s.cma.Name)
		}
		if got := s.cma.Annotations[addonv1alpha1.AddonLifecycleAnnotationKey]; got != addonv1alpha1.AddonLifecycleSelfManageAnnotationValue {
			t.Errorf("%s: lifecycle annotation %q, want self (managed by the addonops controller)", s.name, got)
		}
		if s.cma.Spec.InstallStrategy.Type != addonv1alpha1.AddonInstallStrategyPlacements {
			t.Errorf("%s: installStrategy.type %q, want Placements", s.name, s.cma.Spec.InstallStrategy.Type)
		}
		var tmpl addonv1alpha1.AddOnTemplate
		s.template.Typed(t, &tmpl)
		if tmpl.Spec.AddonName != s.cma.Name {
			t.Errorf("%s: template spec.addonName %q is not the add-on", s.name, tmpl.Spec.AddonName)
		}

		// The template is the add-on's default; the deployment config is set per placement, and
		// every placement names the same one.
		for _, r := range exampletest.CheckReferences(t, s.objs) {
			switch {
			case r.Site.Ref.GroupResource == configref.AddOnTemplates && strings.HasPrefix(r.Site.Path, "spec.supportedConfigs["):
			case r.Site.Ref.GroupResource == configref.AddOnDeploymentConfigs && strings.HasPrefix(r.Site.Path, "spec.installStrategy.placements["):
				if r.Target.Name() != s.adc.Name() {
					t.Errorf("%s: %s points at %s, want this step's %s", s.name, r.Site.Path, r.Target, s.adc.Name())
				}
			default:
				t.Errorf("%s: unexpected reference to %s at %s", s.name, r.Site.Ref, r.Site.Path)
			}
		}
		for i, ps := range s.cma.Spec.InstallStrategy.Placements {
			if len(ps.Configs) != 1 {
				t.Errorf("%s: placements[%d] %s has configs %+v, want the deployment config only", s.name, i, ps.Name, ps.Configs)
			}
		}

		// Everything from base/ is the same object in every step.
		for _, kind := range []string{"AddOnTemplate", "ManagedClusterSetBinding"} {
			if a, b := exampletest.One(t, first.objs, kind), exampletest.One(t, s.objs, kind); !bytes.Equal(a.YAML, b.YAML) {
				t.Errorf("%s: %s differs from step 1's:\n%s", s.name, kind, exampletest.LineDiff(a.YAML, b.YAML))
			}
		}
		a, _ := exampletest.Find(first.objs, "cluster.open-cluster-management.io", "Placement", "default", "global-placement")
		b, ok := exampletest.Find(s.objs, "cluster.open-cluster-management.io", "Placement", "default", "global-placement")
		if !ok || !bytes.Equal(a.YAML, b.YAML) {
			t.Errorf("%s: Placement default/global-placement missing or different from step 1's", s.name)
		}
	}
}

// TestRolloutStrategies checks each step's strategy against the design's mapping in the README.
func TestRolloutStrategies(t *testing.T) {
	type placement struct {
		key            string
		rollout        clusterv1alpha1.RolloutType
		maxConcurrency string
	}
	progressive := func(key string) placement { return placement{key, clusterv1alpha1.Progressive, "25%"} }
	canary := map[string]string{"default/global-placement": "default/canary-placement"}
	want := map[string]struct {
		placements []placement
		canaries   map[string]string
	}{
		"01-fresh-install":              {[]placement{{"default/global-placement", clusterv1alpha1.All, ""}}, nil},
		"02-rolling-update":             {[]placement{progressive("default/global-placement")}, nil},
		"03-rolling-update-with-canary": {[]placement{progressive("default/global-placement"), progressive("default/canary-placement")}, canary},
		"04-rollback":                   {[]placement{progressive("default/global-placement"), progressive("default/canary-placement")}, canary},
	}
	for _, s := range loadAll(t) {
		t.Run(s.name, func(t *testing.T) {
			w := want[s.name]
			var got []placement
			for _, ps := range s.cma.Spec.InstallStrategy.Placements {
				p := placement{key: ps.Namespace + "/" + ps.Name, rollout: ps.RolloutStrategy.Type}
				switch ps.RolloutStrategy.Type {
				case clusterv1alpha1.All:
					if ps.RolloutStrategy.Progressive != nil || ps.RolloutStrategy.ProgressivePerGroup != nil {
						t.Errorf("%s: rollout All with settings of another type", p.key)
					}
				case clusterv1alpha1.Progressive:
					if ps.RolloutStrategy.Progressive == nil {
						t.Fatalf("%s: rollout Progressive without progressive settings", p.key)
					}
					p.maxConcurrency = ps.RolloutStrategy.Progressive.MaxConcurrency.String()
				}
				got = append(got, p)
			}
			if !slices.Equal(got, w.placements) {
				t.Errorf("install placements %+v, want %+v", got, w.placements)
			}

			// The canary annotation, read by the controller's own parser.
			parsed, err := rolloutplan.ParseCanaries(s.cma.Annotations)
			if err != nil {
				t.Fatalf("canary annotation: %v", err)
			}
			gotCanaries := map[string]string{}
			for gated, c := range parsed {
				gotCanaries[gated.String()] = c.String()
			}
			if w.canaries == nil {
				if _, ok := s.cma.Annotations[rolloutplan.CanaryAnnotation]; ok {
					t.Errorf("unexpected %s annotation", rolloutplan.CanaryAnnotation)
				}
				return
			}
			if !maps.Equal(gotCanaries, w.canaries) {
				t.Errorf("canaries %v, want %v", gotCanaries, w.canaries)
			}
			order := map[string]int{}
			for i, p := range got {
				order[p.key] = i
			}
			for gated, c := range gotCanaries {
				gi, gok := order[gated]
				ci, cok := order[c]
				if !gok || !cok {
					t.Errorf("canary %s -> %s: both must be install placements of the add-on", gated, c)
				} else if ci < gi {
					t.Errorf("canary placement %s is listed before %s: it must come later to own the clusters both select", c, gated)
				}
			}
			var cp clusterv1beta1.Placement
			o, ok := exampletest.Find(s.objs, "cluster.open-cluster-management.io", "Placement", "default", "canary-placement")
			if !ok {
				t.Fatal("no Placement default/canary-placement")
			}
			o.Typed(t, &cp)
			if len(cp.Spec.Predicates) != 1 || cp.Spec.Predicates[0].RequiredClusterSelector.LabelSelector.MatchLabels["addonops.io/canary"] != "true" {
				t.Errorf("canary-placement predicates %+v, want clusters labelled addonops.io/canary=true (as the README says)", cp.Spec.Predicates)
			}
		})
	}
}

// TestConfigVersions checks the point of the examples: every content change is a new config name,
// and the rollback is step 1's config, name and all.
func TestConfigVersions(t *testing.T) {
	all := loadAll(t)
	tl := exampletest.Get(t)
	doc, err := os.ReadFile(filepath.Join(tl.RepoRoot, readme))
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range all {
		var adc addonv1alpha1.AddOnDeploymentConfig
		s.adc.Typed(t, &adc)
		want := []addonv1alpha1.CustomizedVariable{{Name: "AGENT_VERSION", Value: steps[i].version}}
		if !slices.Equal(adc.Spec.CustomizedVariables, want) {
			t.Errorf("%s: variables %+v, want %+v", s.name, adc.Spec.CustomizedVariables, want)
		}
		if s.template.Name() != all[0].template.Name() {
			t.Errorf("%s: template %s, want step 1's %s: the template does not change in these examples", s.name, s.template.Name(), all[0].template.Name())
		}
		// The README names each step's config; it must name the real one.
		if !bytes.Contains(doc, []byte(s.adc.Name())) {
			t.Errorf("%s does not mention %s's config %s", readme, s.name, s.adc.Name())
		}
	}
	if !bytes.Contains(doc, []byte(all[0].template.Name())) {
		t.Errorf("%s does not mention the template %s", readme, all[0].template.Name())
	}

	s01, s02, s03, s04 := all[0], all[1], all[2], all[3]
	names := map[string]string{}
	for _, s := range []step{s01, s02, s03} {
		if prev, dup := names[s.adc.Name()]; dup {
			t.Errorf("%s and %s have different config content but the same name %s", prev, s.name, s.adc.Name())
		}
		names[s.adc.Name()] = s.name
	}
	if s04.adc.Name() != s01.adc.Name() {
		t.Errorf("rollback config %s, want exactly step 1's name %s", s04.adc.Name(), s01.adc.Name())
	}
	if !bytes.Equal(s04.adc.YAML, s01.adc.YAML) {
		t.Errorf("rollback config differs from step 1's:\n%s", exampletest.LineDiff(s01.adc.YAML, s04.adc.YAML))
	}

	// Besides the config, the rollback is step 3.
	if len(s03.objs) != len(s04.objs) {
		t.Fatalf("step 3 has %d objects, step 4 %d", len(s03.objs), len(s04.objs))
	}
	for i := range s04.objs {
		a, b := s03.objs[i], s04.objs[i]
		if a.Kind() == "AddOnDeploymentConfig" {
			continue
		}
		want := bytes.ReplaceAll(a.YAML, []byte(s03.adc.Name()), []byte(s04.adc.Name()))
		if !bytes.Equal(b.YAML, want) {
			t.Errorf("step 4's %s differs from step 3's in more than the config name:\n%s", b, exampletest.LineDiff(want, b.YAML))
		}
	}
}

// TestAgentVersionPerStep renders what cluster1 runs after each step, with the renderer the
// controller deploys with: the image tag is the step's version, and the rollback gives cluster1
// exactly the agent of step 1.
func TestAgentVersionPerStep(t *testing.T) {
	var rendered [][]byte
	for i, s := range steps {
		out := exampletest.RenderCluster(t, exampletest.Output(t, readme, hubOutput(s.name)), "cluster1")
		objs := exampletest.Parse(t, out)
		exampletest.CheckTyped(t, objs)
		exampletest.CheckRendered(t, objs, "cluster1")
		var d appsv1.Deployment
		exampletest.One(t, objs, "Deployment").Typed(t, &d)
		if d.Namespace != "open-cluster-management-agent-addon" {
			t.Errorf("%s: agent in namespace %q", s.name, d.Namespace)
		}
		want := "quay.io/open-cluster-management/addon-examples:" + s.version
		if got := d.Spec.Template.Spec.Containers[0].Image; got != want {
			t.Errorf("%s: cluster1 runs %s, want %s", s.name, got, want)
		}
		rendered = append(rendered, out)
		if i > 0 && steps[i].version != steps[i-1].version && bytes.Equal(out, rendered[i-1]) {
			t.Errorf("%s: cluster1's agent did not change", s.name)
		}
	}
	if !bytes.Equal(rendered[3], rendered[0]) {
		t.Errorf("after the rollback cluster1's agent differs from step 1's:\n%s", exampletest.LineDiff(rendered[0], rendered[3]))
	}
}

// TestStepsApplyInOrderToAHub applies the four steps one after the other to a real API server
// with OCM's CRDs, as `make demo` does: the schemas accept every object of every step and keep
// every field, and each step applies on top of the previous one.
func TestStepsApplyInOrderToAHub(t *testing.T) {
	for _, s := range steps {
		exampletest.ApplyToHub(t, exampletest.Parse(t, exampletest.Output(t, readme, hubOutput(s.name))))
	}
}

// TestSeedVocabularyIsStep3 checks what the README says of seed-vocabulary: step 3 written with
// the design's RollingUpdateWithCanary and RollingUpdate builds, through rollout-strategy, to exactly
// step 3's output, and the README shows the annotation the function wrote.
func TestSeedVocabularyIsStep3(t *testing.T) {
	got := exampletest.Output(t, readme, hubOutput(seedVocabulary))
	want := exampletest.Output(t, readme, hubOutput("03-rolling-update-with-canary"))
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from step 3's output:\n%s", seedVocabulary, exampletest.LineDiff(want, got))
	}
	tl := exampletest.Get(t)
	src, err := os.ReadFile(filepath.Join(tl.RepoRoot, dir, seedVocabulary, "clustermanagementaddon.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The source is in the design's vocabulary only: design types on both placements, no annotation.
	cma, err := kyaml.Parse(string(src))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cma.GetAnnotations()[rolloutplan.CanaryAnnotation]; ok {
		t.Errorf("%s/clustermanagementaddon.yaml carries the annotation rollout-strategy is to write", seedVocabulary)
	}
	var types []string
	placements, err := cma.Pipe(kyaml.Lookup("spec", "installStrategy", "placements"))
	if err != nil || placements == nil {
		t.Fatalf("no install placements: %v", err)
	}
	for _, p := range placements.YNode().Content {
		typ, err := kyaml.NewRNode(p).Pipe(kyaml.Lookup("rolloutStrategy", "type"))
		if err != nil || typ == nil {
			t.Fatalf("placement without rolloutStrategy.type: %v", err)
		}
		types = append(types, kyaml.GetValue(typ))
	}
	if want := []string{"RollingUpdateWithCanary", "RollingUpdate"}; !slices.Equal(types, want) {
		t.Errorf("%s/clustermanagementaddon.yaml rollout types %v, want the seed's %v", seedVocabulary, types, want)
	}
	doc, err := os.ReadFile(filepath.Join(tl.RepoRoot, readme))
	if err != nil {
		t.Fatal(err)
	}
	s := load(t, "03-rolling-update-with-canary")
	line := rolloutplan.CanaryAnnotation + ": '" + s.cma.Annotations[rolloutplan.CanaryAnnotation] + "'"
	if !bytes.Contains(doc, []byte(line)) {
		t.Errorf("%s does not show the annotation rollout-strategy writes, %s", readme, line)
	}
}

// TestWeekendFreeze checks what the README says of weekend-freeze: step 2's output with one more
// annotation, whose window the controller reads (package maintwindow) as closed to new batches
// from Friday 18:00 to Monday 09:00 in Berlin, and open to a rollback.
func TestWeekendFreeze(t *testing.T) {
	step2 := exampletest.Output(t, readme, hubOutput("02-rolling-update"))
	got := exampletest.Output(t, readme, hubOutput(weekendFreeze))
	s := load(t, weekendFreeze)
	raw, ok := s.cma.Annotations[maintwindow.Annotation]
	if !ok {
		t.Fatalf("%s: the ClusterManagementAddOn has no %s annotation", weekendFreeze, maintwindow.Annotation)
	}
	// Without the annotation, the output is step 2's, byte for byte.
	if without := withoutAnnotation(got, maintwindow.Annotation); !bytes.Equal(without, step2) {
		t.Errorf("%s without its window differs from step 2's output:\n%s", weekendFreeze, exampletest.LineDiff(step2, without))
	}

	ws, err := maintwindow.ParseValue(raw)
	if err != nil {
		t.Fatalf("%s: %v", weekendFreeze, err)
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	global := canary.PlacementKey{Namespace: "default", Name: "global-placement"}
	for _, c := range []struct {
		at       time.Time
		rollback bool
		open     bool
	}{
		{time.Date(2026, 11, 27, 17, 59, 0, 0, berlin), false, true}, // Friday, before the freeze
		{time.Date(2026, 11, 27, 18, 0, 0, 0, berlin), false, false}, // Friday 18:00
		{time.Date(2026, 11, 28, 12, 0, 0, 0, berlin), false, false}, // Saturday
		{time.Date(2026, 11, 30, 8, 59, 0, 0, berlin), false, false}, // Monday, before 09:00
		{time.Date(2026, 11, 30, 9, 0, 0, 0, berlin), false, true},   // Monday 09:00
		{time.Date(2026, 11, 28, 12, 0, 0, 0, berlin), true, true},   // a rollback on Saturday
		{time.Date(2026, 3, 28, 12, 0, 0, 0, berlin), false, false},  // the weekend clocks go forward
		{time.Date(2026, 3, 30, 10, 0, 0, 0, berlin), false, true},   // Monday after it
	} {
		if got := ws.For(global, c.rollback).Open(c.at); got != c.open {
			t.Errorf("at %s (rollback %v): open %v, want %v", c.at.Format(time.RFC1123), c.rollback, got, c.open)
		}
	}
	next, ok := ws.For(global, false).NextOpen(time.Date(2026, 11, 28, 12, 0, 0, 0, berlin))
	if want := time.Date(2026, 11, 30, 9, 0, 0, 0, berlin); !ok || !next.Equal(want) {
		t.Errorf("next opening from Saturday: %s (%v), want %s", next, ok, want)
	}
}

// The notifications example as the controller's notification library reads it: the catalog's
// triggers, the Slack and webhook services (their secrets resolved from the Secret), and default
// subscriptions that send every failure to the on-call channel.
func TestNotificationsExample(t *testing.T) {
	tl := exampletest.Get(t)
	data, err := os.ReadFile(filepath.Join(tl.RepoRoot, dir, "notifications", "expected", "hub.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cm *corev1.ConfigMap
	var secret *corev1.Secret
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var probe struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &probe); err != nil {
			t.Fatal(err)
		}
		switch probe.Kind {
		case "ConfigMap":
			cm = &corev1.ConfigMap{}
			err = yaml.UnmarshalStrict([]byte(doc), cm)
		case "Secret":
			secret = &corev1.Secret{}
			err = yaml.UnmarshalStrict([]byte(doc), secret)
		default:
			t.Fatalf("unexpected kind %q in the notifications example", probe.Kind)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if cm == nil || secret == nil || cm.Name != notify.ConfigMapName || secret.Name != notify.SecretName || cm.Namespace != secret.Namespace {
		t.Fatalf("want the ConfigMap %s and the Secret %s in one namespace, got %v and %v", notify.ConfigMapName, notify.SecretName, cm, secret)
	}
	cfg, err := api.ParseConfig(cm, secret)
	if err != nil {
		t.Fatalf("the notifications example does not parse: %v", err)
	}
	for _, s := range []string{"slack", "webhook"} {
		if _, ok := cfg.Services[s]; !ok {
			t.Errorf("no service %s", s)
		}
	}
	for _, trig := range notify.Triggers() {
		if _, ok := cfg.Triggers[trig]; !ok {
			t.Errorf("trigger %s not defined", trig)
		}
	}
	dests := cfg.GetGlobalDestinations(nil)
	for _, trig := range []string{notify.OnBatchFailed, notify.OnCanaryFailed, notify.OnRollbackFailed, notify.OnAborted, notify.OnVerificationFailed} {
		if !slices.ContainsFunc(dests[trig], func(d services.Destination) bool { return d.Service == "slack" && d.Recipient == "platform-oncall" }) {
			t.Errorf("%s does not reach slack:platform-oncall: %v", trig, dests[trig])
		}
	}
	for _, trig := range notify.Triggers() {
		if !slices.ContainsFunc(dests[trig], func(d services.Destination) bool { return d.Service == "webhook" }) {
			t.Errorf("%s does not reach the webhook: %v", trig, dests[trig])
		}
	}
}

// withoutAnnotation removes the lines of annotation key from a build's output: its key and the
// deeper-indented continuation of its value.
func withoutAnnotation(out []byte, key string) []byte {
	var kept []string
	lines := strings.Split(string(out), "\n")
	for i := 0; i < len(lines); i++ {
		k := strings.TrimLeft(lines[i], " ")
		if !strings.HasPrefix(k, key+":") {
			kept = append(kept, lines[i])
			continue
		}
		indent := len(lines[i]) - len(k)
		for i+1 < len(lines) && len(lines[i+1])-len(strings.TrimLeft(lines[i+1], " ")) > indent {
			i++
		}
	}
	return []byte(strings.Join(kept, "\n"))
}

// TestVerificationExamples checks what the README says of the verification examples: each is its
// step's output with the verification annotation and an AnalysisTemplate more, and the controller's
// own code reads them as the README says: the annotation names the gated placements, the template
// decodes with the fields the controller supports and resolves for a batch of two clusters to the
// provider, count and interval described.
func TestVerificationExamples(t *testing.T) {
	for _, tc := range []struct {
		example, step string
		// gated are the placements the gate applies to, want what the resolved metric says.
		gated, ungated []string
		want           string
	}{
		{metricGatedCanary, "03-rolling-update-with-canary", []string{"default/canary-placement"}, []string{"default/global-placement"},
			"AnalysisTemplate default/error-rate: error-rate prometheus count 5 every 1m0s failureLimit 1, cluster=~\"cluster1|cluster2\""},
		{webhookGate, "02-rolling-update", []string{"default/global-placement"}, nil,
			"AnalysisTemplate default/smoke-tests: smoke-tests web count 1 every 0s failureLimit 0, POST https://ci.example.com/hooks/addon-smoke-tests?version=0123456789"},
	} {
		t.Run(tc.example, func(t *testing.T) {
			got := exampletest.Output(t, readme, hubOutput(tc.example))
			base := exampletest.Output(t, readme, hubOutput(tc.step))
			objs := exampletest.Parse(t, got)
			cma := exampletest.One(t, objs, "ClusterManagementAddOn")
			refs, err := verification.Parse(cma.Annotations())
			if err != nil {
				t.Fatal(err)
			}
			// Without the annotation and the template, the output is the step's.
			docs := strings.Split(string(withoutAnnotation(got, verification.Annotation)), "---\n")
			docs = slices.DeleteFunc(docs, func(d string) bool { return strings.Contains(d, "kind: AnalysisTemplate\n") })
			if without := []byte(strings.Join(docs, "---\n")); !bytes.Equal(without, base) {
				t.Errorf("%s without its gate differs from %s's output:\n%s", tc.example, tc.step, exampletest.LineDiff(base, without))
			}
			for _, p := range tc.ungated {
				if ref := refs.For(placementKey(t, p)); ref != nil {
					t.Errorf("%s: placement %s is gated by %v, the README says it is not", tc.example, p, ref)
				}
			}
			for _, p := range tc.gated {
				k := placementKey(t, p)
				ref := refs.For(k)
				if ref == nil {
					t.Fatalf("%s: placement %s is not gated", tc.example, p)
				}
				key := ref.TemplateKey(k)
				var tpl *exampletest.Object
				for i, o := range objs {
					if o.Kind() == key.Kind && o.Namespace() == key.Namespace && o.Name() == key.Name {
						tpl = &objs[i]
					}
				}
				if tpl == nil {
					t.Fatalf("%s: %s is not in the output", tc.example, key)
				}
				m, err := tpl.Node.Map()
				if err != nil {
					t.Fatal(err)
				}
				decoded, err := verification.Decode(m)
				if err != nil {
					t.Fatalf("%s: %s: %v", tc.example, key, err)
				}
				batch := verification.NewBatch("helloworld", p, "0123456789", 1, []string{"cluster1", "cluster2"})
				metrics, err := decoded.Resolve(batch.BuiltinArgs(), ref.Args)
				if err != nil || len(metrics) != 1 {
					t.Fatalf("%s: %s resolves to %d metrics: %v", tc.example, key, len(metrics), err)
				}
				mt := metrics[0]
				desc := fmt.Sprintf("%s: %s", key, mt.Name)
				switch {
				case mt.Prometheus != nil:
					q := mt.Prometheus.Query
					desc += fmt.Sprintf(" prometheus count %d every %s failureLimit %d", mt.Count, mt.Interval, mt.FailureLimit)
					if i := strings.Index(q, "cluster=~"); i >= 0 {
						desc += ", " + strings.SplitN(q[i:], "}", 2)[0]
					}
				case mt.Web != nil:
					desc += fmt.Sprintf(" web count %d every %s failureLimit %d, %s %s", mt.Count, mt.Interval, mt.FailureLimit, mt.Web.Method, mt.Web.URL)
				}
				if desc != tc.want {
					t.Errorf("%s resolves to\n  %s\nwant\n  %s", tc.example, desc, tc.want)
				}
			}
		})
	}
}

func placementKey(t *testing.T, s string) canary.PlacementKey {
	t.Helper()
	ns, name, ok := strings.Cut(s, "/")
	if !ok {
		t.Fatalf("placement %q is not namespace/name", s)
	}
	return canary.PlacementKey{Namespace: ns, Name: name}
}
