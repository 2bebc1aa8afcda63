package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"

	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	"github.com/addonops/addonops/internal/testing/localhub"
)

// CanaryLabel selects the canary clusters: kustomize-rollout-examples' canary-placement requires
// it (see that README).
const CanaryLabel = "addonops.io/canary"

// clusterSet is the ManagedClusterSet every simulated cluster joins. The examples' placements
// select from it, as OCM's registration puts every new cluster in "default".
const clusterSet = "default"

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

// labels are the labels of cluster name.
func (f fleet) labels(name string) map[string]string {
	l := map[string]string{clusterv1beta2.ClusterSetLabel: clusterSet}
	if f.canary[name] {
		l[CanaryLabel] = "true"
	}
	return l
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

// describe names a few clusters: "cluster-01, cluster-02" or "cluster-01, cluster-02, ... (40)".
func describe(names []string, most int) string {
	if len(names) == 0 {
		return "none"
	}
	if len(names) <= most {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s, ... (%d)", strings.Join(names[:most], ", "), len(names))
}

// register makes every cluster of the fleet a joined, available ManagedCluster of the cluster set,
// with its cluster namespace: what OCM's registration controller and a cluster's registration
// agent would leave on the hub. parallel requests run at once (thousands of clusters).
func (f fleet) register(ctx context.Context, c *localhub.Clients, parallel int) error {
	if err := localhub.EnsureClusterSet(ctx, c, clusterSet); err != nil {
		return err
	}
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for _, name := range f.names {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return ctx.Err()
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if _, err := localhub.EnsureManagedCluster(ctx, c, name, f.labels(name)); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("registering %d of %d simulated clusters failed; first errors: %w", len(errs), len(f.names), errors.Join(errs[:min(3, len(errs))]...))
	}
	return nil
}
