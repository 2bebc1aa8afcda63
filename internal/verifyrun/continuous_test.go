package verifyrun

import (
	"strings"
	"testing"
	"time"

	"github.com/addonops/addonops/internal/verification"
)

// A continuous run is one run however often the decision asks for it, with the clusters told the
// version since: the receiver gets one POST, with the clusters of the first request and the run's
// number; the result is found with the clusters of a later request. The next run is another.
func TestContinuousRunOnceAtATime(t *testing.T) {
	g := gate(t, "pass", 300*time.Millisecond)
	done := make(chan string, 4)
	r := New(Options{Templates: templates(map[string]string{"webhook": strings.Replace(webTemplate, "URL", g.URL, 1)}),
		Done: func(a string) { done <- a }})
	ref := verification.Ref{Placement: "*", Template: "webhook", Kind: verification.KindAnalysisTemplate}
	key := ref.TemplateKey(keyOf("default/p"))
	first := verification.NewContinuousBatch("hello", "default/p", "v1", 1, []string{"c1"})
	r.Start(first, ref, key)
	later := verification.NewContinuousBatch("hello", "default/p", "v1", 1, []string{"c1", "c2"})
	r.Start(later, ref, key) // asked again while it runs, c2 told since
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the continuous run did not end")
	}
	res, ok := r.Lookup(later)
	if !ok || res.Phase != verification.Successful {
		t.Fatalf("result %+v, %v", res, ok)
	}
	r.Start(later, ref, key) // ended: not run again
	second := runOnce(t, r, done, verification.NewContinuousBatch("hello", "default/p", "v1", 2, []string{"c1", "c2"}), ref)
	if second.Phase != verification.Successful {
		t.Fatalf("run 2: %+v", second)
	}
	runs := g.Runs()
	if len(runs) != 2 {
		t.Fatalf("the receiver got %d runs, want 2: %+v", len(runs), runs)
	}
	if got := runs[0]; got.Continuous != 1 || strings.Join(got.Clusters, ",") != "c1" || got.Index != 0 {
		t.Fatalf("run 1 POSTed %+v", got)
	}
	if got := runs[1]; got.Continuous != 2 || strings.Join(got.Clusters, ",") != "c1,c2" {
		t.Fatalf("run 2 POSTed %+v", got)
	}
}
