//go:build integration

package controller

// The v1beta1 add-on API on a hub that serves it as OCM v1.3 does (docs/v1beta1.md): the CRDs of
// the pinned api module converting through OCM's own webhook (internal/testing/ocmwebhook). Git
// holds v1beta1 ClusterManagementAddOns and ManagedClusterAddOns, an engine applies them as
// written, and the controller, which reads and writes v1alpha1 (the version the hub stores), rolls
// them out as it rolls out v1alpha1 ones.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/rolloutplan"
	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/ocmwebhook"
)

// exampleV1beta1 is config-hash's v1beta1 example as kustomize builds it (its test keeps the file
// current): what Git would hand an engine.
const exampleV1beta1 = "../../functions/config-hash/examples/hello-addon-v1beta1/expected/kustomize-build.yaml"

// engineManager is the field manager of the engine's applies (Argo CD with server-side apply and
// Flux apply the same way: their own field manager, forced).
const engineManager = "gitops-engine"

func TestV1beta1(t *testing.T) {
	t.Parallel()
	// A hub of its own: the CRDs change to serve v1beta1, which other tests of the package must
	// not see mid-run.
	hub, err := localhub.Start(context.Background(), localhub.Options{})
	if err != nil {
		t.Fatalf("starting a test hub: %v", err)
	}
	t.Cleanup(func() {
		if err := hub.Stop(); err != nil {
			t.Errorf("stopping the test hub: %v", err)
		}
	})
	wh := ocmwebhook.ForTest(t, hub, ocmwebhook.Options{})
	t.Logf("OCM's conversion webhook (%s) converting %s after its launch", wh.URL, wh.Startup.Round(time.Millisecond))

	t.Run("example", func(t *testing.T) { v1beta1Example(t, hub) })
	t.Run("rollout", func(t *testing.T) { v1beta1Rollout(t, hub) })
}

// v1beta1Example applies config-hash's v1beta1 example, as built, and reads it back in v1alpha1:
// the hashed names reached the fields the controller reads.
func v1beta1Example(t *testing.T, hub *localhub.Hub) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	data, err := os.ReadFile(exampleV1beta1)
	if err != nil {
		t.Fatal(err)
	}
	objs := decodeAll(t, data)
	for _, ns := range []string{"open-cluster-management-hub", "cluster1"} {
		if err := localhub.EnsureNamespace(ctx, hub.Clients.Kube, ns); err != nil {
			t.Fatal(err)
		}
	}
	names := map[string]string{} // kind/base name → name as built
	for _, o := range objs {
		if _, err := engineApply(ctx, hub.Clients.Dynamic, o); err != nil {
			t.Fatalf("applying %s %s (%s) from %s: %v", o.GetKind(), o.GetName(), o.GetAPIVersion(), exampleV1beta1, err)
		}
		if base := o.GetAnnotations()["addonops.io/base-name"]; base != "" {
			names[o.GetKind()+"/"+base] = o.GetName()
		}
	}
	t.Cleanup(func() {
		for _, o := range objs {
			_ = resourceFor(hub.Clients.Dynamic, o).Delete(context.Background(), o.GetName(), metav1.DeleteOptions{})
		}
	})
	tpl, adc, adc1 := names["AddOnTemplate/hello"], names["AddOnDeploymentConfig/hello"], names["AddOnDeploymentConfig/hello-cluster1"]
	if tpl == "" || adc == "" || adc1 == "" {
		t.Fatalf("the example holds no hashed template, ADC or cluster1 ADC: %v", names)
	}

	cma, err := hub.Clients.Addon.AddonV1alpha1().ClusterManagementAddOns().Get(ctx, "hello", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defaults := map[string]string{}
	for _, sc := range cma.Spec.SupportedConfigs {
		if sc.DefaultConfig != nil {
			defaults[sc.Resource] = sc.DefaultConfig.Namespace + "/" + sc.DefaultConfig.Name
		}
	}
	if want := map[string]string{"addontemplates": "/" + tpl, "addondeploymentconfigs": "open-cluster-management-hub/" + adc}; !maps.Equal(defaults, want) {
		t.Errorf("the v1alpha1 view's supportedConfigs defaults = %v, want %v", defaults, want)
	}
	if ps := cma.Spec.InstallStrategy.Placements; len(ps) != 2 || ps[1].Name != "everyone" || ps[1].RolloutStrategy.Progressive == nil ||
		ps[1].RolloutStrategy.Progressive.MaxConcurrency.String() != "25%" {
		t.Errorf("the v1alpha1 view's placements = %+v", ps)
	}
	mca, err := hub.Clients.Addon.AddonV1alpha1().ManagedClusterAddOns("cluster1").Get(ctx, "hello", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if mca.Spec.InstallNamespace != "open-cluster-management-agent-addon" || len(mca.Spec.Configs) != 1 || mca.Spec.Configs[0].Name != adc1 {
		t.Errorf("the v1alpha1 view's ManagedClusterAddOn spec = %+v, want installNamespace from the annotation and config %s", mca.Spec, adc1)
	}
	adcs, err := hub.Clients.Addon.AddonV1alpha1().AddOnDeploymentConfigs("open-cluster-management-hub").Get(ctx, adc, metav1.GetOptions{})
	if err != nil || len(adcs.Spec.CustomizedVariables) != 1 {
		t.Errorf("the v1beta1 AddOnDeploymentConfig %s in v1alpha1: %+v, %v", adc, adcs, err)
	}
}

// v1beta1Rollout: an add-on written in v1beta1 installs, upgrades through its canary placement and
// takes a cluster's own config from a v1beta1 ManagedClusterAddOn, and the engine's re-applies of
// unchanged objects write nothing while the controller writes their status.
func v1beta1Rollout(t *testing.T, hub *localhub.Hub) {
	e := newEnvOn(t, hub, envOptions{agentDelay: 100 * time.Millisecond})
	e.ensureClusters("c1", "c2", "c3")
	e.adc("cfg-a", "v1")
	e.adc("cfg-b", "v2")
	e.adc("cfg-c", "v3")
	e.placement("canary", [][]string{{"c1"}})
	e.placement("rest", [][]string{{"c2", "c3"}})

	cma := func(defaultConfig string) *unstructured.Unstructured {
		gate := canary.Format(map[canary.PlacementKey]canary.PlacementKey{{Namespace: e.name, Name: "rest"}: {Namespace: e.name, Name: "canary"}})
		return mustObject(t, fmt.Sprintf(`apiVersion: addon.open-cluster-management.io/v1beta1
kind: ClusterManagementAddOn
metadata:
  name: %[1]s
  annotations:
    addon.open-cluster-management.io/lifecycle: self
    %[2]s: "0s"
    %[3]s: '%[4]s'
spec:
  defaultConfigs:
  - group: addon.open-cluster-management.io
    resource: addondeploymentconfigs
    namespace: %[1]s
    name: %[5]s
  installStrategy:
    type: Placements
    placements:
    - name: canary
      namespace: %[1]s
      rolloutStrategy:
        type: All
    - name: rest
      namespace: %[1]s
      rolloutStrategy:
        type: Progressive
        progressive:
          maxConcurrency: 1
`, e.name, rolloutplan.HealthSoakAnnotation, canary.Annotation, gate, defaultConfig))
	}
	// The commit installing the add-on.
	if _, err := engineApply(e.ctx, e.c.Dynamic, cma("cfg-a")); err != nil {
		t.Fatalf("applying the v1beta1 ClusterManagementAddOn: %v", err)
	}
	t.Cleanup(func() {
		_ = e.c.Addon.AddonV1alpha1().ClusterManagementAddOns().Delete(context.Background(), e.name, metav1.DeleteOptions{})
	})
	e.startController(Options{})
	e.waitStates(60*time.Second, map[string]string{
		"c1": "cfg-a/cfg-a/True/InstallSucceed", "c2": "cfg-a/cfg-a/True/InstallSucceed", "c3": "cfg-a/cfg-a/True/InstallSucceed",
	})
	e.waitProgression(20*time.Second, "rest", addonstatus.ReasonInstallSucceed, "2/2 install completed")

	// The commit changing the default config: the canary first, then the rest one at a time.
	if _, err := engineApply(e.ctx, e.c.Dynamic, cma("cfg-b")); err != nil {
		t.Fatal(err)
	}
	e.waitStates(60*time.Second, map[string]string{
		"c1": "cfg-b/cfg-b/True/UpgradeSucceed", "c2": "cfg-b/cfg-b/True/UpgradeSucceed", "c3": "cfg-b/cfg-b/True/UpgradeSucceed",
	})
	if first, last := e.rec.firstDesireIndex("cfg-b", e.clusters("c2", "c3")), e.rec.lastApplyIndex("cfg-b", e.clusters("c1")); first < last {
		t.Errorf("placement rest got cfg-b (event %d) before its canary applied it (event %d)", first, last)
	}
	if n := e.rec.maxInFlightAmong("cfg-b", e.clusters("c2", "c3")); n != 1 {
		t.Errorf("placement rest had %d clusters in flight at once, want 1 (maxConcurrency: 1)", n)
	}

	e.waitProgression(20*time.Second, "canary", addonstatus.ReasonUpgradeSucceed, "1/1 upgrade completed")
	e.waitProgression(20*time.Second, "rest", addonstatus.ReasonUpgradeSucceed, "2/2 upgrade completed")

	// The v1beta1 status, as a v1beta1 reader (Argo CD's health check, say) sees what the
	// controller wrote in v1alpha1.
	v1b, err := e.c.Addon.AddonV1beta1().ClusterManagementAddOns().Get(e.ctx, e.name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the ClusterManagementAddOn in v1beta1: %v", err)
	}
	if d := v1b.Status.DefaultConfigReferences; len(d) != 1 || d[0].DesiredConfig == nil || d[0].DesiredConfig.Name != "cfg-b" {
		t.Errorf("v1beta1 status.defaultConfigReferences = %+v, want cfg-b desired", d)
	}
	progressions := map[string]string{}
	for _, ip := range v1b.Status.InstallProgressions {
		for _, c := range ip.Conditions {
			if c.Type == addonv1beta1.ManagedClusterAddOnConditionProgressing {
				progressions[ip.Name] = c.Reason
			}
		}
	}
	if want := map[string]string{"canary": addonstatus.ReasonUpgradeSucceed, "rest": addonstatus.ReasonUpgradeSucceed}; !maps.Equal(progressions, want) {
		t.Errorf("v1beta1 install progressions = %v, want %v", progressions, want)
	}

	// A v1beta1 ManagedClusterAddOn in Git gives c3 its own config. The controller created the
	// MCA; the engine's apply adds only the spec.configs it owns.
	mca := mustObject(t, fmt.Sprintf(`apiVersion: addon.open-cluster-management.io/v1beta1
kind: ManagedClusterAddOn
metadata:
  name: %s
  namespace: %s
spec:
  configs:
  - group: addon.open-cluster-management.io
    resource: addondeploymentconfigs
    namespace: %s
    name: cfg-c
`, e.name, e.cluster("c3"), e.name))
	if _, err := engineApply(e.ctx, e.c.Dynamic, mca); err != nil {
		t.Fatalf("applying the v1beta1 ManagedClusterAddOn: %v", err)
	}
	e.waitCluster(60*time.Second, "c3", "cfg-c/cfg-c/True/UpgradeSucceed")
	for _, c := range []string{"c1", "c2"} {
		e.waitCluster(10*time.Second, c, "cfg-b/cfg-b/True/UpgradeSucceed")
	}

	e.waitProgression(20*time.Second, "rest", addonstatus.ReasonUpgradeSucceed, "2/2 upgrade completed")

	// The next sync of the unchanged commit changes nothing the engine owns, though the controller
	// wrote the status of both objects meanwhile: the generation and the engine's managed-fields
	// entry (its time moves only when its apply changes something) stay as they were.
	for _, o := range []*unstructured.Unstructured{cma("cfg-b"), mca} {
		before, err := resourceFor(e.c.Dynamic, o).Get(e.ctx, o.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		after, err := engineApply(e.ctx, e.c.Dynamic, o)
		if err != nil {
			t.Fatal(err)
		}
		if b, a := engineEntry(before), engineEntry(after); after.GetGeneration() != before.GetGeneration() || a == nil || b == nil || !a.Time.Equal(b.Time) {
			t.Errorf("re-applying the unchanged %s changed it: generation %d → %d, %s's entry %+v → %+v:\n%s", o.GetKind(),
				before.GetGeneration(), after.GetGeneration(), engineManager, b, a, cmp.Diff(before.Object, after.Object))
		}
	}
	stored, err := e.c.Addon.AddonV1alpha1().ManagedClusterAddOns(e.cluster("c3")).Get(e.ctx, e.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(stored.OwnerReferences) != 1 || stored.OwnerReferences[0].Kind != "ClusterManagementAddOn" {
		t.Errorf("the engine's apply changed the MCA's owner references: %+v", stored.OwnerReferences)
	}
	e.quiet(2 * time.Second)
}

// engineApply server-side applies o in its own version, as a GitOps engine does: its own field
// manager, forced, strict field validation.
func engineApply(ctx context.Context, c dynamic.Interface, o *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	data, err := o.MarshalJSON()
	if err != nil {
		return nil, err
	}
	force := true
	return resourceFor(c, o).Patch(ctx, o.GetName(), types.ApplyPatchType, data,
		metav1.PatchOptions{FieldManager: engineManager, Force: &force, FieldValidation: "Strict"})
}

// engineEntry is the managed-fields entry of the engine's applies.
func engineEntry(o *unstructured.Unstructured) *metav1.ManagedFieldsEntry {
	for _, m := range o.GetManagedFields() {
		if m.Manager == engineManager && m.Operation == metav1.ManagedFieldsOperationApply {
			return &m
		}
	}
	return nil
}

// resourceFor is the dynamic client of o's kind, in o's version and namespace.
func resourceFor(c dynamic.Interface, o *unstructured.Unstructured) dynamic.ResourceInterface {
	plural := map[string]string{
		"ClusterManagementAddOn": "clustermanagementaddons", "ManagedClusterAddOn": "managedclusteraddons",
		"AddOnDeploymentConfig": "addondeploymentconfigs", "AddOnTemplate": "addontemplates",
	}[o.GetKind()]
	gv, _ := schema.ParseGroupVersion(o.GetAPIVersion())
	r := c.Resource(gv.WithResource(plural))
	if o.GetNamespace() != "" {
		return r.Namespace(o.GetNamespace())
	}
	return r
}

func mustObject(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	return u
}

func decodeAll(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	r := k8syaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		out = append(out, mustObject(t, string(doc)))
	}
}
