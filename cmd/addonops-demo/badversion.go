package main

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/spechash"
	"github.com/addonops/addonops/internal/testing/simagent"
)

// The bad-version steps (--bad-version, on by default) follow the rollout examples: a commit that
// changes only the agent version, to one whose agent never becomes ready, then its git revert.
// The simulated work agent reports the bad version's works Applied and Available but its
// Deployments without a ready replica (simagent.Unhealthy), so the controller's health check
// (--deploy-templates' addonhealth) reports the add-on Available=False; after the placements'
// progressDeadline the canary's cluster fails, the canary stops, and the gated placement never
// moves. The revert re-applies the last example's output, byte for byte: a rollback.
const (
	// DefaultBadVersion is the AGENT_VERSION of the bad commit.
	DefaultBadVersion = "v0.13.0-bad"
	// badDeadline is the progressDeadline the bad commit sets on placements that have none (before
	// --speed): how long an unhealthy add-on may stay unhealthy before its cluster fails. Without
	// it the controller waits the 5m default.
	badDeadline = "20s"
)

// stepKind tells the demo's own steps from the examples.
type stepKind int

const (
	stepExample stepKind = iota
	stepPauseResume
	stepGates
	stepBadVersion
	stepRevert
)

// newVersion derives a new commit from step last: a copy of its objects where the AGENT_VERSION of
// its one AddOnDeploymentConfig is version, the config renamed after its new content (config-hash's
// <base name>-<spec hash suffix>) and every reference to it rewritten, as config-hash would name
// it. It returns the objects, the config's old AGENT_VERSION and its new "<namespace>/<name>".
func newVersion(last step, version, what string) (objs []*unstructured.Unstructured, oldVersion, config string, err error) {
	objs = make([]*unstructured.Unstructured, len(last.Objects))
	var adcs []int
	for i, o := range last.Objects {
		objs[i] = o.DeepCopy()
		if o.GroupVersionKind().GroupKind() == adcGK && agentVersionIndex(o) >= 0 {
			adcs = append(adcs, i)
		}
	}
	if len(adcs) != 1 {
		return nil, "", "", fmt.Errorf("the %s changes the AGENT_VERSION of the last step's AddOnDeploymentConfig, "+
			"but %s has %d AddOnDeploymentConfigs with AGENT_VERSION, want 1", what, last.Name, len(adcs))
	}
	adc := objs[adcs[0]]
	oldName := adc.GetName()
	base := adc.GetAnnotations()[configref.BaseNameAnnotation]
	if base == "" {
		return nil, "", "", fmt.Errorf("AddOnDeploymentConfig %s of %s has no %s annotation: the %s renames it as config-hash would",
			oldName, last.Name, configref.BaseNameAnnotation, what)
	}
	vars, _, _ := unstructured.NestedSlice(adc.Object, "spec", "customizedVariables")
	i := agentVersionIndex(adc)
	oldVersion, _ = vars[i].(map[string]any)["value"].(string)
	vars[i].(map[string]any)["value"] = version
	if err := unstructured.SetNestedSlice(adc.Object, vars, "spec", "customizedVariables"); err != nil {
		return nil, "", "", err
	}
	hash, err := spechash.Of(adc.Object)
	if err != nil {
		return nil, "", "", fmt.Errorf("AddOnDeploymentConfig %s: %w", oldName, err)
	}
	suffix, err := spechash.Suffix(hash)
	if err != nil {
		return nil, "", "", err
	}
	newName := base + "-" + suffix
	adc.SetName(newName)
	for _, o := range objs {
		if o.GroupVersionKind() != cmaGVK {
			continue
		}
		old := configref.Ref{GroupResource: configref.GroupResource{Group: configref.AddonGroup, Resource: "addondeploymentconfigs"}, Namespace: adc.GetNamespace(), Name: oldName}
		if err := renameConfig(o, old, newName); err != nil {
			return nil, "", "", err
		}
	}
	return objs, oldVersion, adc.GetNamespace() + "/" + newName, nil
}

// badVersionSteps derives the bad commit and its revert from the last step (the last example, or
// the pause step when there is one): the bad commit is newVersion of it at version, and sets
// progressDeadline badDeadline on every install placement whose rollout strategy has none. The
// revert applies last's objects again. It returns the bad config's "<namespace>/<name>".
func badVersionSteps(last step, n int, version string) (bad, revert step, badConfig string, err error) {
	objs, oldVersion, badConfig, err := newVersion(last, version, "bad-version step")
	if err != nil {
		return step{}, step{}, "", fmt.Errorf("%w (or pass --bad-version='' to skip it)", err)
	}
	var deadlines []string
	for _, o := range objs {
		if o.GroupVersionKind() != cmaGVK {
			continue
		}
		placements, _, _ := unstructured.NestedSlice(o.Object, "spec", "installStrategy", "placements")
		for _, raw := range placements {
			p, ok := raw.(map[string]any)
			if !ok {
				continue
			}
			typ, _, _ := unstructured.NestedString(p, "rolloutStrategy", "type")
			field := map[string]string{"": "all", "All": "all", "Progressive": "progressive", "ProgressivePerGroup": "progressivePerGroup"}[typ]
			if field == "" {
				continue
			}
			if d, found, _ := unstructured.NestedString(p, "rolloutStrategy", field, "progressDeadline"); found && d != "" {
				continue
			}
			if typ == "" {
				_ = unstructured.SetNestedField(p, "All", "rolloutStrategy", "type")
			}
			if err := unstructured.SetNestedField(p, badDeadline, "rolloutStrategy", field, "progressDeadline"); err != nil {
				return step{}, step{}, "", err
			}
			deadlines = append(deadlines, fmt.Sprint(p["name"]))
		}
		if err := unstructured.SetNestedSlice(o.Object, placements, "spec", "installStrategy", "placements"); err != nil {
			return step{}, step{}, "", err
		}
	}
	_, newName, _ := strings.Cut(badConfig, "/")
	notes := []string{fmt.Sprintf("the bad commit: %s's output with AGENT_VERSION %s -> %s (config %s), an agent that never becomes ready",
		last.Name, oldVersion, version, newName)}
	if len(deadlines) > 0 {
		notes = append(notes, fmt.Sprintf("the bad commit also sets progressDeadline %s on %s: how long an add-on may stay unhealthy before its cluster fails (default 5m)",
			badDeadline, strings.Join(deadlines, ", ")))
	}
	bad = step{Name: fmt.Sprintf("%02d-bad-version", n), Dir: last.Dir, Objects: objs, Notes: notes, Kind: stepBadVersion}
	revertObjs := make([]*unstructured.Unstructured, len(last.Objects))
	for i, o := range last.Objects {
		revertObjs[i] = o.DeepCopy()
	}
	revert = step{Name: fmt.Sprintf("%02d-revert", n+1), Dir: last.Dir, Objects: revertObjs, Kind: stepRevert,
		Notes: []string{fmt.Sprintf("git revert of the bad commit: %s's output applied again (%s)", last.Name, oldVersion)}}
	return bad, revert, badConfig, nil
}

// agentVersionIndex is the index of AGENT_VERSION in the config's customizedVariables, or -1.
func agentVersionIndex(o *unstructured.Unstructured) int {
	vars, _, _ := unstructured.NestedSlice(o.Object, "spec", "customizedVariables")
	for i, v := range vars {
		if m, ok := v.(map[string]any); ok && m["name"] == "AGENT_VERSION" {
			return i
		}
	}
	return -1
}

// renameConfig points every reference to the config old in obj (a CMA or MCA) at newName, through
// configref's one model of where references live (what config-hash rewrites too).
func renameConfig(obj *unstructured.Unstructured, old configref.Ref, newName string) error {
	node, err := yaml.FromMap(obj.Object)
	if err != nil {
		return fmt.Errorf("%s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	sites, err := configref.Sites(node)
	if err != nil {
		return fmt.Errorf("%s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	for _, site := range sites {
		if site.Ref == old {
			if err := site.SetName(newName); err != nil {
				return fmt.Errorf("%s %s: %w", obj.GetKind(), obj.GetName(), err)
			}
		}
	}
	// Back through JSON, so numbers are int64 again as unstructured objects need them.
	b, err := node.MarshalJSON()
	if err != nil {
		return fmt.Errorf("%s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	return obj.UnmarshalJSON(b)
}

// outcome is the simulated work agent's report for a work: injected failures first, then the bad
// version's agent that never becomes ready. configs are the work's config versions
// ("<resource>[.<group>]/<namespace>/<name>" -> spec hash).
func outcome(failing bool, configs map[string]string, badConfigs []string) simagent.Outcome {
	if failing {
		return simagent.Fail
	}
	for key := range configs {
		resource, ref, ok := strings.Cut(key, "/")
		if ok && strings.SplitN(resource, ".", 2)[0] == "addondeploymentconfigs" && slices.Contains(badConfigs, ref) {
			return simagent.Unhealthy
		}
	}
	return simagent.Succeed
}

// toldConfig lists the clusters whose MCA desires the AddOnDeploymentConfig namespace/name.
func toldConfig(snaps []snapshot, config string) []string {
	var out []string
	for _, s := range snaps {
		for _, m := range s.MCAs {
			for _, r := range m.Status.ConfigReferences {
				if r.Resource == "addondeploymentconfigs" && r.DesiredConfig != nil && r.DesiredConfig.Namespace+"/"+r.DesiredConfig.Name == config {
					out = append(out, m.Namespace)
					break
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// hasCanary reports whether objs hold a ClusterManagementAddOn with a canary placement.
func hasCanary(objs []*unstructured.Unstructured) bool {
	for _, o := range objs {
		if o.GroupVersionKind() == cmaGVK && o.GetAnnotations()["addonops.io/canary-placements"] != "" {
			return true
		}
	}
	return false
}

// placementReasons lists "<placement> <reason>" for the summary of a step.
func placementReasons(ps []PlacementResult) string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Key+" "+p.Reason)
	}
	return strings.Join(out, ", ")
}
