//go:build integration

package rolloutexamples

import (
	"testing"

	"github.com/addonops/addonops/examples/exampletest"
)

// TestEveryStepRunsTheValidatingFunctions checks what TestBrokenExamplesFailTheBuild relies on for
// the steps it does not break: every step (and seed-vocabulary) lists the validating functions
// before config-hash, and both function configs that have a strict mode set it.
func TestEveryStepRunsTheValidatingFunctions(t *testing.T) {
	var folders []string
	for _, s := range steps {
		folders = append(folders, dir+"/"+s.name)
	}
	exampletest.CheckTransformers(t, append(folders, dir+"/"+seedVocabulary),
		[]string{"../rollout-strategy", "../addon-template-validate", "../config-hash"})
	exampletest.CheckStrict(t, dir+"/rollout-strategy/rollout-strategy.yaml", dir+"/config-hash/config-hash.yaml")
}

// The validating transformers as every step's kustomization lists them, and strict as the
// functionConfigs set it: the control run of each breakage takes one of them out.
const (
	rolloutStrategyStep = "- ../rollout-strategy # checks the rollout strategies, the canary and the placements (strict)\n"
	validateStep        = "- ../addon-template-validate # checks the template against this step's deployment config\n"
	configHashStrict    = "  strict: true\n"
)

func kustomization(step string) string { return dir + "/" + step + "/kustomization.yaml" }

func cmaFile(step string) string { return dir + "/" + step + "/clustermanagementaddon.yaml" }

const (
	canaryAnnotation = `addonops.io/canary-placements: '{"default/global-placement": "default/canary-placement"}'`
	globalPlacement  = "    - name: global-placement\n      namespace: default\n"
	serviceAccount   = `      - apiVersion: v1
        kind: ServiceAccount
        metadata:
          name: helloworld-agent-sa
          namespace: open-cluster-management-agent-addon
`
)

// TestBrokenExamplesFailTheBuild breaks a copy of the examples the ways the validating steps are
// there to catch, builds it as the README does, and expects kustomize to exit non-zero with the
// problem on stderr: kustomize shows nothing else of a KRM function, so a mistake that is only a
// result (or an info) passes unseen and reaches the hub. Each breakage builds again without the
// step that catches it, which must succeed: the step, not something else, fails the build.
func TestBrokenExamplesFailTheBuild(t *testing.T) {
	const (
		step3 = "03-rolling-update-with-canary"
		step1 = "01-fresh-install"
		step2 = "02-rolling-update"
	)
	withoutRolloutStrategy := func(step string) exampletest.Edit {
		return exampletest.Edit{File: kustomization(step), Old: rolloutStrategyStep}
	}
	withoutValidate := func(step string) exampletest.Edit {
		return exampletest.Edit{File: kustomization(step), Old: validateStep}
	}
	withoutConfigHashStrict := exampletest.Edit{File: dir + "/config-hash/config-hash.yaml", Old: configHashStrict, New: "  strict: false\n"}
	exampletest.CheckBrokenBuilds(t, dir, []exampletest.Breakage{
		// (a) a bad canary annotation
		{
			Name:  "canary annotation not JSON",
			Build: dir + "/" + step3,
			Break: exampletest.Edit{File: cmaFile(step3), Old: canaryAnnotation,
				New: `addonops.io/canary-placements: 'default/global-placement: default/canary-placement'`},
			By:      "rollout-strategy",
			Want:    []string{"ClusterManagementAddOn helloworld: annotation addonops.io/canary-placements: ", "want a JSON object such as"},
			Without: withoutRolloutStrategy(step3),
		},
		{
			Name:  "canary gating a placement that is not the add-on's",
			Build: dir + "/" + step3,
			Break: exampletest.Edit{File: cmaFile(step3), Old: canaryAnnotation,
				New: `addonops.io/canary-placements: '{"default/global": "default/canary-placement"}'`},
			By:      "rollout-strategy",
			Want:    []string{"ClusterManagementAddOn helloworld: metadata.annotations[addonops.io/canary-placements]: gates placement default/global, which is not an install placement of this add-on"},
			Without: withoutRolloutStrategy(step3),
		},
		{
			Name:  "canary placement misspelled",
			Build: dir + "/" + step3,
			Break: exampletest.Edit{File: cmaFile(step3), Old: canaryAnnotation,
				New: `addonops.io/canary-placements: '{"default/global-placement": "default/canary-placment"}'`},
			By:      "rollout-strategy",
			Want:    []string{"canary placement default/canary-placment is not in the input"},
			Without: withoutRolloutStrategy(step3),
		},
		// (b) a misspelled placement in the install strategy: strict makes it an error; without
		// strict it is a warning, which kustomize shows but which does not stop the build.
		{
			Name:  "install placement misspelled",
			Build: dir + "/" + step1,
			Break: exampletest.Edit{File: cmaFile(step1), Old: globalPlacement,
				New: "    - name: global-placment\n      namespace: default\n"},
			By:            "rollout-strategy",
			Want:          []string{"ClusterManagementAddOn helloworld: spec.installStrategy.placements[0]: placement default/global-placment is not in the input (the input's Placements: default/global-placement; strict: true)"},
			Without:       exampletest.Edit{File: dir + "/rollout-strategy/rollout-strategy.yaml", Old: "  strict: true\n", New: "  strict: false\n"},
			WithoutStderr: []string{"rollout-strategy: warning: ClusterManagementAddOn helloworld: spec.installStrategy.placements[0]: placement default/global-placment is not in the input, which has Placements no add-on uses (default/global-placement)"},
		},
		{
			Name:  "install placement in the wrong namespace",
			Build: dir + "/" + step3,
			Break: exampletest.Edit{File: cmaFile(step3), Old: globalPlacement,
				New: "    - name: global-placement\n      namespace: fleet\n"},
			By: "rollout-strategy",
			// The canary annotation still gates default/global-placement, which the add-on no
			// longer installs: that is reported too.
			Want: []string{"spec.installStrategy.placements[0]: placement fleet/global-placement is not in the input",
				"gates placement default/global-placement, which is not an install placement of this add-on"},
			Without: withoutRolloutStrategy(step3),
		},
		// (c) a config reference that resolves to no config of the build
		{
			Name:  "deployment config reference misspelled",
			Build: dir + "/" + step2,
			Break: exampletest.Edit{File: cmaFile(step2), Old: "        name: helloworld-config\n", New: "        name: helloworld-cfg\n"},
			By:    "config-hash",
			Want:  []string{"ClusterManagementAddOn helloworld: spec.installStrategy.placements[0].configs[0] refers to addondeploymentconfigs.addon.open-cluster-management.io default/helloworld-cfg, which is not in the input"},
			// Without strict it is an info result, which kustomize does not show: the build passes
			// silently with a reference to a config the hub does not have.
			Without: withoutConfigHashStrict,
		},
		{
			Name:    "template reference misspelled",
			Build:   dir + "/" + step1,
			Break:   exampletest.Edit{File: cmaFile(step1), Old: "      name: helloworld\n", New: "      name: hello-world\n"},
			By:      "config-hash",
			Want:    []string{"ClusterManagementAddOn helloworld: spec.supportedConfigs[0].defaultConfig refers to addontemplates.addon.open-cluster-management.io hello-world, which is not in the input"},
			Without: withoutConfigHashStrict,
		},
		// (d) an invalid AddOnTemplate
		{
			Name:    "template variable undefined",
			Build:   dir + "/" + step1,
			Break:   exampletest.Edit{File: dir + "/base/addontemplate.yaml", Old: "addon-examples:{{AGENT_VERSION}}", New: "addon-examples:{{AGENT_VERSON}}"},
			By:      "addon-template",
			Want:    []string{"AddOnTemplate helloworld: variable AGENT_VERSON is not defined (used at spec.agentSpec.workload.manifests[0].spec.template.spec.containers[0].image)"},
			Without: withoutValidate(step1),
		},
		{
			Name:    "template manifest twice",
			Build:   dir + "/" + step1,
			Break:   exampletest.Edit{File: dir + "/base/addontemplate.yaml", Old: serviceAccount, New: serviceAccount + serviceAccount},
			By:      "addon-template",
			Want:    []string{"AddOnTemplate helloworld: manifest 2 is the same object as manifest 1 (ServiceAccount open-cluster-management-agent-addon/helloworld-agent-sa)"},
			Without: withoutValidate(step1),
		},
	})
}
