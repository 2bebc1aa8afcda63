package history

import "testing"

func TestContinuousSummary(t *testing.T) {
	if s := continuousSummary(nil); s != "" {
		t.Fatalf("no runs: %q", s)
	}
	vs := []Verification{
		{Batch: 4, FirstBatch: 1, Phase: "Successful"},
		{Batch: 5, Phase: "Inconclusive", Promoted: true},
		{Batch: 6, Phase: "Successful"},
		{Batch: 7, Phase: "Failed", Retried: true},
		{Batch: 8, Phase: "Failed"},
	}
	want := "continuously verified 8 runs: 5 Successful, 1 Inconclusive (promoted), 1 Failed (retried), 1 Failed"
	if s := continuousSummary(vs); s != want {
		t.Fatalf("\n got %s\nwant %s", s, want)
	}
}
