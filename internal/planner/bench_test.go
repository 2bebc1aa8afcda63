package planner

import (
	"fmt"
	"testing"
)

// BenchmarkPlan is the time of a plan: an upgrade of every cluster of a fleet (Progressive, 10% at
// a time) on a hub where the previous version is installed. `go test ./internal/planner -run '^$'
// -bench Plan -benchtime 3x` prints it; it is no timed test.
func BenchmarkPlan(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			clusters := make([]string, n)
			for i := range clusters {
				clusters[i] = fmt.Sprintf("cluster-%05d", i)
			}
			main := placementSpec{name: "main", strategy: `{type: Progressive, progressive: {maxConcurrency: "10%"}}`, groups: [][]string{clusters}}
			base := snapshotOf(b, append(hubObjects(main), cma(soak0, "cfg-v1", main), adc("cfg-v1", "1"))...)
			_, settled, err := plan(base, nil, Options{Now: t0, Source: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			s1, err := settled.snapshot(base.HistoryNamespace, nil)
			if err != nil {
				b.Fatal(err)
			}
			change := manifests(b, cma(soak0, "cfg-v2", main), adc("cfg-v2", "2"))
			for b.Loop() {
				rep, err := Plan(s1, change, Options{Now: t0, Source: "bench"})
				if err != nil {
					b.Fatal(err)
				}
				if p := rep.Addons[0].Placements[0]; len(p.Batches) != 10 || !p.Completes {
					b.Fatalf("plan: %d batches, completes %t", len(p.Batches), p.Completes)
				}
			}
		})
	}
}
