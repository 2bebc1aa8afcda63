package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/maintwindow"
)

// The demo's own steps after the rollout examples are kustomize folders too (steps/, --demo-steps),
// each an overlay of the one before it that config-hash names again, as a user's next commit is:
// 05-pause-resume, 06-gates, 07-bad-version and 08-revert. What a step does besides being applied
// is told by its name's suffix (stepKind); what it acts on is read from its rendered objects
// (planDemoStep). Two values a file cannot hold are set at run time, in
// the rendered objects: the gate template's URL (the demo's local receiver) and the deny window's
// start (a minute before the run, so it is in force; setRunTimeValues).

// stepKind tells the examples from the demo's own steps.
type stepKind int

const (
	stepExample stepKind = iota
	stepPauseResume
	stepGates
	stepBadVersion
	stepRevert
)

// kindOf is the kind of the step folder named name, by its suffix.
func kindOf(name string) stepKind {
	for suffix, k := range map[string]stepKind{"-pause-resume": stepPauseResume, "-gates": stepGates, "-bad-version": stepBadVersion, "-revert": stepRevert} {
		if strings.HasSuffix(name, suffix) {
			return k
		}
	}
	return stepExample
}

// deployedConfig returns the "<namespace>/<name>" and AGENT_VERSION of the one
// AddOnDeploymentConfig with an AGENT_VERSION among objs.
func deployedConfig(stepName string, objs []*unstructured.Unstructured) (config, version string, err error) {
	var found []string
	for _, o := range objs {
		if o.GroupVersionKind().GroupKind() != adcGK {
			continue
		}
		if v := agentVersion(o); v != "" {
			config, version = o.GetNamespace()+"/"+o.GetName(), v
			found = append(found, config)
		}
	}
	if len(found) != 1 {
		return "", "", fmt.Errorf("step %s: want one AddOnDeploymentConfig with AGENT_VERSION, found %d (%s)", stepName, len(found), strings.Join(found, ", "))
	}
	return config, version, nil
}

// agentVersion is the config's AGENT_VERSION, or "".
func agentVersion(o *unstructured.Unstructured) string {
	vars, _, _ := unstructured.NestedSlice(o.Object, "spec", "customizedVariables")
	for _, v := range vars {
		if m, ok := v.(map[string]any); ok && m["name"] == "AGENT_VERSION" {
			s, _ := m["value"].(string)
			return s
		}
	}
	return ""
}

// planDemoStep reads what demo step st acts on from its objects and the step before it (prev),
// and notes it. Its AnalysisTemplates get the gate receiver's URL (gateURL), its deny windows the
// start now (setRunTimeValues): the same in every demo step, so the revert renders the gates step
// again byte for byte.
func planDemoStep(st *step, prev *step, gateURL string, now time.Time) error {
	config, version, err := deployedConfig(st.Name, st.Objects)
	if err != nil {
		return err
	}
	_, name, _ := strings.Cut(config, "/")
	from := ""
	if prev != nil {
		if _, v, err := deployedConfig(prev.Name, prev.Objects); err == nil {
			from = v + " -> "
		}
	}
	folder := filepath.Join(filepath.Base(filepath.Dir(st.Dir)), st.Name)
	runTime, err := setRunTimeValues(st.Objects, gateURL, now)
	if err != nil {
		return fmt.Errorf("step %s: %w", st.Name, err)
	}
	switch st.Kind {
	case stepPauseResume:
		addon, k, err := pauseTarget(st.Objects)
		if err != nil {
			return fmt.Errorf("step %s: %w", st.Name, err)
		}
		st.Pause = &pausePlan{Addon: addon, Placement: k, Config: config, Version: version}
		st.Notes = append(st.Notes,
			fmt.Sprintf("a new good commit (%s): AGENT_VERSION %s%s (config %s)", folder, from, version, name),
			fmt.Sprintf("once %s started its first batch the demo pauses it as `addonops pause %s --placement %s` does, "+
				"holds it, then resumes it as `addonops resume %s --placement %s` does", k, addon, k, addon, k))
	case stepGates:
		addon, gated, err := pauseTarget(st.Objects)
		if err != nil {
			return fmt.Errorf("step %s: %w", st.Name, err)
		}
		plan := &gatesPlan{Addon: addon, Gated: gated, Config: config, Version: version}
		for _, o := range st.Objects {
			if o.GroupVersionKind() == cmaGVK && o.GetName() == addon {
				if gates, err := canary.Parse(o.GetAnnotations()); err == nil {
					if c, ok := gates[gated]; ok {
						plan.Canary = c.String()
					}
				}
			}
		}
		st.Gates = plan
		st.Notes = append(append(st.Notes,
			fmt.Sprintf("a new good commit (%s): AGENT_VERSION %s%s (config %s), with a webhook gate on every placement, "+
				"notifications to the webhook service and a deny window on %s", folder, from, version, name, gated)), runTime...)
		st.Notes = append(st.Notes, fmt.Sprintf("once the canary passed, %s waits for its window; the demo then runs `addonops override-window %s --placement %s`",
			gated, addon, gated))
	case stepBadVersion:
		st.Notes = append(st.Notes, fmt.Sprintf("the bad commit (%s): AGENT_VERSION %s%s (config %s), an agent that never becomes ready",
			folder, from, version, name))
	case stepRevert:
		st.Notes = append(st.Notes, fmt.Sprintf("git revert of the bad commit (%s): AGENT_VERSION %s%s (config %s) again", folder, from, version, name))
	}
	return nil
}

// setRunTimeValues sets what the gates step's files cannot hold: every AnalysisTemplate's web
// provider URL gets the scheme and host of gateURL (its path and query stay), and every deny
// window of a ClusterManagementAddOn starts a minute before now (UTC), so it is in force when the
// step runs. It returns one note per change.
func setRunTimeValues(objs []*unstructured.Unstructured, gateURL string, now time.Time) ([]string, error) {
	receiver, err := url.Parse(gateURL)
	if err != nil || receiver.Host == "" {
		return nil, fmt.Errorf("the gate receiver's URL %q: want scheme://host[:port]/path (%v)", gateURL, err)
	}
	var notes []string
	for _, o := range objs {
		switch {
		case o.GetKind() == "AnalysisTemplate":
			metrics, _, _ := unstructured.NestedSlice(o.Object, "spec", "metrics")
			for _, m := range metrics {
				web, _, _ := unstructured.NestedMap(m.(map[string]any), "provider", "web")
				raw, _ := web["url"].(string)
				if raw == "" {
					continue
				}
				u, err := url.Parse(strings.ReplaceAll(raw, "{{args.version}}", "VERSION"))
				if err != nil {
					return nil, fmt.Errorf("AnalysisTemplate %s: url %q: %w", o.GetName(), raw, err)
				}
				web["url"] = receiver.Scheme + "://" + receiver.Host + strings.TrimPrefix(raw, u.Scheme+"://"+u.Host)
				if err := unstructured.SetNestedMap(m.(map[string]any), web, "provider", "web"); err != nil {
					return nil, err
				}
				notes = append(notes, fmt.Sprintf("AnalysisTemplate %s: POST %s (the demo's gate receiver: %s -> %s)", o.GetName(), web["url"], u.Host, receiver.Host))
			}
			if err := unstructured.SetNestedSlice(o.Object, metrics, "spec", "metrics"); err != nil {
				return nil, err
			}
		case o.GroupVersionKind() == cmaGVK && o.GetAnnotations()[maintwindow.Annotation] != "":
			var specs []maintwindow.Spec
			ann := o.GetAnnotations()
			if err := json.Unmarshal([]byte(ann[maintwindow.Annotation]), &specs); err != nil {
				return nil, fmt.Errorf("ClusterManagementAddOn %s: %s: %w", o.GetName(), maintwindow.Annotation, err)
			}
			start := now.UTC().Truncate(time.Minute).Add(-time.Minute)
			for i := range specs {
				if specs[i].Kind == maintwindow.Deny {
					specs[i].Schedule, specs[i].TimeZone = fmt.Sprintf("%d %d * * *", start.Minute(), start.Hour()), ""
					notes = append(notes, fmt.Sprintf("%s: deny window %d on %s starts at %s UTC (a minute before the run, so it is in force) for %s",
						o.GetName(), i, strings.Join(slices.Clone(specs[i].Placements), ", "), start.Format("15:04"), specs[i].Duration))
				}
			}
			b, err := json.Marshal(specs)
			if err != nil {
				return nil, err
			}
			if _, err := maintwindow.ParseValue(string(b)); err != nil {
				return nil, fmt.Errorf("ClusterManagementAddOn %s: the window moved to now: %w", o.GetName(), err)
			}
			ann[maintwindow.Annotation] = string(b)
			o.SetAnnotations(ann)
		}
	}
	return notes, nil
}
