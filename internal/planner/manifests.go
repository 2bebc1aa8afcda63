package planner

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/pmezard/go-difflib/difflib"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/render"
	"github.com/addonops/addonops/internal/rolloutplan"
)

// ManifestDiff is how the agent manifests of a group of clusters change: the template add-on's
// rendering (package render, as --deploy-templates renders it, with each cluster's
// AddOnDeploymentConfigs and image-registries annotation) for the configs the cluster runs,
// against the rendering for the target configs. Clusters with identical diffs share one entry; the
// diffs have no context lines, which would name each cluster (its name is rendered into the
// manifests) and keep every cluster apart.
type ManifestDiff struct {
	Clusters []string `json:"clusters"`
	// Diff is a unified diff of the manifests as YAML documents; empty when they do not change.
	Diff string `json:"diff,omitempty"`
	// Error says why a rendering failed (the deployer fails the same way).
	Error string `json:"error,omitempty"`
}

// manifestDiffs renders, for every cluster of a placement, the template add-on's manifests for the
// configs it ran at the start and for the target. It returns nil for an add-on whose target holds
// no AddOnTemplate.
func (s *simulation) manifestDiffs(clusters []string, start map[string][]rolloutplan.Config, target []rolloutplan.Config) []ManifestDiff {
	if !slices.ContainsFunc(target, func(c rolloutplan.Config) bool { return c.GroupResource == configref.AddOnTemplates }) {
		return nil
	}
	groups := map[string]*ManifestDiff{}
	var order []string
	for _, c := range clusters {
		before, errBefore := s.renderFor(c, start[c])
		after, errAfter := s.renderFor(c, target)
		d := ManifestDiff{}
		switch {
		case errAfter != nil:
			d.Error = "rendering the target: " + errAfter.Error()
		case errBefore != nil && len(start[c]) > 0:
			d.Error = "rendering what it runs: " + errBefore.Error()
		default:
			diff, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: lines(before), B: lines(after), FromFile: "runs", ToFile: "target"})
			if err != nil {
				d.Error = err.Error()
			}
			d.Diff = diff
		}
		key := d.Diff + "\x00" + d.Error
		if g := groups[key]; g != nil {
			g.Clusters = append(g.Clusters, c)
			continue
		}
		d.Clusters = []string{c}
		groups[key] = &d
		order = append(order, key)
	}
	out := make([]ManifestDiff, 0, len(order))
	for _, k := range order {
		out = append(out, *groups[k])
	}
	return out
}

// renderFor renders the add-on for cluster with configs (a template and deployment configs, in
// status order), as YAML documents; "" for no configs.
func (s *simulation) renderFor(cluster string, configs []rolloutplan.Config) (string, error) {
	if len(configs) == 0 {
		return "", nil
	}
	var tpl *addonv1alpha1.AddOnTemplate
	c := render.Cluster{Name: cluster}
	if mc := s.h.clusters[cluster]; mc != nil {
		c.ImageRegistries = mc.Annotations[render.ImageRegistriesAnnotation]
	}
	for _, cfg := range configs {
		u := s.h.configs[cfg.Ref]
		if cfg.GroupResource != configref.AddOnTemplates && cfg.GroupResource != configref.AddOnDeploymentConfigs {
			continue
		}
		if u == nil {
			return "", fmt.Errorf("config %s is not on the hub", cfg.Ref)
		}
		b, err := json.Marshal(u.Object)
		if err != nil {
			return "", fmt.Errorf("encoding config %s: %w", cfg.Ref, err)
		}
		if cfg.GroupResource == configref.AddOnTemplates {
			if tpl, err = render.DecodeAddOnTemplate(b); err != nil {
				return "", fmt.Errorf("config %s: %w", cfg.Ref, err)
			}
			continue
		}
		adc, err := render.DecodeAddOnDeploymentConfig(b)
		if err != nil {
			return "", fmt.Errorf("config %s: %w", cfg.Ref, err)
		}
		c.DeploymentConfigs = append(c.DeploymentConfigs, adc)
	}
	if tpl == nil {
		return "", fmt.Errorf("no AddOnTemplate among the configs")
	}
	res, err := render.Render(tpl, c)
	if err != nil {
		return "", err
	}
	y, err := render.YAMLStream(res.Objects)
	if err != nil {
		return "", fmt.Errorf("encoding the manifests: %w", err)
	}
	return string(y), nil
}
