package planner

import (
	"bytes"
	"strings"
	"testing"
)

// TestVerifiedBatchesRollOn: a placement whose batches are verified (annotation
// addonops.io/verification) rolls on batch by batch in the plan, each run taken as passed, and the
// placement warns that it is verified and what the plan assumed; without the runs taken as passed
// the controller's decision waits after the first batch and the plan would end there.
func TestVerifiedBatchesRollOn(t *testing.T) {
	main := placementSpec{name: "main", strategy: `{type: Progressive, progressive: {maxConcurrency: 1}}`, groups: [][]string{{"c1", "c2", "c3"}}}
	ann := soak0 + `, addonops.io/verification: '[{"placement": "*", "template": "error-rate"}]'`
	base := snapshotOf(t, append(hubObjects(main), adc("cfg-v1", "1"))...)
	rep, _ := step(t, base, cma(ann, "cfg-v1", main))
	p := placementOf(t, rep, "default/main")
	var got []string
	for _, b := range p.Batches {
		got = append(got, strings.Join(b.Clusters, ","))
	}
	if strings.Join(got, " | ") != "c1 | c2 | c3" || !p.Completes {
		var buf bytes.Buffer
		_ = rep.Write(&buf, FormatText)
		t.Fatalf("batches %q (completes %t), want c1 | c2 | c3, completed\n%s", strings.Join(got, " | "), p.Completes, buf.String())
	}
	if w := strings.Join(p.Warnings, "\n"); !strings.Contains(w, "3 batch(es) are verified (AnalysisTemplate default/error-rate)") || !strings.Contains(w, "takes every run as passed") {
		t.Errorf("warnings %q do not say the batches are verified and what the plan assumed", p.Warnings)
	}
}

// A continuous verification: its runs are taken as passed too, the rollout completes, and the
// warning counts them apart from the batches' runs.
func TestContinuousVerificationRollsOn(t *testing.T) {
	main := placementSpec{name: "main", strategy: `{type: Progressive, progressive: {maxConcurrency: 1}}`, groups: [][]string{{"c1", "c2", "c3"}}}
	ann := soak0 + `, addonops.io/verification: '[{"placement": "*", "template": "error-rate", "continuous": {"template": "smoke", "interval": "1m"}}]'`
	base := snapshotOf(t, append(hubObjects(main), adc("cfg-v1", "1"))...)
	rep, _ := step(t, base, cma(ann, "cfg-v1", main))
	p := placementOf(t, rep, "default/main")
	w := strings.Join(p.Warnings, "\n")
	if !p.Completes || len(p.Batches) != 3 || !strings.Contains(w, "3 batch(es) are verified (AnalysisTemplate default/error-rate)") ||
		!strings.Contains(w, "continuous verification (AnalysisTemplate default/smoke) runs while it rolls out") {
		var buf bytes.Buffer
		_ = rep.Write(&buf, FormatText)
		t.Fatalf("completes %t, %d batches, warnings %q; want 3 verified batches, the continuous runs named, completed\n%s", p.Completes, len(p.Batches), p.Warnings, buf.String())
	}
}
