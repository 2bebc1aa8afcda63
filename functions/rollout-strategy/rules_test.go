package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/rolloutrules"
)

// The function (build time) and the controller (run time: package rolloutrules on the object as the
// API server returns it) say the same thing, field and message, for the same bad value.
func TestSameRulesAsTheController(t *testing.T) {
	for _, in := range []string{
		"type: Progressive\nprogressive:\n  maxConcurrency: -1\n",
		"type: Progressive\nprogressive:\n  maxConcurrency: 0\n",
		"type: Progressive\nprogressive:\n  maxConcurrency: 0%\n",
		"type: Progressive\nprogressive:\n  maxConcurrency: 9223372036854775807\n",
		"type: Progressive\nprogressive:\n  maxConcurrency: 101%\n",
		"type: Progressive\nprogressive:\n  maxConcurrency: \"5\"\n",
		"type: Progressive\nprogressive:\n  minSuccessTime: forever\n",
		"type: Progressive\nprogressive:\n  minSuccessTime: -1s\n",
		"type: All\nall:\n  progressDeadline: 1d\n",
		"type: All\nall:\n  progressDeadline: 5|\n",
		"type: ProgressivePerGroup\nprogressivePerGroup:\n  maxFailures: -1\n",
		"type: ProgressivePerGroup\nprogressivePerGroup:\n  maxFailures: 2147483648\n",
		"type: Progressive\nprogressive:\n  mandatoryDecisionGroups: [{groupIndex: -1}, {groupIndex: 2147483648}, x]\n",
		"type: UpdateAll\n",
		"type: All\nprogressive:\n  maxConcurrency: 1\n",
		// Accepted by both.
		"type: Progressive\nprogressive:\n  maxConcurrency: 1\n  maxFailures: 0\n  progressDeadline: None\n  minSuccessTime: \"0\"\n",
		"type: Progressive\nprogressive:\n  maxConcurrency: 100%\n",
		"type: Progressive\nprogressive:\n  maxConcurrency: 1%\n",
	} {
		t.Run(in, func(t *testing.T) {
			var fn []string
			for _, p := range validateStrategy(yaml.MustParse(in), "p") {
				fn = append(fn, p.field+": "+p.msg)
			}
			j, err := sigsyaml.YAMLToJSON([]byte(in))
			if err != nil {
				t.Fatal(err)
			}
			var obj map[string]any
			if err := utiljson.Unmarshal(j, &obj); err != nil { // numbers as an unstructured object holds them
				t.Fatal(err)
			}
			var ctrl []string
			for _, p := range rolloutrules.Check("p", obj) {
				ctrl = append(ctrl, p.String())
			}
			if d := cmp.Diff(fn, ctrl); d != "" {
				t.Fatalf("function and controller differ (-function +controller):\n%s", d)
			}
		})
	}
}
