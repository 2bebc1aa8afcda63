package main

import (
	"slices"
	"strings"

	"github.com/addonops/addonops/internal/testing/simagent"
)

// The bad-version steps (steps/07-bad-version and 08-revert) follow the gates step: a commit that
// changes only the agent version, to one whose agent never becomes ready, then its git revert.
// The simulated work agent reports the bad version's works Applied and Available but its
// Deployments without a ready replica (simagent.Unhealthy), so the controller's health check
// (--deploy-templates' addonhealth) reports the add-on Available=False; after the placements'
// progressDeadline the canary's cluster fails, the canary stops, and the gated placement never
// moves. The revert renders 06-gates again, byte for byte: a rollback.

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

// placementReasons lists "<placement> <reason>" for the summary of a step.
func placementReasons(ps []PlacementResult) string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Key+" "+p.Reason)
	}
	return strings.Join(out, ", ")
}
