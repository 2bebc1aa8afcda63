//go:build integration

package templatedeploy_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/addonops/addonops/internal/operations"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/localhub"
)

// A new MCA's registration declaration (supportedConfigs, health mode Customized, Available
// Unknown) waits for the MCA's next write to go with (statuswrite.Writer.Defer), usually the
// rollout's desired configs. When the cluster's rollout turn does not come (here: its placement
// is paused) it is not kept back: it goes with the rollout's Configured=False, or is written by
// itself once it has waited the hold (15 s; TestWriterDefer covers that write).
func TestDeclarationWithoutRolloutTurn(t *testing.T) {
	const addon, cluster, ns = "declared", "declared1", "declared-placements"
	e := newEnv(t, addon, envOptions{})
	for _, n := range []string{cluster, ns} {
		if err := localhub.EnsureNamespace(e.ctx, e.c.Kube, n); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := localhub.EnsureManagedCluster(e.ctx, e.c, cluster, nil); err != nil {
		t.Fatal(err)
	}
	e.cleanup(cluster)
	e.apply(agentTemplate("declared-v1", addon, "1", ""))
	if _, err := localhub.EnsurePlacement(e.ctx, e.c, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "all"}}); err != nil {
		t.Fatal(err)
	}
	e.cma("declared-v1", "", addonv1alpha1.PlacementStrategy{
		PlacementRef:    addonv1alpha1.PlacementRef{Namespace: ns, Name: "all"},
		RolloutStrategy: clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All},
	})
	// Paused before the placement decides: the cluster's MCA is created, its configs are not told.
	cmas := e.c.Addon.AddonV1alpha1().ClusterManagementAddOns()
	cma, err := cmas.Get(e.ctx, addon, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cma.Annotations[operations.PauseAnnotation] = "*"
	if _, err := cmas.Update(e.ctx, cma, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The controller's cache shows the pause before the decision: nothing of the controller's
	// shows when its cache has the annotation, so a time well over a watch's delivery passes.
	harness.Pass(time.Second)
	if err := localhub.SetPlacementDecisions(e.ctx, e.c, ns, "all", []localhub.DecisionGroup{{Clusters: []string{cluster}}}); err != nil {
		t.Fatal(err)
	}
	e.waitFor(30*time.Second, "the MCA", func() string {
		if e.getMCA(cluster) == nil {
			return "no MCA yet"
		}
		return ""
	})
	created := e.getMCA(cluster).CreationTimestamp.Time

	wantSupported := []addonv1alpha1.ConfigGroupResource{
		{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"},
		{Group: addonv1alpha1.GroupName, Resource: "addontemplates"},
	}
	e.waitFor(45*time.Second, "the declaration", func() string {
		m := e.getMCA(cluster)
		if diff := cmp.Diff(wantSupported, m.Status.SupportedConfigs); diff != "" {
			return "supportedConfigs (-want +got):\n" + diff
		}
		if m.Status.HealthCheck.Mode != addonv1alpha1.HealthCheckModeCustomized {
			return fmt.Sprintf("healthCheck.mode %q", m.Status.HealthCheck.Mode)
		}
		if c := meta.FindStatusCondition(m.Status.Conditions, "Available"); c == nil || c.Status != metav1.ConditionUnknown {
			return fmt.Sprintf("Available %v", c)
		}
		return ""
	})
	m := e.getMCA(cluster)
	for _, r := range m.Status.ConfigReferences {
		if r.DesiredConfig != nil {
			t.Fatalf("the paused placement told the cluster %s/%s: the test no longer shows a declaration written by itself", r.Resource, r.DesiredConfig.Name)
		}
	}
	t.Logf("declaration written %v after the MCA was created (whole seconds), with no desired config; Configured: %s",
		time.Since(created).Round(time.Second), condition(m, "Configured"))
}
