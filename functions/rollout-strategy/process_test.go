package main

import (
	"bytes"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/krmfn"
)

func TestTranslateStrategy(t *testing.T) {
	cases := []struct {
		name, in, want string
		canary         string // gated placement's canary, "ns/name"
		wantErr        string
	}{
		{name: "UpdateAll", in: "type: UpdateAll\n", want: "type: All\n"},
		{name: "RollingUpdate without settings takes 25%", in: "type: RollingUpdate\n",
			want: "type: Progressive\nprogressive:\n  maxConcurrency: 25%\n"},
		{name: "RollingUpdate with empty settings takes 25%", in: "type: RollingUpdate\nrollingUpdate: {}\n",
			want: "type: Progressive\nprogressive:\n  maxConcurrency: 25%\n"},
		{name: "RollingUpdate with null maxConcurrentlyUpdating takes 25%", in: "type: RollingUpdate\nrollingUpdate:\n  maxConcurrentlyUpdating: null\n",
			want: "type: Progressive\nprogressive:\n  maxConcurrency: 25%\n"},
		{name: "RollingUpdate keeps an int an int, and comments", in: "# c\ntype: RollingUpdate # t\nrollingUpdate:\n  maxConcurrentlyUpdating: 3 # m\n",
			want: "# c\ntype: Progressive # t\nprogressive:\n  maxConcurrency: 3 # m\n"},
		{name: "RollingUpdateWithCanary", in: "type: RollingUpdateWithCanary\nrollingUpdateWithCanary:\n  maxConcurrentlyUpdating: 10%\n  placement:\n    name: c\n    namespace: ns\n",
			want: "type: Progressive\nprogressive:\n  maxConcurrency: 10%\n", canary: "ns/c"},
		{name: "RollingUpdateWithCanary default", in: "type: RollingUpdateWithCanary\nrollingUpdateWithCanary:\n  placement: {name: c, namespace: ns}\n",
			want: "type: Progressive\nprogressive:\n  maxConcurrency: 25%\n", canary: "ns/c"},
		{name: "OCM's vocabulary untouched", in: "type: Progressive\nprogressive:\n  maxConcurrency: 1\n", want: "type: Progressive\nprogressive:\n  maxConcurrency: 1\n"},
		{name: "unset type untouched", in: "all:\n  progressDeadline: 5m\n", want: "all:\n  progressDeadline: 5m\n"},
		{name: "unknown type", in: "type: Blue\n", wantErr: `p.type: "Blue" is not a rollout type`},
		{name: "type not a string", in: "type: [a]\n", wantErr: `p.type: "[a]" is not a string`},
		{name: "not a mapping", in: "UpdateAll\n", wantErr: "p: must be a mapping with a type"},
		{name: "seed settings under OCM type", in: "type: All\nrollingUpdate: {}\n", wantErr: "p.rollingUpdate: belongs to the seed's type RollingUpdate, not to All"},
		{name: "seed settings under unset type", in: "rollingUpdateWithCanary: {}\n", wantErr: "not to an unset type (OCM's default All)"},
		{name: "UpdateAll with settings", in: "type: UpdateAll\nrollingUpdate: {}\n", wantErr: "p.rollingUpdate: belongs to type RollingUpdate, but type is UpdateAll"},
		{name: "mixed vocabularies", in: "type: RollingUpdate\nprogressive: {}\n", wantErr: `p.progressive: type RollingUpdate is the seed's vocabulary`},
		{name: "unknown rollingUpdate field", in: "type: RollingUpdate\nrollingUpdate:\n  maxConcurrently: 1\n", wantErr: "p.rollingUpdate.maxConcurrently: unknown field (known fields: maxConcurrentlyUpdating)"},
		{name: "maxConcurrentlyUpdating 0 moves every cluster", in: "type: RollingUpdate\nrollingUpdate:\n  maxConcurrentlyUpdating: 0\n", wantErr: `p.rollingUpdate.maxConcurrentlyUpdating: "0" would move every cluster at once`},
		{name: "bad maxConcurrentlyUpdating", in: "type: RollingUpdate\nrollingUpdate:\n  maxConcurrentlyUpdating: 1.5\n", wantErr: `p.rollingUpdate.maxConcurrentlyUpdating: "1.5" is not an int or a percentage like 25%`},
		{name: "canary without settings", in: "type: RollingUpdateWithCanary\n", wantErr: "p.rollingUpdateWithCanary: is required by type RollingUpdateWithCanary"},
		{name: "canary without placement", in: "type: RollingUpdateWithCanary\nrollingUpdateWithCanary:\n  maxConcurrentlyUpdating: 1\n", wantErr: "p.rollingUpdateWithCanary.placement: is required"},
		{name: "canary placement as a string", in: "type: RollingUpdateWithCanary\nrollingUpdateWithCanary:\n  placement: ns/c\n", wantErr: "p.rollingUpdateWithCanary.placement: must be a mapping {name, namespace}"},
		{name: "canary placement without name", in: "type: RollingUpdateWithCanary\nrollingUpdateWithCanary:\n  placement: {namespace: ns}\n", wantErr: "p.rollingUpdateWithCanary.placement.name: is required"},
		{name: "canary placement with a slash", in: "type: RollingUpdateWithCanary\nrollingUpdateWithCanary:\n  placement: {name: a/b, namespace: ns}\n", wantErr: `p.rollingUpdateWithCanary.placement.name: "a/b" must not contain /`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rs := yaml.MustParse(tc.in)
			tr, probs := translateStrategy(rs, "p")
			if tc.wantErr != "" {
				if len(probs) == 0 || !strings.Contains(probs[0].field+": "+probs[0].msg, tc.wantErr) {
					t.Fatalf("problems %+v, want %q", probs, tc.wantErr)
				}
				return
			}
			if len(probs) > 0 {
				t.Fatalf("problems %+v", probs)
			}
			if got := rs.MustString(); got != tc.want {
				t.Errorf("translated to\n%s\nwant\n%s", got, tc.want)
			}
			got := ""
			if tr.canary != nil {
				got = tr.canary.String()
			}
			if got != tc.canary {
				t.Errorf("canary %q, want %q", got, tc.canary)
			}
			if probs := validateStrategy(rs, "p"); len(probs) > 0 {
				t.Errorf("translation is not valid OCM: %+v", probs)
			}
		})
	}
}

func TestValidateStrategy(t *testing.T) {
	cases := []struct {
		name, in string
		wantErr  string // "" means valid
	}{
		{"All", "type: All\n", ""},
		{"unset", "{}\n", ""},
		{"All settings", "type: All\nall:\n  progressDeadline: None\n  minSuccessTime: \"0\"\n  maxFailures: 0\n", ""},
		{"Progressive everything", "type: Progressive\nprogressive:\n  maxConcurrency: 100%\n  maxFailures: 0%\n  minSuccessTime: 1h30m\n  progressDeadline: 90m\n  mandatoryDecisionGroups:\n  - groupName: a\n  - groupIndex: 0\n", ""},
		{"progressDeadline compound", "type: Progressive\nprogressive:\n  progressDeadline: 1h30m\n", ""},
		{"ProgressivePerGroup", "type: ProgressivePerGroup\nprogressivePerGroup:\n  maxFailures: 2\n", ""},
		{"empty progressive", "type: Progressive\nprogressive: {}\n", ""},
		{"maxConcurrency quoted number", "type: Progressive\nprogressive:\n  maxConcurrency: \"5\"\n", `"5" is a string: write the number without quotes (5)`},
		{"maxConcurrency spaced percent", "type: Progressive\nprogressive:\n  maxConcurrency: \"25 %\"\n", `p.progressive.maxConcurrency: "25 %" is not an int or a percentage like 25%`},
		{"maxConcurrency negative", "type: Progressive\nprogressive:\n  maxConcurrency: -1\n", `p.progressive.maxConcurrency: "-1" is negative: write a number of clusters from 1`},
		{"maxConcurrency 0", "type: Progressive\nprogressive:\n  maxConcurrency: 0\n", `p.progressive.maxConcurrency: "0" would move every cluster at once`},
		{"maxConcurrency 0%", "type: Progressive\nprogressive:\n  maxConcurrency: 0%\n", `"0%" would move every cluster at once (OCM treats a maxConcurrency of 0 as no limit); write at least 1 or a percentage like 25%, or use type All`},
		{"maxConcurrency beyond int32", "type: Progressive\nprogressive:\n  maxConcurrency: 9223372036854775807\n", `"9223372036854775807" is too large: OCM reads it as a 32-bit integer (at most 2147483647)`},
		{"maxConcurrency beyond int64", "type: Progressive\nprogressive:\n  maxConcurrency: 99999999999999999999\n", `"99999999999999999999" is too large`},
		{"maxConcurrency edges", "type: Progressive\nprogressive:\n  maxConcurrency: 2147483647\n", ""},
		{"maxConcurrency 1%", "type: Progressive\nprogressive:\n  maxConcurrency: 1%\n", ""},
		{"maxFailures 0 and 0% are valid", "type: ProgressivePerGroup\nprogressivePerGroup:\n  maxFailures: 0\n", ""},
		{"maxFailures negative", "type: ProgressivePerGroup\nprogressivePerGroup:\n  maxFailures: -2\n", `"-2" is negative: write a number of clusters from 0`},
		{"maxFailures beyond int32", "type: All\nall:\n  maxFailures: 2147483648\n", `"2147483648" is too large`},
		{"group index beyond int32", "type: Progressive\nprogressive:\n  mandatoryDecisionGroups: [{groupIndex: 2147483648}]\n", `groupIndex: "2147483648" is too large: OCM reads it as a 32-bit integer (at most 2147483647); write a decision group index`},
		{"maxConcurrency hex", "type: Progressive\nprogressive:\n  maxConcurrency: 0x10\n", `"0x10" is not an int or a percentage`},
		{"maxConcurrency fraction", "type: Progressive\nprogressive:\n  maxConcurrency: 2.5%\n", `"2.5%" is not an int or a percentage`},
		{"maxConcurrency list", "type: Progressive\nprogressive:\n  maxConcurrency: [1]\n", `"[1]" is not an int or a percentage`},
		{"maxFailures 101%", "type: ProgressivePerGroup\nprogressivePerGroup:\n  maxFailures: 101%\n", `"101%" is not an int or a percentage`},
		{"maxConcurrency under ProgressivePerGroup", "type: ProgressivePerGroup\nprogressivePerGroup:\n  maxConcurrency: 1\n", "p.progressivePerGroup.maxConcurrency: unknown field"},
		{"mandatoryDecisionGroups under All", "type: All\nall:\n  mandatoryDecisionGroups: []\n", "p.all.mandatoryDecisionGroups: unknown field"},
		{"progressDeadline days", "type: All\nall:\n  progressDeadline: 1d\n", `"1d" is not a duration`},
		{"progressDeadline pattern-only", "type: All\nall:\n  progressDeadline: 5|\n", `"5|" is not a duration`},
		{"progressDeadline xNone", "type: All\nall:\n  progressDeadline: xNone\n", `"xNone" is not a duration`},
		{"progressDeadline int", "type: All\nall:\n  progressDeadline: 10\n", `"10" is not a duration such as 90m or None; quote it`},
		{"minSuccessTime bad", "type: Progressive\nprogressive:\n  minSuccessTime: 5 minutes\n", `"5 minutes" is not a Go duration`},
		{"minSuccessTime negative", "type: Progressive\nprogressive:\n  minSuccessTime: -1s\n", `"-1s" is negative`},
		{"settings of another type", "type: Progressive\nall: {}\n", "p.all: is set but type is Progressive"},
		{"unknown strategy field", "type: All\ncanary: x\n", "p.canary: unknown field"},
		{"groups not a list", "type: Progressive\nprogressive:\n  mandatoryDecisionGroups: a\n", "must be a list"},
		{"group not a mapping", "type: Progressive\nprogressive:\n  mandatoryDecisionGroups: [a]\n", "mandatoryDecisionGroups[0]: must be a mapping"},
		{"group index negative", "type: Progressive\nprogressive:\n  mandatoryDecisionGroups: [{groupIndex: -1}]\n", `groupIndex: "-1" is not a decision group index`},
		{"group name not a string", "type: Progressive\nprogressive:\n  mandatoryDecisionGroups: [{groupName: [a]}]\n", `groupName: "[a]" is not a decision group name`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			probs := validateStrategy(yaml.MustParse(tc.in), "p")
			if tc.wantErr == "" {
				if len(probs) > 0 {
					t.Fatalf("problems %+v, want none", probs)
				}
				return
			}
			if len(probs) != 1 || !strings.Contains(probs[0].field+": "+probs[0].msg, tc.wantErr) {
				t.Fatalf("problems %+v, want one containing %q", probs, tc.wantErr)
			}
		})
	}
}

func TestParseConfig(t *testing.T) {
	cases := []struct {
		name, in string
		external []string
		wantErr  string
	}{
		{"none", "", nil, ""},
		{"typed", "apiVersion: addonops.io/v1alpha1\nkind: RolloutStrategyFunction\nspec:\n  externalPlacements: [a/b, c/d]\n", []string{"a/b", "c/d"}, ""},
		{"typed empty spec", "apiVersion: addonops.io/v1alpha1\nkind: RolloutStrategyFunction\nspec: {}\n", nil, ""},
		{"ConfigMap comma list", "apiVersion: v1\nkind: ConfigMap\ndata:\n  externalPlacements: a/b, c/d\n", []string{"a/b", "c/d"}, ""},
		{"ConfigMap YAML list", "apiVersion: v1\nkind: ConfigMap\ndata:\n  externalPlacements: '[a/b]'\n", []string{"a/b"}, ""},
		{"ConfigMap without data", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", nil, ""},
		{"wrong kind", "apiVersion: addonops.io/v1alpha1\nkind: ConfigHash\n", nil, "functionConfig must be addonops.io/v1alpha1 RolloutStrategyFunction or v1 ConfigMap, got addonops.io/v1alpha1 ConfigHash"},
		{"unknown spec field", "apiVersion: addonops.io/v1alpha1\nkind: RolloutStrategyFunction\nspec:\n  external: []\n", nil, `functionConfig spec: unknown field "external"`},
		{"unknown top field", "apiVersion: addonops.io/v1alpha1\nkind: RolloutStrategyFunction\nspecs: {}\n", nil, `functionConfig: unknown field "specs"`},
		{"unknown data key", "apiVersion: v1\nkind: ConfigMap\ndata:\n  externalPlacement: a/b\n", nil, `unknown field "externalPlacement"`},
		{"bad placement", "apiVersion: addonops.io/v1alpha1\nkind: RolloutStrategyFunction\nspec:\n  externalPlacements: [b]\n", nil, `spec.externalPlacements[0]: "b" is not <namespace>/<placement>`},
		{"not a list", "apiVersion: addonops.io/v1alpha1\nkind: RolloutStrategyFunction\nspec:\n  externalPlacements: a/b\n", nil, "spec.externalPlacements: must be a list"},
		{"list of mappings", "apiVersion: addonops.io/v1alpha1\nkind: RolloutStrategyFunction\nspec:\n  externalPlacements: [{name: a}]\n", nil, "spec.externalPlacements[0]: must be a string"},
		{"strict", "apiVersion: addonops.io/v1alpha1\nkind: RolloutStrategyFunction\nspec:\n  strict: true\n", nil, ""},
		{"strict quoted", "apiVersion: addonops.io/v1alpha1\nkind: RolloutStrategyFunction\nspec:\n  strict: \"true\"\n", nil, `functionConfig spec.strict: "true" is not a bool (true or false)`},
		{"strict a list", "apiVersion: addonops.io/v1alpha1\nkind: RolloutStrategyFunction\nspec:\n  strict: [true]\n", nil, "functionConfig spec.strict: "},
		{"ConfigMap strict", "apiVersion: v1\nkind: ConfigMap\ndata:\n  strict: \"true\"\n  externalPlacements: a/b\n", []string{"a/b"}, ""},
		{"ConfigMap strict yes", "apiVersion: v1\nkind: ConfigMap\ndata:\n  strict: \"yes\"\n", nil, `functionConfig data.strict: "yes" is not true or false`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var fc *yaml.RNode
			if tc.in != "" {
				fc = yaml.MustParse(tc.in)
			}
			s, err := parseConfig(fc)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := strings.Contains(tc.name, "strict"); s.strict != want {
				t.Errorf("strict = %t, want %t", s.strict, want)
			}
			if len(s.external) != len(tc.external) {
				t.Fatalf("external = %v, want %v", s.external, tc.external)
			}
			for _, e := range tc.external {
				k, _ := canary.ParsePlacementKey(e)
				if !s.external[k] {
					t.Fatalf("external = %v, want %v", s.external, tc.external)
				}
			}
		})
	}
}

// run executes the function on plain YAML and returns stdout, stderr and the exit code.
func run(t *testing.T, in string, fc *yaml.RNode) (string, string, int) {
	t.Helper()
	var out, errw bytes.Buffer
	code := krmfn.Execute("rollout-strategy", krmfn.Input{Stdin: strings.NewReader(in), FunctionConfig: fc}, process, &out, &errw)
	return out.String(), errw.String(), code
}

const cmaWithCanary = `apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ClusterManagementAddOn
metadata:
  name: hello
spec:
  installStrategy:
    type: Placements
    placements:
    - name: prod
      namespace: ns
      rolloutStrategy:
        type: RollingUpdateWithCanary
        rollingUpdateWithCanary:
          placement: {name: canary, namespace: ns}
    - name: canary
      namespace: ns
`

// The canary Placement must be in the input or named external; an external one that is also in
// the input is fine.
func TestCanaryPlacementPresence(t *testing.T) {
	placement := "---\napiVersion: cluster.open-cluster-management.io/v1beta1\nkind: Placement\nmetadata: {name: canary, namespace: ns}\nspec: {}\n"
	external := yaml.MustParse("apiVersion: addonops.io/v1alpha1\nkind: RolloutStrategyFunction\nspec:\n  externalPlacements: [ns/canary]\n")
	if _, stderr, code := run(t, cmaWithCanary, nil); code != 1 || !strings.Contains(stderr, "canary placement ns/canary is not in the input") {
		t.Fatalf("missing Placement: exit %d, stderr %s", code, stderr)
	}
	for name, tc := range map[string]struct {
		in string
		fc *yaml.RNode
	}{"in the input": {cmaWithCanary + placement, nil}, "external": {cmaWithCanary, external}, "both": {cmaWithCanary + placement, external}} {
		out, stderr, code := run(t, tc.in, tc.fc)
		if code != 0 || !strings.Contains(out, `addonops.io/canary-placements: '{"ns/prod": "ns/canary"}'`) {
			t.Errorf("%s: exit %d, stderr %s, out:\n%s", name, code, stderr, out)
		}
	}
	// A Placement of another group, or in another namespace, is not the canary.
	other := strings.NewReplacer("cluster.open-cluster-management.io", "example.com", "namespace: ns}", "namespace: other}")
	for _, p := range []string{other.Replace(placement)} {
		if _, _, code := run(t, cmaWithCanary+p, nil); code != 1 {
			t.Errorf("a look-alike Placement counted as the canary:\n%s", p)
		}
	}
}

// Errors of one add-on stop the whole output, and every add-on's errors are reported.
func TestEveryAddonReported(t *testing.T) {
	bad := strings.ReplaceAll(cmaWithCanary, "name: hello", "name: a")
	bad2 := strings.ReplaceAll(strings.ReplaceAll(cmaWithCanary, "name: hello", "name: b"), "type: RollingUpdateWithCanary", "type: Rolling")
	out, stderr, code := run(t, bad+"---\n"+bad2, nil)
	if code != 1 || out != "" {
		t.Fatalf("exit %d, out %q", code, out)
	}
	for _, want := range []string{"ClusterManagementAddOn a: ", "ClusterManagementAddOn b: spec.installStrategy.placements[0].rolloutStrategy.type: \"Rolling\""} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

func TestInstallPlacements(t *testing.T) {
	for name, tc := range map[string]struct{ placements, want string }{
		"duplicate":         {"    - {name: a, namespace: ns}\n    - {name: a, namespace: ns}\n", "placements[1]: placement ns/a is listed twice (also placements[0])"},
		"no namespace":      {"    - {name: a}\n", "placements[0].namespace: is required"},
		"not a mapping":     {"    - a\n", "placements[0]: must be a mapping"},
		"placements a map":  {"      a: b\n", "spec.installStrategy.placements: must be a list"},
		"strategy a string": {"    - {name: a, namespace: ns, rolloutStrategy: All}\n", "placements[0].rolloutStrategy: must be a mapping"},
	} {
		t.Run(name, func(t *testing.T) {
			in := "apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: ClusterManagementAddOn\nmetadata:\n  name: x\nspec:\n  installStrategy:\n    placements:\n" + tc.placements
			_, stderr, code := run(t, in, nil)
			if code != 1 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %s; want %q", code, stderr, tc.want)
			}
		})
	}
}

// Regression (found by FuzzRolloutStrategy): kyaml writes a flow-style null installStrategy back
// as ”, which must be a clear error, not kyaml's "wrong node kind" message.
func TestInstallStrategyNotAMapping(t *testing.T) {
	for in, want := range map[string]string{
		"spec: {installStrategy: ''}\n": "ClusterManagementAddOn x: spec.installStrategy: must be a mapping",
		"spec: a\n":                     "ClusterManagementAddOn x: spec: must be a mapping",
		"spec:\n  installStrategy:\n":   "", // null: no install placements
		// The same null in flow style is written back as '' (kyaml), which the API server
		// rejects: the schema check of the output says so rather than letting it through.
		"spec: {installStrategy}\n": `ClusterManagementAddOn x: spec.installStrategy: Invalid value: "string": spec.installStrategy in body must be of type object: "string"`,
	} {
		doc := "apiVersion: addon.open-cluster-management.io/v1beta1\nkind: ClusterManagementAddOn\nmetadata:\n  name: x\n" + in
		_, stderr, code := run(t, doc, nil)
		if want == "" {
			if code != 0 {
				t.Errorf("%q: exit %d, stderr %s", in, code, stderr)
			}
			continue
		}
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("%q: exit %d, stderr %q; want %q", in, code, stderr, want)
		}
	}
}

// TestInstallPlacementPresence: under strict every install placement and canary names a Placement
// of the input (or an external one); without strict a missing install placement is said only when
// it probably misspells a Placement of the input, and a missing canary is an error either way.
func TestInstallPlacementPresence(t *testing.T) {
	const cma = `apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ClusterManagementAddOn
metadata:
  name: hello
ANNOTATIONS
spec:
  installStrategy:
    type: Placements
    placements:
    - {name: global, namespace: default}
    - {name: canary, namespace: default}
`
	placement := func(ns, name string) string {
		return "---\napiVersion: cluster.open-cluster-management.io/v1beta1\nkind: Placement\nmetadata: {name: " + name + ", namespace: " + ns + "}\nspec: {}\n"
	}
	gated := "  annotations:\n    addonops.io/canary-placements: '{\"default/global\": \"default/canary\"}'"
	config := func(spec string) *yaml.RNode {
		return yaml.MustParse("apiVersion: addonops.io/v1alpha1\nkind: RolloutStrategyFunction\nspec:\n" + spec)
	}
	strict := config("  strict: true\n")
	const missingGlobal = "spec.installStrategy.placements[0]: placement default/global is not in the input"
	cases := []struct {
		name       string
		annotation string // "" for none
		placements string
		fc         *yaml.RNode
		wantCode   int
		wantStderr []string // each must appear; none means empty stderr
	}{
		{name: "no Placement in the input: they live on the hub", wantCode: 0},
		{name: "every Placement in the input", placements: placement("default", "global") + placement("default", "canary"), wantCode: 0},
		{name: "only the canary in the input, in use: no warning", annotation: gated, placements: placement("default", "canary"), wantCode: 0},
		{name: "misspelled name warns, naming the unused Placement", placements: placement("default", "globl") + placement("default", "canary"), wantCode: 0,
			wantStderr: []string{"warning: ClusterManagementAddOn hello: " + missingGlobal + ", which has Placements no add-on uses (default/globl): a misspelled name or namespace?",
				`list "default/global" in the functionConfig's spec.externalPlacements if it is applied from elsewhere (strict: true makes this an error)`}},
		{name: "wrong namespace warns", placements: placement("fleet", "global") + placement("default", "canary"), wantCode: 0,
			wantStderr: []string{"warning: ClusterManagementAddOn hello: " + missingGlobal + ", which has Placements no add-on uses (fleet/global)"}},
		{name: "external install placement: no warning", placements: placement("default", "globl") + placement("default", "canary"),
			fc: config("  externalPlacements: [default/global]\n"), wantCode: 0},
		{name: "strict, every Placement in the input", annotation: gated, placements: placement("default", "global") + placement("default", "canary"), fc: strict, wantCode: 0},
		{name: "strict, misspelled install placement", placements: placement("default", "globl") + placement("default", "canary"), fc: strict, wantCode: 1,
			wantStderr: []string{"ClusterManagementAddOn hello: " + missingGlobal + " (the input's Placements: default/canary, default/globl; strict: true): add its Placement to the package, correct the name or namespace, " +
				`list "default/global" in the functionConfig's spec.externalPlacements if it is applied from elsewhere, or, if the Placements live only on the hub, turn strict off`}},
		{name: "strict, no Placement in the input", fc: strict, wantCode: 1,
			wantStderr: []string{missingGlobal + " (the input has no Placement; strict: true)", "spec.installStrategy.placements[1]: placement default/canary is not in the input"}},
		{name: "strict, external install placements", fc: config("  strict: true\n  externalPlacements: [default/global, default/canary]\n"), wantCode: 0},
		{name: "strict as a ConfigMap", placements: placement("default", "canary"), fc: yaml.MustParse("apiVersion: v1\nkind: ConfigMap\ndata:\n  strict: \"true\"\n"), wantCode: 1,
			wantStderr: []string{missingGlobal + " (the input's Placements: default/canary; strict: true)"}},
		{name: "strict, canary of the annotation misspelled", annotation: strings.Replace(gated, `"default/canary"}`, `"default/canry"}`, 1),
			placements: placement("default", "global") + placement("default", "canary"), fc: strict, wantCode: 1,
			wantStderr: []string{"metadata.annotations[addonops.io/canary-placements]: canary placement default/canry is not in the input: add its Placement to the package, correct the name or namespace"}},
		{name: "canary of the annotation misspelled, without strict", annotation: strings.Replace(gated, `"default/canary"}`, `"default/canry"}`, 1),
			placements: placement("default", "global") + placement("default", "canary"), wantCode: 1,
			wantStderr: []string{"canary placement default/canry is not in the input"}},
		{name: "strict, annotation gating a misspelled placement", annotation: strings.Replace(gated, `"default/global"`, `"default/globl"`, 1),
			placements: placement("default", "global") + placement("default", "canary"), fc: strict, wantCode: 1,
			wantStderr: []string{"gates placement default/globl, which is not an install placement of this add-on"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(cma, "ANNOTATIONS\n", tc.annotation+"\n", 1)
			if tc.annotation == "" {
				doc = strings.Replace(cma, "ANNOTATIONS\n", "", 1)
			}
			out, stderr, code := run(t, doc+tc.placements, tc.fc)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.wantCode, stderr)
			}
			if (code == 0) != (out != "") {
				t.Errorf("exit %d with output %q", code, out)
			}
			if len(tc.wantStderr) == 0 && stderr != "" {
				t.Errorf("stderr %q, want none", stderr)
			}
			for _, want := range tc.wantStderr {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
		})
	}
}
