//go:build integration

package controller

// Port of OCM v1.2.1's test/integration/addon/addon_configs_test.go, Describe "AddConfigs" (see
// ocm_addon_upgrade_test.go for the whole port and its tally): which configs an MCA is told to run
// from the CMA's defaults, an install placement's configs and the MCA's own configs, and with
// which spec hashes. Each It is a subtest with its own add-on, cluster and controller.

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
)

// ocmConfigsEnv is the BeforeEach of "AddConfigs": a managed cluster, a CMA (Manual) whose
// supported AddOnDeploymentConfig has a default config, that default config, and the controller.
func ocmConfigsEnv(t *testing.T) (e *env, cluster string, defaultV cfgVer) {
	e = newEnv(t, envOptions{noAgent: true})
	e.ensureClusters("c")
	cluster = e.cluster("c")
	defaultV = cfgVer{e.name, "default-config", ocmDefaultConfigSpecHash}
	e.createOCMCMA(addonv1alpha1.ClusterManagementAddOnSpec{
		SupportedConfigs: []addonv1alpha1.ConfigMeta{{ConfigGroupResource: adcGR,
			DefaultConfig: &addonv1alpha1.ConfigReferent{Namespace: defaultV.ns, Name: defaultV.name}}},
		InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyManual},
	})
	e.startController(Options{Addons: AddonsAll})
	e.ocm("CMA has no lifecycle annotation", e.noLifecycleAnnotation)
	e.createADC(defaultV.ns, defaultV.name, ocmDefaultConfigSpec)
	return e, cluster, defaultV
}

// createUserMCA creates the add-on's MCA in cluster as OCM's test does (installNamespace "test").
func (e *env) createUserMCA(cluster string, configs ...addonv1alpha1.AddOnConfig) {
	e.t.Helper()
	_, err := e.c.Addon.AddonV1alpha1().ManagedClusterAddOns(cluster).Create(e.ctx, &addonv1alpha1.ManagedClusterAddOn{
		ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: e.name},
		Spec:       addonv1alpha1.ManagedClusterAddOnSpec{InstallNamespace: "test", Configs: configs},
	}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
}

// setSupportedConfigs is the test's own write of the MCA's status.supportedConfigs (OCM's
// updateManagedClusterAddOnStatus).
func (e *env) setSupportedConfigs(cluster string, grs ...addonv1alpha1.ConfigGroupResource) {
	e.t.Helper()
	err := eventually(ocmTimeout, func() error {
		mca, err := e.getMCA(cluster)
		if err != nil {
			return err
		}
		mca.Status.SupportedConfigs = grs
		_, err = e.c.Addon.AddonV1alpha1().ManagedClusterAddOns(cluster).UpdateStatus(e.ctx, mca, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// defaultConfigRefs is OCM's assertClusterManagementAddOnDefaultConfigReferences.
func (e *env) defaultConfigRefs(want ...addonv1alpha1.DefaultConfigReference) func() error {
	return func() error {
		cma, err := e.getCMA()
		if err != nil {
			return err
		}
		got := cma.Status.DefaultConfigReferences
		if len(got) != len(want) {
			return fmt.Errorf("%d default config references, want %d: %+v", len(got), len(want), got)
		}
		for i := range want {
			if g, w := got[i], want[i]; g.ConfigGroupResource != w.ConfigGroupResource || g.DesiredConfig == nil || *g.DesiredConfig != *w.DesiredConfig {
				return fmt.Errorf("default config reference %d: got %+v %+v, want %+v %+v", i, g.ConfigGroupResource, g.DesiredConfig, w.ConfigGroupResource, w.DesiredConfig)
			}
		}
		return nil
	}
}

func TestOCMAddonConfigs(t *testing.T) {
	t.Parallel()

	t.Run("Should use default config", func(t *testing.T) {
		t.Parallel()
		e, cluster, defaultV := ocmConfigsEnv(t)
		e.createUserMCA(cluster)
		e.ocm("CMA default config references", e.defaultConfigRefs(addonv1alpha1.DefaultConfigReference{ConfigGroupResource: adcGR, DesiredConfig: defaultV.specHash()}))
		e.ocm("no install progression", e.progressionRefs())
		want := mcaRef(adcGR, defaultV, nil, 1)
		e.ocm("MCA config references", e.mcaConfigRefs(cluster, want))
		gap(t, "a", "lastObservedGeneration", e.mcaGenerations(cluster, want))
	})

	t.Run("Should override default config by install strategy", func(t *testing.T) {
		t.Parallel()
		e, cluster, defaultV := ocmConfigsEnv(t)
		another := cfgVer{defaultV.ns, "another-config", ""}
		e.updateCMA(func(cma *addonv1alpha1.ClusterManagementAddOn) {
			cma.Spec.InstallStrategy = addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyPlacements,
				Placements: []addonv1alpha1.PlacementStrategy{{
					PlacementRef: addonv1alpha1.PlacementRef{Namespace: defaultV.ns, Name: "test-placement"},
					Configs: []addonv1alpha1.AddOnConfig{{ConfigGroupResource: adcGR,
						ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: another.ns, Name: another.name}}},
					RolloutStrategy: clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All},
				}}}
		})
		e.placement("test-placement", [][]string{{"c"}})
		e.ocm("CMA default config references", e.defaultConfigRefs(addonv1alpha1.DefaultConfigReference{ConfigGroupResource: adcGR, DesiredConfig: defaultV.specHash()}))
		e.ocm("install progression config references", e.progressionRefs([]addonv1alpha1.InstallConfigReference{progressionRef(another, nil)}))
		// differs from OCM: a placement whose config does not exist waits, naming it, and tells its clusters nothing (OCM: the MCA gets another-config with an empty spec hash, lastObservedGeneration 0) (README: "the placement waits for a problem to be fixed")
		e.ours("the placement waits for its config", e.progressionLike(metav1.Condition{Type: addonstatus.ConditionProgressing,
			Status: metav1.ConditionFalse, Reason: addonstatus.ReasonConfigurationNotFound,
			Message: "waits for its configs: config addondeploymentconfigs.addon.open-cluster-management.io " + another.ns + "/" + another.name + " not found"}))
		e.ours("MCA config references", e.mcaConfigRefs(cluster))
	})

	t.Run("Should override default config", func(t *testing.T) {
		t.Parallel()
		e, cluster, defaultV := ocmConfigsEnv(t)
		own := cfgVer{cluster, "addon-config", ocmTest1ConfigSpecHash}
		e.createADC(own.ns, own.name, ocmTest1ConfigSpec)
		e.createUserMCA(cluster, addonv1alpha1.AddOnConfig{ConfigGroupResource: adcGR, ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: own.ns, Name: own.name}})
		e.setSupportedConfigs(cluster, adcGR)
		e.ocm("CMA default config references", e.defaultConfigRefs(addonv1alpha1.DefaultConfigReference{ConfigGroupResource: adcGR, DesiredConfig: defaultV.specHash()}))
		e.ocm("no install progression", e.progressionRefs())
		want := mcaRef(adcGR, own, nil, 1)
		e.ocm("MCA config references", e.mcaConfigRefs(cluster, want))
		gap(t, "a", "lastObservedGeneration", e.mcaGenerations(cluster, want))
	})

	t.Run("Should update config spec successfully", func(t *testing.T) {
		t.Parallel()
		e, cluster, _ := ocmConfigsEnv(t)
		own := cfgVer{cluster, "addon-config", ocmTest1ConfigSpecHash}
		e.createADC(own.ns, own.name, ocmTest1ConfigSpec)
		e.createUserMCA(cluster, addonv1alpha1.AddOnConfig{ConfigGroupResource: adcGR, ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: own.ns, Name: own.name}})
		e.setSupportedConfigs(cluster, adcGR)
		want := mcaRef(adcGR, own, nil, 1)
		e.ocm("MCA config references", e.mcaConfigRefs(cluster, want))
		gap(t, "a", "lastObservedGeneration", e.mcaGenerations(cluster, want))

		e.updateADC(own.ns, own.name, ocmTest2ConfigSpec)
		own.hash = ocmTest2ConfigSpecHash
		want = mcaRef(adcGR, own, nil, 2)
		e.ocm("MCA config references after the config changed", e.mcaConfigRefs(cluster, want))
		gap(t, "a", "lastObservedGeneration_after_the_config_changed", e.mcaGenerations(cluster, want))
	})

	t.Run("Should not update unsupported config spec hash", func(t *testing.T) {
		t.Parallel()
		e, cluster, defaultV := ocmConfigsEnv(t)
		unsupportedGR := addonv1alpha1.ConfigGroupResource{Group: adcGR.Group + "test", Resource: adcGR.Resource + "test"}
		unsupported := cfgVer{cluster, "addon-config-test", ""}
		// The MCA's status.supportedConfigs is left empty, as in OCM's test.
		e.createUserMCA(cluster, addonv1alpha1.AddOnConfig{ConfigGroupResource: unsupportedGR,
			ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: unsupported.ns, Name: unsupported.name}})
		want := []addonv1alpha1.ConfigReference{mcaRef(adcGR, defaultV, nil, 1), mcaRef(unsupportedGR, unsupported, nil, 0)}
		// Not an assertion of OCM's: what the MCA says meanwhile, so that the gap's check looks at a
		// settled state.
		e.ours("MCA cannot be configured", e.mcaConditionLike(cluster, metav1.Condition{Type: addonstatus.ConditionConfigured,
			Status: metav1.ConditionFalse, Reason: addonstatus.ReasonConfigurationUnsupported,
			Message: "Configuration with gvr addon.open-cluster-management.iotest/addondeploymentconfigstest is not supported for this addon"}))
		gap(t, "b", "unsupported_config_keeps_defaults", e.mcaConfigRefs(cluster, want...))
		gap(t, "a+b", "lastObservedGeneration", e.mcaGenerations(cluster, want...))
	})
}
