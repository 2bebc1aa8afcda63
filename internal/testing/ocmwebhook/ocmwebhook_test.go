//go:build integration

package ocmwebhook

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/testing/localhub"
)

func TestMain(m *testing.M) { os.Exit(localhub.RunTests(m)) }

// The tests share the package's hub and run one after the other; each leaves localhub's
// v1alpha1-only add-on CRDs behind.
func restoreAtEnd(t *testing.T, hub *localhub.Hub) {
	t.Cleanup(func() {
		if err := RestoreV1alpha1(context.Background(), hub, Options{}); err != nil {
			t.Errorf("putting localhub's add-on CRDs back: %v", err)
		}
	})
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func resource(c dynamic.Interface, res string) dynamic.NamespaceableResourceInterface {
	return c.Resource(V1beta1.WithResource(res))
}

// apply server-side applies a YAML object as Argo CD's and Flux's server-side apply do (their own
// field manager, force), with the given field validation.
func apply(t *testing.T, ctx context.Context, hub *localhub.Hub, doc, validation string) (*unstructured.Unstructured, error) {
	t.Helper()
	var u unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	data, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	gv := u.GroupVersionKind().GroupVersion()
	res := map[string]string{"ClusterManagementAddOn": "clustermanagementaddons", "ManagedClusterAddOn": "managedclusteraddons"}[u.GetKind()]
	var ri dynamic.ResourceInterface = hub.Clients.Dynamic.Resource(gv.WithResource(res))
	if u.GetNamespace() != "" {
		ri = hub.Clients.Dynamic.Resource(gv.WithResource(res)).Namespace(u.GetNamespace())
	}
	force := true
	return ri.Patch(ctx, u.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: "gitops-engine", Force: &force, FieldValidation: validation})
}

const v1beta1CMA = `apiVersion: addon.open-cluster-management.io/v1beta1
kind: ClusterManagementAddOn
metadata:
  name: hello-v1beta1
  annotations:
    addon.open-cluster-management.io/lifecycle: self
spec:
  addOnMeta:
    displayName: hello
  defaultConfigs:
  - group: addon.open-cluster-management.io
    resource: addondeploymentconfigs
    namespace: hub
    name: hello-abc
  - group: addon.open-cluster-management.io
    resource: addontemplates
    name: __reserved_no_default__
  installStrategy:
    type: Placements
    placements:
    - name: canary
      namespace: hub
      configs:
      - group: addon.open-cluster-management.io
        resource: addondeploymentconfigs
        namespace: hub
        name: hello-canary-def
      rolloutStrategy:
        type: Progressive
        progressive:
          maxConcurrency: 1
`

// TestV1beta1ThroughOCMWebhook: localhub alone serves no v1beta1; with OCM's webhook it does, and
// objects written in either version read back in the other as OCM converts them.
func TestV1beta1ThroughOCMWebhook(t *testing.T) {
	hub := localhub.ForTest(t)
	ctx := ctxFor(t)
	restoreAtEnd(t, hub)
	if err := RestoreV1alpha1(ctx, hub, Options{}); err != nil {
		t.Fatal(err)
	}
	_, err := apply(t, ctx, hub, v1beta1CMA, "Strict")
	if !apierrors.IsNotFound(err) {
		t.Fatalf("v1beta1 on localhub's CRDs: err = %v, want NotFound (v1alpha1 only is served)", err)
	}

	w := ForTest(t, hub, Options{})
	t.Logf("OCM webhook-server converting %s after its launch; log %s", w.Startup.Round(time.Millisecond), w.LogPath)

	t.Run("v1beta1 ClusterManagementAddOn", func(t *testing.T) {
		applied, err := apply(t, ctx, hub, v1beta1CMA, "Strict")
		if err != nil {
			t.Fatalf("applying a v1beta1 ClusterManagementAddOn: %v", err)
		}
		t.Cleanup(func() {
			_ = hub.Clients.Addon.AddonV1alpha1().ClusterManagementAddOns().Delete(context.Background(), "hello-v1beta1", metav1.DeleteOptions{})
		})
		if got, _, _ := unstructured.NestedSlice(applied.Object, "spec", "defaultConfigs"); len(got) != 2 {
			t.Errorf("the API server answered the apply with defaultConfigs %v", got)
		}
		cma, err := hub.Clients.Addon.AddonV1alpha1().ClusterManagementAddOns().Get(ctx, "hello-v1beta1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// OCM's conversion: each defaultConfigs entry is a supportedConfig with a defaultConfig;
		// the reserved name is one without.
		want := []addonv1alpha1.ConfigMeta{
			{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"},
				DefaultConfig: &addonv1alpha1.ConfigReferent{Namespace: "hub", Name: "hello-abc"}},
			{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addontemplates"}},
		}
		if !equalJSON(t, cma.Spec.SupportedConfigs, want) {
			t.Errorf("v1alpha1 supportedConfigs = %s, want %s", toJSON(t, cma.Spec.SupportedConfigs), toJSON(t, want))
		}
		ps := cma.Spec.InstallStrategy.Placements
		if len(ps) != 1 || len(ps[0].Configs) != 1 || ps[0].Configs[0].Name != "hello-canary-def" || ps[0].RolloutStrategy.Type != "Progressive" {
			t.Errorf("v1alpha1 install strategy = %s", toJSON(t, cma.Spec.InstallStrategy))
		}

		// Read back in v1beta1: what was applied.
		back, err := resource(hub.Clients.Dynamic, "clustermanagementaddons").Get(ctx, "hello-v1beta1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var in unstructured.Unstructured
		if err := yaml.Unmarshal([]byte(v1beta1CMA), &in.Object); err != nil {
			t.Fatal(err)
		}
		// As applied, but for the defaults the CRD gives a progressive rollout.
		for _, f := range [][]string{{"spec", "defaultConfigs"}, {"spec", "addOnMeta"}, {"spec", "installStrategy", "type"}} {
			got, _, _ := unstructured.NestedFieldNoCopy(back.Object, f...)
			want, _, _ := unstructured.NestedFieldNoCopy(in.Object, f...)
			if !equalJSON(t, got, want) {
				t.Errorf("v1beta1 %s read back = %s, want %s", strings.Join(f, "."), toJSON(t, got), toJSON(t, want))
			}
		}
		gotPs, _, _ := unstructured.NestedSlice(back.Object, "spec", "installStrategy", "placements")
		wantPs, _, _ := unstructured.NestedSlice(in.Object, "spec", "installStrategy", "placements")
		if len(gotPs) != 1 || !equalJSON(t, gotPs[0].(map[string]any)["configs"], wantPs[0].(map[string]any)["configs"]) {
			t.Errorf("v1beta1 placements read back = %s, want %s", toJSON(t, gotPs), toJSON(t, wantPs))
		}
		// Re-applying the same object changes nothing (an engine's sync of an unchanged commit).
		again, err := apply(t, ctx, hub, v1beta1CMA, "Strict")
		if err != nil {
			t.Fatal(err)
		}
		if again.GetResourceVersion() != back.GetResourceVersion() {
			t.Errorf("re-applying the unchanged v1beta1 object wrote it (resourceVersion %s → %s)", back.GetResourceVersion(), again.GetResourceVersion())
		}
	})

	t.Run("v1alpha1 ClusterManagementAddOn read as v1beta1", func(t *testing.T) {
		cma := &addonv1alpha1.ClusterManagementAddOn{
			ObjectMeta: metav1.ObjectMeta{Name: "hello-v1alpha1"},
			Spec: addonv1alpha1.ClusterManagementAddOnSpec{
				AddOnConfiguration: addonv1alpha1.ConfigCoordinates{CRDName: "widgets.example.com"},
				SupportedConfigs: []addonv1alpha1.ConfigMeta{
					{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"}},
				},
				InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyManual},
			},
		}
		if _, err := hub.Clients.Addon.AddonV1alpha1().ClusterManagementAddOns().Create(ctx, cma, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = hub.Clients.Addon.AddonV1alpha1().ClusterManagementAddOns().Delete(context.Background(), cma.Name, metav1.DeleteOptions{})
		})
		got, err := hub.Clients.Addon.AddonV1beta1().ClusterManagementAddOns().Get(ctx, cma.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := []addonv1beta1.AddOnConfig{{
			ConfigGroupResource: addonv1beta1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"},
			ConfigReferent:      addonv1beta1.ConfigReferent{Name: addonv1beta1.ReservedNoDefaultConfigName},
		}}
		if !equalJSON(t, got.Spec.DefaultConfigs, want) {
			t.Errorf("v1beta1 defaultConfigs = %s, want %s", toJSON(t, got.Spec.DefaultConfigs), toJSON(t, want))
		}
		// spec.addOnConfiguration has no v1beta1 field: a v1beta1 reader never sees it, though the
		// stored object keeps it.
		raw, err := resource(hub.Clients.Dynamic, "clustermanagementaddons").Get(ctx, cma.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, found, _ := unstructured.NestedFieldNoCopy(raw.Object, "spec", "addOnConfiguration"); found {
			t.Errorf("v1beta1 view has spec.addOnConfiguration: %s", toJSON(t, raw.Object["spec"]))
		}
	})

	t.Run("ManagedClusterAddOn installNamespace", func(t *testing.T) {
		if err := localhub.EnsureNamespace(ctx, hub.Clients.Kube, "cluster-v1beta1"); err != nil {
			t.Fatal(err)
		}
		mca := `apiVersion: addon.open-cluster-management.io/v1beta1
kind: ManagedClusterAddOn
metadata:
  name: hello
  namespace: cluster-v1beta1
  annotations:
    addon.open-cluster-management.io/v1alpha1-install-namespace: hello-agent
spec:
  configs:
  - group: addon.open-cluster-management.io
    resource: addondeploymentconfigs
    namespace: hub
    name: hello-cluster-xyz
`
		if _, err := apply(t, ctx, hub, mca, "Strict"); err != nil {
			t.Fatalf("applying a v1beta1 ManagedClusterAddOn: %v", err)
		}
		stored, err := hub.Clients.Addon.AddonV1alpha1().ManagedClusterAddOns("cluster-v1beta1").Get(ctx, "hello", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if stored.Spec.InstallNamespace != "hello-agent" || len(stored.Spec.Configs) != 1 || stored.Spec.Configs[0].Name != "hello-cluster-xyz" {
			t.Errorf("v1alpha1 spec = %s, want installNamespace hello-agent from the annotation and the config", toJSON(t, stored.Spec))
		}
		if _, ok := stored.Annotations[addonv1beta1.InstallNamespaceAnnotation]; ok {
			t.Errorf("v1alpha1 view keeps annotation %s", addonv1beta1.InstallNamespaceAnnotation)
		}
		back, err := hub.Clients.Addon.AddonV1beta1().ManagedClusterAddOns("cluster-v1beta1").Get(ctx, "hello", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if back.Annotations[addonv1beta1.InstallNamespaceAnnotation] != "hello-agent" {
			t.Errorf("v1beta1 view annotations = %v, want the install namespace in %s", back.Annotations, addonv1beta1.InstallNamespaceAnnotation)
		}
	})

	t.Run("v1alpha1 fields in a v1beta1 object", func(t *testing.T) {
		// What the functions refuse at build time: the apiVersion moved to v1beta1, the fields
		// not. Strict field validation (kubectl's default) rejects it; without it the server
		// drops the field, and with it every default config, in silence.
		wrong := strings.Replace(strings.Replace(v1beta1CMA, "hello-v1beta1", "hello-wrong", 1), `  defaultConfigs:
  - group: addon.open-cluster-management.io
    resource: addondeploymentconfigs
    namespace: hub
    name: hello-abc
  - group: addon.open-cluster-management.io
    resource: addontemplates
    name: __reserved_no_default__
`, `  supportedConfigs:
  - group: addon.open-cluster-management.io
    resource: addondeploymentconfigs
    defaultConfig:
      namespace: hub
      name: hello-abc
`, 1)
		if wrong == v1beta1CMA || !strings.Contains(wrong, "supportedConfigs") {
			t.Fatal("test input not edited")
		}
		// Server-side apply (Flux, Argo CD with ServerSideApply=true) refuses the unknown field
		// whatever the field validation.
		for _, validation := range []string{"Strict", "Ignore"} {
			_, err := apply(t, ctx, hub, wrong, validation)
			if err == nil || !strings.Contains(err.Error(), ".spec.supportedConfigs: field not declared in schema") {
				t.Errorf("server-side apply (fieldValidation %s) of a v1beta1 object with spec.supportedConfigs: err = %v, want field not declared", validation, err)
			}
		}
		// A create or update without strict validation (kubectl apply --validate=false, Argo CD
		// with Validate=false) is accepted and the field dropped.
		var u unstructured.Unstructured
		if err := yaml.Unmarshal([]byte(wrong), &u.Object); err != nil {
			t.Fatal(err)
		}
		cmas := resource(hub.Clients.Dynamic, "clustermanagementaddons")
		if _, err := cmas.Create(ctx, &u, metav1.CreateOptions{FieldValidation: "Strict"}); err == nil || !strings.Contains(err.Error(), `unknown field "spec.supportedConfigs"`) {
			t.Errorf("strict create: err = %v, want unknown field", err)
		}
		if _, err := cmas.Create(ctx, &u, metav1.CreateOptions{FieldValidation: "Ignore"}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = hub.Clients.Addon.AddonV1alpha1().ClusterManagementAddOns().Delete(context.Background(), "hello-wrong", metav1.DeleteOptions{})
		})
		stored, err := hub.Clients.Addon.AddonV1alpha1().ClusterManagementAddOns().Get(ctx, "hello-wrong", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(stored.Spec.SupportedConfigs) != 0 {
			t.Errorf("stored supportedConfigs = %s; the server was expected to drop the v1alpha1 field of a v1beta1 object", toJSON(t, stored.Spec.SupportedConfigs))
		}
	})

	t.Run("webhook down", func(t *testing.T) {
		// An object to convert: a v1beta1 list of nothing needs no webhook.
		if _, err := hub.Clients.Addon.AddonV1alpha1().ClusterManagementAddOns().Create(ctx, &addonv1alpha1.ClusterManagementAddOn{
			ObjectMeta: metav1.ObjectMeta{Name: "hello-down"},
			Spec:       addonv1alpha1.ClusterManagementAddOnSpec{InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyManual}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = hub.Clients.Addon.AddonV1alpha1().ClusterManagementAddOns().Delete(context.Background(), "hello-down", metav1.DeleteOptions{})
		})
		if err := w.Stop(); err != nil {
			t.Fatal(err)
		}
		// Everything is stored in v1alpha1: v1alpha1 readers (the addonops controller) never need
		// the webhook, v1beta1 ones fail.
		if _, err := hub.Clients.Addon.AddonV1alpha1().ClusterManagementAddOns().List(ctx, metav1.ListOptions{}); err != nil {
			t.Errorf("v1alpha1 list with the webhook down: %v", err)
		}
		_, err := hub.Clients.Addon.AddonV1beta1().ClusterManagementAddOns().List(ctx, metav1.ListOptions{})
		if err == nil || !strings.Contains(err.Error(), "conversion webhook") {
			t.Errorf("v1beta1 list with the webhook down: err = %v, want the API server's conversion webhook error", err)
		}
		t.Logf("v1beta1 list with the webhook down: %v", err)
	})
}

// TestCRDsAsShippedLoseFields: the api module's addon/v1beta1 CRD files applied as they are
// (conversion None) serve v1beta1, but a v1beta1 ClusterManagementAddOn's defaultConfigs do not
// survive: the reason a hub serves v1beta1 only through OCM's webhook.
func TestCRDsAsShippedLoseFields(t *testing.T) {
	hub := localhub.ForTest(t)
	ctx := ctxFor(t)
	restoreAtEnd(t, hub)
	if err := InstallAsShipped(ctx, hub, Options{}); err != nil {
		t.Fatal(err)
	}
	applied, err := apply(t, ctx, hub, strings.Replace(v1beta1CMA, "hello-v1beta1", "hello-none", 1), "Strict")
	if err != nil {
		t.Fatalf("applying a v1beta1 ClusterManagementAddOn on CRDs without conversion: %v", err)
	}
	t.Cleanup(func() {
		_ = hub.Clients.Addon.AddonV1alpha1().ClusterManagementAddOns().Delete(context.Background(), "hello-none", metav1.DeleteOptions{})
	})
	stored, err := hub.Clients.Addon.AddonV1alpha1().ClusterManagementAddOns().Get(ctx, "hello-none", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, _, _ := unstructured.NestedSlice(applied.Object, "spec", "defaultConfigs")
	t.Logf("conversion None: the apply answered defaultConfigs %s; stored v1alpha1 supportedConfigs %s", toJSON(t, got), toJSON(t, stored.Spec.SupportedConfigs))
	if len(stored.Spec.SupportedConfigs) != 0 || len(got) != 0 {
		t.Errorf("without OCM's webhook the default configs were kept (answer %s, stored %s); the package doc and docs/v1beta1.md say they are lost",
			toJSON(t, got), toJSON(t, stored.Spec.SupportedConfigs))
	}
}

// TestOneAtATime: a second webhook waits for the first one's port lock and says why it gives up.
func TestOneAtATime(t *testing.T) {
	hub := localhub.ForTest(t)
	restoreAtEnd(t, hub)
	ForTest(t, hub, Options{})
	_, err := Start(ctxFor(t), hub, Options{ReadyTimeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "only one runs at a time") || !strings.Contains(err.Error(), "started by process") {
		t.Fatalf("second Start: err = %v, want the lock's explanation", err)
	}
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(js)
}

func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	return toJSON(t, a) == toJSON(t, b)
}
