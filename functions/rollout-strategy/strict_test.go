package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/addonops/addonops/internal/krmfn"
)

// A maxConcurrency given twice: rollout-strategy validated the first (50%) and kubectl applied the
// second (150%). krmfn's strict reader refuses it, in plain YAML and in a ResourceList alike.
func TestDuplicateMaxConcurrency(t *testing.T) {
	strategy := func(values ...string) string {
		s := "apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: ClusterManagementAddOn\nmetadata:\n  name: hello\nspec:\n" +
			"  installStrategy:\n    type: Placements\n    placements:\n    - name: prod\n      namespace: ns\n      rolloutStrategy:\n" +
			"        type: Progressive\n        progressive:\n"
		for _, v := range values {
			s += "          maxConcurrency: " + v + "\n"
		}
		return s
	}
	// Each value alone is judged on its own: the second would not have passed.
	if _, stderr, code := run(t, strategy("50%"), nil); code != 0 {
		t.Fatalf("50%% alone: exit %d: %s", code, stderr)
	}
	if _, stderr, code := run(t, strategy("150%"), nil); code != 1 || !strings.Contains(stderr, `"150%" is not an int or a percentage`) {
		t.Fatalf("150%% alone: exit %d: %s", code, stderr)
	}
	const want = "(ClusterManagementAddOn hello): key spec.installStrategy.placements[0].rolloutStrategy.progressive.maxConcurrency is given twice, on lines 14 and 15"
	out, stderr, code := run(t, strategy("50%", "150%"), nil)
	if code != 1 || out != "" || stderr != "rollout-strategy: stdin, document 1 "+want+
		": YAML tools disagree on which one counts (this function would read the first, kubectl the last): delete one of them\n" {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, out, stderr)
	}
	rl := "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- " + strings.ReplaceAll(strings.TrimSuffix(strategy("50%", "150%"), "\n"), "\n", "\n  ") + "\n"
	var rlOut, rlErr bytes.Buffer
	code = krmfn.Run("rollout-strategy", usage, nil, strings.NewReader(rl), &rlOut, &rlErr, process)
	if code != 1 || !strings.Contains(rlErr.String(), "stdin, ResourceList items[0] "+strings.Replace(want, "14 and 15", "17 and 18", 1)) ||
		!strings.Contains(rlOut.String(), "items: []") || strings.Contains(rlOut.String(), "maxConcurrency: 50%") {
		t.Fatalf("ResourceList: exit %d, stderr:\n%s\nstdout:\n%s", code, rlErr.String(), rlOut.String())
	}
}
