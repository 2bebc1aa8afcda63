//go:build integration

package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

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

// mcaStates follows the add-on's MCAs through the harness's recorder: per cluster, the desired
// and last applied config names, and across the whole run the most clusters in flight at once and
// every change of a cluster's desired config.
type mcaStates struct {
	rec    *harness.Recorder[harness.MCAEvent]
	target string
}

func watchMCAs(t *testing.T, ctx context.Context, hub *localhub.Hub, addon, target string) *mcaStates {
	t.Helper()
	rec, err := harness.RecordMCAs(ctx, hub.Clients.Addon, addon)
	return &mcaStates{rec: harness.ForTest(t, rec, err), target: target}
}

// names returns the desired and last applied config names of an MCA.
func names(m *addonv1alpha1.ManagedClusterAddOn) (desired, applied string) {
	for _, r := range m.Status.ConfigReferences {
		if r.DesiredConfig != nil {
			desired = r.DesiredConfig.Name
		}
		if r.LastAppliedConfig != nil {
			applied = r.LastAppliedConfig.Name
		}
	}
	return desired, applied
}

// maxInFlight is the most clusters told the target and not done with it at one moment.
func (s *mcaStates) maxInFlight() int {
	n, _ := harness.MaxInFlight(nil, s.rec.Events(), nil, harness.MovingTo("", s.target))
	return n
}

// moves returns, per cluster, the sequence of desired config names after the first one seen.
func (s *mcaStates) moves() map[string][]string {
	seen, out := map[string]string{}, map[string][]string{}
	for _, e := range s.rec.Events() {
		desired, _ := names(e.MCA)
		if before, ok := seen[e.Cluster]; ok && desired != before {
			out[e.Cluster] = append(out[e.Cluster], desired)
		}
		seen[e.Cluster] = desired
	}
	return out
}

// counts returns how many clusters run the target and how many are on their way to it.
func (s *mcaStates) counts() (done, inFlight int) {
	moving := harness.MovingTo("", s.target)
	for _, e := range s.rec.Latest() {
		if desired, applied := names(e.MCA); desired == s.target && applied == s.target {
			done++
		}
		if moving(e) {
			inFlight++
		}
	}
	return done, inFlight
}

func (s *mcaStates) String() string {
	moves := s.moves()
	var b strings.Builder
	for c, e := range s.rec.Latest() {
		d, a := names(e.MCA)
		fmt.Fprintf(&b, "%s: desired %s, applied %s, moves %v\n", c, d, a, moves[c])
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
	args := []string{"--leader-election-namespace", ns, "--coalesce=50ms"}
	a := startReplica(t, hub, "a", args...)
	harness.EventuallyTrue(t, 30*time.Second, "a to lead", a.leads)
	b := startReplica(t, hub, "b", args...)
	fx.install(t, ctx)
	installed := watchMCAs(t, ctx, hub, addon, "v1")
	harness.EventuallyTrue(t, 60*time.Second, "the install on every cluster", func() bool { d, _ := installed.counts(); return d == len(clusters) })
	if b.leads() {
		t.Fatalf("b runs the controller while a holds the Lease")
	}

	states := watchMCAs(t, ctx, hub, addon, "v2")
	fx.upgrade(t, ctx, "v2")
	harness.EventuallyTrue(t, 60*time.Second, "2 clusters upgraded and a batch in flight", func() bool {
		done, inFlight := states.counts()
		return done >= 2 && inFlight > 0 && done+inFlight < len(clusters)
	})
	first := holder(lease(t, hub, ns))
	done, inFlight := states.counts()
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
	harness.EventuallyTrue(t, 90*time.Second, "the upgrade on every cluster", func() bool { d, _ := states.counts(); return d == len(clusters) })

	maxSeen := states.maxInFlight()
	for c, moves := range states.moves() {
		if len(moves) != 1 || moves[0] != "v2" {
			t.Errorf("cluster %s: desired config went %v; want one move to v2", c, moves)
		}
	}
	if maxSeen > maxConcurrency {
		t.Errorf("%d clusters were in flight at once across the takeover; maxConcurrency is %d\n%s", maxSeen, maxConcurrency, states)
	}
	if maxSeen < maxConcurrency {
		t.Errorf("at most %d clusters in flight: the rollout never used maxConcurrency %d, so the check proves nothing\n%s", maxSeen, maxConcurrency, states)
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
