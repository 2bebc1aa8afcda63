//go:build integration

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/planner"
	"github.com/addonops/addonops/internal/rolloutview"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/stepcheck"
)

// upgradeFailed is the Progressing reason of a failed upgrade
// (docs/design/lifecycle.md#progressing-reasons).
const upgradeFailed = "UpgradeFailed"

// badImage is the agent image of the bad version (testdata/bad-version/bad): the test's kubelet
// stand-in never lets it become ready.
const badImage = agentImage + "v0.13.0-bad"

// testBadVersion rolls a version whose agent never becomes ready out to the canary-gated example
// (kustomize-rollout-examples 03's shape, testdata/bad-version), checks that it stops at the
// canary with the cause named and that the gated placement never starts, then reverts the Git
// commit (applies the previous output again) and checks the rollback. It runs after the rollout
// examples, whose last step leaves every cluster on v0.11.0, the known-good version here.
func testBadVersion(t *testing.T, s *suite) {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	started := time.Now()
	nonCanaries := slices.DeleteFunc(slices.Clone(clusters), func(c string) bool { return slices.Contains(canaries, c) })

	goodObjs, goodOut := s.build(t, "e2e/testdata/bad-version/good")
	badObjs, _ := s.build(t, "e2e/testdata/bad-version/bad")
	good, bad := only(t, goodObjs, "AddOnDeploymentConfig").GetName(), only(t, badObjs, "AddOnDeploymentConfig").GetName()
	if good == bad {
		t.Fatalf("the good and the bad commit build the same config %s", good)
	}
	if v := customizedVariable(only(t, badObjs, "AddOnDeploymentConfig"), "AGENT_VERSION"); agentImage+v != badImage {
		t.Fatalf("the bad commit sets AGENT_VERSION=%q, want the image %s", v, badImage)
	}

	mcas := s.recordMCAs(ctx, t, rolloutAddon)
	cma := s.recordCMA(ctx, t, rolloutAddon)
	// An agent of the bad image never becomes ready; a cluster's Deployment goes unready as soon as
	// its MCA is told to run the bad config, before the work agent applies the new version, so the
	// status feedback the work agent reports for the bad version is never the old version's.
	s.kubelet.markBad(badImage)

	// The known-good commit: the version every cluster runs, gated by the canary, with a 20s
	// progressDeadline.
	s.apply(t, goodObjs)
	s.placementDecisions(t, "default", "global-placement", decisionGroup{"", clusters})
	s.placementDecisions(t, "default", "canary-placement", decisionGroup{"", canaries})
	s.waitAllOn(t, mcas, cma, good)
	t.Logf("known-good commit applied: every cluster runs %s (%s)", good, time.Since(started).Round(100*time.Millisecond))

	// The bad commit.
	badMark, cmaMark := mcas.Mark(), cma.Mark()
	badAt := time.Now()
	// The canary clusters' agents are held unready from before the bad commit on: OCM's work agent
	// reports a work Available at its new generation with status feedback read in the same pass,
	// which may be a read of the Deployment from before the new spec was applied; a Deployment
	// that turned unready only once its cluster was told the bad version can lose that race (seen
	// here: a canary cluster reported UpgradeSucceed on the old version's readiness).
	for _, c := range canaries {
		s.kubelet.hold(agentName(c))
	}
	s.apply(t, badObjs)
	t.Logf("applied the bad commit: config %s (image %s)", bad, badImage)
	var canaryMsg string
	s.eventually(t, "the canary progression fails naming the unhealthy add-on", func() string {
		got, err := s.c.Addon.AddonV1alpha1().ClusterManagementAddOns().Get(s.ctx, rolloutAddon, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		ip := rolloutview.Progression(got, "default", "canary-placement")
		if ip == nil {
			return "no install progression for canary-placement"
		}
		c := meta.FindStatusCondition(ip.Conditions, addonv1alpha1.ManagedClusterAddOnConditionProgressing)
		if c == nil || c.Reason != upgradeFailed || !strings.Contains(c.Message, "has not been healthy for 20s") {
			return fmt.Sprintf("canary-placement Progressing %+v, want UpgradeFailed naming the unhealthy add-on (not healthy for 20s)", c)
		}
		canaryMsg = c.Message
		return ""
	})
	failedAfter := time.Since(badAt)
	t.Logf("canary-placement: %s", canaryMsg)
	// Condition times have a resolution of one second, so the deadline may end up to 1s early.
	if failedAfter < 19*time.Second {
		t.Errorf("the canary failed after %s, before its 20s progressDeadline", failedAfter.Round(100*time.Millisecond))
	}
	// The gated placement waits for the canary and keeps waiting; give it a moment to misbehave.
	harness.Consistently(t, 3*statusSync, "global-placement's clusters not told the bad version", func() string {
		_, events := mcas.Since(badMark)
		for _, e := range events {
			if e.DesiredADC == bad && slices.Contains(nonCanaries, e.Cluster) {
				return fmt.Sprintf("%s (global-placement) was told to run the bad version: %s", e.Cluster, e)
			}
		}
		return ""
	})
	waitRecorded(t, s, cma, "global-placement waits for the canary", func(m map[string]progSnap) string {
		if got := m[globalPl]; got.Reason != waitingForCanary || got.GoodADC != good || got.AppliedADC != good {
			return fmt.Sprintf("%s, want WaitingForCanary with lastKnownGood and lastApplied %s", got, good)
		}
		return ""
	})
	start, events := mcas.Since(badMark)
	t.Logf("ManagedClusterAddOn changes after the bad commit:%s", eventLog(events))
	var ranBad []string // canary clusters that were told to run the bad version
	for _, e := range events {
		if e.DesiredADC != bad {
			continue
		}
		if slices.Contains(nonCanaries, e.Cluster) {
			t.Errorf("%s (global-placement) was told to run the bad version: %s", e.Cluster, e)
		}
		if e.Progressing == upgradeSucceed || e.Progressing == installSucceed {
			t.Errorf("%s reached %s with the bad version: %s", e.Cluster, e.Progressing, e)
		}
		if !slices.Contains(ranBad, e.Cluster) {
			ranBad = append(ranBad, e.Cluster)
		}
	}
	if len(ranBad) == 0 {
		t.Fatalf("no canary cluster was told to run %s: the bad version was never tried", bad)
	}
	for _, c := range ranBad {
		m := mcas.Latest()[c]
		if m.Progressing != upgradeFailed || !strings.HasPrefix(m.Available, "False") {
			t.Errorf("%s: %s, want UpgradeFailed and Available=False", c, m)
		}
		if !strings.Contains(canaryMsg, c) {
			t.Errorf("canary-placement's message does not name %s: %s", c, canaryMsg)
		}
		got, err := s.c.Addon.AddonV1alpha1().ManagedClusterAddOns(c).Get(s.ctx, rolloutAddon, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The cause, in full on the MCA: the agent Deployment of the bad version has no ready
		// replica.
		if p := meta.FindStatusCondition(got.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionProgressing); p == nil ||
			!strings.Contains(p.Message, "has not been healthy for 20s") || !strings.Contains(p.Message, "no ready replica") {
			t.Errorf("%s: Progressing %+v, want the cause: not healthy for 20s, no ready replica", c, p)
		} else {
			t.Logf("%s: %s: %s", c, p.Reason, p.Message)
		}
		// From the success the known-good version ended with (the rollout examples' last step is a
		// rollback to it: RollbackSucceeded) through the upgrade to its failure.
		from := start[c].Progressing
		if from != upgradeSucceed && from != rollbackSucceeded {
			t.Errorf("%s: Progressing %q before the bad commit, want UpgradeSucceed or RollbackSucceeded (the known-good version done)", c, from)
		}
		if got, want := reasonsOf(start, events, c, func(m mcaSnap) string { return m.Progressing }), []string{from, upgrading, upgradeFailed}; !slices.Equal(got, want) {
			t.Errorf("%s: Progressing reasons %v, want %v", c, got, want)
		}
	}
	cstart, cevents := cma.Since(cmaMark)
	t.Logf("install progression changes after the bad commit:%s", eventLog(cevents))
	if got := onlyValues(reasonsOf(cstart, cevents, canaryPl, func(p progSnap) string { return p.Reason }), seedReasons...); !slices.Equal(got, []string{upgradeSucceed, upgrading, upgradeFailed}) {
		t.Errorf("%s: Progressing reasons %v, want [UpgradeSucceed Upgrading UpgradeFailed]", canaryPl, got)
	}
	view := s.addonopsStatus(t)
	if p := viewPlacement(view, canaryPl); p == nil || p.Reason != upgradeFailed || len(p.FailedClusters) == 0 {
		t.Errorf("addonops status: canary-placement %+v, want UpgradeFailed with the failed clusters", p)
	}
	if view.Phase == rolloutview.PhaseSucceeded {
		t.Errorf("addonops status: phase %s with a failed canary", view.Phase)
	}
	// The demo's bad-version check over the same recording: stopped at the canary (the view's
	// phases Succeeded and Failed are the step results of those names), no cluster outside the
	// canary told the bad config, only canary clusters failed, and at least one did.
	canarySet := map[string]bool{}
	for _, c := range canaries {
		canarySet[c] = true
	}
	if ok, why := stepcheck.BadVersion(stepcheck.Result(view.Phase), failedOf(mcas.Latest()), toldADC(events, bad), canarySet, nil); !ok {
		t.Errorf("the bad version, judged as the demo judges it: %s", why)
	}

	// git revert: the known-good commit's output, applied again. Its plan first: the controller's
	// own decisions against the hub and the version history say which placements roll back;
	// canary-placement, which ran the bad version, must be one of them.
	plan := s.plan(t, "revert", goodOut)
	if got := stepcheck.PlannedChanges(plan)[canaryPl]; got != planner.ChangeRollback {
		t.Errorf("addonops plan of the revert: %s: %s, want Rollback", canaryPl, got)
	}
	revertMark, cmaMark := mcas.Mark(), cma.Mark()
	revertAt := time.Now()
	// The reverted clusters' agents are ready once they run the good image again (the bad image
	// stays unready).
	for _, c := range canaries {
		s.kubelet.unhold(agentName(c))
	}
	s.apply(t, goodObjs)
	t.Logf("reverted: applied the known-good commit's output again (config %s)", good)
	s.waitAllOn(t, mcas, cma, good)
	waitRecorded(t, s, cma, "canary-placement reports the rollback", func(m map[string]progSnap) string {
		if got := m[canaryPl]; got.Reason != rollbackSucceeded {
			return fmt.Sprintf("%s, want RollbackSucceeded", got)
		}
		return ""
	})
	t.Logf("rollback complete after %s", time.Since(revertAt).Round(100*time.Millisecond))
	start, events = mcas.Since(revertMark)
	t.Logf("ManagedClusterAddOn changes after the revert:%s", eventLog(events))
	// Nothing moves to the bad version after the revert: a cluster told the good version (or still
	// on it) is never told the bad one again.
	left := map[string]bool{}
	for _, c := range clusters {
		left[c] = start[c].DesiredADC != bad
	}
	for _, e := range events {
		switch {
		case e.DesiredADC != bad:
			left[e.Cluster] = true
		case left[e.Cluster]:
			t.Errorf("%s was told to run the bad version after the revert: %s", e.Cluster, e)
		}
	}
	for _, c := range ranBad {
		got := onlyValues(reasonsOf(start, events, c, func(m mcaSnap) string { return m.Progressing }), rollingBack, rollbackSucceeded, upgrading, upgradeSucceed, upgradeFailed)
		if got = slices.DeleteFunc(got, func(r string) bool { return r == upgradeFailed }); !slices.Equal(got, []string{rollingBack, rollbackSucceeded}) {
			t.Errorf("%s: Progressing reasons after the revert %v, want [RollingBack RollbackSucceeded]", c, got)
		}
	}
	for _, c := range clusters {
		if slices.Contains(ranBad, c) {
			continue
		}
		if told := reasonsOf(start, events, c, func(m mcaSnap) string { return m.DesiredADC }); len(told) != 1 || told[0] != good {
			t.Errorf("%s never ran the bad version, yet its desired configs over the revert were %v", c, told)
		}
	}
	cstart, cevents = cma.Since(cmaMark)
	t.Logf("install progression changes after the revert:%s", eventLog(cevents))
	if got := onlyValues(reasonsOf(cstart, cevents, canaryPl, func(p progSnap) string { return p.Reason }), append(seedReasons, rollingBack, rollbackSucceeded)...); len(got) < 2 || got[len(got)-1] != rollbackSucceeded || !slices.Contains(got, rollingBack) {
		t.Errorf("%s: Progressing reasons over the revert %v, want RollingBack then RollbackSucceeded", canaryPl, got)
	}
	for _, c := range clusters {
		d, err := s.c.Kube.AppsV1().Deployments(installNamespace).Get(s.ctx, agentName(c), metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s: %v", c, err)
		} else if img := d.Spec.Template.Spec.Containers[0].Image; img != agentImage+"v0.11.0" {
			t.Errorf("%s: agent image %s after the rollback, want %sv0.11.0", c, img, agentImage)
		}
	}
	view = s.addonopsStatus(t)
	if p := viewPlacement(view, canaryPl); p == nil || p.Reason != rollbackSucceeded || len(p.FailedClusters) != 0 {
		t.Errorf("addonops status: canary-placement %+v, want RollbackSucceeded and no failed cluster", p)
	}
	if view.Phase != rolloutview.PhaseSucceeded {
		t.Errorf("addonops status: phase %s after the rollback, want Succeeded", view.Phase)
	}
	// The demo's revert and rollback checks over the same recording: the revert ended as any step
	// and a placement reports RollbackSucceeded; canary-placement, which ran the bad version, rolled
	// back without waiting for a canary, no more of its clusters moving at once than its
	// maxConcurrency allows.
	var reasons []string
	for _, p := range view.Placements {
		reasons = append(reasons, p.Reason)
	}
	if ok, why := stepcheck.Revert(stepcheck.Result(view.Phase), failedOf(mcas.Latest()), nil, reasons); !ok {
		t.Errorf("the revert, judged as the demo judges it: %s", why)
	}
	canaryPlan := planOf(t, goodObjs, canaryPl)
	rb := rollbackCheck(canaryPl, canaryPlan.Canary, good, "the known-good commit", canaries, canaryPlan.Limit(len(canaries)), start, events, cstart, cevents)
	if ok, why := stepcheck.Rollbacks([]stepcheck.RollbackCheck{rb}, nil); !ok {
		t.Errorf("the revert's rollback, judged as the demo judges it: %s", why)
	}
	t.Logf("rollback of %s: %s", canaryPl, rb.Describe())
	checkPlanCameTrue(t, s, cma, cmaMark, plan)
	t.Logf("bad version stopped at the canary after %s, rolled back in %s; scenario %s",
		failedAfter.Round(100*time.Millisecond), time.Since(revertAt).Round(100*time.Millisecond), time.Since(started).Round(100*time.Millisecond))
}

// waitAllOn waits until every cluster runs and reports adc done and healthy, and both
// placements' progressions have it as desired, last applied and last known good.
func (s *suite) waitAllOn(t *testing.T, mcas *recorder[mcaSnap], cma *recorder[progSnap], adc string) {
	t.Helper()
	waitRecorded(t, s, mcas, "every cluster runs "+adc, func(m map[string]mcaSnap) string {
		for _, c := range clusters {
			got := m[c]
			if got.DesiredADC != adc || got.AppliedADC != adc || !strings.HasSuffix(got.Progressing, "Succeed") && got.Progressing != rollbackSucceeded || got.Available != "True/ProbeAvailable" {
				return fmt.Sprintf("%s (want %s, a success reason, Available)", got, adc)
			}
		}
		return ""
	})
	waitRecorded(t, s, cma, "both progressions on "+adc, func(m map[string]progSnap) string {
		for _, pl := range []string{globalPl, canaryPl} {
			got := m[pl]
			if got.DesiredADC != adc || got.AppliedADC != adc || got.GoodADC != adc {
				return fmt.Sprintf("%s, want desired, applied and last known good %s", got, adc)
			}
		}
		return ""
	})
}

// addonopsStatus runs `addonops status helloworld -o json` against the hub and decodes its view.
func (s *suite) addonopsStatus(t *testing.T) rolloutview.View {
	t.Helper()
	cmd := exec.CommandContext(s.ctx, filepath.Join(tools.Bin, "addonops"), "status", rolloutAddon, "-o", "json", "--kubeconfig", s.hub.Kubeconfig)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("addonops status: %v\n%s", err, stderr.String())
	}
	var v rolloutview.View
	if err := json.Unmarshal(stdout.Bytes(), &v); err != nil {
		t.Fatalf("addonops status -o json: %v\n%s", err, stdout.String())
	}
	for _, p := range v.Placements {
		t.Logf("addonops status: %s: phase %s, %s %q, failed %v", p.Key(), v.Phase, p.Reason, p.Message, p.FailedClusters)
	}
	return v
}

// planOf is what objs ask of install placement key (stepcheck.PlacementPlans).
func planOf(t *testing.T, objs []*unstructured.Unstructured, key string) stepcheck.PlacementPlan {
	t.Helper()
	for _, p := range stepcheck.PlacementPlans(objs) {
		if p.Key == key {
			return p
		}
	}
	t.Fatalf("no ClusterManagementAddOn of the objects installs through placement %s", key)
	return stepcheck.PlacementPlan{}
}

func viewPlacement(v rolloutview.View, key string) *rolloutview.Placement {
	for i := range v.Placements {
		if v.Placements[i].Key() == key {
			return &v.Placements[i]
		}
	}
	return nil
}
