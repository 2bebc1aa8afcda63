//go:build integration

package controller

// MCA status as OCM's own tests expect it: lastObservedGeneration, unsupported MCA
// configs, and a rollout nobody deploys.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/spechash"
)

// generations renders a cluster's configReferences as "name@generation" joined by ",".
func (e *env) generations(short string) string {
	m := e.rec.mca(e.cluster(short))
	if m == nil {
		return "(no MCA)"
	}
	var out []string
	for _, r := range m.Status.ConfigReferences {
		out = append(out, fmt.Sprintf("%s@%d", r.Name, r.LastObservedGeneration))
	}
	return strings.Join(out, ",")
}

func (e *env) waitGenerations(timeout time.Duration, want map[string]string) {
	e.t.Helper()
	e.waitFor(timeout, fmt.Sprintf("lastObservedGeneration %v", want), func() bool {
		for short, w := range want {
			if e.generations(short) != w {
				return false
			}
		}
		return true
	})
}

// adcHash is the spec hash of ADC name as the API server returns it now.
func (e *env) adcHash(name string) string {
	e.t.Helper()
	u, err := e.c.Dynamic.Resource(addonv1alpha1.SchemeGroupVersion.WithResource("addondeploymentconfigs")).Namespace(e.name).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	h, err := spechash.Of(u.Object)
	if err != nil {
		e.t.Fatal(err)
	}
	return h
}

// status.configReferences[].lastObservedGeneration is the config's metadata.generation, as OCM's
// "Should update config spec successfully" expects: 1 once created, 2 after an edit in place (with
// the new spec hash), and the new object's 1 after a rename (config-hash).
func TestLastObservedGenerationIntegration(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{agentDelay: 100 * time.Millisecond})
	e.ensureClusters("c1", "c2")
	e.adc("cfg-a", "v1")
	e.placement("p", [][]string{{"c1", "c2"}})
	e.cma(nil, install{placement: "p", config: "cfg-a", strategy: allStrategy})
	e.startController(Options{})
	e.waitInstalled(30*time.Second, "cfg-a", "c1", "c2")
	e.waitGenerations(10*time.Second, map[string]string{"c1": "cfg-a@1", "c2": "cfg-a@1"})

	// Edited in place: generation 2, and the new spec hash once the clusters upgrade.
	e.adc("cfg-a", "v2")
	want := e.adcHash("cfg-a")
	e.waitFor(30*time.Second, "the edit rolled out", func() bool {
		for _, c := range []string{"c1", "c2"} {
			m := e.rec.mca(e.cluster(c))
			if state(m) != "cfg-a/cfg-a/True/UpgradeSucceed" || m.Status.ConfigReferences[0].DesiredConfig.SpecHash != want {
				return false
			}
		}
		return true
	})
	e.waitGenerations(10*time.Second, map[string]string{"c1": "cfg-a@2", "c2": "cfg-a@2"})

	// Renamed, as config-hash renames a new version: a new object at generation 1.
	e.adc("cfg-b", "v3")
	e.setConfig("p", "cfg-b")
	e.waitStates(30*time.Second, map[string]string{"c1": "cfg-b/cfg-b/True/UpgradeSucceed", "c2": "cfg-b/cfg-b/True/UpgradeSucceed"})
	e.waitGenerations(10*time.Second, map[string]string{"c1": "cfg-b@1", "c2": "cfg-b@1"})
	e.quiet(time.Second)
}

// OCM's "Should not update unsupported config spec hash" on the real API server: an MCA with a
// config of a type the add-on does not support keeps the CMA's default configured and lists the
// unsupported reference with an empty spec hash, with Configured and Progressing False,
// ConfigurationUnsupported.
func TestUnsupportedMCAConfigIntegration(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noAgent: true})
	e.ensureClusters("c1")
	e.adc("cfg-default", "v1")
	e.cma(nil)
	e.updateCMA(func(cma *addonv1alpha1.ClusterManagementAddOn) {
		cma.Spec.InstallStrategy = addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyManual}
		cma.Spec.SupportedConfigs[0].DefaultConfig = &addonv1alpha1.ConfigReferent{Namespace: e.name, Name: "cfg-default"}
	})
	widgets := addonv1alpha1.ConfigReferent{Namespace: e.cluster("c1"), Name: "addon-config-test"}
	_, err := e.c.Addon.AddonV1alpha1().ManagedClusterAddOns(e.cluster("c1")).Create(e.ctx, &addonv1alpha1.ManagedClusterAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: e.name, Namespace: e.cluster("c1")},
		Spec: addonv1alpha1.ManagedClusterAddOnSpec{Configs: []addonv1alpha1.AddOnConfig{{
			ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.iotest", Resource: "addondeploymentconfigstest"},
			ConfigReferent:      widgets,
		}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.t.Cleanup(func() {
		_ = e.c.Addon.AddonV1alpha1().ManagedClusterAddOns(e.cluster("c1")).Delete(context.Background(), e.name, metav1.DeleteOptions{})
	})
	e.startController(Options{})

	def := addonv1alpha1.ConfigReferent{Namespace: e.name, Name: "cfg-default"}
	want := []addonv1alpha1.ConfigReference{
		{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"},
			ConfigReferent: def, LastObservedGeneration: 1,
			DesiredConfig: &addonv1alpha1.ConfigSpecHash{ConfigReferent: def, SpecHash: e.adcHash("cfg-default")}},
		{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.iotest", Resource: "addondeploymentconfigstest"},
			ConfigReferent: widgets, LastObservedGeneration: 0,
			DesiredConfig: &addonv1alpha1.ConfigSpecHash{ConfigReferent: widgets, SpecHash: ""}},
	}
	const ocmMessage = "Configuration with gvr addon.open-cluster-management.iotest/addondeploymentconfigstest is not supported for this addon"
	e.waitFor(20*time.Second, "OCM's configReferences and conditions", func() bool {
		m := e.rec.mca(e.cluster("c1"))
		if m == nil || !equality.Semantic.DeepEqual(m.Status.ConfigReferences, want) {
			return false
		}
		conf := meta.FindStatusCondition(m.Status.Conditions, addonstatus.ConditionConfigured)
		prog := meta.FindStatusCondition(m.Status.Conditions, addonstatus.ConditionProgressing)
		return conf != nil && conf.Status == metav1.ConditionFalse && conf.Reason == addonstatus.ReasonConfigurationUnsupported && strings.HasPrefix(conf.Message, ocmMessage) &&
			prog != nil && prog.Status == metav1.ConditionFalse && prog.Reason == addonstatus.ReasonConfigurationUnsupported && prog.Message == ocmMessage
	})
	e.quiet(time.Second)
}

// deployerEvents lists the WaitingForDeployer events on the test's CMA with their counts.
func (e *env) deployerEvents() []corev1.Event {
	list, err := e.c.Kube.CoreV1().Events("").List(e.ctx, metav1.ListOptions{FieldSelector: fields.AndSelectors(
		fields.OneTermEqualSelector("involvedObject.kind", "ClusterManagementAddOn"),
		fields.OneTermEqualSelector("involvedObject.name", e.name),
		fields.OneTermEqualSelector("reason", addonstatus.ReasonWaitingForDeployer)).String()})
	if err != nil {
		e.t.Fatal(err)
	}
	return list.Items
}

// Nothing deploys the add-on: after --deployer-wait the MCA's Progressing message and the
// placement's progression say so and a Warning event on the CMA asks for an add-on manager; once a
// deployer reports ManifestApplied, the messages go back to normal and the install completes.
func TestDeployerMissingIntegration(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noAgent: true})
	e.ensureClusters("c1", "c2")
	e.adc("cfg-a", "v1")
	e.placement("p", [][]string{{"c1", "c2"}})
	e.cma(nil, install{placement: "p", config: "cfg-a", strategy: allStrategy})
	e.startController(Options{DeployerWait: 2 * time.Second})

	e.waitStates(10*time.Second, map[string]string{"c1": "cfg-a/-/True/Installing", "c2": "cfg-a/-/True/Installing"})
	for _, c := range []string{"c1", "c2"} {
		e.waitFor(10*time.Second, c+" says it waits for a deployer", func() bool {
			p := meta.FindStatusCondition(e.rec.mca(e.cluster(c)).Status.Conditions, addonstatus.ConditionProgressing)
			return p != nil && p.Message == "installing... "+addonstatus.MessageWaitingForDeployer
		})
	}
	e.waitProgression(10*time.Second, "p", addonstatus.ReasonInstalling,
		fmt.Sprintf("2 waiting for the add-on's deployer (no ManifestApplied): %s, %s; is an add-on manager deploying this add-on?", e.cluster("c1"), e.cluster("c2")))
	e.waitCMAEvent(10*time.Second, "Warning "+addonstatus.ReasonWaitingForDeployer, "have no ManifestApplied from any deployer: "+e.cluster("c1")+", "+e.cluster("c2"))

	// A deployer (and work agent) starts: the wait ends, the install completes, the messages are
	// the usual ones again, and the episode got exactly one event.
	e.startAgent(0)
	e.waitInstalled(30*time.Second, "cfg-a", "c1", "c2")
	e.waitProgression(10*time.Second, "p", addonstatus.ReasonInstallSucceed, "2/2 install completed with no errors.")
	for _, c := range []string{"c1", "c2"} {
		if addonstatus.WaitingForDeployer(e.rec.mca(e.cluster(c))) {
			t.Errorf("%s still waits for a deployer", c)
		}
	}
	if evs := e.deployerEvents(); len(evs) != 1 || evs[0].Count > 1 {
		t.Errorf("WaitingForDeployer events: %d (first count %d), want one", len(evs), func() int32 {
			if len(evs) > 0 {
				return evs[0].Count
			}
			return 0
		}())
	}
}
