//go:build integration

package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/testing/childproc"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/krmfntest"
	"github.com/addonops/addonops/internal/testing/localhub"
)

// The tests below run the demo's whole flow (Run) as `make demo` does, on a real hub: localhub's
// kube-apiserver and etcd, the real controller, go.mod's kustomize with freshly built
// functions, server-side apply of the real examples. Each run starts and stops its own hub, so
// they also check that the demo leaves nothing running.

// toolDir holds the functions the examples run, built for the tests.
var toolDir string

func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "addonops-demo-test-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		root, err := localhub.RepoRoot("")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := krmfntest.BuildFunctions(root, dir, "./cmd/"+planTool); err != nil { // the plan of each step
			fmt.Fprintf(os.Stderr, "building the functions and %s for the demo tests: %v\n", planTool, err)
			return 1
		}
		toolDir = dir
		return m.Run()
	}())
}

// quick are options for a small, fast demo.
func quick(out *syncBuffer) Options {
	return Options{
		Clusters:    6,
		Canaries:    2,
		Speed:       10,
		StepTimeout: 2 * time.Minute,
		ToolDirs:    []string{toolDir},
		Out:         out,
		Settle:      time.Second,
	}
}

// checkNothingLeft fails the test if the demo left a child process behind (the hub's processes
// are this test process's children).
func checkNothingLeft(t *testing.T, sum *Summary) {
	t.Helper()
	if len(sum.Leftovers) > 0 {
		t.Errorf("the demo reports processes left running: %v", sum.Leftovers)
	}
	if c := childproc.Children(os.Getpid()); len(c) > 0 {
		t.Errorf("child processes still running after the demo: %v", c)
	}
}

func TestDemoRunsTheFourStepsPausesAndRollsBack(t *testing.T) {
	var out syncBuffer
	sum, err := Run(context.Background(), quick(&out))
	t.Logf("demo output:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	checkWholeDemo(t, sum, out.String())
	// Without an engine the demo waits for OCM's decisions between the two phases of its apply.
	for _, want := range []string{
		"Placement default/global-placement: 6 clusters decided by OCM's placement controller",
		"Placement default/canary-placement: 2 clusters decided by OCM's placement controller",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output does not say %q", want)
		}
	}
}

// checkWholeDemo checks a quick run of every step: the four examples, the pause, the gates, the
// bad version and its revert, whatever delivered them.
func checkWholeDemo(t *testing.T, sum *Summary, out string) {
	t.Helper()
	checkNothingLeft(t, sum)
	if sum.ExitCode() != exitOK {
		t.Errorf("exit code %d, want 0", sum.ExitCode())
	}
	wantSteps := []string{"01-fresh-install", "02-rolling-update", "03-rolling-update-with-canary", "04-rollback", "05-pause-resume",
		"06-gates", "07-bad-version", "08-revert"}
	wantVersions := []string{"v0.10.0", "v0.11.0", "v0.12.0", "v0.10.0", "v0.12.1", "v0.12.2", "v0.13.0-bad", "v0.12.2"}
	if len(sum.Steps) != len(wantSteps) {
		t.Fatalf("%d steps in the summary, want %d", len(sum.Steps), len(wantSteps))
	}
	for i, st := range sum.Steps {
		if st.Step != wantSteps[i] || st.Version != wantVersions[i] || !strings.HasPrefix(st.Config, "helloworld-config-") {
			t.Errorf("step %d: %s rolled out %s (%s), want %s rolling out a hashed helloworld-config at %s", i, st.Step, st.Config, st.Version,
				wantSteps[i], wantVersions[i])
		}
		if i == 6 {
			continue // the bad version, below
		}
		if st.Result != Succeeded || !st.Expected || st.Clusters != 6 || st.Done != 6 || len(st.Failed) != 0 {
			t.Errorf("step %s: %s (expected %v, %s) %d/%d done, failed %v; want Succeeded 6/6",
				st.Step, st.Result, st.Expected, st.Why, st.Done, st.Clusters, st.Failed)
		}
	}
	reasons := func(st StepResult) map[string]string {
		out := map[string]string{}
		for _, p := range st.Placements {
			out[p.Key] = p.Reason
		}
		return out
	}

	// 04 goes back to v0.10.0, which completed on global-placement in 01: a rollback (version
	// history), not gated by the canary, paced by maxConcurrency (25% of 6: 2). canary-placement
	// exists since 03, but global-placement ran v0.10.0 to completion and left it: a rollback there too.
	rb := sum.Steps[3]
	if got := reasons(rb); got["default/global-placement"] != "RollbackSucceeded" || got["default/canary-placement"] != "RollbackSucceeded" {
		t.Errorf("04-rollback: placements %v, want both RollbackSucceeded", got)
	}
	if len(rb.Rollbacks) != 2 || rb.Rollbacks[0].Placement != "default/canary-placement" || rb.Rollbacks[0].Reason != "RollbackSucceeded" || rb.Rollbacks[0].Since != "01-fresh-install" {
		t.Fatalf("04-rollback: rollbacks %+v, want canary-placement's and global-placement's", rb.Rollbacks)
	}
	if c := rb.Rollbacks[1]; c.Placement != "default/global-placement" || c.Since != "01-fresh-install" || c.Version != "v0.10.0" ||
		c.Reason != "RollbackSucceeded" || c.WaitedForCanary || c.Clusters != 4 || c.Limit != 2 || c.MaxInFlight < 1 || c.MaxInFlight > 2 ||
		c.FirstMoved < 0 || c.CanaryDone < 0 || c.FirstMoved >= c.CanaryDone {
		t.Errorf("04-rollback: %+v; want global-placement back to v0.10.0 of 01, RollbackSucceeded, never WaitingForCanary, moving "+
			"before its canary was done, 1..2 of its 4 clusters at once", c)
	}

	// 05: a new version, paused after global-placement's first batch and resumed. The recorded MCA
	// changes show that no cluster was told the version while it was paused.
	ps := sum.Steps[4]
	p := ps.Pause
	if p == nil {
		t.Fatal("05-pause-resume: no pause result")
	}
	if p.Problem != "" || p.Placement != "default/global-placement" || p.Clusters != 4 || len(p.ToldAtPause) < 1 || len(p.ToldAtPause) > 2 ||
		p.Held != 4-len(p.ToldAtPause) || len(p.ToldDuring) != 0 || p.ReasonAtResume != "Paused" || p.DoneAtResume != len(p.ToldAtPause) ||
		!(p.WrittenAt <= p.PausedAt && p.PausedAt < p.ResumedAt) || p.ResumedAt-p.PausedAt < minPauseHold {
		t.Errorf("05-pause-resume: %+v; want global-placement paused after its first batch (1..2 of 4 told), none told during "+
			"the pause, the first batch done and reason Paused at the resume, paused at least %s", p, minPauseHold)
	}
	if len(p.Told) != 4 {
		t.Errorf("05-pause-resume: recorded first-told times %+v, want global-placement's 4 clusters", p.Told)
	}
	for _, tt := range p.Told {
		switch first := slices.Contains(p.ToldAtPause, tt.Cluster); {
		case first && tt.At > p.PausedAt:
			t.Errorf("05-pause-resume: %s of the first batch told at %s, after the pause (%s)", tt.Cluster, tt.At, p.PausedAt)
		case !first && tt.At < p.ResumedAt:
			t.Errorf("05-pause-resume: %s told at %s, while paused (%s to %s)", tt.Cluster, tt.At, p.PausedAt, p.ResumedAt)
		}
	}
	if got := reasons(ps); got["default/global-placement"] != "UpgradeSucceed" || got["default/canary-placement"] != "UpgradeSucceed" || len(ps.Rollbacks) != 0 {
		t.Errorf("05-pause-resume: placements %v, rollbacks %+v; want both UpgradeSucceed (a new version), no rollback", got, ps.Rollbacks)
	}

	checkGates(t, sum, out)

	// The bad version (06's output with another agent version) stops at the canary: one canary
	// cluster fails (canary-placement's maxConcurrency is 25% of 2), unhealthy past its
	// progressDeadline, and global-placement never moves -- the deny window of 06 does not touch
	// it: it waits for its canary --; the revert brings it back as a rollback.
	gs, bad, revert := sum.Steps[5], sum.Steps[6], sum.Steps[7]
	if bad.Result != Failed || !bad.Expected || len(bad.Failed) != 1 || !strings.HasPrefix(bad.Failed[0], "cluster-0") ||
		bad.Failed[0] > "cluster-02" || bad.Done != 0 {
		t.Errorf("bad version: %s %s (expected %v, %s), %d/%d done, failed %v; want Failed on one canary cluster (cluster-01 or -02), 0 done",
			bad.Step, bad.Result, bad.Expected, bad.Why, bad.Done, bad.Clusters, bad.Failed)
	}
	// Two rules fail it at the same deadline and either may be first: the progress reconciler's
	// (unhealthy for progressDeadline since Available turned False) and the rollout's (in progress
	// for longer than progressDeadline, OCM's TimedOut); both name the health problem. TimedOut
	// carries the cluster's progress at the deadline: on a loaded machine the simulated agent may
	// not have reported the bad agent's works yet (2s at --speed 10), and then it names the works
	// that are not available yet rather than the add-on's Available=False.
	first := ""
	if len(bad.Reasons) > 0 {
		first = bad.Reasons[0]
	}
	timedOut := strings.Contains(first, "TimedOut: Upgrading for") && strings.Contains(first, "longer than progressDeadline 2s")
	if !(strings.Contains(first, "has not been healthy for 2s") ||
		timedOut && (strings.Contains(first, "waiting for it to be healthy: Available=False") ||
			strings.Contains(first, "waiting for the add-on's ManifestWorks to be applied and available"))) {
		t.Errorf("bad version: failure reasons %q, want the unhealthy add-on named (progressDeadline 20s at --speed 10)", bad.Reasons)
	}
	for _, p := range bad.Placements {
		if want := map[string]string{"default/canary-placement": "UpgradeFailed", "default/global-placement": "WaitingForCanary"}[p.Key]; p.Reason != want || p.DesiredVersion != "v0.13.0-bad" {
			t.Errorf("bad version: placement %s %s desiring %s, want %s desiring %s", p.Key, p.Reason, p.DesiredVersion, want, "v0.13.0-bad")
		}
	}
	// The revert applies 06's output again: v0.12.2 completed on both placements there, so both
	// roll back, through 06's deny window (a rollback passes it) and without a verification.
	if revert.Config != gs.Config {
		t.Errorf("revert: config %s, want 06's %s", revert.Config, gs.Config)
	}
	if got := reasons(revert); got["default/global-placement"] != "RollbackSucceeded" || got["default/canary-placement"] != "RollbackSucceeded" {
		t.Errorf("revert: placements %v, want both RollbackSucceeded", got)
	}
	if len(revert.Rollbacks) != 2 {
		t.Errorf("revert: rollbacks %+v, want both placements", revert.Rollbacks)
	}
	for _, c := range revert.Rollbacks {
		if c.Since != "06-gates" || c.Reason != "RollbackSucceeded" || c.WaitedForCanary || c.Limit > 0 && c.MaxInFlight > c.Limit {
			t.Errorf("revert: %+v, want a rollback to 05's version, paced, never waiting for the canary", c)
		}
	}
	// The version history the controller kept says the same: per placement, each step's version,
	// how it was rolled out and how it ended.
	type version struct{ config, kind, result string }
	cfg := func(i int) string { return sum.Steps[i].Config }
	for pl, want := range map[string][]version{
		"default/global-placement": {{cfg(0), "Install", "Superseded"}, {cfg(1), "Upgrade", "Superseded"}, {cfg(2), "Upgrade", "RolledBack"},
			{cfg(3), "Rollback", "Superseded"}, {cfg(4), "Upgrade", "Superseded"}, {cfg(5), "Upgrade", "Superseded"}, {cfg(6), "Upgrade", "RolledBack"},
			{cfg(7), "Rollback", "Succeeded"}},
		"default/canary-placement": {{cfg(2), "", "RolledBack"}, {cfg(3), "Rollback", "Superseded"}, {cfg(4), "Upgrade", "Superseded"},
			{cfg(5), "Upgrade", "Superseded"}, {cfg(6), "Upgrade", "Failed"}, {cfg(7), "Rollback", "Succeeded"}},
	} {
		var got []version
		if rec := sum.Histories["helloworld"]; rec != nil {
			for _, v := range rec.Placement(pl).Versions {
				g := version{kind: v.Kind, result: string(v.Result)}
				for _, c := range v.Configs {
					if c.Resource == "addondeploymentconfigs" {
						g.config = c.Name
					}
				}
				if len(got) == 0 && want[0].kind == "" {
					g.kind = "" // canary-placement's first: whatever the controller saw first
				}
				got = append(got, g)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("version history of %s: %v, want %v", pl, got, want)
		}
	}
	if first, rollback := sum.Steps[0].Config, sum.Steps[3].Config; rollback != first {
		t.Errorf("the rollback rolled out %s, want step 01's config %s", rollback, first)
	}
	if a, b, c := sum.Steps[0].Config, sum.Steps[1].Config, sum.Steps[2].Config; a == b || b == c || a == c {
		t.Errorf("steps 01-03 rolled out %s, %s, %s: want three config versions", a, b, c)
	}
	// From step 03 the canary placement owns the canary clusters and gates the others.
	// (The bad version's progressions count every cluster of global-placement while it waits.)
	for _, st := range sum.Steps[2:6] {
		got := map[string]int{}
		for _, p := range st.Placements {
			got[p.Key] = p.Total
			if p.Canary == "" {
				t.Errorf("%s: placement %s shows no canary state", st.Step, p.Key)
			}
		}
		if got["default/canary-placement"] != 2 || got["default/global-placement"] != 4 {
			t.Errorf("%s: clusters per placement %v, want canary-placement 2 and global-placement 4", st.Step, got)
		}
	}
	for _, want := range []string{"SIMULATED", "simulated work agent", "SUMMARY", "no process of the demo is left running",
		"it decides every Placement, as on a real hub", // OCM's placement controller, not the demo, decides them
		"default/global-placement goes back to v0.10.0, which the add-on ran to completion in 01-fresh-install",
		// rolloutview's rollback line, as `addonops status` prints it.
		"rollback to version ", ": succeeded, every cluster runs it again",
		"as expected, a rollback: default/global-placement RollbackSucceeded",
		"04-rollback: rollback: default/global-placement RollbackSucceeded",
		"$ addonops pause helloworld --placement default/global-placement\n   helloworld: paused placement default/global-placement\n     addonops.io/pause: default/global-placement\n",
		"the controller paused default/global-placement (reason Paused)",
		"$ addonops resume helloworld --placement default/global-placement\n   helloworld: resumed placement default/global-placement; no placement is paused any more\n     addonops.io/pause: (not set)\n",
		"05-pause-resume: paused default/global-placement",
		"Version history of helloworld, kept by the controller in ConfigMap default/addonops-history-helloworld",
		"07-bad-version: Failed", "the bad version stopped at the canary", "08-revert: Succeeded", "the revert is a rollback"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output does not say %q", want)
		}
	}
}

// checkGates checks step 06: a new version behind a webhook gate, subscribed to notifications,
// whose gated placement a deny window holds until `addonops override-window`. From what the
// receivers got, the recorded MCA changes and the controller's version history -- not from the
// step's own verdict alone.
func checkGates(t *testing.T, sum *Summary, out string) {
	t.Helper()
	st := sum.Steps[5]
	g := st.Gates
	if g == nil {
		t.Fatal("06-gates: no gates result")
	}
	if st.Result != Succeeded || !st.Expected || g.Problem != "" {
		t.Errorf("06-gates: %s (expected %v: %s), problem %q; want Succeeded", st.Result, st.Expected, st.Why, g.Problem)
	}
	const canaryKey, gatedKey = "default/canary-placement", "default/global-placement"
	if g.Gated != gatedKey || g.Canary != canaryKey || len(g.Clusters[canaryKey]) != 2 || len(g.Clusters[gatedKey]) != 4 || g.VersionID == "" {
		t.Fatalf("06-gates: %s gated by %s, clusters %v, version %q; want global-placement's 4 behind canary-placement's 2", g.Gated, g.Canary, g.Clusters, g.VersionID)
	}
	// The gate: every cluster in a batch POSTed to the receiver, batch numbers 1.. per placement,
	// and no cluster told the version before the verdict on the batch before its own.
	for _, p := range []string{canaryKey, gatedKey} {
		var covered []string
		var last time.Duration = -1
		n := 0
		for _, b := range g.Batches {
			if b.Placement != p {
				continue
			}
			n++
			if b.Index != n || b.Version != g.VersionID || b.Verdict != "pass" || b.Answered < b.Arrived {
				t.Errorf("06-gates: %s batch %+v; want batch %d of version %s answered pass", p, b, n, g.VersionID)
			}
			for _, c := range b.Clusters {
				covered = append(covered, c)
				if at, ok := g.Told[p][c]; !ok || at < last {
					t.Errorf("06-gates: %s of %s batch %d told at %v (told %v), before the verdict on the batch before (%s)", c, p, b.Index, at, ok, last)
				}
				if at := g.Told[p][c]; at > b.Arrived {
					t.Errorf("06-gates: %s of %s batch %d told at %s, after its batch was sent to the gate (%s)", c, p, b.Index, at, b.Arrived)
				}
			}
			last = b.Answered
		}
		slices.Sort(covered)
		if want := g.Clusters[p]; !slices.Equal(covered, want) || n < 2 {
			t.Errorf("06-gates: %s's batches verified %v in %d batches, want %v in at least 2", p, covered, n, want)
		}
	}
	// The window: global-placement waited, said when it opens, and no cluster of it moved before
	// the override; every one after it.
	if g.WindowAt <= 0 || g.OverrideAt <= g.WindowAt || len(g.ToldBeforeOverride) != 0 ||
		!strings.Contains(g.WindowMessage, "the next window opens at") || !strings.Contains(g.WindowMessage, `deny window 0 (`) {
		t.Errorf("06-gates: window at %s (%q), override at %s, told before it %v; want WaitingForWindow saying when it opens, then the override, nothing told before",
			g.WindowAt, g.WindowMessage, g.OverrideAt, g.ToldBeforeOverride)
	}
	for _, c := range g.Clusters[gatedKey] {
		if at, ok := g.Told[gatedKey][c]; !ok || at < g.OverrideAt {
			t.Errorf("06-gates: %s told at %s (%v), want after the override (%s)", c, at, ok, g.OverrideAt)
		}
	}
	if len(g.Override) == 0 || !strings.Contains(strings.Join(g.Override, "\n"), `addonops.io/window-override: {"default/global-placement":"`+g.VersionID+`"}`) {
		t.Errorf("06-gates: override-window printed %q, want the annotation naming version %s", g.Override, g.VersionID)
	}
	// The notifications: each placement's rollout started and completed, global-placement's canary
	// passed, once each, with the version and the placement's clusters.
	got := map[string]int{}
	for _, n := range g.Notifications {
		if n.VersionID != g.VersionID {
			continue
		}
		got[n.Trigger+" "+n.Placement]++
		if n.Trigger != "on-canary-passed" && !slices.Equal(n.Clusters, g.Clusters[n.Placement]) {
			t.Errorf("06-gates: notification %s %s names clusters %v, want %v", n.Trigger, n.Placement, n.Clusters, g.Clusters[n.Placement])
		}
	}
	want := map[string]int{"on-rollout-started " + canaryKey: 1, "on-rollout-completed " + canaryKey: 1,
		"on-canary-passed " + gatedKey: 1, "on-rollout-started " + gatedKey: 1, "on-rollout-completed " + gatedKey: 1}
	if !maps.Equal(got, want) {
		t.Errorf("06-gates: notifications of version %s %v, want %v", g.VersionID, got, want)
	}
	// The controller's version history says the same: both placements' runs Successful, the
	// window waited for and overridden on global-placement.
	if rec := sum.Histories["helloworld"]; rec != nil {
		for _, p := range []string{canaryKey, gatedKey} {
			var v *history.Version
			for i, hv := range rec.Placement(p).Versions {
				if hv.ID == g.VersionID && hv.Kind == "Upgrade" {
					v = &rec.Placement(p).Versions[i]
				}
			}
			if v == nil {
				t.Errorf("06-gates: version %s not in %s's history", g.VersionID, p)
				continue
			}
			phases := 0
			for _, r := range v.Verifications {
				if r.Phase != "Successful" {
					t.Errorf("06-gates: %s's history records a run %+v, want Successful", p, r)
				}
				phases++
			}
			if phases < 2 || (p == gatedKey) != (v.WindowWaits > 0 && v.WindowOverridden) {
				t.Errorf("06-gates: %s's history: %d runs, %d window waits, overridden %v; want 2+ runs, the window on global-placement alone",
					p, phases, v.WindowWaits, v.WindowOverridden)
			}
		}
	} else {
		t.Error("no version history of helloworld")
	}
	for _, s := range []string{
		"gate: verifying batch 1 of default/canary-placement (cluster-0", "gate: batch 1 of default/canary-placement: verdict pass",
		"-- default/global-placement waits for its maintenance window", "the next window opens at",
		"$ addonops override-window helloworld --placement default/global-placement\n   helloworld: version ",
		"notification: on-rollout-completed for helloworld on default/global-placement, version " + g.VersionID,
		"06-gates: webhook gate: ", "(waited for a window 1x) (window overridden) (verified ",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("the output does not say %q", s)
		}
	}
}

func TestDemoReportsInjectedFailures(t *testing.T) {
	var out syncBuffer
	o := quick(&out)
	o.FailRate = 0.2 // one cluster of six: cluster-06
	o.Steps = []string{"01-fresh-install", "02-rolling-update"}
	sum, err := Run(context.Background(), o)
	t.Logf("demo output:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	checkNothingLeft(t, sum)
	if !slices.Equal(sum.Failing, []string{"cluster-06"}) {
		t.Fatalf("failing clusters %v, want [cluster-06]", sum.Failing)
	}
	if len(sum.Steps) != 2 {
		t.Fatalf("%d steps, want 2: a failed step must not stop the demo", len(sum.Steps))
	}
	for _, st := range sum.Steps {
		if st.Result != Failed || !st.Expected || !slices.Equal(st.Failed, []string{"cluster-06"}) || st.Done >= st.Clusters {
			t.Errorf("step %s: %s (expected %v), failed %v, %d/%d done; want Failed through cluster-06 alone",
				st.Step, st.Result, st.Expected, st.Failed, st.Done, st.Clusters)
		}
		if len(st.Reasons) == 0 || !strings.Contains(st.Reasons[0], "cluster-06") || !strings.Contains(st.Reasons[0], "Applied=False") {
			t.Errorf("step %s: failure reasons %q, want cluster-06's failed work", st.Step, st.Reasons)
		}
	}
	if sum.ExitCode() != exitOK {
		t.Errorf("exit code %d, want 0: the injected failures were reported as expected", sum.ExitCode())
	}
	text := out.String()
	for _, want := range []string{"01-fresh-install: Failed", "cluster-06  InstallFailed: ", "Moving on to 02-rolling-update",
		"01-fresh-install: failed clusters cluster-06"} {
		if !strings.Contains(text, want) {
			t.Errorf("the output does not say %q", want)
		}
	}
}

func TestDemoCleansUpWhenInterrupted(t *testing.T) {
	var out syncBuffer
	o := quick(&out)
	o.Speed = 0.05 // the agent answers after 30s: the first step is surely still running
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Until cannot fail the test from this goroutine; ending the wait early (ctx) ends the demo
		// all the same, and the checks below say how it ended.
		// The interruption comes once the step's rollout is under way: the demo shows its first
		// frame of it.
		_, _ = harness.Until(ctx, 10*time.Minute, 50*time.Millisecond, func() string {
			_, step, started := strings.Cut(out.String(), "== 01-fresh-install: server-side apply")
			if !started || !strings.Contains(step, "\n  --- ") {
				return "step 01 has not shown its rollout"
			}
			return ""
		})
		cancel() // Ctrl-C
	}()
	sum, err := Run(ctx, o)
	t.Logf("demo output:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	checkNothingLeft(t, sum)
	if !sum.Interrupted || sum.ExitCode() != exitInterrupted {
		t.Errorf("interrupted %v, exit code %d; want true, %d", sum.Interrupted, sum.ExitCode(), exitInterrupted)
	}
	if len(sum.Steps) != 1 || sum.Steps[0].Result != Interrupted {
		t.Errorf("steps %+v, want step 01 Interrupted alone", sum.Steps)
	}
}
