//go:build integration

package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/addonops/addonops/internal/testing/childproc"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/localhub"
)

// Lease timings of controller-runtime's manager, which the command keeps.
const (
	leaseDuration = 15 * time.Second
	retryPeriod   = 2 * time.Second
	// jitteredRetry is the longest wait between two tries of a candidate (client-go's JitterFactor 1.2).
	jitteredRetry = retryPeriod * 22 / 10
)

// replica is one controller process (the test binary re-executed as the command).
type replica struct {
	t    *testing.T
	name string
	proc *childproc.Process
}

func startReplica(t *testing.T, hub *localhub.Hub, name string, args ...string) *replica {
	t.Helper()
	all := append([]string{"--kubeconfig", hub.Kubeconfig, "--metrics-bind-address", "0", "--health-probe-bind-address", "0", "-v=2"}, args...)
	p, err := childproc.Start(childproc.Spec{Name: name, Path: os.Args[0], Args: all, Dir: t.TempDir(),
		Env: append(os.Environ(), processEnv+"=1"), LogCommand: true})
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{t: t, name: name, proc: p}
	t.Cleanup(func() {
		_ = p.Stop(10 * time.Second)
		if t.Failed() {
			t.Logf("log of %s:\n%s", name, childproc.Tail(p.LogPath, 60))
		}
	})
	return r
}

// logs tells whether the replica's log has a line containing text.
func (r *replica) logs(text string) bool {
	data, err := os.ReadFile(r.proc.LogPath)
	return err == nil && strings.Contains(string(data), text)
}

// leads tells whether the replica has started the controller: only the Lease holder does.
func (r *replica) leads() bool { return r.logs("Caches synced") }

// recordMCAs records the state of every MCA until the test ends.
func recordMCAs(t *testing.T, ctx context.Context, hub *localhub.Hub) *harness.Recorder[harness.MCAStateEvent] {
	t.Helper()
	rec, err := harness.RecordMCAStates(ctx, hub.Clients.Addon)
	return harness.ForTest(t, rec, err)
}

// counts returns how many of addon's clusters run config ("<namespace>/<name>") and how many are
// moving to it, as harness.Moving says.
func counts(rec *harness.Recorder[harness.MCAStateEvent], addon, config string) (done, inFlight int) {
	for _, st := range harness.LatestStates(rec, addon) {
		if st.Runs(config) {
			done++
		}
		if harness.Moving(config, st.Desired(), st.Applied(), st.Progressing) {
			inFlight++
		}
	}
	return done, inFlight
}

// describe shows every cluster's latest state and its moves, for a failure message.
func describe(latest map[string]harness.MCAState, moves map[string][]string) string {
	var b strings.Builder
	for _, c := range slices.Sorted(maps.Keys(latest)) {
		fmt.Fprintf(&b, "%s, moves %v\n", latest[c], moves[c])
	}
	return b.String()
}

// Two controller processes with leader election; the leader is killed with SIGKILL in the middle
// of a Progressive rollout (maxConcurrency 2). The other takes the Lease over once it expires and
// finishes the rollout: never more than 2 clusters in flight, no cluster's desired config changed
// more than once. Then a third replica starts and the leader gets SIGTERM, as in a rolling update:
// it releases the Lease and exits 0, and the third takes over within seconds.
func TestKilledLeaderMidRollout(t *testing.T) {
	hub := localhub.ForTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	const addon, ns = "ha-rollout", "ha-leader"
	if err := localhub.EnsureNamespace(ctx, hub.Clients.Kube, ns); err != nil {
		t.Fatal(err)
	}
	var clusters []string
	for i := 1; i <= 8; i++ {
		clusters = append(clusters, fmt.Sprintf("ha-c%d", i))
	}
	const maxConcurrency = 2
	fx := newRolloutFixture(t, ctx, hub, addon, clusters, maxConcurrency)
	// The fixture's AddOnDeploymentConfigs live in the add-on's namespace.
	v1, v2 := addon+"/v1", addon+"/v2"
	args := []string{"--leader-election-namespace", ns, "--coalesce=50ms"}
	a := startReplica(t, hub, "a", args...)
	harness.EventuallyTrue(t, 30*time.Second, "a to lead", a.leads)
	b := startReplica(t, hub, "b", args...)
	fx.install(t, ctx)
	installed := recordMCAs(t, ctx, hub)
	harness.EventuallyTrue(t, 60*time.Second, "the install on every cluster", func() bool { d, _ := counts(installed, addon, v1); return d == len(clusters) })
	if b.leads() {
		t.Fatalf("b runs the controller while a holds the Lease")
	}

	states := recordMCAs(t, ctx, hub)
	fx.upgrade(t, ctx, "v2")
	harness.EventuallyTrue(t, 60*time.Second, "2 clusters upgraded and a batch in flight", func() bool {
		done, inFlight := counts(states, addon, v2)
		return done >= 2 && inFlight > 0 && done+inFlight < len(clusters)
	})
	first := holder(lease(t, hub, ns))
	done, inFlight := counts(states, addon, v2)
	if err := syscall.Kill(a.proc.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	t.Logf("killed leader a (pid %d) with %d clusters upgraded and %d in flight", a.proc.PID(), done, inFlight)

	takeover := waitTakeover(t, hub, ns, first, killed, 2*leaseDuration, "b")
	harness.EventuallyTrue(t, 30*time.Second, "b to start the controller", b.leads)
	t.Logf("takeover after SIGKILL: b holds the Lease %s after the kill, its controller synced %s after (lease duration %s)",
		takeover.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond), leaseDuration)
	// The Lease expires leaseDuration after b last saw it renewed (at most a jittered retry period
	// before the kill), and b looks every jittered retry period (client-go: up to 2.2 × 2 s): at
	// most 19.4 s, plus API and scheduling latency on a loaded machine (2 s allowed).
	if limit := leaseDuration + 2*jitteredRetry + 2*time.Second; takeover > limit {
		t.Errorf("takeover took %s, more than the lease duration and its retries (%s)", takeover, limit)
	}
	harness.EventuallyTrue(t, 90*time.Second, "the upgrade on every cluster", func() bool { d, _ := counts(states, addon, v2); return d == len(clusters) })

	start, events := harness.RecordedStates(states)
	maxSeen, _ := harness.MovingInFlight(start, events, addon, v2, nil)
	moves := harness.DesiredMoves(start, events, addon)
	for c, m := range moves {
		if len(m) != 1 || m[0] != v2 {
			t.Errorf("cluster %s: desired config went %v; want one move to v2", c, m)
		}
	}
	if maxSeen > maxConcurrency {
		t.Errorf("%d clusters were in flight at once across the takeover; maxConcurrency is %d\n%s", maxSeen, maxConcurrency,
			describe(harness.LatestStates(states, addon), moves))
	}
	if maxSeen < maxConcurrency {
		t.Errorf("at most %d clusters in flight: the rollout never used maxConcurrency %d, so the check proves nothing\n%s", maxSeen, maxConcurrency,
			describe(harness.LatestStates(states, addon), moves))
	}

	// A rolling update: a third replica comes up, the leader gets SIGTERM.
	c := startReplica(t, hub, "c", args...)
	harness.EventuallyTrue(t, 30*time.Second, "c to try for the Lease", func() bool { return c.logs("Attempting to acquire leader lease") })
	second := holder(lease(t, hub, ns))
	if err := syscall.Kill(b.proc.PID(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	termed := time.Now()
	select {
	case <-b.proc.Done():
		if err := b.proc.Err(); err != nil {
			t.Errorf("b after SIGTERM: %v; want exit status 0", err)
		}
		t.Logf("b exited %s after SIGTERM", time.Since(termed).Round(time.Millisecond))
	case <-time.After(30 * time.Second):
		t.Fatalf("b did not exit within 30s of SIGTERM")
	}
	handover := waitTakeover(t, hub, ns, second, termed, 15*time.Second, "c")
	harness.EventuallyTrue(t, 30*time.Second, "c to start the controller", c.leads)
	t.Logf("handover after SIGTERM: c holds the Lease %s after the signal", handover.Round(time.Millisecond))
	if handover > jitteredRetry+2*time.Second {
		t.Errorf("handover took %s: a leader stopped with SIGTERM must release the Lease, so a standby takes over at its next try (within %s, jittered)", handover, jitteredRetry)
	}
}
