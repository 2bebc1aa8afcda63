//go:build integration

package health

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/controller"
	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/operations"
	"github.com/addonops/addonops/internal/spechash"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/rolloutsim"
	"github.com/addonops/addonops/internal/testing/simagent"
)

// capturedMarker separates the hand-written tests of a health_test.yaml from the entries this test
// writes for objects captured from the controller.
const capturedMarker = "# --- captured from a controller run: go test ./health -run TestCapturedFromController -update; do not edit below ---"

var (
	cmaGVR  = addonv1alpha1.SchemeGroupVersion.WithResource("clustermanagementaddons")
	mcaGVR  = addonv1alpha1.SchemeGroupVersion.WithResource("managedclusteraddons")
	workGVR = workv1.SchemeGroupVersion.WithResource("manifestworks")
)

// kindDirs are the customization directories per resource.
var kindDirs = map[schema.GroupVersionResource]string{
	cmaGVR:  "addon.open-cluster-management.io/ClusterManagementAddOn",
	mcaGVR:  "addon.open-cluster-management.io/ManagedClusterAddOn",
	workGVR: "work.open-cluster-management.io/ManifestWork",
}

// capture is one object at one phase of the run, with the health every check must give it.
type capture struct {
	phase, label string
	gvr          schema.GroupVersionResource
	namespace    string
	name         string
	want         string // Healthy, Progressing, Degraded
	// ready, when set, must hold too before the object is taken (a state the rollout passes
	// through on its way, e.g. the add-on manager has rendered the new version).
	ready func(*unstructured.Unstructured) bool
}

func (c capture) file() string {
	return filepath.Join(customizations, kindDirs[c.gvr], "testdata", "captured-"+c.phase+"-"+c.label+".yaml")
}

// TestCapturedFromController runs addonops' controller on a real API server with simulated
// clusters through an install (one cluster's agent slow), a progressive upgrade (Git synced before
// the controller saw it, one cluster in flight, then one cluster failing, which stops the rollout),
// a fix-forward to a new version that completes, an upgrade that fails on its first cluster
// (maxFailures 0) and is reverted in Git (a rollback, caught under way and done), an upgrade whose
// add-on stays unhealthy after its works applied, a ManagedClusterAddOn whose own config does not
// exist, a version the add-on manager cannot render, the switch to install strategy Manual, an
// add-on whose placement and config do not exist, and an add-on gated by a canary placement that
// does not exist. At each phase it takes the ClusterManagementAddOn, ManagedClusterAddOns and
// ManifestWorks the controller and the simulated agents wrote, checks the Lua scripts, the Flux
// expressions and the status command's verdicts on them, and compares them with the captured
// testdata (normalized: no UIDs, resource versions or timestamps). With -update it rewrites that testdata
// and the captured entries of the health_test.yaml files; the Argo CD tests then run on them like
// on the hand-written ones. So the health checks and the controller cannot drift apart unnoticed.
func TestCapturedFromController(t *testing.T) {
	hub := localhub.ForTest(t)
	// A missing Placement is Degraded after a grace: a second here, so that the capture below
	// waits for that, not for the default 30s.
	s := rolloutsim.NewWith(t, hub, "hello", rolloutsim.Options{Controller: controller.Options{PlacementGrace: time.Second}})
	clusters := []string{"cluster1", "cluster2", "cluster3"}
	s.Clusters(clusters...)
	s.Placement("all", clusters...)
	strategy := clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.Progressive, Progressive: &clusterv1alpha1.RolloutProgressive{MaxConcurrency: intstr.FromInt32(1)}}
	checks, err := LoadFluxChecks(fluxExample)
	if err != nil {
		t.Fatal(err)
	}
	var taken []capture
	take := func(cs ...capture) {
		t.Helper()
		for _, c := range cs {
			takeOne(t, s, checks, c)
			taken = append(taken, c)
		}
	}
	// Install: cluster3's agent does not answer yet.
	v1 := s.Config("hello-config", "v1")
	s.Outcome("cluster3", v1, simagent.Never)
	s.CMA(rolloutsim.Install{Placement: "all", Config: v1, Strategy: strategy})
	s.WaitCMA(time.Minute, "install 2/3 done", func(cma *addonv1alpha1.ClusterManagementAddOn) bool {
		r, m := rolloutsim.Progressing(cma, "all")
		return r == addonstatus.ReasonInstalling && strings.Contains(m, "2/3 clusters done, 1 in progress")
	})
	take(
		capture{phase: "install-in-progress", label: "cma", gvr: cmaGVR, name: "hello", want: "Progressing"},
		capture{phase: "install-in-progress", label: "cluster1", gvr: mcaGVR, namespace: "cluster1", name: "hello", want: "Healthy"},
		capture{phase: "install-in-progress", label: "cluster3", gvr: mcaGVR, namespace: "cluster3", name: "hello", want: "Progressing"},
		capture{phase: "install-in-progress", label: "cluster1", gvr: workGVR, namespace: "cluster1", name: "addon-hello-deploy-0", want: "Healthy"},
		capture{phase: "install-in-progress", label: "cluster3", gvr: workGVR, namespace: "cluster3", name: "addon-hello-deploy-0", want: "Progressing"},
	)

	// cluster3's agent answers: the install completes.
	s.Outcome("cluster3", v1, simagent.Succeed)
	s.Poke("cluster3")
	s.WaitCMA(time.Minute, "install complete", func(cma *addonv1alpha1.ClusterManagementAddOn) bool {
		r, _ := rolloutsim.Progressing(cma, "all")
		return r == addonstatus.ReasonInstallSucceed
	})
	take(
		capture{phase: "install-succeeded", label: "cma", gvr: cmaGVR, name: "hello", want: "Healthy"},
		capture{phase: "install-succeeded", label: "cluster3", gvr: mcaGVR, namespace: "cluster3", name: "hello", want: "Healthy"},
		capture{phase: "install-succeeded", label: "cluster3", gvr: workGVR, namespace: "cluster3", name: "addon-hello-deploy-0", want: "Healthy"},
	)

	// Upgrade to v2, synced by GitOps while the controller is down: the spec names v2, the status
	// still reports v1 as done.
	s.StopController()
	v2 := s.Config("hello-config", "v2")
	s.Outcome("cluster1", v2, simagent.Never)
	s.Outcome("cluster2", v2, simagent.Fail)
	s.CMA(rolloutsim.Install{Placement: "all", Config: v2, Strategy: strategy})
	take(capture{phase: "upgrade-synced-before-controller", label: "cma", gvr: cmaGVR, name: "hello", want: "Progressing"})
	s.StartController()

	// The controller moves cluster1 first (maxConcurrency 1); its agent does not answer yet.
	s.WaitCMA(time.Minute, "upgrade 0/3 done, 1 in progress", func(cma *addonv1alpha1.ClusterManagementAddOn) bool {
		r, m := rolloutsim.Progressing(cma, "all")
		return r == addonstatus.ReasonUpgrading && strings.Contains(m, "0/3 clusters done, 1 in progress")
	})
	take(
		capture{phase: "upgrading", label: "cma", gvr: cmaGVR, name: "hello", want: "Progressing"},
		capture{phase: "upgrading", label: "cluster1", gvr: mcaGVR, namespace: "cluster1", name: "hello", want: "Progressing"},
		capture{phase: "upgrading", label: "cluster2", gvr: mcaGVR, namespace: "cluster2", name: "hello", want: "Progressing"},
		capture{phase: "upgrading", label: "cluster1", gvr: workGVR, namespace: "cluster1", name: "addon-hello-deploy-0", want: "Progressing",
			ready: func(u *unstructured.Unstructured) bool { return u.GetGeneration() == 2 }},
	)

	// cluster1 succeeds; cluster2's agent fails to apply v2: with maxFailures 0 the upgrade stops.
	s.Outcome("cluster1", v2, simagent.Succeed)
	s.Poke("cluster1")
	s.WaitCMA(time.Minute, "upgrade failed", func(cma *addonv1alpha1.ClusterManagementAddOn) bool {
		r, _ := rolloutsim.Progressing(cma, "all")
		return r == addonstatus.ReasonUpgradeFailed
	})
	take(
		capture{phase: "upgrade-failed", label: "cma", gvr: cmaGVR, name: "hello", want: "Degraded"},
		capture{phase: "upgrade-failed", label: "cluster2", gvr: mcaGVR, namespace: "cluster2", name: "hello", want: "Degraded"},
		capture{phase: "upgrade-failed", label: "cluster3", gvr: mcaGVR, namespace: "cluster3", name: "hello", want: "Progressing"},
		capture{phase: "upgrade-failed", label: "cluster2", gvr: workGVR, namespace: "cluster2", name: "addon-hello-deploy-0", want: "Degraded"},
	)

	// Fix forward with v3: every cluster takes it and the rollout completes.
	v3 := s.Config("hello-config", "v3")
	s.CMA(rolloutsim.Install{Placement: "all", Config: v3, Strategy: strategy})
	s.WaitCMA(2*time.Minute, "upgrade to v3 complete", func(cma *addonv1alpha1.ClusterManagementAddOn) bool {
		r, _ := rolloutsim.Progressing(cma, "all")
		return r == addonstatus.ReasonUpgradeSucceed && desires(cma, v3)
	})
	take(
		capture{phase: "upgrade-fixed-forward", label: "cma", gvr: cmaGVR, name: "hello", want: "Healthy"},
		capture{phase: "upgrade-fixed-forward", label: "cluster2", gvr: mcaGVR, namespace: "cluster2", name: "hello", want: "Healthy"},
		capture{phase: "upgrade-fixed-forward", label: "cluster2", gvr: workGVR, namespace: "cluster2", name: "addon-hello-deploy-0", want: "Healthy"},
	)

	// v4 fails on the first cluster it reaches (maxFailures 0): the upgrade stops, naming cluster1
	// and the cause.
	v4 := s.Config("hello-config", "v4")
	s.Outcome("cluster1", v4, simagent.Fail)
	s.CMA(rolloutsim.Install{Placement: "all", Config: v4, Strategy: strategy})
	s.WaitCMA(time.Minute, "upgrade to v4 failed", func(cma *addonv1alpha1.ClusterManagementAddOn) bool {
		r, _ := rolloutsim.Progressing(cma, "all")
		return r == addonstatus.ReasonUpgradeFailed && desires(cma, v4)
	})
	take(capture{phase: "upgrade-v4-failed", label: "cma", gvr: cmaGVR, name: "hello", want: "Degraded"})

	// Git reverts to v3, which every cluster ran successfully: a rollback. cluster1's agent does not
	// answer for v3 yet, so the rollback is caught under way; cluster2 and cluster3 never left v3.
	s.Outcome("cluster1", v3, simagent.Never)
	s.CMA(rolloutsim.Install{Placement: "all", Config: v3, Strategy: strategy})
	s.WaitCMA(time.Minute, "rolling back to v3", func(cma *addonv1alpha1.ClusterManagementAddOn) bool {
		r, m := rolloutsim.Progressing(cma, "all")
		return r == addonstatus.ReasonRollingBack && desires(cma, v3) && strings.Contains(m, "2/3 clusters done, 1 in progress")
	})
	take(
		capture{phase: "rolling-back", label: "cma", gvr: cmaGVR, name: "hello", want: "Progressing"},
		capture{phase: "rolling-back", label: "cluster1", gvr: mcaGVR, namespace: "cluster1", name: "hello", want: "Progressing"},
		capture{phase: "rolling-back", label: "cluster1", gvr: workGVR, namespace: "cluster1", name: "addon-hello-deploy-0", want: "Progressing",
			ready: func(u *unstructured.Unstructured) bool {
				return strings.Contains(fmt.Sprint(u.GetAnnotations()), specHashOf(s, v3))
			}},
	)

	// cluster1's agent answers: the rollback completes.
	s.Outcome("cluster1", v3, simagent.Succeed)
	s.Poke("cluster1")
	s.WaitCMA(time.Minute, "rollback to v3 complete", func(cma *addonv1alpha1.ClusterManagementAddOn) bool {
		r, _ := rolloutsim.Progressing(cma, "all")
		return r == addonstatus.ReasonRollbackSucceeded && desires(cma, v3)
	})
	take(
		capture{phase: "rollback-succeeded", label: "cma", gvr: cmaGVR, name: "hello", want: "Healthy"},
		capture{phase: "rollback-succeeded", label: "cluster1", gvr: mcaGVR, namespace: "cluster1", name: "hello", want: "Healthy"},
		capture{phase: "rollback-succeeded", label: "cluster2", gvr: mcaGVR, namespace: "cluster2", name: "hello", want: "Healthy"},
	)

	// v5's works apply on cluster1 but its agent never becomes ready: the upgrade waits for the
	// add-on's health (the default unhealthy deadline, 5m, is far away).
	v5 := s.Config("hello-config", "v5")
	s.Outcome("cluster1", v5, simagent.Unhealthy)
	s.CMA(rolloutsim.Install{Placement: "all", Config: v5, Strategy: strategy})
	s.WaitCMA(time.Minute, "upgrade to v5 waiting for cluster1's health", func(cma *addonv1alpha1.ClusterManagementAddOn) bool {
		r, m := rolloutsim.Progressing(cma, "all")
		return r == addonstatus.ReasonUpgrading && desires(cma, v5) && strings.Contains(m, "0/3 clusters done, 1 in progress")
	})
	take(
		capture{phase: "upgrade-unhealthy", label: "cma", gvr: cmaGVR, name: "hello", want: "Progressing"},
		capture{phase: "upgrade-unhealthy", label: "cluster1", gvr: mcaGVR, namespace: "cluster1", name: "hello", want: "Progressing",
			ready: func(u *unstructured.Unstructured) bool {
				return strings.Contains(fmt.Sprint(u.Object["status"]), "waiting for it to be healthy")
			}},
		capture{phase: "upgrade-unhealthy", label: "cluster1", gvr: workGVR, namespace: "cluster1", name: "addon-hello-deploy-0", want: "Healthy",
			ready: func(u *unstructured.Unstructured) bool {
				return strings.Contains(fmt.Sprint(u.GetAnnotations()), specHashOf(s, v5))
			}},
	)

	// cluster3's ManagedClusterAddOn names a config of its own that does not exist: it cannot be
	// configured, and the placement names it.
	setMCAConfigs(t, s, "cluster3", addonv1alpha1.AddOnConfig{
		ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"},
		ConfigReferent:      addonv1alpha1.ConfigReferent{Namespace: "hello", Name: "no-such-local-config"},
	})
	s.WaitCMA(time.Minute, "cluster3 cannot be configured", func(cma *addonv1alpha1.ClusterManagementAddOn) bool {
		_, m := rolloutsim.Progressing(cma, "all")
		return strings.Contains(m, "1 cannot be configured")
	})
	take(
		capture{phase: "mca-config-not-found", label: "cma", gvr: cmaGVR, name: "hello", want: "Progressing"},
		capture{phase: "mca-config-not-found", label: "cluster3", gvr: mcaGVR, namespace: "cluster3", name: "hello", want: "Degraded"},
	)

	// v6 cannot be rendered for cluster1 (the add-on manager reports ManifestApplied=False): the
	// upgrade fails at once, naming the deployer's error.
	v6 := s.Config("hello-config", "v6")
	s.Outcome("cluster1", v6, simagent.RenderError)
	s.CMA(rolloutsim.Install{Placement: "all", Config: v6, Strategy: strategy})
	s.WaitCMA(time.Minute, "upgrade to v6 failed on cluster1's render error", func(cma *addonv1alpha1.ClusterManagementAddOn) bool {
		r, m := rolloutsim.Progressing(cma, "all")
		return r == addonstatus.ReasonUpgradeFailed && desires(cma, v6) && strings.Contains(m, "ManifestApplied=False")
	})
	take(
		capture{phase: "render-error", label: "cma", gvr: cmaGVR, name: "hello", want: "Degraded"},
		capture{phase: "render-error", label: "cluster1", gvr: mcaGVR, namespace: "cluster1", name: "hello", want: "Degraded"},
	)

	// Install strategy Manual: nothing rolls out; the progressions stay as history (reason Manual).
	setManual(t, s)
	take(capture{phase: "manual", label: "cma", gvr: cmaGVR, name: "hello", want: "Healthy",
		ready: func(u *unstructured.Unstructured) bool {
			return strings.Contains(fmt.Sprint(u.Object["status"]), addonstatus.ReasonManual)
		}})

	// Another add-on whose first placement does not exist and whose second names a missing config.
	broken := &addonv1alpha1.ClusterManagementAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: "broken", Annotations: map[string]string{
			addonv1alpha1.AddonLifecycleAnnotationKey: addonv1alpha1.AddonLifecycleSelfManageAnnotationValue}},
		Spec: addonv1alpha1.ClusterManagementAddOnSpec{
			SupportedConfigs: []addonv1alpha1.ConfigMeta{{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"}}},
			InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyPlacements, Placements: []addonv1alpha1.PlacementStrategy{
				{PlacementRef: addonv1alpha1.PlacementRef{Namespace: "hello", Name: "no-such-placement"}},
				{PlacementRef: addonv1alpha1.PlacementRef{Namespace: "hello", Name: "all"}, Configs: []addonv1alpha1.AddOnConfig{{
					ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"},
					ConfigReferent:      addonv1alpha1.ConfigReferent{Namespace: "hello", Name: "no-such-config"},
				}}},
			}},
		},
	}
	s.Track("broken")
	if _, err := hub.Clients.Addon.AddonV1alpha1().ClusterManagementAddOns().Create(s.Ctx, broken, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	take(capture{phase: "missing-placement-and-config", label: "cma", gvr: cmaGVR, name: "broken", want: "Degraded",
		ready: func(u *unstructured.Unstructured) bool {
			var missing, config bool
			ips, _, _ := unstructured.NestedSlice(u.Object, "status", "installProgressions")
			for _, ip := range ips {
				conds, _, _ := unstructured.NestedSlice(ip.(map[string]any), "conditions")
				for _, c := range conds {
					m := c.(map[string]any)
					missing = missing || m["reason"] == addonstatus.ReasonPlacementNotFound && m["status"] == string(metav1.ConditionFalse)
					config = config || m["reason"] == addonstatus.ReasonConfigurationNotFound
				}
			}
			return missing && config
		}})

	// A third add-on gated by a canary placement that does not exist: its placement waits for a
	// canary that cannot pass without help, so the controller reports WaitingForCanary with
	// Progressing=False, which every check calls Degraded.
	gated := &addonv1alpha1.ClusterManagementAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: "gated", Annotations: map[string]string{
			addonv1alpha1.AddonLifecycleAnnotationKey: addonv1alpha1.AddonLifecycleSelfManageAnnotationValue,
			"addonops.io/canary-placements":           `{"hello/all": "hello/no-such-canary"}`}},
		Spec: addonv1alpha1.ClusterManagementAddOnSpec{
			SupportedConfigs: []addonv1alpha1.ConfigMeta{{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"}}},
			InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyPlacements, Placements: []addonv1alpha1.PlacementStrategy{
				{PlacementRef: addonv1alpha1.PlacementRef{Namespace: "hello", Name: "all"}, Configs: []addonv1alpha1.AddOnConfig{{
					ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"},
					ConfigReferent:      addonv1alpha1.ConfigReferent{Namespace: "hello", Name: v1},
				}}},
			}},
		},
	}
	s.Track("gated")
	if _, err := hub.Clients.Addon.AddonV1alpha1().ClusterManagementAddOns().Create(s.Ctx, gated, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	take(capture{phase: "canary-missing", label: "cma", gvr: cmaGVR, name: "gated", want: "Degraded",
		ready: func(u *unstructured.Unstructured) bool {
			return strings.Contains(fmt.Sprint(u.Object["status"]), addonstatus.ReasonWaitingForCanary)
		}})

	// Day-2 operations, as the controller writes them: an add-on paused before its install (nothing
	// starts: Suspended), and one whose first version a person aborted (nothing to return to:
	// Aborted, Degraded).
	hc := []history.Config{{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs", Namespace: "hello", Name: v1, SpecHash: specHashOf(s, v1)}}
	for _, day2 := range []struct {
		name, annotation, value, reason, want string
	}{
		{"paused", operations.PauseAnnotation, "*", addonstatus.ReasonPaused, "Suspended"},
		{"aborted", operations.AbortAnnotation, operations.FormatMap(map[canary.PlacementKey]string{{Namespace: "hello", Name: "all"}: history.VersionID(hc)}), addonstatus.ReasonAborted, "Degraded"},
	} {
		cma := gated.DeepCopy()
		cma.ObjectMeta = metav1.ObjectMeta{Name: day2.name, Annotations: map[string]string{
			addonv1alpha1.AddonLifecycleAnnotationKey: addonv1alpha1.AddonLifecycleSelfManageAnnotationValue, day2.annotation: day2.value}}
		cma.Status = addonv1alpha1.ClusterManagementAddOnStatus{}
		s.Track(day2.name)
		if _, err := hub.Clients.Addon.AddonV1alpha1().ClusterManagementAddOns().Create(s.Ctx, cma, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		reason := day2.reason
		take(capture{phase: day2.name, label: "cma", gvr: cmaGVR, name: day2.name, want: day2.want,
			ready: func(u *unstructured.Unstructured) bool {
				return strings.Contains(fmt.Sprint(u.Object["status"]), reason)
			}})
	}

	if *update {
		writeCapturedEntries(t, taken)
	}
	checkCapturedEntries(t, taken)
}

// takeOne waits until the object is in the state the capture describes (its status-command
// verdict is c.want and c.ready holds), checks every health check on it, and compares it with the
// captured testdata (or writes it with -update). Without -update it waits for the object to match
// the testdata, so a controller that passes through the expected state on its way is not a flake,
// but one that writes something else fails with the difference.
func takeOne(t *testing.T, s *rolloutsim.Scenario, checks *FluxChecks, c capture) {
	t.Helper()
	api := s.Hub.Clients.Dynamic.Resource(c.gvr).Namespace(c.namespace)
	var want []byte
	if !*update {
		var err error
		if want, err = os.ReadFile(c.file()); err != nil {
			t.Fatalf("%v (run go test ./health -run TestCapturedFromController -update to capture it)", err)
		}
	}
	var obj *unstructured.Unstructured
	var got []byte
	var verdict string
	settled := func() bool {
		u, err := api.Get(context.Background(), c.name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		obj = normalize(u)
		got, err = yaml.Marshal(obj.Object)
		if err != nil {
			t.Fatal(err)
		}
		v, err := goVerdict(obj)
		if err != nil {
			t.Fatal(err)
		}
		verdict = string(v.Health)
		if verdict != c.want || (c.ready != nil && !c.ready(obj)) {
			return false
		}
		return *update || bytes.Equal(got, want)
	}
	if _, err := harness.Until(context.Background(), 30*time.Second, harness.DefaultInterval, func() string {
		if settled() {
			return ""
		}
		return "not yet"
	}); err != nil {
		if verdict != c.want {
			t.Fatalf("%s %s: the status command says %s, want %s; object:\n%s", c.phase, c.label, verdict, c.want, got)
		}
		t.Fatalf("%s: the controller's object differs from %s (if the change is intended, rerun with -update):\n--- got\n%s\n--- want\n%s",
			c.phase, c.file(), got, want)
	}
	if *update {
		if err := os.WriteFile(c.file(), got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script, err := os.ReadFile(filepath.Join(customizations, kindDirs[c.gvr], "health.lua"))
	if err != nil {
		t.Fatal(err)
	}
	for _, openLibs := range []bool{false, true} {
		hs, err := RunArgoScript(string(script), obj.Object, openLibs)
		if err != nil {
			t.Fatalf("%s %s: %v", c.phase, c.label, err)
		}
		if hs.Status != c.want {
			t.Errorf("%s %s: Argo CD health %s (%s), want %s", c.phase, c.label, hs.Status, hs.Message, c.want)
		}
	}
	if err := fluxAgrees(checks, obj, c.want); err != nil {
		t.Errorf("%s %s: %v", c.phase, c.label, err)
	}
}

// specHashOf returns the spec hash of the scenario's AddOnDeploymentConfig name.
func specHashOf(s *rolloutsim.Scenario, name string) string {
	cfg, err := s.Hub.Clients.Addon.AddonV1alpha1().AddOnDeploymentConfigs(s.Addon).Get(s.Ctx, name, metav1.GetOptions{})
	if err != nil {
		return "(" + err.Error() + ")"
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cfg)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	h, err := spechash.Of(u)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return h
}

// setMCAConfigs sets the spec.configs of the scenario's ManagedClusterAddOn on cluster, as a
// per-cluster override kept in Git would.
func setMCAConfigs(t *testing.T, s *rolloutsim.Scenario, cluster string, configs ...addonv1alpha1.AddOnConfig) {
	t.Helper()
	api := s.Hub.Clients.Addon.AddonV1alpha1().ManagedClusterAddOns(cluster)
	for range 10 {
		mca, err := api.Get(s.Ctx, s.Addon, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mca.Spec.Configs = configs
		if _, err = api.Update(s.Ctx, mca, metav1.UpdateOptions{}); err == nil {
			return
		} else if !apierrors.IsConflict(err) {
			t.Fatalf("setting spec.configs of ManagedClusterAddOn %s/%s: %v", cluster, s.Addon, err)
		}
	}
	t.Fatalf("setting spec.configs of ManagedClusterAddOn %s/%s kept conflicting", cluster, s.Addon)
}

// setManual switches the scenario's CMA to install strategy Manual.
func setManual(t *testing.T, s *rolloutsim.Scenario) {
	t.Helper()
	api := s.Hub.Clients.Addon.AddonV1alpha1().ClusterManagementAddOns()
	for range 10 {
		cma, err := s.GetCMA()
		if err != nil {
			t.Fatal(err)
		}
		cma.Spec.InstallStrategy = addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyManual}
		if _, err = api.Update(s.Ctx, cma, metav1.UpdateOptions{}); err == nil {
			return
		} else if !apierrors.IsConflict(err) {
			t.Fatalf("switching ClusterManagementAddOn %s to Manual: %v", s.Addon, err)
		}
	}
	t.Fatalf("switching ClusterManagementAddOn %s to Manual kept conflicting", s.Addon)
}

// desires reports whether every install progression of cma desires the config named name.
func desires(cma *addonv1alpha1.ClusterManagementAddOn, name string) bool {
	for _, ip := range cma.Status.InstallProgressions {
		found := false
		for _, r := range ip.ConfigReferences {
			found = found || r.DesiredConfig != nil && r.DesiredConfig.Name == name
		}
		if !found {
			return false
		}
	}
	return len(cma.Status.InstallProgressions) > 0
}

// normalized values of fields that differ from run to run.
var fixedTime = "2026-01-01T00:00:00Z"

// normalize drops what differs between runs (identity, versions, timestamps, the test's poke
// label) so captured objects are stable.
func normalize(u *unstructured.Unstructured) *unstructured.Unstructured {
	u = u.DeepCopy()
	for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields"} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	if labels := u.GetLabels(); labels != nil {
		delete(labels, "rolloutsim/poke")
		if len(labels) == 0 {
			labels = nil
		}
		u.SetLabels(labels)
	}
	refs := u.GetOwnerReferences()
	for i := range refs {
		refs[i].UID = ""
	}
	if refs != nil {
		u.SetOwnerReferences(refs)
	}
	fixTimes(u.Object["status"])
	sortConditions(u.Object["status"])
	return u
}

// sortConditions orders every conditions list under v by type. Several writers add conditions to
// an MCA (the controller: Configured, Progressing; the deployer: ManifestApplied; the health
// prober: Available), so their order depends on who wrote first; no check depends on it.
func sortConditions(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, item := range v {
			if list, ok := item.([]any); ok && k == "conditions" {
				slices.SortStableFunc(list, func(a, b any) int {
					return strings.Compare(fmt.Sprint(field(a, "type")), fmt.Sprint(field(b, "type")))
				})
			}
			sortConditions(item)
		}
	case []any:
		for _, item := range v {
			sortConditions(item)
		}
	}
}

func field(v any, name string) any {
	if m, ok := v.(map[string]any); ok {
		return m[name]
	}
	return nil
}

// fixTimes sets every lastTransitionTime under v to fixedTime.
func fixTimes(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, item := range v {
			if k == "lastTransitionTime" {
				v[k] = fixedTime
				continue
			}
			fixTimes(item)
		}
	case []any:
		for _, item := range v {
			fixTimes(item)
		}
	}
}

var capturedEntryRE = regexp.MustCompile(`(?m)^- healthStatus:\n    status: (\S+)\n    message: .*\n  inputPath: (testdata/captured-\S+\.yaml)$`)

// writeCapturedEntries rewrites the captured section of each health_test.yaml: the status the
// scenario expects and the message the script gives (TestArgoHealthScripts then pins it).
func writeCapturedEntries(t *testing.T, taken []capture) {
	t.Helper()
	byDir := map[string][]capture{}
	for _, c := range taken {
		byDir[kindDirs[c.gvr]] = append(byDir[kindDirs[c.gvr]], c)
	}
	for dir, cs := range byDir {
		path := filepath.Join(customizations, dir, "health_test.yaml")
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		head, _, _ := strings.Cut(string(raw), capturedMarker)
		script, err := os.ReadFile(filepath.Join(customizations, dir, "health.lua"))
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		b.WriteString(strings.TrimRight(head, "\n") + "\n" + capturedMarker + "\n")
		for _, c := range cs {
			obj := readObject(t, c.file())
			hs, err := RunArgoScript(string(script), obj.Object, false)
			if err != nil {
				t.Fatal(err)
			}
			// A JSON string is a YAML double-quoted scalar on one line.
			var msg bytes.Buffer
			enc := json.NewEncoder(&msg)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(hs.Message); err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(filepath.Join(customizations, dir), c.file())
			fmt.Fprintf(&b, "- healthStatus:\n    status: %s\n    message: %s  inputPath: %s\n", c.want, msg.String(), filepath.ToSlash(rel))
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// checkCapturedEntries makes sure every captured object is in its health_test.yaml with the
// status this scenario expects, and that no stale captured entry is left.
func checkCapturedEntries(t *testing.T, taken []capture) {
	t.Helper()
	for _, dir := range []string{kindDirs[cmaGVR], kindDirs[mcaGVR], kindDirs[workGVR]} {
		raw, err := os.ReadFile(filepath.Join(customizations, dir, "health_test.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		entries := map[string]string{}
		for _, m := range capturedEntryRE.FindAllStringSubmatch(string(raw), -1) {
			entries[m[2]] = m[1]
		}
		var want []string
		for _, c := range taken {
			if kindDirs[c.gvr] != dir {
				continue
			}
			rel, _ := filepath.Rel(filepath.Join(customizations, dir), c.file())
			rel = filepath.ToSlash(rel)
			want = append(want, rel)
			if got, ok := entries[rel]; !ok || got != c.want {
				t.Errorf("%s/health_test.yaml: %s has status %q, want %q (rerun with -update)", dir, rel, got, c.want)
			}
		}
		for rel := range entries {
			if !slices.Contains(want, rel) {
				t.Errorf("%s/health_test.yaml: %s is no longer captured; rerun with -update", dir, rel)
			}
		}
	}
}
