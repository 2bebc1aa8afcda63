//go:build integration

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/config/configtest"
	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/planner"
	"github.com/addonops/addonops/internal/testing/stepcheck"
)

const (
	rolloutAddon = "helloworld"
	globalPl     = "default/global-placement"
	canaryPl     = "default/canary-placement"
	agentImage   = "quay.io/open-cluster-management/addon-examples:"
)

// rolloutStep is one of kustomize-rollout-examples, as its README describes it, applied through its
// e2e overlay (testdata/rollout-examples/<name>).
type rolloutStep struct {
	name    string // folder under e2e/testdata/rollout-examples
	example string // the folder of kustomize-rollout-examples it applies
	version string // AGENT_VERSION of its AddOnDeploymentConfig: the agent image's tag
	// concurrency is the rollout's maxConcurrency as a share of a placement's clusters (0: All).
	concurrency float64
	canary      bool // canary-placement gates global-placement
	// perGroup: global-placement has OCM decision groups (canaries first) and rolls out
	// ProgressivePerGroup (the e2e-only step 05).
	perGroup bool
	// rollback: global-placement's configs go back to a version its version history lists as
	// completed on it (an earlier step's), so its change is a rollback at any moment: RollingBack,
	// then RollbackSucceeded, never gated by the canary, paced by its strategy. The canary
	// placement's own history (it exists since step 03) never completed that version, so there the
	// same change is an upgrade.
	rollback bool
}

var rolloutSteps = []rolloutStep{
	{name: "01-fresh-install", example: "01-fresh-install", version: "v0.10.0"},
	{name: "02-rolling-update", example: "02-rolling-update", version: "v0.11.0", concurrency: 0.25},
	{name: "03-rolling-update-with-canary", example: "03-rolling-update-with-canary", version: "v0.12.0", concurrency: 0.25, canary: true},
	// v0.10.0 completed on global-placement in step 01.
	{name: "04-rollback", example: "04-rollback", version: "v0.10.0", concurrency: 0.25, canary: true, rollback: true},
	// 02's output again (v0.11.0, completed on global-placement in step 02) over decision groups: a
	// rollback too, paced group by group like any ProgressivePerGroup rollout. It stays 02's config
	// byte for byte (checked below) and leaves every cluster on v0.11.0, where bad-version starts.
	{name: "05-decision-groups", example: "02-rolling-update", version: "v0.11.0", perGroup: true, rollback: true},
}

// Kinds of change, as the reasons name them.
const (
	kindInstall  = "Install"
	kindUpgrade  = "Upgrade"
	kindRollback = "Rollback"
)

// reasonsOfKind are the Progressing reasons of a change of kind while it moves and once it is done.
func reasonsOfKind(kind string) (busy, done string) {
	switch kind {
	case kindInstall:
		return installing, installSucceed
	case kindRollback:
		return rollingBack, rollbackSucceeded
	}
	return upgrading, upgradeSucceed
}

// placementKind is what step i's change is on placement pl.
func (step rolloutStep) placementKind(i int, pl string) string {
	switch {
	case i == 0:
		return kindInstall
	case step.rollback:
		return kindRollback
	}
	return kindUpgrade
}

// clusterKind is what step i's change is on cluster: its placement's kind (the canaries belong to
// canary-placement while the step has one; it is listed last, so it owns them).
func (step rolloutStep) clusterKind(i int, cluster string) string {
	if step.canary && slices.Contains(canaries, cluster) {
		return step.placementKind(i, canaryPl)
	}
	return step.placementKind(i, globalPl)
}

// agentName is the helloworld agent Deployment of cluster (the e2e overlays name the agent's
// objects after the cluster; see testdata/README.md).
func agentName(cluster string) string { return "helloworld-agent-" + cluster }

// testRolloutExamples applies the four rollout examples and the e2e-only step 05 in order, follows
// each rollout and checks the version history after each.
func testRolloutExamples(t *testing.T, s *suite) {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	mcas := s.recordMCAs(ctx, t, rolloutAddon)
	cma := s.recordCMA(ctx, t, rolloutAddon)
	nonCanaries := slices.DeleteFunc(slices.Clone(clusters), func(c string) bool { return slices.Contains(canaries, c) })
	hist := &expectedHistory{}

	var first struct {
		adc         string
		deployments map[string]any // cluster -> Deployment spec after 01
		works       map[string]any // cluster -> ManifestWork spec after 01
	}
	for i, step := range rolloutSteps {
		completed := false // the step's rollout reached its end state, whatever the checks found
		t.Run(step.name, func(t *testing.T) {
			started := time.Now()
			objs, rendered := s.build(t, "e2e/testdata/rollout-examples/"+step.name)
			expected := readYAML(t, "kustomize-rollout-examples/"+step.example+"/expected/hub.yaml")
			adc := only(t, objs, "AddOnDeploymentConfig")
			tpl := only(t, objs, "AddOnTemplate")
			// The overlay changes the template only: the config is the example's, byte for byte, so
			// its name is the one the example's README and committed output give.
			if d := sameObject(adc, only(t, expected, "AddOnDeploymentConfig")); d != "" {
				t.Fatalf("the overlay's AddOnDeploymentConfig differs from the example's expected output:%s", d)
			}
			checkOverlayTemplate(t, tpl, only(t, expected, "AddOnTemplate"))
			if v := customizedVariable(adc, "AGENT_VERSION"); v != step.version {
				t.Fatalf("AddOnDeploymentConfig %s sets AGENT_VERSION=%q, want %q (README)", adc.GetName(), v, step.version)
			}
			if i == 0 {
				first.adc = adc.GetName()
			}
			if step.name == "04-rollback" && adc.GetName() != first.adc {
				t.Errorf("rollback config %s, want step 01's name %s: same content, same name", adc.GetName(), first.adc)
			}

			if step.perGroup {
				// The Placement goes first, as an Argo CD sync wave or a Flux dependsOn would order
				// it: applied together with the ClusterManagementAddOn, the rollout could start from
				// the decisions OCM wrote before the Placement had groups.
				s.apply(t, objectsOf(objs, "Placement"))
				s.placementDecisions(t, "default", "global-placement", decisionGroup{"canary", canaries}, decisionGroup{"", nonCanaries})
			}
			// Before the rollback, its plan: the controller's own decisions against the hub and
			// the version history say which placements roll back (checked below).
			var plan *planner.Report
			if step.name == "04-rollback" {
				plan = s.plan(t, step.name, rendered)
			}
			mcaMark, cmaMark := mcas.Mark(), cma.Mark()
			s.apply(t, objs)
			t.Logf("applied %d objects: config %s (AGENT_VERSION=%s), template %s", len(objs), adc.GetName(), step.version, tpl.GetName())

			// OCM's placement controller decides the examples' Placements through their own
			// ManagedClusterSetBinding.
			if step.perGroup {
				s.placementDecisions(t, "default", "global-placement", decisionGroup{"canary", canaries}, decisionGroup{"", nonCanaries})
			} else {
				s.placementDecisions(t, "default", "global-placement", decisionGroup{"", clusters})
			}
			if step.canary {
				s.placementDecisions(t, "default", "canary-placement", decisionGroup{"", canaries})
			}

			placements := []string{globalPl}
			if step.canary {
				placements = append(placements, canaryPl)
			}
			if plan != nil {
				planned := stepcheck.PlannedChanges(plan)
				for _, pl := range placements {
					if got, want := planned[pl], step.placementKind(i, pl); got != want {
						t.Errorf("addonops plan: %s: %s, want %s", pl, got, want)
					}
				}
			}
			waitRecorded(t, s, mcas, "every cluster applied "+adc.GetName(), func(m map[string]mcaSnap) string {
				for _, c := range clusters {
					got := m[c]
					_, done := reasonsOfKind(step.clusterKind(i, c))
					if got.AppliedADC != adc.GetName() || got.DesiredADC != adc.GetName() || got.AppliedTpl != tpl.GetName() || got.Progressing != done {
						return fmt.Sprintf("%s (want adc %s, template %s, %s)", got, adc.GetName(), tpl.GetName(), done)
					}
				}
				return ""
			})
			// Any success reason ends the wait; checkProgressions then says which one is right.
			waitRecorded(t, s, cma, "the install progressions complete", func(m map[string]progSnap) string {
				for _, pl := range placements {
					got := m[pl]
					want := progSnap{Placement: pl, Reason: got.Reason, DesiredADC: adc.GetName(), AppliedADC: adc.GetName(), GoodADC: adc.GetName(),
						DesiredTpl: tpl.GetName(), AppliedTpl: tpl.GetName(), GoodTpl: tpl.GetName()}
					if got != want || !slices.Contains([]string{installSucceed, upgradeSucceed, rollbackSucceeded}, got.Reason) {
						return fmt.Sprintf("%s, want %s with InstallSucceed, UpgradeSucceed or RollbackSucceeded", got, want)
					}
				}
				return ""
			})
			t.Logf("rollout of %s complete after %s", step.name, time.Since(started).Round(100*time.Millisecond))
			completed = true

			start, events := mcas.Since(mcaMark)
			cstart, cevents := cma.Since(cmaMark)
			t.Logf("ManagedClusterAddOn changes:%s", eventLog(events))
			t.Logf("install progression changes:%s", eventLog(cevents))
			checkMCASequences(t, step, i, start, events, adc.GetName())
			checkPacing(t, step, start, events, adc.GetName(), nonCanaries)
			checkProgressions(t, step, i, cstart, cevents, adc.GetName())
			if step.rollback {
				checkRollback(t, step, objs, start, events, cstart, cevents, adc.GetName(), nonCanaries)
			}
			if plan != nil {
				checkPlanCameTrue(t, s, cma, cmaMark, plan)
			}
			hist.step(t, s, step, i, placements, adc.GetName(), tpl.GetName())

			// What the work agents applied: each cluster's Deployment, at this step's version.
			deployments, works := s.checkAgents(t, step, adc.GetName())
			switch step.name {
			case "01-fresh-install":
				first.deployments, first.works = deployments, works
				s.checkAvailability(t, mcas)
			case "04-rollback":
				for _, c := range clusters {
					if !reflect.DeepEqual(deployments[c], first.deployments[c]) {
						t.Errorf("%s: after the rollback the Deployment spec differs from step 01's:\n%s\nvs\n%s", c, jsonOf(deployments[c]), jsonOf(first.deployments[c]))
					}
					if !reflect.DeepEqual(works[c], first.works[c]) {
						t.Errorf("%s: after the rollback the ManifestWork spec differs from step 01's:\n%s\nvs\n%s", c, jsonOf(works[c]), jsonOf(first.works[c]))
					}
				}
			}
			// Readiness set after step 01 stays: the agents' updates leave Deployment status alone.
			if i > 0 {
				for c, m := range mcas.Latest() {
					if m.Available != "True/ProbeAvailable" {
						t.Errorf("%s: Available %s after %s, want True/ProbeAvailable", c, m.Available, step.name)
					}
				}
			}
		})
		if !completed {
			t.Fatalf("the rollout of %s did not complete; the later steps build on it", step.name)
		}
	}
	s.checkHistoryCommand(t)
}

// checkMCASequences: each cluster's Progressing reasons over step i, as the lifecycle design has them
// (docs/design/lifecycle.md#progressing-reasons):
// from the previous step's success through the busy reason of its change (Installing, Upgrading or
// RollingBack) to that change's success, nothing else. A cluster waiting for its turn is held
// (Configured=False), which leaves its Progressing reason as it was.
func checkMCASequences(t *testing.T, step rolloutStep, i int, start map[string]mcaSnap, events []mcaSnap, adc string) {
	t.Helper()
	for _, c := range clusters {
		busy, done := reasonsOfKind(step.clusterKind(i, c))
		want := []string{busy, done}
		if prev := start[c].Progressing; prev != "" {
			want = append([]string{prev}, want...)
		}
		got := reasonsOf(start, events, c, func(m mcaSnap) string { return m.Progressing })
		if !slices.Equal(got, want) {
			t.Errorf("%s: Progressing reasons %v, want %v (%s)", c, got, want, strings.ToLower(step.clusterKind(i, c)))
		}
		// A cluster moves once: told adc, then applied it; never told something else in between.
		told := reasonsOf(start, events, c, func(m mcaSnap) string { return m.DesiredADC })
		if len(told) == 0 || told[len(told)-1] != adc || slices.Index(told, adc) != len(told)-1 {
			t.Errorf("%s: desired configs over the step %v, want the previous one then %s", c, told, adc)
		}
	}
}

// checkPacing checks the rollout strategy and the canary gate from the order of MCA changes.
func checkPacing(t *testing.T, step rolloutStep, start map[string]mcaSnap, events []mcaSnap, adc string, nonCanaries []string) {
	t.Helper()
	// first, second: two sets of clusters of which the first must have applied adc before any of the
	// second is told to run it (the canary gate, or decision group 0 before group 1).
	gate := func(first, second []string, what string) {
		done := firstWhen(start, events, allApplied(first, adc))
		told := firstWhen(start, events, anyTold(second, adc))
		switch {
		case done >= len(events):
			t.Errorf("%v never all applied %s", first, adc)
		case told <= done:
			t.Errorf("%s: one of %v was told to run %s at change %d, before all of %v applied it (change %d)", what, second, adc, told, first, done)
		}
	}
	// together: a set of clusters nothing paces (All, or one decision group of ProgressivePerGroup)
	// is told all at once, before any of them applied.
	together := func(set []string, what string) {
		if n, at := inFlight(start, events, set, adc); n != len(set) {
			t.Errorf("%s: at most %d of %v (%v) were moving at once, want all told before any applied", what, n, set, at)
		}
	}
	switch {
	case step.perGroup:
		// A rollback too is paced by the strategy: group by group.
		gate(canaries, nonCanaries, "ProgressivePerGroup: decision group 0 (canary) before group 1")
		together(canaries, "decision group 0")
		together(nonCanaries, "decision group 1")
		return
	case step.concurrency == 0:
		together(clusters, "rollout All")
		return
	}
	// Progressive maxConcurrency: a share of the placement's clusters, rounded up (sdk-go).
	limit := func(n int) int { return int(math.Ceil(step.concurrency * float64(n))) }
	if !step.canary {
		if n, at := inFlight(start, events, clusters, adc); n > limit(len(clusters)) || n == 0 {
			t.Errorf("global-placement: %d clusters %v moving at once, want 1..%d (maxConcurrency %g%%)", n, at, limit(len(clusters)), step.concurrency*100)
		}
		return
	}
	if n, at := inFlight(start, events, canaries, adc); n > limit(len(canaries)) || n == 0 {
		t.Errorf("canary-placement: %d clusters %v moving at once, want 1..%d", n, at, limit(len(canaries)))
	}
	// global-placement decides every cluster; the canaries belong to canary-placement (listed last).
	// A rollback is paced by maxConcurrency as well.
	if n, at := inFlight(start, events, nonCanaries, adc); n > limit(len(clusters)) || n == 0 {
		t.Errorf("global-placement: %d clusters %v moving at once, want 1..%d (maxConcurrency %g%% of %d)", n, at, limit(len(clusters)),
			step.concurrency*100, len(clusters))
	}
	if !step.rollback {
		gate(canaries, nonCanaries, "canary gate")
		return
	}
	// A rollback never waits for the canary: global-placement moves its first cluster back before
	// the canary placement (one cluster at a time) has all of its clusters on the version.
	done := firstWhen(start, events, allApplied(canaries, adc))
	told := firstWhen(start, events, anyTold(nonCanaries, adc))
	switch {
	case told >= len(events):
		t.Errorf("no cluster of global-placement %v was told to roll back to %s", nonCanaries, adc)
	case told > done:
		t.Errorf("the rollback waited for the canary: the first of %v was told to run %s at change %d, after all of %v applied it (change %d)",
			nonCanaries, adc, told, canaries, done)
	}
}

// checkRollback judges global-placement's rollback as the demo judges its rollbacks
// (stepcheck.Rollbacks): it ends RollbackSucceeded, never reports WaitingForCanary, and moves no
// more of its clusters at once than its strategy allows (the canaries belong to canary-placement
// while the step has one; maxConcurrency is a share of every cluster global-placement decides).
func checkRollback(t *testing.T, step rolloutStep, objs []*unstructured.Unstructured, start map[string]mcaSnap, events []mcaSnap,
	cstart map[string]progSnap, cevents []progSnap, adc string, nonCanaries []string) {
	t.Helper()
	owned := clusters
	if step.canary {
		owned = nonCanaries
	}
	since := ""
	for _, st := range rolloutSteps {
		if st.version == step.version {
			since = st.name // the first step that ran the version completed it on global-placement
			break
		}
	}
	plan := planOf(t, objs, globalPl)
	rb := rollbackCheck(globalPl, plan.Canary, adc, since, owned, plan.Limit(len(clusters)), start, events, cstart, cevents)
	if ok, why := stepcheck.Rollbacks([]stepcheck.RollbackCheck{rb}, nil); !ok {
		t.Errorf("the rollback, judged as the demo judges it: %s", why)
	}
	t.Logf("rollback of %s: %s", globalPl, rb.Describe())
}

// checkProgressions checks the ClusterManagementAddOn's install progressions over step i.
func checkProgressions(t *testing.T, step rolloutStep, i int, start map[string]progSnap, events []progSnap, adc string) {
	t.Helper()
	reasons := func(pl string) []string {
		return onlyValues(reasonsOf(start, events, pl, func(p progSnap) string { return p.Reason }), seedReasons...)
	}
	expect := func(pl string, middle ...string) []string {
		busy, done := reasonsOfKind(step.placementKind(i, pl))
		want := append(append([]string{}, middle...), busy, done)
		if prev := start[pl].Reason; prev != "" {
			want = append([]string{prev}, want...)
		}
		return want
	}
	if !step.canary || step.rollback {
		// Forward without a canary, or a rollback: no wait for the canary, ever.
		if got, want := reasons(globalPl), expect(globalPl); !slices.Equal(got, want) {
			t.Errorf("%s: Progressing reasons %v, want %v", globalPl, got, want)
		}
		if step.rollback && slices.Contains(reasons(globalPl), waitingForCanary) {
			t.Errorf("%s: the rollback waited for the canary (WaitingForCanary)", globalPl)
		}
	} else {
		// The lifecycle design's canary
		// (docs/design/lifecycle.md#the-canary-placement-is-a-reference): the gated placement waits
		// for the canary, then upgrades to the config the canary proved (its lastKnownGoodConfig);
		// the canary placement upgrades first.
		if got, want := reasons(globalPl), expect(globalPl, waitingForCanary); !slices.Equal(got, want) {
			t.Errorf("%s: Progressing reasons %v, want %v", globalPl, got, want)
		}
		for i, e := range events {
			if e.Placement == globalPl && e.Reason == upgrading && e.GoodADC != adc {
				t.Errorf("change %d: %s upgrading with lastKnownGoodConfig %q, want %s (what the canary proved)", i, globalPl, e.GoodADC, adc)
			}
		}
	}
	if !step.canary {
		return
	}
	got := reasons(canaryPl)
	if _, existed := start[canaryPl]; !existed && len(got) > 0 && got[0] == installing {
		// Step 03 applies the Placement and the add-on together: until OCM's placement controller
		// decided the new Placement, the progression counts no cluster and says Installing ("no
		// cluster selected yet", README). Its clusters' MCAs, checked above, only upgrade.
		got = got[1:]
	}
	// Its clusters already run the add-on: an upgrade in step 03, as in the design's canary example
	// (docs/design/lifecycle.md#a-new-placement-over-running-clusters-upgrades-them). In step 04 a
	// rollback: the canary placement exists since step 03, but v0.10.0 completed on
	// global-placement in step 01, which has left it since (docs/design/lifecycle.md#rollbacks).
	if want := expect(canaryPl); !slices.Equal(got, want) {
		t.Errorf("%s: Progressing reasons %v, want %v", canaryPl, got, want)
	}
}

// checkAgents checks what each cluster's work agent applied: the agent Deployment at the step's
// version, owned by that cluster's agent, and the add-on's ManifestWork, Applied and Available,
// built from the step's config. It returns the Deployments' and works' specs by cluster.
func (s *suite) checkAgents(t *testing.T, step rolloutStep, adc string) (deployments, works map[string]any) {
	t.Helper()
	deployments, works = map[string]any{}, map[string]any{}
	for _, c := range clusters {
		d, err := s.c.Kube.AppsV1().Deployments(installNamespace).Get(s.ctx, agentName(c), metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s: the agent Deployment: %v", c, err)
			continue
		}
		if msg := s.appliedBy(d, c); msg != "" {
			t.Errorf("%s: %s", c, msg)
		}
		if n := len(d.Spec.Template.Spec.Containers); n != 1 {
			t.Errorf("%s: Deployment %s has %d containers, want 1", c, d.Name, n)
			continue
		}
		ctr := d.Spec.Template.Spec.Containers[0]
		if want := agentImage + step.version; ctr.Image != want {
			t.Errorf("%s: agent image %s, want %s", c, ctr.Image, want)
		}
		if !slices.Contains(ctr.Args, "--cluster-name="+c) {
			t.Errorf("%s: agent args %v lack --cluster-name=%s", c, ctr.Args, c)
		}
		if !hasEnv(ctr.Env, "CLUSTER_NAME", c) || !hasEnv(ctr.Env, "INSTALL_NAMESPACE", installNamespace) {
			t.Errorf("%s: agent env %v, want CLUSTER_NAME=%s and INSTALL_NAMESPACE=%s", c, ctr.Env, c, installNamespace)
		}
		deployments[c] = toMap(t, d.Spec)

		sa, err := s.c.Kube.CoreV1().ServiceAccounts(installNamespace).Get(s.ctx, "helloworld-agent-sa-"+c, metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s: the agent ServiceAccount: %v", c, err)
		} else if msg := s.appliedBy(sa, c); msg != "" {
			t.Errorf("%s: ServiceAccount %s", c, msg)
		}

		w := s.deployWork(t, c, rolloutAddon)
		if w == nil {
			continue
		}
		if h := w.Annotations[workv1.ManifestConfigSpecHashAnnotationKey]; !strings.Contains(h, "/default/"+adc+`"`) {
			t.Errorf("%s: ManifestWork %s built from %s, want %s", c, w.Name, h, adc)
		}
		works[c] = toMap(t, w.Spec)
	}
	return deployments, works
}

// deployWork returns the add-on's one deploy ManifestWork in the cluster namespace, checking that
// the agent reports it Applied and Available at its generation.
func (s *suite) deployWork(t *testing.T, cluster, addon string) *workv1.ManifestWork {
	t.Helper()
	list, err := s.c.Work.WorkV1().ManifestWorks(cluster).List(s.ctx, metav1.ListOptions{LabelSelector: addonv1alpha1.AddonLabelKey + "=" + addon})
	if err != nil {
		t.Errorf("%s: listing ManifestWorks: %v", cluster, err)
		return nil
	}
	if len(list.Items) != 1 {
		t.Errorf("%s: %d ManifestWorks of %s, want 1", cluster, len(list.Items), addon)
		return nil
	}
	w := &list.Items[0]
	for _, typ := range []string{workv1.WorkApplied, workv1.WorkAvailable} {
		c := meta.FindStatusCondition(w.Status.Conditions, typ)
		if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != w.Generation {
			t.Errorf("%s: ManifestWork %s %s condition %+v, want True at generation %d", cluster, w.Name, typ, c, w.Generation)
		}
	}
	return w
}

// checkAvailability: every add-on is Available (the suite's kubelet reports the agent Deployments
// ready, the work agents report that through status feedback), and no cluster was declared done
// before its add-on was: health gates success.
func (s *suite) checkAvailability(t *testing.T, mcas *recorder[mcaSnap]) {
	t.Helper()
	waitRecorded(t, s, mcas, "every add-on Available", func(m map[string]mcaSnap) string {
		for _, c := range clusters {
			if m[c].Available != "True/ProbeAvailable" {
				return m[c].String()
			}
		}
		return ""
	})
	_, events := mcas.Since(0)
	checkSuccessOnlyWhenAvailable(t, events)
}

// checkSuccessOnlyWhenAvailable fails for every recorded MCA state that reports a success reason
// while the add-on was not Available=True.
func checkSuccessOnlyWhenAvailable(t *testing.T, events []mcaSnap) {
	t.Helper()
	for _, e := range events {
		switch e.Progressing {
		case installSucceed, upgradeSucceed, rollbackSucceeded:
			if !strings.HasPrefix(e.Available, "True") {
				t.Errorf("%s: %s while Available is %s: a cluster is done only when healthy", e.Cluster, e.Progressing, e.Available)
			}
		}
	}
}

func customizedVariable(adc *unstructured.Unstructured, name string) string {
	vars, _, _ := unstructured.NestedSlice(adc.Object, "spec", "customizedVariables")
	for _, v := range vars {
		if m, ok := v.(map[string]any); ok && m["name"] == name {
			s, _ := m["value"].(string)
			return s
		}
	}
	return ""
}

func toMap(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// plan runs `addonops plan -f - -o json` on the rendered step (the real binary, built from this tree)
// against the hub and the controller's version histories, as a reviewer of the step's commit
// would, before the step is applied: the controller's own decisions say, per placement, what the
// step is (Install, Upgrade, Rollback, ...).
func (s *suite) plan(t *testing.T, name string, rendered []byte) *planner.Report {
	t.Helper()
	rep, err := stepcheck.RunPlan(s.ctx, filepath.Join(tools.Bin, "addonops"), s.hub.Kubeconfig, configtest.Namespace, rendered)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range rep.Addons {
		for _, p := range a.Placements {
			to := ""
			if p.RollbackTo != nil {
				to = fmt.Sprintf(" to %s (completed %s)", p.RollbackTo.Version, p.RollbackTo.Completed)
			}
			t.Logf("addonops plan %s: %s %s: %s%s, %s -> %s", name, a.Addon, p.Placement, p.Change, to, orDash(p.FromVersion), orDash(p.ToVersion))
		}
	}
	return rep
}

// checkPlanCameTrue waits until the placements the plan rolls back are done (or failed), then
// judges the step against its plan as the demo does (stepcheck.PlanCameTrue): each planned
// rollback ends RollbackSucceeded, and no placement planned as an install or upgrade reports a
// rollback's reason over the step (the recorded progression changes since cmaMark).
func checkPlanCameTrue(t *testing.T, s *suite, cma *recorder[progSnap], cmaMark int, rep *planner.Report) {
	t.Helper()
	rollbacks := stepcheck.PlannedRollbacks(rep)
	waitRecorded(t, s, cma, "the planned rollbacks end", func(m map[string]progSnap) string {
		for _, pl := range slices.Sorted(maps.Keys(rollbacks)) {
			if r := m[pl].Reason; !addonstatus.IsDoneReason(r) && !addonstatus.IsFailedReason(r) {
				return fmt.Sprintf("%s, want a done or failed reason", m[pl])
			}
		}
		return ""
	})
	start, events := cma.Since(cmaMark)
	var changes []stepcheck.PlannedChange
	planned := stepcheck.PlannedChanges(rep)
	for _, pl := range slices.Sorted(maps.Keys(planned)) {
		c := stepcheck.PlannedChange{Placement: pl, Change: planned[pl], Reason: start[pl].Reason}
		for _, e := range events {
			if e.Placement == pl && e.Reason != "" {
				c.Reason = e.Reason
				if len(c.Seen) == 0 || c.Seen[len(c.Seen)-1] != e.Reason {
					c.Seen = append(c.Seen, e.Reason)
				}
			}
		}
		changes = append(changes, c)
	}
	if ok, why := stepcheck.PlanCameTrue(changes, nil); !ok {
		t.Errorf("the step against its plan, judged as the demo judges it: %s", why)
	}
}
