package main

import (
	"fmt"
	"math"

	"github.com/addonops/addonops/internal/testing/ocmhub"
	"github.com/addonops/addonops/internal/testing/stepcheck"
)

// CanaryLabel selects the canary clusters: kustomize-rollout-examples' canary-placement requires
// it (see that README).
const CanaryLabel = "addonops.io/canary"

// fleet is the set of simulated clusters: their names, which are canaries and which fail.
type fleet struct {
	names   []string
	canary  map[string]bool
	failing map[string]bool
}

// newFleet lays out n clusters named cluster-01, cluster-02, ... (zero-padded to the width of n,
// so they sort as numbered). The first canaries are labelled canary; failing clusters are spread
// evenly over the fleet (see pickFailing).
func newFleet(n, canaries int, failRate float64) fleet {
	width := max(2, len(fmt.Sprint(n)))
	f := fleet{canary: map[string]bool{}, failing: map[string]bool{}}
	for i := range n {
		f.names = append(f.names, fmt.Sprintf("cluster-%0*d", width, i+1))
	}
	for _, name := range f.names[:min(canaries, n)] {
		f.canary[name] = true
	}
	for _, i := range pickFailing(n, failRate) {
		f.failing[f.names[i]] = true
	}
	return f
}

// defaultCanaries is how many clusters are canaries when --canaries is not given: a tenth of the
// fleet, at least one.
func defaultCanaries(n int) int { return max(1, n/10) }

// pickFailing returns the indices of the clusters whose work fails: round(rate*n) of them (at
// least one when rate > 0, so asking for failures always shows one), spread evenly so that a
// progressive rollout meets them in different batches rather than all in the first one. The last
// index of each 1/rate stretch is picked, which keeps the first clusters (the canaries) clear
// unless the rate is high.
func pickFailing(n int, rate float64) []int {
	if n <= 0 || rate <= 0 {
		return nil
	}
	count := int(math.Round(rate * float64(n)))
	count = min(max(count, 1), n)
	out := make([]int, count)
	for j := range count {
		out[j] = (j+1)*n/count - 1
	}
	return out
}

// clusters are the fleet's clusters as ocmhub registers them: the canaries labelled (ocmhub adds
// the ClusterSet label, "default", the set the examples' ManagedClusterSetBinding binds).
func (f fleet) clusters() []ocmhub.Cluster {
	out := make([]ocmhub.Cluster, len(f.names))
	for i, name := range f.names {
		out[i] = ocmhub.Cluster{Name: name}
		if f.canary[name] {
			out[i].Labels = map[string]string{CanaryLabel: "true"}
		}
	}
	return out
}

// sorted returns the names of the clusters in set, in fleet order.
func (f fleet) sorted(set map[string]bool) []string {
	var out []string
	for _, n := range f.names {
		if set[n] {
			out = append(out, n)
		}
	}
	return out
}

// describe names a few clusters as the step checks do (stepcheck.Names).
func describe(names []string, most int) string { return stepcheck.Names(names, most) }
