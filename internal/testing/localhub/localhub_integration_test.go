//go:build integration

package localhub_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	sdkclusterv1beta1 "open-cluster-management.io/sdk-go/pkg/apis/cluster/v1beta1"

	"github.com/addonops/addonops/internal/testing/localhub"
)

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestHubServesOCMAPIs writes the kinds every suite uses through OCM's typed clientsets and reads
// them back: the CRDs are installed, served and validated by a real API server.
func TestHubServesOCMAPIs(t *testing.T) {
	h := localhub.ForTest(t)
	ctx := ctxFor(t)
	c := h.Clients
	t.Logf("hub started in %s (shared by this package's tests)", h.StartDuration.Round(time.Millisecond))

	cma := &addonv1alpha1.ClusterManagementAddOn{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "hello-template",
			Annotations: map[string]string{"addon.open-cluster-management.io/lifecycle": "self"},
		},
		Spec: addonv1alpha1.ClusterManagementAddOnSpec{
			SupportedConfigs: []addonv1alpha1.ConfigMeta{{
				ConfigGroupResource: addonv1alpha1.ConfigGroupResource{
					Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs",
				},
				DefaultConfig: &addonv1alpha1.ConfigReferent{Namespace: "open-cluster-management", Name: "hello-config"},
			}},
			InstallStrategy: addonv1alpha1.InstallStrategy{
				Type: addonv1alpha1.AddonInstallStrategyPlacements,
				Placements: []addonv1alpha1.PlacementStrategy{{
					PlacementRef: addonv1alpha1.PlacementRef{Namespace: "default", Name: "all"},
				}},
			},
		},
	}
	if _, err := c.Addon.AddonV1alpha1().ClusterManagementAddOns().Create(ctx, cma, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ClusterManagementAddOn: %v", err)
	}
	// The hub is shared by the package's tests (and by -count=N runs): leave it as found.
	t.Cleanup(func() {
		_ = c.Addon.AddonV1alpha1().ClusterManagementAddOns().Delete(context.Background(), cma.Name, metav1.DeleteOptions{})
	})
	gotCMA, err := c.Addon.AddonV1alpha1().ClusterManagementAddOns().Get(ctx, cma.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading ClusterManagementAddOn back: %v", err)
	}
	if got := gotCMA.Spec.SupportedConfigs; len(got) != 1 || got[0].DefaultConfig == nil || got[0].DefaultConfig.Name != "hello-config" {
		t.Errorf("CMA supportedConfigs = %+v, want the hello-config default", got)
	}
	if got := gotCMA.Spec.InstallStrategy; got.Type != addonv1alpha1.AddonInstallStrategyPlacements || len(got.Placements) != 1 {
		t.Errorf("CMA installStrategy = %+v, want one Placements strategy", got)
	}
	// The CRD's own defaulting ran: the placement's rollout strategy defaults to All.
	if got := gotCMA.Spec.InstallStrategy.Placements[0].RolloutStrategy.Type; got != "All" {
		t.Errorf("CMA placement rolloutStrategy.type = %q, want the CRD default All", got)
	}

	mc, err := localhub.EnsureManagedCluster(ctx, c, "api-cluster1", map[string]string{"env": "test"})
	if err != nil {
		t.Fatal(err)
	}
	gotMC, err := c.Cluster.ClusterV1().ManagedClusters().Get(ctx, "api-cluster1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading ManagedCluster back: %v", err)
	}
	if gotMC.UID != mc.UID || gotMC.Labels["env"] != "test" || !gotMC.Spec.HubAcceptsClient {
		t.Errorf("ManagedCluster = labels %v, hubAcceptsClient %v; want env=test and accepted", gotMC.Labels, gotMC.Spec.HubAcceptsClient)
	}
	if !conditionTrue(gotMC.Status.Conditions, clusterv1.ManagedClusterConditionAvailable) {
		t.Errorf("ManagedCluster conditions = %+v, want %s=True", gotMC.Status.Conditions, clusterv1.ManagedClusterConditionAvailable)
	}
	if _, err := c.Kube.CoreV1().Namespaces().Get(ctx, "api-cluster1", metav1.GetOptions{}); err != nil {
		t.Errorf("cluster namespace: %v", err)
	}

	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default"},
		Data:       map[string]string{"greeting": "hello"},
	}
	work := &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "addon-hello-template-deploy-0",
			Namespace:   "api-cluster1",
			Labels:      map[string]string{"open-cluster-management.io/addon-name": "hello-template"},
			Annotations: map[string]string{"open-cluster-management.io/config-spec-hash": `{"addondeploymentconfigs.addon.open-cluster-management.io/open-cluster-management/hello-config":"abc"}`},
		},
		Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{
			Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Object: cm}}},
		}},
	}
	if _, err := c.Work.WorkV1().ManifestWorks("api-cluster1").Create(ctx, work, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ManifestWork: %v", err)
	}
	t.Cleanup(func() {
		_ = c.Work.WorkV1().ManifestWorks("api-cluster1").Delete(context.Background(), work.Name, metav1.DeleteOptions{})
	})
	gotWork, err := c.Work.WorkV1().ManifestWorks("api-cluster1").Get(ctx, work.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading ManifestWork back: %v", err)
	}
	if len(gotWork.Spec.Workload.Manifests) != 1 || !strings.Contains(string(gotWork.Spec.Workload.Manifests[0].Raw), `"greeting":"hello"`) {
		t.Errorf("ManifestWork manifests = %s, want the hello ConfigMap", manifestsJSON(gotWork))
	}
	if gotWork.Annotations["open-cluster-management.io/config-spec-hash"] != work.Annotations["open-cluster-management.io/config-spec-hash"] {
		t.Errorf("ManifestWork annotations = %v, want the config-spec-hash kept", gotWork.Annotations)
	}

	// Status is a subresource, as the work agent and our health checks rely on.
	gotWork.Status.Conditions = []metav1.Condition{{
		Type: workv1.WorkApplied, Status: metav1.ConditionTrue, Reason: "AppliedManifestWorkComplete",
		ObservedGeneration: gotWork.Generation, LastTransitionTime: metav1.Now(),
	}}
	if _, err := c.Work.WorkV1().ManifestWorks("api-cluster1").UpdateStatus(ctx, gotWork, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating ManifestWork status: %v", err)
	}
	gotWork, err = c.Work.WorkV1().ManifestWorks("api-cluster1").Get(ctx, work.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !conditionTrue(gotWork.Status.Conditions, workv1.WorkApplied) || gotWork.Generation != 1 {
		t.Errorf("ManifestWork status = %+v at generation %d, want Applied=True at generation 1", gotWork.Status.Conditions, gotWork.Generation)
	}

	// The API server validates against the CRD schema: a CMA with an unknown install strategy type
	// is refused.
	bad := cma.DeepCopy()
	bad.Name = "bad-strategy"
	bad.Spec.InstallStrategy.Type = "Sometimes"
	if _, err := c.Addon.AddonV1alpha1().ClusterManagementAddOns().Create(ctx, bad, metav1.CreateOptions{}); err == nil {
		t.Errorf("creating a CMA with installStrategy.type Sometimes succeeded, want a validation error")
	}
}

// TestPlacementHelpers builds a placement with a canary group and checks that its decisions are
// what OCM's own rollout code (sdk-go's PlacementDecisionClustersTracker) reads, and that the
// helpers are idempotent.
func TestPlacementHelpers(t *testing.T) {
	h := localhub.ForTest(t)
	ctx := ctxFor(t)
	c := h.Clients
	const ns = "placement-helpers"

	if err := localhub.EnsureClusterSet(ctx, c, "fleet", ns); err != nil {
		t.Fatal(err)
	}
	var all []string
	for i := 1; i <= 5; i++ {
		name := fmt.Sprintf("ph-cluster%d", i)
		all = append(all, name)
		if _, err := localhub.EnsureManagedCluster(ctx, c, name, map[string]string{clusterv1beta2.ClusterSetLabel: "fleet"}); err != nil {
			t.Fatal(err)
		}
	}
	p, err := localhub.EnsurePlacement(ctx, c, &clusterv1beta1.Placement{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main"},
		Spec:       clusterv1beta1.PlacementSpec{ClusterSets: []string{"fleet"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	groups := []localhub.DecisionGroup{
		{Name: "canary", Clusters: []string{"ph-cluster1"}},
		{Clusters: []string{"ph-cluster5", "ph-cluster3", "ph-cluster2", "ph-cluster4"}},
	}
	if err := localhub.SetPlacementDecisions(ctx, c, ns, "main", groups); err != nil {
		t.Fatal(err)
	}

	// Read the groups the way OCM's rollout handler does.
	tracker := sdkclusterv1beta1.NewPlacementDecisionClustersTrackerWithGroups(p, decisionGetter{c.Cluster.ClusterV1beta1()}, nil)
	if err := tracker.Refresh(); err != nil {
		t.Fatalf("sdk-go tracker: %v", err)
	}
	gotGroups := tracker.ExistingClusterGroupsBesides()
	wantGroups := sdkclusterv1beta1.ClusterGroupsMap{
		{GroupName: "canary", GroupIndex: 0}: sets.New("ph-cluster1"),
		{GroupName: "", GroupIndex: 1}:       sets.New("ph-cluster2", "ph-cluster3", "ph-cluster4", "ph-cluster5"),
	}
	if fmt.Sprint(gotGroups) != fmt.Sprint(wantGroups) {
		t.Errorf("groups read by sdk-go = %v, want %v", gotGroups, wantGroups)
	}

	before := decisionVersions(t, ctx, h, ns, "main")
	if want := []string{"main-decision-1", "main-decision-2"}; fmt.Sprint(keys(before)) != fmt.Sprint(want) {
		t.Errorf("PlacementDecisions = %v, want %v", keys(before), want)
	}
	placementBefore := placementVersion(t, ctx, h, ns, "main")

	// Same input again: nothing is written.
	if _, err := localhub.EnsurePlacement(ctx, c, &clusterv1beta1.Placement{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main"},
		Spec:       clusterv1beta1.PlacementSpec{ClusterSets: []string{"fleet"}},
	}); err != nil {
		t.Fatal(err)
	}
	if err := localhub.SetPlacementDecisions(ctx, c, ns, "main", groups); err != nil {
		t.Fatal(err)
	}
	for _, name := range all {
		if _, err := localhub.EnsureManagedCluster(ctx, c, name, map[string]string{clusterv1beta2.ClusterSetLabel: "fleet"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := localhub.EnsureClusterSet(ctx, c, "fleet", ns); err != nil {
		t.Fatal(err)
	}
	if after := decisionVersions(t, ctx, h, ns, "main"); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("second SetPlacementDecisions rewrote decisions: resourceVersions %v, then %v", before, after)
	}
	if after := placementVersion(t, ctx, h, ns, "main"); after != placementBefore {
		t.Errorf("second EnsurePlacement/SetPlacementDecisions rewrote the placement: resourceVersion %s, then %s", placementBefore, after)
	}

	gotP, err := c.Cluster.ClusterV1beta1().Placements(ns).Get(ctx, "main", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if gotP.Status.NumberOfSelectedClusters != 5 || len(gotP.Status.DecisionGroups) != 2 ||
		gotP.Status.DecisionGroups[0].DecisionGroupName != "canary" || gotP.Status.DecisionGroups[1].ClustersCount != 4 {
		t.Errorf("Placement status = %+v, want 5 clusters in groups canary(1) and (4)", gotP.Status)
	}

	// One group only: the second decision goes away.
	if err := localhub.SetPlacementDecisions(ctx, c, ns, "main", []localhub.DecisionGroup{{Clusters: all}}); err != nil {
		t.Fatal(err)
	}
	after := decisionVersions(t, ctx, h, ns, "main")
	if want := []string{"main-decision-1"}; fmt.Sprint(keys(after)) != fmt.Sprint(want) {
		t.Errorf("PlacementDecisions after regrouping = %v, want %v", keys(after), want)
	}
	d, err := c.Cluster.ClusterV1beta1().PlacementDecisions(ns).Get(ctx, "main-decision-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Labels[clusterv1beta1.DecisionGroupIndexLabel] != "0" || d.Labels[clusterv1beta1.DecisionGroupNameLabel] != "" || len(d.Status.Decisions) != 5 {
		t.Errorf("main-decision-1 = labels %v, %d decisions; want group 0 (unnamed) with 5", d.Labels, len(d.Status.Decisions))
	}

	// Decisions for a placement that does not exist: a clear error.
	err = localhub.SetPlacementDecisions(ctx, c, ns, "missing", nil)
	if err == nil || !strings.Contains(err.Error(), "placement-helpers/missing") {
		t.Errorf("SetPlacementDecisions for a missing placement: err = %v, want one naming it", err)
	}
}

// TestKubeconfigWorksInAnotherProcess starts a separate process (this test binary in child mode)
// that reaches the hub only through the kubeconfig file, as OCM's agents and the controller do.
func TestKubeconfigWorksInAnotherProcess(t *testing.T) {
	h := localhub.ForTest(t)
	ctx := ctxFor(t)
	if _, err := localhub.EnsureManagedCluster(ctx, h.Clients, "kubeconfig-cluster", nil); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), kubeconfigChildEnv+"="+h.Kubeconfig)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child process using %s: %v\n%s", h.Kubeconfig, err, out)
	}
	if !strings.Contains(string(out), "managedcluster kubeconfig-cluster") {
		t.Errorf("child process output = %q, want it to list managedcluster kubeconfig-cluster", out)
	}
}

// TestStopLeavesNothingRunning starts a hub of its own (not the shared one), stops it twice and
// checks that both processes are gone and the directory removed.
func TestStopLeavesNothingRunning(t *testing.T) {
	ctx := ctxFor(t)
	h, err := localhub.Start(ctx, localhub.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = h.Stop()
		}
	})
	t.Logf("second hub started in %s", h.StartDuration.Round(time.Millisecond))
	pids := h.PIDs()
	if len(pids) != 2 {
		t.Fatalf("PIDs() = %v, want etcd and kube-apiserver", pids)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err != nil {
			t.Fatalf("process %d not running before Stop: %v", pid, err)
		}
	}
	if _, err := h.Clients.Kube.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("hub not serving before Stop: %v", err)
	}

	if err := h.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	stopped = true
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d after Stop: kill(pid, 0) = %v, want ESRCH (no such process)", pid, err)
		}
	}
	if _, err := os.Stat(h.Dir); !os.IsNotExist(err) {
		t.Errorf("hub directory %s after Stop: stat err = %v, want not exist", h.Dir, err)
	}
	if err := h.Stop(); err != nil {
		t.Errorf("second Stop: %v, want nil", err)
	}
}

// BenchmarkStartStop measures a hub's start (processes, CRDs Established) and stop. Run with
// -benchtime=3x: each iteration takes seconds.
func BenchmarkStartStop(b *testing.B) {
	for b.Loop() {
		h, err := localhub.Start(context.Background(), localhub.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(h.StartDuration.Seconds(), "start-s")
		if err := h.Stop(); err != nil {
			b.Fatal(err)
		}
	}
}

func conditionTrue(conds []metav1.Condition, t string) bool {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

func manifestsJSON(w *workv1.ManifestWork) string {
	var parts []string
	for _, m := range w.Spec.Workload.Manifests {
		parts = append(parts, string(m.Raw))
	}
	return strings.Join(parts, ", ")
}

func decisionVersions(t *testing.T, ctx context.Context, h *localhub.Hub, ns, placement string) map[string]string {
	t.Helper()
	list, err := h.Clients.Cluster.ClusterV1beta1().PlacementDecisions(ns).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{clusterv1beta1.PlacementLabel: placement}).String(),
	})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range list.Items {
		out[d.Name] = d.ResourceVersion
	}
	return out
}

func placementVersion(t *testing.T, ctx context.Context, h *localhub.Hub, ns, name string) string {
	t.Helper()
	p, err := h.Clients.Cluster.ClusterV1beta1().Placements(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p.ResourceVersion
}

func keys(m map[string]string) []string {
	return sets.List(sets.KeySet(m))
}
