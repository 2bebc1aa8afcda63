//go:build integration

package planner_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/controller"
	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/operations"
	"github.com/addonops/addonops/internal/planner"
	"github.com/addonops/addonops/internal/rolloutplan"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/rolloutsim"
	"github.com/addonops/addonops/internal/testing/simagent"
)

func TestMain(m *testing.M) { os.Exit(localhub.RunTests(m)) }

// The equivalence tests: plan a change on a snapshot of a real hub, apply the change with the
// controller running, record the order in which it tells clusters the new version, and require
// the recorded batches, gates and kinds to equal the plan's. The simulated agent reports after a
// delay, so clusters of one batch may finish a moment apart and the controller may tell the next
// clusters one by one: a recorded batch is therefore the plan's batch when the first clusters
// told, as many as the plan's batch holds, are exactly its clusters.

const historyNamespace = "plan-equivalence-history"

func newScenario(t *testing.T, addon string) *rolloutsim.Scenario {
	t.Helper()
	hub := localhub.ForTest(t)
	if err := localhub.EnsureNamespace(t.Context(), hub.Clients.Kube, historyNamespace); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Not t.Context(): it is cancelled before the cleanups run. A history left behind would be
		// another CMA's (by UID) in the next run, which the controller refuses.
		err := hub.Clients.Kube.CoreV1().ConfigMaps(historyNamespace).Delete(context.Background(), history.ConfigMapName(addon), metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the version history of %s: %v", addon, err)
		}
	})
	// The agent answers a second after a work changes: the clusters of one batch are all told (and
	// recorded as moving) long before the first of them is done, even on a loaded machine, so the
	// recorded in-flight maximum is the batch's size.
	return rolloutsim.NewWith(t, hub, addon, rolloutsim.Options{AgentDelay: time.Second, Controller: controller.Options{HistoryNamespace: historyNamespace}})
}

// snapshot reads the scenario's hub as `addonops snapshot` does.
func snapshot(t *testing.T, s *rolloutsim.Scenario) *planner.Snapshot {
	t.Helper()
	dyn, err := dynamic.NewForConfig(s.Hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(s.Hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := planner.Collect(t.Context(), planner.CollectOptions{Client: dyn, Mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)),
		HistoryNamespace: historyNamespace, Server: s.Hub.Config.Host, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	// Through the file format, as CI reads it.
	b, err := snap.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if snap, err = planner.ReadSnapshot(b); err != nil {
		t.Fatal(err)
	}
	return snap
}

// cmaManifest is the scenario's CMA as the change's rendered manifests hold it (what
// rolloutsim.Scenario.CMA writes).
func cmaManifest(t *testing.T, s *rolloutsim.Scenario, canary map[string]string, installs ...rolloutsim.Install) *unstructured.Unstructured {
	t.Helper()
	cur, err := s.GetCMA()
	if err != nil {
		t.Fatal(err)
	}
	obj := &addonv1alpha1.ClusterManagementAddOn{TypeMeta: metav1.TypeMeta{APIVersion: "addon.open-cluster-management.io/v1alpha1", Kind: "ClusterManagementAddOn"},
		ObjectMeta: metav1.ObjectMeta{Name: s.Addon, Annotations: cur.Annotations}, Spec: *cur.Spec.DeepCopy()}
	obj.Spec.InstallStrategy.Placements = nil
	for _, in := range installs {
		obj.Spec.InstallStrategy.Placements = append(obj.Spec.InstallStrategy.Placements, addonv1alpha1.PlacementStrategy{
			PlacementRef: addonv1alpha1.PlacementRef{Namespace: s.Addon, Name: in.Placement}, RolloutStrategy: in.Strategy,
			Configs: []addonv1alpha1.AddOnConfig{{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"},
				ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: s.Addon, Name: in.Config}}},
		})
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: u}
}

func planOf(t *testing.T, s *rolloutsim.Scenario, snap *planner.Snapshot, change ...*unstructured.Unstructured) planner.AddonPlan {
	t.Helper()
	rep, err := planner.Plan(snap, change, planner.Options{Now: time.Now(), Source: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range rep.Addons {
		if a.Addon == s.Addon {
			return a
		}
	}
	t.Fatalf("no plan for add-on %s: %+v", s.Addon, rep)
	return planner.AddonPlan{}
}

func placementPlan(t *testing.T, a planner.AddonPlan, placement string) planner.PlacementPlan {
	t.Helper()
	for _, p := range a.Placements {
		if p.Placement == placement {
			return p
		}
	}
	t.Fatalf("no placement %s in %+v", placement, a)
	return planner.PlacementPlan{}
}

// told is one cluster told the new version, as recorded.
type told struct {
	cluster string
	at      time.Time
	reason  string // the MCA's Progressing reason in that event
}

// toldOrder lists, from mark on, the clusters in the order their MCA was told config name
// (clusters that desired it already at mark are not told by the step).
func toldOrder(r *harness.Recorder[harness.MCAEvent], mark int, name string) []told {
	start, events := r.Since(mark)
	seen := map[string]bool{}
	for c, e := range start {
		// Told name before the step: not told by it.
		seen[c] = harness.DesiredOf(e.MCA, "addondeploymentconfigs", name) != nil
	}
	var out []told
	for _, e := range events {
		if seen[e.Cluster] || harness.DesiredOf(e.MCA, "addondeploymentconfigs", name) == nil {
			continue
		}
		seen[e.Cluster] = true
		reason := ""
		if c := meta.FindStatusCondition(e.MCA.Status.Conditions, addonstatus.ConditionProgressing); c != nil {
			reason = c.Reason
		}
		out = append(out, told{cluster: e.Cluster, at: e.At, reason: reason})
	}
	return out
}

// requireBatches checks that the recorded order, cut at the plan's batch sizes, gives the plan's
// batches; that as many clusters were in flight at most as the plan's largest batch holds (a plan
// that merged two batches, or split one, fails here); and that every cluster was told with the
// plan's kind of change.
func requireBatches(t *testing.T, p planner.PlacementPlan, got []told, r *harness.Recorder[harness.MCAEvent], mark int, name string) {
	t.Helper()
	requireBatchesOrdered(t, p, got, r, mark, name, true)
}

// requireBatchesOrdered is requireBatches; unordered, the clusters need only be the plan's and
// the in-flight maximum its largest batch: a fresh install's first decisions see the MCAs the
// install reconciler created so far, in whatever order its parallel creates land (the plan warns).
func requireBatchesOrdered(t *testing.T, p planner.PlacementPlan, got []told, r *harness.Recorder[harness.MCAEvent], mark int, name string, ordered bool) {
	t.Helper()
	var clusters []string
	largest := 0
	for _, b := range p.Batches {
		clusters = append(clusters, b.Clusters...)
		largest = max(largest, len(b.Clusters))
	}
	start, events := r.Since(mark)
	if n, most := harness.MaxInFlight(start, events, clusters, movingTo(name)); n != largest {
		t.Fatalf("placement %s: at most %d clusters (%v) were in flight at once; the plan's largest batch holds %d: %+v", p.Placement, n, most, largest, p.Batches)
	}
	var want []string
	for _, b := range p.Batches {
		want = append(want, strings.Join(b.Clusters, ","))
	}
	var rec []string
	i := 0
	for _, b := range p.Batches {
		if i+len(b.Clusters) > len(got) {
			break
		}
		names := make([]string, 0, len(b.Clusters))
		for _, tl := range got[i : i+len(b.Clusters)] {
			names = append(names, tl.cluster)
		}
		slices.Sort(names)
		rec = append(rec, strings.Join(names, ","))
		i += len(b.Clusters)
	}
	if !ordered {
		var all, gotAll []string
		for _, b := range p.Batches {
			all = append(all, b.Clusters...)
		}
		for _, tl := range got {
			gotAll = append(gotAll, tl.cluster)
		}
		slices.Sort(all)
		slices.Sort(gotAll)
		want, rec = all, gotAll
		i = len(got)
	}
	if strings.Join(rec, " | ") != strings.Join(want, " | ") || i != len(got) {
		t.Fatalf("placement %s: the controller told %v; the plan's batches are %s", p.Placement, got, strings.Join(want, " | "))
	}
	busy := map[string]string{planner.ChangeInstall: addonstatus.ReasonInstalling, planner.ChangeUpgrade: addonstatus.ReasonUpgrading, planner.ChangeRollback: addonstatus.ReasonRollingBack}[p.Change]
	for _, tl := range got {
		if tl.reason != busy {
			t.Fatalf("placement %s: cluster %s was told with reason %s; the plan's change is %s (%s)", p.Placement, tl.cluster, tl.reason, p.Change, busy)
		}
	}
}

// movingTo says whether an MCA event shows the cluster told config name and busy with it (a
// rollback to the version a cluster last applied is no move by harness.MovingTo, but it is a
// change the cluster must apply again).
func movingTo(name string) func(harness.MCAEvent) bool {
	return func(e harness.MCAEvent) bool {
		if e.Type == watch.Deleted || harness.DesiredOf(e.MCA, "addondeploymentconfigs", name) == nil {
			return false
		}
		c := meta.FindStatusCondition(e.MCA.Status.Conditions, addonstatus.ConditionProgressing)
		return c != nil && addonstatus.IsBusyReason(c.Reason)
	}
}

func record(t *testing.T, s *rolloutsim.Scenario) *harness.Recorder[harness.MCAEvent] {
	t.Helper()
	r, err := harness.RecordMCAs(s.Ctx, s.Hub.Clients.Addon, s.Addon)
	return harness.ForTest(t, r, err)
}

func progressive(n int) clusterv1alpha1.RolloutStrategy {
	return clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.Progressive, Progressive: &clusterv1alpha1.RolloutProgressive{MaxConcurrency: intstr.FromInt32(int32(n))}}
}

var allAtOnce = clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All}

func waitReason(s *rolloutsim.Scenario, placement, reason string) {
	s.WaitCMA(2*time.Minute, placement+" "+reason, func(cma *addonv1alpha1.ClusterManagementAddOn) bool {
		r, _ := rolloutsim.Progressing(cma, placement)
		return r == reason
	})
}

func TestPlanEqualsRolloutProgressiveUpgradeAndRollback(t *testing.T) {
	s := newScenario(t, "plan-progressive")
	clusters := []string{"plan-p1", "plan-p2", "plan-p3", "plan-p4", "plan-p5"}
	s.Clusters(clusters...)
	s.Placement("main", clusters...)
	v1 := s.Config("cfg", "1")
	rec := record(t, s)

	// Install: the CMA exists with no placement first, so the change is the install.
	s.CMA()
	snap := snapshot(t, s)
	in := rolloutsim.Install{Placement: "main", Config: v1, Strategy: progressive(2)}
	p := placementPlan(t, planOf(t, s, snap, cmaManifest(t, s, nil, in)), s.Addon+"/main")
	if p.Change != planner.ChangeInstall || len(p.Batches) != 3 || !p.Completes {
		t.Fatalf("install plan: %+v", p)
	}
	if !strings.Contains(strings.Join(p.Warnings, "\n"), "get their ManagedClusterAddOn from this change") {
		t.Fatalf("no warning that the install's order depends on the MCAs' creation: %v", p.Warnings)
	}
	mark := rec.Mark()
	s.CMA(in)
	waitReason(s, "main", p.Outcome)
	requireBatchesOrdered(t, p, toldOrder(rec, mark, v1), rec, mark, v1, false)

	// Upgrade to v2.
	v2 := s.Config("cfg", "2")
	snap = snapshot(t, s)
	up := rolloutsim.Install{Placement: "main", Config: v2, Strategy: progressive(2)}
	p = placementPlan(t, planOf(t, s, snap, cmaManifest(t, s, nil, up)), s.Addon+"/main")
	if p.Change != planner.ChangeUpgrade || !p.Completes {
		t.Fatalf("upgrade plan: %+v", p)
	}
	mark = rec.Mark()
	s.CMA(up)
	waitReason(s, "main", p.Outcome)
	requireBatches(t, p, toldOrder(rec, mark, v2), rec, mark, v2)

	// Back to v1, which completed: a rollback to that history entry.
	snap = snapshot(t, s)
	p = placementPlan(t, planOf(t, s, snap, cmaManifest(t, s, nil, in)), s.Addon+"/main")
	if p.Change != planner.ChangeRollback || p.RollbackTo == nil || !p.Completes {
		t.Fatalf("rollback plan: %+v", p)
	}
	mark = rec.Mark()
	s.CMA(in)
	waitReason(s, "main", p.Outcome)
	requireBatches(t, p, toldOrder(rec, mark, v1), rec, mark, v1)
}

func TestPlanEqualsRolloutAllAndCanary(t *testing.T) {
	s := newScenario(t, "plan-canary")
	canaryClusters := []string{"plan-c1"}
	mainClusters := []string{"plan-c2", "plan-c3", "plan-c4"}
	s.Clusters(append(canaryClusters, mainClusters...)...)
	s.Placement("canary", canaryClusters...)
	s.Placement("main", mainClusters...)
	v1 := s.Config("cfg", "1")
	rec := record(t, s)

	s.CMA()
	cur, err := s.GetCMA()
	if err != nil {
		t.Fatal(err)
	}
	cur.Annotations[rolloutplan.CanaryAnnotation] = fmt.Sprintf(`{"%[1]s/main": "%[1]s/canary"}`, s.Addon)
	if _, err := s.Hub.Clients.Addon.AddonV1alpha1().ClusterManagementAddOns().Update(s.Ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c1 := rolloutsim.Install{Placement: "canary", Config: v1, Strategy: allAtOnce}
	m1 := rolloutsim.Install{Placement: "main", Config: v1, Strategy: allAtOnce}
	s.CMA(c1, m1)
	waitReason(s, "main", addonstatus.ReasonInstallSucceed)

	// An upgrade of both: the canary first, then main, all at once.
	v2 := s.Config("cfg", "2")
	snap := snapshot(t, s)
	c2 := rolloutsim.Install{Placement: "canary", Config: v2, Strategy: allAtOnce}
	m2 := rolloutsim.Install{Placement: "main", Config: v2, Strategy: allAtOnce}
	a := planOf(t, s, snap, cmaManifest(t, s, nil, c2, m2))
	pc, pm := placementPlan(t, a, s.Addon+"/canary"), placementPlan(t, a, s.Addon+"/main")
	if pc.Change != planner.ChangeUpgrade || pm.Change != planner.ChangeUpgrade || pm.Canary == nil || !pm.Canary.Gates || len(pm.Batches) != 1 {
		t.Fatalf("plan: canary %+v, main %+v", pc, pm)
	}
	mark := rec.Mark()
	s.CMA(c2, m2)
	waitReason(s, "main", addonstatus.ReasonUpgradeSucceed)
	gotCanary, gotMain := []told{}, []told{}
	for _, tl := range toldOrder(rec, mark, v2) {
		if slices.Contains(canaryClusters, tl.cluster) {
			gotCanary = append(gotCanary, tl)
		} else {
			gotMain = append(gotMain, tl)
		}
	}
	requireBatches(t, pc, gotCanary, rec, mark, v2)
	requireBatches(t, pm, gotMain, rec, mark, v2)
	// The gate: main's first cluster is told after the canary's last one applied v2.
	_, events := rec.Since(mark)
	var canaryDone time.Time
	for _, e := range events {
		if slices.Contains(canaryClusters, e.Cluster) && rolloutplan.LastAppliedIs(e.MCA, rolloutplan.Desired(e.MCA)) && harness.DesiredOf(e.MCA, "addondeploymentconfigs", v2) != nil && canaryDone.IsZero() {
			canaryDone = e.At
		}
	}
	if canaryDone.IsZero() || gotMain[0].at.Before(canaryDone) {
		t.Fatalf("main's first cluster was told at %s, the canary applied v2 at %s", gotMain[0].at, canaryDone)
	}
	if pm.Batches[0].Step <= pc.Batches[len(pc.Batches)-1].Step {
		t.Fatalf("the plan does not put main after its canary: %+v / %+v", pc.Batches, pm.Batches)
	}
}

func TestPlanEqualsRolloutPerGroupWithMandatoryGroup(t *testing.T) {
	s := newScenario(t, "plan-groups")
	first := []string{"plan-g1"}
	rest := []string{"plan-g2", "plan-g3"}
	more := []string{"plan-g4"}
	s.Clusters(slices.Concat(first, rest, more)...)
	if _, err := localhub.EnsurePlacement(s.Ctx, s.Hub.Clients, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: s.Addon, Name: "main"}}); err != nil {
		t.Fatal(err)
	}
	// Group "first" is the mandatory one, and the last in the decisions: it still goes first.
	if err := localhub.SetPlacementDecisions(s.Ctx, s.Hub.Clients, s.Addon, "main", []localhub.DecisionGroup{{Name: "rest", Clusters: rest}, {Name: "more", Clusters: more}, {Name: "first", Clusters: first}}); err != nil {
		t.Fatal(err)
	}
	v1 := s.Config("cfg", "1")
	perGroup := clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.ProgressivePerGroup, ProgressivePerGroup: &clusterv1alpha1.RolloutProgressivePerGroup{
		MandatoryDecisionGroups: clusterv1alpha1.MandatoryDecisionGroups{MandatoryDecisionGroups: []clusterv1alpha1.MandatoryDecisionGroup{{GroupName: "first"}}}}}
	rec := record(t, s)
	s.CMA()
	snap := snapshot(t, s)
	in := rolloutsim.Install{Placement: "main", Config: v1, Strategy: perGroup}
	p := placementPlan(t, planOf(t, s, snap, cmaManifest(t, s, nil, in)), s.Addon+"/main")
	if p.Change != planner.ChangeInstall || batches(p) != "plan-g1 | plan-g2,plan-g3 | plan-g4" || !p.Completes {
		t.Fatalf("plan: %+v", p)
	}
	mark := rec.Mark()
	s.CMA(in)
	waitReason(s, "main", p.Outcome)
	requireBatches(t, p, toldOrder(rec, mark, v1), rec, mark, v1)
}

func TestPlanEqualsRolloutPausedPlacement(t *testing.T) {
	s := newScenario(t, "plan-paused")
	clusters := []string{"plan-z1", "plan-z2"}
	s.Clusters(clusters...)
	s.Placement("main", clusters...)
	v1 := s.Config("cfg", "1")
	in := rolloutsim.Install{Placement: "main", Config: v1, Strategy: allAtOnce}
	s.CMA(in)
	waitReason(s, "main", addonstatus.ReasonInstallSucceed)
	cur, err := s.GetCMA()
	if err != nil {
		t.Fatal(err)
	}
	cur.Annotations[operations.PauseAnnotation] = s.Addon + "/main"
	if _, err := s.Hub.Clients.Addon.AddonV1alpha1().ClusterManagementAddOns().Update(s.Ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	v2 := s.Config("cfg", "2")
	snap := snapshot(t, s)
	up := rolloutsim.Install{Placement: "main", Config: v2, Strategy: allAtOnce}
	p := placementPlan(t, planOf(t, s, snap, cmaManifest(t, s, nil, up)), s.Addon+"/main")
	if p.Change != planner.ChangeUpgrade || len(p.Batches) != 0 || p.Completes || p.Outcome != addonstatus.ReasonPaused || len(p.Warnings) == 0 {
		t.Fatalf("plan of a paused placement: %+v", p)
	}
	rec := record(t, s)
	mark := rec.Mark()
	s.CMA(up)
	waitReason(s, "main", p.Outcome)
	if got := toldOrder(rec, mark, v2); len(got) != 0 {
		t.Fatalf("the controller told %v v2 on a paused placement; the plan told nobody", got)
	}
}

func batches(p planner.PlacementPlan) string {
	var out []string
	for _, b := range p.Batches {
		out = append(out, strings.Join(b.Clusters, ","))
	}
	return strings.Join(out, " | ")
}

func TestSnapshotHoldsNoSecret(t *testing.T) {
	s := newScenario(t, "plan-secret")
	s.Clusters("plan-s1")
	s.Placement("main", "plan-s1")
	v1 := s.Config("cfg", "1")
	s.CMA(rolloutsim.Install{Placement: "main", Config: v1, Strategy: allAtOnce})
	waitReason(s, "main", addonstatus.ReasonInstallSucceed)
	secrets := s.Hub.Clients.Kube.CoreV1().Secrets(s.Addon)
	if _, err := secrets.Create(s.Ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "plan-secret"}, StringData: map[string]string{"token": "do-not-copy"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = secrets.Delete(context.Background(), "plan-secret", metav1.DeleteOptions{}) })
	snap := snapshot(t, s)
	b, err := snap.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	works := 0
	for _, o := range snap.Objects {
		switch o["kind"] {
		case "Secret":
			t.Fatalf("the snapshot holds a Secret: %v", o)
		case "ManifestWork":
			works++
			if _, ok := o["spec"]; ok {
				t.Fatalf("the snapshot holds a ManifestWork's manifests: %v", o)
			}
		}
	}
	if works == 0 || strings.Contains(string(b), "do-not-copy") {
		t.Fatalf("the snapshot has %d works, or the Secret's data", works)
	}
}

func TestPlanEqualsRollbackDuringAFailingRollout(t *testing.T) {
	s := newScenario(t, "plan-failing")
	clusters := []string{"plan-f1", "plan-f2", "plan-f3"}
	s.Clusters(clusters...)
	s.Placement("main", clusters...)
	v1 := s.Config("cfg", "1")
	in := rolloutsim.Install{Placement: "main", Config: v1, Strategy: progressive(1)}
	s.CMA(in)
	waitReason(s, "main", addonstatus.ReasonInstallSucceed)

	// v2 fails on the first cluster: the rollout stops there (maxFailures 0).
	v2 := s.Config("cfg", "2")
	s.Outcome("plan-f1", v2, simagent.Fail)
	s.CMA(rolloutsim.Install{Placement: "main", Config: v2, Strategy: progressive(1)})
	waitReason(s, "main", addonstatus.ReasonUpgradeFailed)

	snap := snapshot(t, s)
	a := planOf(t, s, snap, cmaManifest(t, s, nil, in))
	p := placementPlan(t, a, s.Addon+"/main")
	if p.Change != planner.ChangeRollback || p.RollbackTo == nil || batches(p) != "plan-f1" || !p.Completes {
		t.Fatalf("plan of the rollback: %+v", p)
	}
	if !strings.Contains(strings.Join(a.Warnings, "\n"), "failed their last change: plan-f1") {
		t.Fatalf("no warning about the failed cluster: %v", a.Warnings)
	}
	rec := record(t, s)
	mark := rec.Mark()
	s.CMA(in)
	waitReason(s, "main", p.Outcome)
	requireBatches(t, p, toldOrder(rec, mark, v1), rec, mark, v1)
}

// A canary that failed: v2 fails on the canary's cluster, so the rollout stops there; a change
// that keeps v2 (it adds placement other, without a canary) is planned with the canary staying
// failed and main waiting for it, with a warning; the controller then installs other and leaves
// the canary and main where they were.
func TestPlanEqualsRolloutFailedCanary(t *testing.T) {
	s := newScenario(t, "plan-canary-fail")
	canaryClusters := []string{"plan-k1"}
	mainClusters := []string{"plan-k2", "plan-k3"}
	otherClusters := []string{"plan-k4"}
	s.Clusters(slices.Concat(canaryClusters, mainClusters, otherClusters)...)
	s.Placement("canary", canaryClusters...)
	s.Placement("main", mainClusters...)
	s.Placement("other", otherClusters...)
	v1 := s.Config("cfg", "1")

	s.CMA()
	cur, err := s.GetCMA()
	if err != nil {
		t.Fatal(err)
	}
	cur.Annotations[rolloutplan.CanaryAnnotation] = fmt.Sprintf(`{"%[1]s/main": "%[1]s/canary"}`, s.Addon)
	if _, err := s.Hub.Clients.Addon.AddonV1alpha1().ClusterManagementAddOns().Update(s.Ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.CMA(rolloutsim.Install{Placement: "canary", Config: v1, Strategy: allAtOnce}, rolloutsim.Install{Placement: "main", Config: v1, Strategy: allAtOnce})
	waitReason(s, "main", addonstatus.ReasonInstallSucceed)

	v2 := s.Config("cfg", "2")
	s.Outcome(canaryClusters[0], v2, simagent.Fail)
	c2 := rolloutsim.Install{Placement: "canary", Config: v2, Strategy: allAtOnce}
	m2 := rolloutsim.Install{Placement: "main", Config: v2, Strategy: allAtOnce}
	s.CMA(c2, m2)
	waitReason(s, "canary", addonstatus.ReasonUpgradeFailed)
	waitReason(s, "main", addonstatus.ReasonWaitingForCanary)

	snap := snapshot(t, s)
	o2 := rolloutsim.Install{Placement: "other", Config: v2, Strategy: allAtOnce}
	a := planOf(t, s, snap, cmaManifest(t, s, nil, c2, m2, o2))
	pc, pm, po := placementPlan(t, a, s.Addon+"/canary"), placementPlan(t, a, s.Addon+"/main"), placementPlan(t, a, s.Addon+"/other")
	if len(pc.Batches) != 0 || pc.Completes || pc.Outcome != addonstatus.ReasonUpgradeFailed {
		t.Fatalf("plan of the failed canary: %+v", pc)
	}
	if len(pm.Batches) != 0 || pm.Completes || pm.Outcome != addonstatus.ReasonWaitingForCanary || !strings.Contains(strings.Join(pm.Warnings, "\n"), "the canary "+s.Addon+"/canary does not pass") {
		t.Fatalf("plan of main behind the failed canary: %+v", pm)
	}
	if po.Change != planner.ChangeInstall || batches(po) != strings.Join(otherClusters, ",") || !po.Completes {
		t.Fatalf("plan of other: %+v", po)
	}

	rec := record(t, s)
	mark := rec.Mark()
	s.CMA(c2, m2, o2)
	// Once other is done the controller has decided on the change: the canary and main stay.
	waitReason(s, "other", po.Outcome)
	requireBatches(t, po, toldOrder(rec, mark, v2), rec, mark, v2)
	got, err := s.GetCMA()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []planner.PlacementPlan{pc, pm} {
		if r, _ := rolloutsim.Progressing(got, strings.TrimPrefix(p.Placement, s.Addon+"/")); r != p.Outcome {
			t.Fatalf("placement %s is %s on the hub; the plan ends it %s", p.Placement, r, p.Outcome)
		}
	}
}
