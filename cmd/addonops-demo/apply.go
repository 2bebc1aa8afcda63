package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/planner"
	"github.com/addonops/addonops/internal/rolloutplan"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/krmfntest"
	"github.com/addonops/addonops/internal/testing/ocmhub"
	"github.com/addonops/addonops/internal/testing/ssapply"
)

// FieldManager is the demo's server-side apply field manager, in the role of Argo CD's or Flux's.
const FieldManager = "addonops-demo"

// Kinds the demo treats specially.
var (
	cmaGVK                = schema.GroupVersionKind{Group: "addon.open-cluster-management.io", Version: "v1alpha1", Kind: "ClusterManagementAddOn"}
	adcGK                 = schema.GroupKind{Group: "addon.open-cluster-management.io", Kind: "AddOnDeploymentConfig"}
	placementGK           = schema.GroupKind{Group: "cluster.open-cluster-management.io", Kind: "Placement"}
	namespaceGK           = schema.GroupKind{Kind: "Namespace"}
	contentHashAnnotation = configref.ContentHashAnnotation // set by config-hash on every config it hashed
)

// step is one rollout example, rendered.
type step struct {
	Name    string // folder name, e.g. 01-fresh-install
	Dir     string
	Objects []*unstructured.Unstructured
	// Notes say what the demo changed in the rendered objects (durations scaled by --speed).
	Notes []string
	// Kind tells the examples from the demo's own steps (pause/resume, bad version, revert).
	Kind stepKind
	// Pause is what the pause step pauses (Kind stepPauseResume).
	Pause *pausePlan
	// Gates is what the gates step gates (Kind stepGates).
	Gates *gatesPlan
}

// exampleFunctions are the KRM functions the examples' kustomizations run by name from PATH.
var exampleFunctions = krmfntest.ExampleFunctions

// buildStep runs `go tool kustomize build --enable-alpha-plugins --enable-exec dir` in the
// repository (so go.mod's kustomize runs) with env (PATH must find the exampleFunctions), and parses the
// output; an AddOnDeploymentConfig without config-hash's annotation means config-hash did not run.
func buildStep(ctx context.Context, repoRoot, dir string, env []string) ([]*unstructured.Unstructured, error) {
	objs, _, err := krmfntest.BuildObjects(ctx, []string{"go", "tool", "kustomize"}, repoRoot, dir, env)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		if o.GroupVersionKind().GroupKind() == adcGK && o.GetAnnotations()[contentHashAnnotation] == "" {
			return nil, fmt.Errorf("%s: AddOnDeploymentConfig %s/%s has no %s annotation: config-hash did not run "+
				"(it must be on PATH; `make build` puts it in bin/)", dir, o.GetNamespace(), o.GetName(), contentHashAnnotation)
		}
	}
	return objs, nil
}

// applyPhases splits a step's objects in the order the demo applies them: first everything but
// the ClusterManagementAddOns (namespaces first), then -- after OCM scheduled the Placements --
// the ClusterManagementAddOns, so the controller sees the new add-on spec with its placements'
// decisions in place, as an Argo CD sync wave or a Flux dependsOn would arrange.
func applyPhases(objs []*unstructured.Unstructured) (first, last []*unstructured.Unstructured) {
	var namespaces []*unstructured.Unstructured
	for _, o := range objs {
		switch gk := o.GroupVersionKind().GroupKind(); {
		case gk == namespaceGK:
			namespaces = append(namespaces, o)
		case gk == cmaGVK.GroupKind():
			last = append(last, o)
		default:
			first = append(first, o)
		}
	}
	return append(namespaces, first...), last
}

// scaleRollouts divides the minSuccessTime and progressDeadline of every ClusterManagementAddOn's
// placement rollout strategies by speed, so --speed paces the controller as it paces the simulated
// agent. Durations are rounded to whole seconds (the CRD's pattern accepts no fractions). It
// returns one note per change.
func scaleRollouts(objs []*unstructured.Unstructured, speed float64) ([]string, error) {
	if speed == 1 {
		return nil, nil
	}
	var notes []string
	for _, o := range objs {
		if o.GroupVersionKind().GroupKind() != cmaGVK.GroupKind() {
			continue
		}
		placements, _, err := unstructured.NestedSlice(o.Object, "spec", "installStrategy", "placements")
		if err != nil {
			return nil, fmt.Errorf("ClusterManagementAddOn %s: spec.installStrategy.placements: %w", o.GetName(), err)
		}
		for i, raw := range placements {
			p, ok := raw.(map[string]any)
			if !ok {
				continue
			}
			for _, typ := range []string{"all", "progressive", "progressivePerGroup"} {
				for _, field := range []string{"minSuccessTime", "progressDeadline"} {
					v, found, err := unstructured.NestedString(p, "rolloutStrategy", typ, field)
					if err != nil || !found || v == "" || v == "None" {
						continue
					}
					d, err := time.ParseDuration(v)
					if err != nil {
						return nil, fmt.Errorf("ClusterManagementAddOn %s placement %v: rolloutStrategy.%s.%s %q: %w", o.GetName(), p["name"], typ, field, v, err)
					}
					scaled := fmt.Sprintf("%ds", int64((d.Seconds()/speed)+0.5))
					if scaled == v {
						continue
					}
					if err := unstructured.SetNestedField(p, scaled, "rolloutStrategy", typ, field); err != nil {
						return nil, err
					}
					notes = append(notes, fmt.Sprintf("%s placement %v: %s %s -> %s (--speed %g)", o.GetName(), p["name"], field, v, scaled, speed))
				}
			}
			placements[i] = p
		}
		if err := unstructured.SetNestedSlice(o.Object, placements, "spec", "installStrategy", "placements"); err != nil {
			return nil, err
		}
	}
	return notes, nil
}

// demoHealthSoak is the health soak (rolloutplan.HealthSoakAnnotation) the demo gives, at --speed 1,
// an add-on whose ClusterManagementAddOn sets none. The simulated health prober reports an agent's
// health together with its works, so there is no prober lag to outlast, and the controller's
// default (rolloutplan.DefaultHealthSoak) would add over 10s to every batch; a short soak still shows
// in each cluster's Progressing message while it runs.
const demoHealthSoak = 2 * time.Second

// setHealthSoak annotates every ClusterManagementAddOn that sets no health soak with
// demoHealthSoak divided by speed (whole seconds). A soak the CMA sets is left as it is. It returns
// one note per change.
func setHealthSoak(objs []*unstructured.Unstructured, speed float64) []string {
	var notes []string
	for _, o := range objs {
		if o.GroupVersionKind().GroupKind() != cmaGVK.GroupKind() {
			continue
		}
		ann := o.GetAnnotations()
		if _, ok := ann[rolloutplan.HealthSoakAnnotation]; ok {
			continue
		}
		if ann == nil {
			ann = map[string]string{}
		}
		soak := fmt.Sprintf("%ds", int64(demoHealthSoak.Seconds()/speed+0.5))
		ann[rolloutplan.HealthSoakAnnotation] = soak
		o.SetAnnotations(ann)
		notes = append(notes, fmt.Sprintf("%s: %s %s (demo; the controller's default is %s)", o.GetName(), rolloutplan.HealthSoakAnnotation, soak, rolloutplan.DefaultHealthSoak))
	}
	return notes
}

// toolEnv is the environment for kustomize: ours with dirs first on PATH, where the functions are.
func toolEnv(dirs []string) []string {
	path := strings.Join(append(append([]string{}, dirs...), os.Getenv("PATH")), string(os.PathListSeparator))
	env := []string{"PATH=" + path}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	return env
}

// lookPathIn finds program on the PATH of env.
func lookPathIn(env []string, program string) (string, error) {
	for _, kv := range env {
		if path, ok := strings.CutPrefix(kv, "PATH="); ok {
			for _, dir := range filepath.SplitList(path) {
				if dir == "" {
					continue
				}
				candidate := filepath.Join(dir, program)
				if info, err := os.Stat(candidate); err == nil && !info.IsDir() && info.Mode()&0o111 != 0 {
					return candidate, nil
				}
			}
		}
	}
	return "", fmt.Errorf("%s not found on PATH", program)
}

// applyStep is the demo's own delivery of step st (no --engine): server-side apply of everything
// but the ClusterManagementAddOns, then a wait until OCM's placement controller scheduled the
// step's Placements, then the ClusterManagementAddOns (applyPhases). It returns the generations of
// the applied ClusterManagementAddOns and their names. Before the ClusterManagementAddOns it prints
// the step's plan (planStep), which it returns too.
func (r *demoRun) applyStep(ctx context.Context, st step) (map[string]int64, []string, *planner.Report, error) {
	first, last := applyPhases(st.Objects)
	if _, err := r.apply.ApplyAll(ctx, first); err != nil {
		return nil, nil, nil, err
	}
	for _, o := range first {
		if o.GroupVersionKind().GroupKind() != placementGK {
			continue
		}
		n, took, err := r.scheduled(ctx, o.GetNamespace(), o.GetName())
		if err != nil {
			return nil, nil, nil, err
		}
		r.disp.printf("   Placement %s: %s decided by OCM's placement controller (%s)\n", ssapply.Name(o), plural(n, "cluster"), seconds(took))
	}
	// The plan once the step's Placements have their decisions, before its add-ons move.
	plan, err := r.planStep(ctx, st)
	if err != nil {
		return nil, nil, nil, err
	}
	gens := map[string]int64{}
	var addons []string
	for _, o := range last {
		applied, err := r.apply.Apply(ctx, o)
		if err != nil {
			return nil, nil, nil, err
		}
		gens[o.GetName()] = applied.GetGeneration()
		addons = append(addons, o.GetName())
	}
	return gens, addons, plan, nil
}

// scheduled waits, within --step-timeout, until OCM's placement controller scheduled Placement
// namespace/name (ocmhub.Scheduled), and returns its clusters and how long the wait took.
func (r *demoRun) scheduled(ctx context.Context, namespace, name string) (int, time.Duration, error) {
	var n int
	var failed error
	took, err := harness.Until(ctx, r.o.StepTimeout, 100*time.Millisecond, func() string {
		var pending string
		n, pending, failed = ocmhub.Scheduled(ctx, r.hub.Clients, namespace, name)
		if failed != nil {
			return failed.Error()
		}
		return pending
	})
	if failed != nil {
		return 0, took, failed
	}
	if err != nil {
		return 0, took, fmt.Errorf("waiting for OCM's placement controller (log %s): %w", r.ocm.PlacementLog, err)
	}
	return n, took, nil
}
