//go:build integration

package rolloutbench

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
)

// TestWritesPerTransition runs the template benchmark's scenario (install, then upgrade to a new
// config version, strategy All) on a few clusters with addonops-controller --deploy-templates, the
// binary as users run it, health gating on, and checks the write budget for a cluster's move
// to a new version: at most 2 MCA status writes (the desired configs; then applied, healthy and done
// together) and at most 1 update per ManifestWork. The counts are exact at any fleet size: every
// cluster goes through the same transitions, so the benchmark's per-cluster figures at 1,000 clusters
// are these plus what conflicts and retries add under load.
func TestWritesPerTransition(t *testing.T) {
	const n = 4
	tr := &writesTrace{}
	r := runTemplate(t, n, clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All}, byAddonops, tr)
	// The manager stopped: every write it made is in the trace, the upgrade's up to now.
	ends := [phases]time.Time{phaseInstall: r.bounds[phaseUpgrade], phaseUpgrade: time.Now()}

	for _, p := range []int{phaseInstall, phaseUpgrade} {
		mcas := tr.between("MCA", r.bounds[p], ends[p])
		works := tr.between("work", r.bounds[p], ends[p])
		t.Logf("%s: %s", phaseNames[p], describeChanges(mcas, works))
		if p != phaseUpgrade {
			// An install writes a new MCA's status three times: the desired configs (rollout) with
			// supportedConfigs and the declared health (registration's, deferred to that write);
			// the registrations, which the agent needs at once; then ManifestApplied (the
			// deployer's, deferred) with applied, healthy and done.
			for key, cs := range mcas {
				if s := count(cs, func(c change) bool { return c.status }); s > 3 {
					t.Errorf("install: MCA %s: %d status writes, want at most 3:\n%s", key, s, list(cs))
				}
			}
			continue
		}
		for key, cs := range mcas {
			if s := count(cs, func(c change) bool { return c.status }); s > 2 {
				t.Errorf("upgrade: MCA %s: %d status writes, want at most 2 (desired configs; then applied, healthy and done):\n%s", key, s, list(cs))
			}
			if o := count(cs, func(c change) bool { return !c.status }); o > 0 {
				t.Errorf("upgrade: MCA %s: %d writes besides its status, want none:\n%s", key, o, list(cs))
			}
		}
		if len(mcas) != n {
			t.Errorf("upgrade: %d MCAs written, want %d (each cluster's desired configs at least)", len(mcas), n)
		}
		for key, cs := range works {
			if s := count(cs, func(c change) bool { return c.spec || c.created }); s > 1 {
				t.Errorf("upgrade: work %s: %d writes, want at most 1:\n%s", key, s, list(cs))
			}
		}
		// The audit log's figure, the benchmark's: accepted MCA writes of any kind per cluster.
		if got := r.perCluster(r.writes(phaseUpgrade, isMCA)); got > 2 {
			t.Errorf("upgrade: %.2f accepted MCA writes per cluster in the API server's audit log, want at most 2", got)
		}
	}
}

func count(cs []change, f func(change) bool) int {
	k := 0
	for _, c := range cs {
		if f(c) {
			k++
		}
	}
	return k
}

func list(cs []change) string {
	var b strings.Builder
	for i, c := range cs {
		fmt.Fprintf(&b, "  %d. %s %s\n", i+1, c.at.Format("15:04:05.000"), c.what)
	}
	return b.String()
}

// describeChanges prints one cluster's MCA and work changes (every cluster goes the same way) and
// the per-object counts of all.
func describeChanges(mcas, works map[string][]change) string {
	var b strings.Builder
	keys := make([]string, 0, len(mcas))
	for k := range mcas {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "MCA %s: %d status writes of %d\n", k, count(mcas[k], func(c change) bool { return c.status }), len(mcas[k]))
	}
	if len(keys) > 0 {
		fmt.Fprintf(&b, "MCA %s, every change:\n%s", keys[0], list(mcas[keys[0]]))
		cluster := strings.Split(keys[0], "/")[0]
		for k, cs := range works {
			if strings.HasPrefix(k, cluster+"/") {
				fmt.Fprintf(&b, "work %s:\n%s", k, list(cs))
			}
		}
	}
	return b.String()
}
