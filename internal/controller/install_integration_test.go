//go:build integration

package controller

import (
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/rolloutplan"
)

// waitEvent waits for a warning event on the test's CMA with reason and a message containing msg.
func (e *env) waitEvent(timeout time.Duration, reason, msg string) {
	e.t.Helper()
	e.waitCMAEvent(timeout, "Warning "+reason+":", msg)
}

// userMCA creates an MCA as a user or GitOps would: no label, no owner.
func (e *env) userMCA(short, installNamespace string) {
	e.t.Helper()
	_, err := e.c.Addon.AddonV1alpha1().ManagedClusterAddOns(e.cluster(short)).Create(e.ctx, &addonv1alpha1.ManagedClusterAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: e.name, Namespace: e.cluster(short), Labels: map[string]string{"app.kubernetes.io/instance": "gitops"}},
		Spec:       addonv1alpha1.ManagedClusterAddOnSpec{InstallNamespace: installNamespace},
	}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) mcaExists(short string) bool {
	e.t.Helper()
	_, err := e.c.Addon.AddonV1alpha1().ManagedClusterAddOns(e.cluster(short)).Get(e.ctx, e.name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		e.t.Fatal(err)
	}
	return err == nil
}

// A placement that does not exist is reported (condition and event), waits, does not block the
// others and does not cost its clusters their MCAs.
func TestMissingPlacement(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	e.ensureClusters("c1", "c2")
	e.adc("cfg-a", "a")
	e.adc("cfg-b", "b")
	e.placement("p1", [][]string{{"c1"}})
	e.cma(nil, install{placement: "p1", config: "cfg-a", strategy: allStrategy}, install{placement: "p2", config: "cfg-a", strategy: allStrategy})
	// Within the grace p2 is Progressing (rolloutplan's TestMissingPlacementGrace); after it,
	// Degraded with a warning.
	e.startController(Options{PlacementGrace: 2 * time.Second})
	e.waitInstalled(30*time.Second, "cfg-a", "c1")
	e.waitProgression(10*time.Second, "p2", addonstatus.ReasonPlacementNotFound, "Placement "+e.name+"/p2 not found")
	e.waitEvent(10*time.Second, addonstatus.ReasonPlacementNotFound, "p2 not found")

	// It appears: its clusters get the add-on.
	e.placement("p2", [][]string{{"c2"}})
	e.waitInstalled(30*time.Second, "cfg-a", "c1", "c2")
	e.waitProgression(10*time.Second, "p2", addonstatus.ReasonInstallSucceed, "1/1 install completed")

	// It disappears (with its decisions, as the garbage collector would do): c2 keeps its MCA and
	// configs, p1 goes on with an upgrade.
	if err := e.c.Cluster.ClusterV1beta1().Placements(e.name).Delete(e.ctx, "p2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Cluster.ClusterV1beta1().PlacementDecisions(e.name).DeleteCollection(e.ctx, metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: clusterv1beta1.PlacementLabel + "=p2"}); err != nil {
		t.Fatal(err)
	}
	e.waitProgression(10*time.Second, "p2", addonstatus.ReasonPlacementNotFound, "not found")
	e.setConfig("p1", "cfg-b")
	e.setConfig("p2", "cfg-b")
	e.waitCluster(30*time.Second, "c1", "cfg-b/cfg-b/True/UpgradeSucceed")
	e.holds(time.Second, "c2 of the missing placement stays", func() string {
		if !e.mcaExists("c2") {
			return "the MCA of a cluster of the missing placement was deleted"
		}
		if got := state(e.rec.mca(e.cluster("c2"))); got != "cfg-a/cfg-a/True/InstallSucceed" {
			return fmt.Sprintf("c2 of the missing placement moved: %s", got)
		}
		return ""
	})
}

// A config that does not exist is named in a condition and an event; that placement waits, nothing
// crash-loops, and it proceeds once the config exists.
func TestMissingConfig(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	e.ensureClusters("c1", "c2")
	e.adc("cfg-a", "a")
	e.placement("p1", [][]string{{"c1"}})
	e.placement("p2", [][]string{{"c2"}})
	e.cma(nil, install{placement: "p1", config: "cfg-later", strategy: allStrategy}, install{placement: "p2", config: "cfg-a", strategy: allStrategy})
	e.startController(Options{})
	e.waitInstalled(30*time.Second, "cfg-a", "c2")
	want := "config addondeploymentconfigs.addon.open-cluster-management.io " + e.name + "/cfg-later not found"
	e.waitProgression(10*time.Second, "p1", addonstatus.ReasonConfigurationNotFound, want)
	e.waitEvent(10*time.Second, addonstatus.ReasonConfigurationNotFound, want)
	if got := state(e.rec.mca(e.cluster("c1"))); got != "-/-/-/-" {
		t.Fatalf("c1 was configured without its config: %s", got)
	}
	e.adc("cfg-later", "x")
	e.waitInstalled(30*time.Second, "cfg-later", "c1")
	e.waitProgression(10*time.Second, "p1", addonstatus.ReasonInstallSucceed, "1/1 install completed")
}

// MCAs created by a user or by GitOps are never deleted and their spec is never changed; only the
// MCAs this controller created follow the placements.
func TestGitOpsMCAKept(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	e.ensureClusters("c1", "c2", "x")
	e.adc("cfg-a", "a")
	e.placement("p", [][]string{{"c1", "c2"}})
	e.userMCA("c1", "custom-ns") // selected: adopted as is
	e.userMCA("x", "")           // not selected: kept
	e.cma(nil, install{placement: "p", config: "cfg-a", strategy: allStrategy})
	e.startController(Options{})
	e.waitInstalled(30*time.Second, "cfg-a", "c1", "c2")
	// Not selected, kept, and deployed with the defaults: no config at all here.
	e.waitCluster(10*time.Second, "x", "-/-/True/InstallSucceed")

	user := e.rec.mca(e.cluster("c1"))
	if user.Spec.InstallNamespace != "custom-ns" || len(user.OwnerReferences) != 0 || user.Labels[rolloutplan.CreatedByLabel] != "" {
		t.Fatalf("user MCA modified: spec %+v owners %v labels %v", user.Spec, user.OwnerReferences, user.Labels)
	}
	if ours := e.rec.mca(e.cluster("c2")); ours.Labels[rolloutplan.CreatedByLabel] != rolloutplan.CreatedByValue {
		t.Fatalf("our MCA not labelled: %v", ours.Labels)
	}

	e.decide("p", [][]string{{}})
	e.waitFor(30*time.Second, "our MCA of c2 deleted", func() bool { return !e.mcaExists("c2") })
	e.holds(time.Second, "the user MCAs stay", func() string {
		if c1, x := e.mcaExists("c1"), e.mcaExists("x"); !c1 || !x {
			return fmt.Sprintf("a user MCA was deleted (c1 %v, x %v)", c1, x)
		}
		return ""
	})
}

// A ManagedCluster being deleted loses its MCAs, whoever created them, and gets no new one.
func TestClusterDeletion(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	e.ensureClusters("c1", "c2")
	e.adc("cfg-a", "a")
	e.placement("p", [][]string{{"c1", "c2"}})
	e.cma(nil, install{placement: "p", config: "cfg-a", strategy: allStrategy})
	e.startController(Options{})
	e.waitInstalled(30*time.Second, "cfg-a", "c1", "c2")

	clusters := e.c.Cluster.ClusterV1().ManagedClusters()
	mc, err := clusters.Get(e.ctx, e.cluster("c1"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mc.Finalizers = append(mc.Finalizers, "test.addonops.io/hold")
	if _, err := clusters.Update(e.ctx, mc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if mc, err := clusters.Get(e.ctx, e.cluster("c1"), metav1.GetOptions{}); err == nil {
			mc.Finalizers = nil
			_, _ = clusters.Update(e.ctx, mc, metav1.UpdateOptions{})
		}
	})
	if err := clusters.Delete(e.ctx, e.cluster("c1"), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The placement still selects c1 (no placement controller here): the deletion alone decides.
	e.waitFor(30*time.Second, "c1's MCA deleted", func() bool { return !e.mcaExists("c1") })
	e.holds(time.Second, "no MCA for the cluster being deleted, c2's kept", func() string {
		if e.mcaExists("c1") {
			return "an MCA was recreated for a cluster being deleted"
		}
		if !e.mcaExists("c2") {
			return "c2's MCA was deleted"
		}
		return ""
	})
}

// Manual: no MCA is created or deleted; MCAs that exist get the default configs at once.
func TestManualStrategy(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	e.ensureClusters("c1", "c2")
	e.adc("cfg-d", "d")
	e.placement("p", [][]string{{"c1", "c2"}})
	e.userMCA("c2", "")
	e.cma(nil)
	e.updateCMA(func(cma *addonv1alpha1.ClusterManagementAddOn) {
		cma.Spec.SupportedConfigs[0].DefaultConfig = &addonv1alpha1.ConfigReferent{Namespace: e.name, Name: "cfg-d"}
		cma.Spec.InstallStrategy = addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyManual,
			Placements: []addonv1alpha1.PlacementStrategy{e.placementStrategy(install{placement: "p", strategy: allStrategy})}}
	})
	e.startController(Options{})
	e.waitStates(30*time.Second, map[string]string{"c2": "cfg-d/cfg-d/True/InstallSucceed"})
	e.waitFor(10*time.Second, "defaultconfigReferences", func() bool {
		cma, err := e.c.Addon.AddonV1alpha1().ClusterManagementAddOns().Get(e.ctx, e.name, metav1.GetOptions{})
		return err == nil && len(cma.Status.DefaultConfigReferences) == 1 && cma.Status.DefaultConfigReferences[0].DesiredConfig.Name == "cfg-d" &&
			cma.Status.DefaultConfigReferences[0].DesiredConfig.SpecHash != "" && len(cma.Status.InstallProgressions) == 0
	})
	e.holds(time.Second, "no MCA under the Manual strategy", func() string {
		if e.mcaExists("c1") {
			return "Manual strategy created an MCA"
		}
		return ""
	})
}

// Only CMAs annotated addon.open-cluster-management.io/lifecycle (except "addon-manager") are
// managed by default; --addons=all manages every CMA.
func TestLifecycleAnnotationFilter(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	e.ensureClusters("c1")
	e.adc("cfg-a", "a")
	e.placement("p", [][]string{{"c1"}})
	e.cma(map[string]string{}, install{placement: "p", config: "cfg-a", strategy: allStrategy})
	stop := e.startController(Options{})
	e.holds(2*time.Second, "a CMA without the lifecycle annotation left alone", func() string {
		if e.mcaExists("c1") || e.rec.cma() != nil && len(e.rec.cma().Status.InstallProgressions) > 0 {
			return "a CMA without the lifecycle annotation was managed"
		}
		return ""
	})
	e.updateCMA(func(cma *addonv1alpha1.ClusterManagementAddOn) {
		cma.Annotations = map[string]string{addonv1alpha1.AddonLifecycleAnnotationKey: addonv1alpha1.AddonLifecycleAddonManagerAnnotationValue,
			rolloutplan.HealthSoakAnnotation: "0s"}
	})
	e.holds(2*time.Second, "a CMA annotated lifecycle: addon-manager left alone", func() string {
		if e.mcaExists("c1") {
			return `a CMA annotated lifecycle: addon-manager was managed`
		}
		return ""
	})
	stop()

	e.startController(Options{Addons: AddonsAll})
	e.waitInstalled(30*time.Second, "cfg-a", "c1")
	e.waitProgression(10*time.Second, "p", addonstatus.ReasonInstallSucceed, "1/1 install completed")
}
