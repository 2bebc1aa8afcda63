//go:build integration

package examples

import (
	"testing"

	"github.com/addonops/addonops/examples/exampletest"
)

const (
	pkg     = "examples/hello-template"
	upgrade = pkg + "/upgrade"
)

// validating are the transformers both kustomizations list, before config-hash.
var validating = []string{"functions/rollout-strategy", "functions/addon-template-validate", "functions/config-hash"}

// TestPackageRunsTheValidatingFunctions: the package and its upgrade list the validating functions
// before config-hash, and both function configs that have a strict mode set it.
func TestPackageRunsTheValidatingFunctions(t *testing.T) {
	exampletest.CheckTransformers(t, []string{pkg}, validating)
	var up []string
	for _, v := range validating {
		up = append(up, "../"+v)
	}
	exampletest.CheckTransformers(t, []string{upgrade}, up)
	exampletest.CheckStrict(t, pkg+"/functions/rollout-strategy/rollout-strategy.yaml", pkg+"/functions/config-hash/config-hash.yaml")
}

// TestBrokenPackageFailsTheBuild breaks a copy of the package the ways its validating steps are
// there to catch and expects the README's build to fail with the problem on stderr; each breakage
// builds again without the step that catches it, which must succeed.
func TestBrokenPackageFailsTheBuild(t *testing.T) {
	const cma = pkg + "/hub/clustermanagementaddon.yaml"
	exampletest.CheckBrokenBuilds(t, pkg, []exampletest.Breakage{
		{
			Name:  "install placement misspelled",
			Build: pkg,
			Break: exampletest.Edit{File: cma, Old: "- name: hello-template-placement\n", New: "- name: hello-template-placment\n"},
			By:    "rollout-strategy",
			Want:  []string{"ClusterManagementAddOn hello-template: spec.installStrategy.placements[0]: placement default/hello-template-placment is not in the input"},
			Without: exampletest.Edit{File: pkg + "/kustomization.yaml",
				Old: "- functions/rollout-strategy # checks the rollout strategy and the install placement (strict)\n"},
		},
		{
			Name:    "deployment config reference misspelled",
			Build:   pkg,
			Break:   exampletest.Edit{File: cma, Old: "      name: hello-template-config\n", New: "      name: hello-template-cfg\n"},
			By:      "config-hash",
			Want:    []string{"ClusterManagementAddOn hello-template: spec.supportedConfigs[1].defaultConfig refers to addondeploymentconfigs.addon.open-cluster-management.io default/hello-template-cfg, which is not in the input"},
			Without: exampletest.Edit{File: pkg + "/functions/config-hash/config-hash.yaml", Old: "  strict: true\n", New: "  strict: false\n"},
		},
		{
			// The variable is in the agent's plain manifests; generate does not see the
			// AddOnDeploymentConfig, so only validate, at the top, can tell it is undefined.
			Name:  "agent variable undefined, in the upgrade",
			Build: upgrade,
			Break: exampletest.Edit{File: pkg + "/agent/deployment.yaml", Old: "--v={{LOG_LEVEL}}", New: "--v={{LOG_LEVL}}"},
			By:    "addon-template",
			Want:  []string{"AddOnTemplate hello-template: variable LOG_LEVL is not defined"},
			Without: exampletest.Edit{File: upgrade + "/kustomization.yaml",
				Old: "- ../functions/addon-template-validate # checks the new template against the deployment config\n"},
		},
	})
}
