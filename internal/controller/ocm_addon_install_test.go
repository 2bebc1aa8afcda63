//go:build integration

package controller

// Port of OCM v1.2.1's test/integration/addon/addon_manager_install_test.go, Describe "Addon
// install", Context "Addon install strategy" (see ocm_addon_upgrade_test.go for the whole port and
// its tally).

import (
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
)

// TestOCMAddonInstall ports It "Should create/delete mca correctly by placement": a Manual CMA
// switched to a placement creates the MCAs of the clusters it selects, deletes the MCA of a
// cluster it no longer selects, and creates again an MCA someone deleted.
func TestOCMAddonInstall(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noAgent: true})
	// BeforeEach: a Manual CMA, four clusters.
	e.createOCMCMA(addonv1alpha1.ClusterManagementAddOnSpec{InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyManual}})
	e.startController(Options{Addons: AddonsAll})
	e.ocm("CMA has no lifecycle annotation", e.noLifecycleAnnotation)
	e.ensureClusters("0", "1", "2", "3")
	c := e.clusters("0", "1", "2", "3")

	e.placement("test-placement", [][]string{{"0", "1"}})
	e.updateCMA(func(cma *addonv1alpha1.ClusterManagementAddOn) {
		cma.Spec.InstallStrategy = addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyPlacements,
			Placements: []addonv1alpha1.PlacementStrategy{{
				PlacementRef:    addonv1alpha1.PlacementRef{Namespace: e.name, Name: "test-placement"},
				RolloutStrategy: clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All},
			}}}
	})
	e.ocm("MCAs of the selected clusters created", e.mcasAre(c, c[0], c[1]))

	// The decision changes: cluster 0 leaves, cluster 2 joins.
	e.decide("test-placement", [][]string{{"1", "2"}})
	e.ocm("MCA of the cluster that joined created, of the one that left deleted", e.mcasAre(c, c[1], c[2]))

	// "delete an addon and ensure it is recreated"
	if err := e.c.Addon.AddonV1alpha1().ManagedClusterAddOns(c[1]).Delete(e.ctx, e.name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.ocm("deleted MCA created again", e.mcasAre(c, c[1], c[2]))
}

// mcasAre checks that, among clusters, exactly the clusters in want have the add-on's MCA (one
// that is being deleted does not count).
func (e *env) mcasAre(clusters []string, want ...string) func() error {
	return func() error {
		for _, cl := range clusters {
			mca, err := e.getMCA(cl)
			if err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			has := err == nil && mca.DeletionTimestamp == nil
			wanted := false
			for _, w := range want {
				wanted = wanted || w == cl
			}
			switch {
			case wanted && !has:
				return fmt.Errorf("cluster %s has no MCA %s", cl, e.name)
			case !wanted && has:
				return fmt.Errorf("cluster %s still has MCA %s", cl, e.name)
			}
		}
		return nil
	}
}
