//go:build integration

package templatedeploy_test

import (
	"context"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/hubcache"
	"github.com/addonops/addonops/internal/spechash"
	"github.com/addonops/addonops/internal/templatedeploy"
	"github.com/addonops/addonops/internal/testing/agentrbac"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/localhub"
)

// trustTemplate is an AddOnTemplate of add-on addon whose agent is one ConfigMap named marker, with
// a CurrentCluster hub permission on ClusterRole role and a custom signer <addon>-signer whose CA is
// Secret <addon>-ca in namespace <addon>-ns.
func trustTemplate(name, addon, marker, role string) string {
	return fmt.Sprintf(`apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnTemplate
metadata: {name: %[1]s}
spec:
  addonName: %[2]s
  agentSpec:
    workload:
      manifests:
      - apiVersion: v1
        kind: ConfigMap
        metadata: {name: %[3]s, namespace: default}
        data: {value: "{{VALUE}}"}
  registration:
  - type: KubeClient
    kubeClient:
      hubPermissions:
      - type: CurrentCluster
        currentCluster: {clusterRoleName: %[4]s}
  - type: CustomSigner
    customSigner:
      signerName: example.com/%[2]s-signer
      subject: {user: %[2]s-user}
      signingCA: {namespace: %[2]s-ns, name: %[2]s-ca}
`, name, addon, marker, role)
}

// specHashOf returns the spec hash of the config the API server holds (what anyone reading Git can
// compute too).
func (e *env) specHashOf(kind, namespace, name string) string {
	e.t.Helper()
	api := e.c.Dynamic.Resource(gvrOf(kind))
	var u *unstructured.Unstructured
	var err error
	if namespace != "" {
		u, err = api.Namespace(namespace).Get(e.ctx, name, metav1.GetOptions{})
	} else {
		u, err = api.Get(e.ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		e.t.Fatal(err)
	}
	h, err := spechash.Of(u.Object)
	if err != nil {
		e.t.Fatal(err)
	}
	return h
}

// TestClusterCannotChooseItsConfigs: a cluster's agent, with the hub RBAC OCM gives it, writes
// another add-on's template and an AddOnDeploymentConfig of another namespace into its own MCA's
// status.configReferences, again and again. The controller deploys, binds and signs nothing from
// them: its work keeps the add-on's own manifests, no RoleBinding names the other add-on's role,
// no certificate of the other add-on's signer is approved or signed, and the MCA says why
// (ManifestApplied=False ConfigsRefused, a DesiredConfigsRefused event).
func TestClusterCannotChooseItsConfigs(t *testing.T) {
	const addon, cluster = "trust-a", "trust1"
	e := newEnv(t, addon, envOptions{})
	if _, err := localhub.EnsureManagedCluster(e.ctx, e.c, cluster, nil); err != nil {
		t.Fatal(err)
	}
	if err := agentrbac.Apply(e.ctx, e.c.Kube, cluster); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"trust-a-ns", "trust-b-ns"} {
		if err := localhub.EnsureNamespace(e.ctx, e.c.Kube, ns); err != nil {
			t.Fatal(err)
		}
		caPEM, keyPEM := testCA(t)
		if _, err := e.c.Kube.CoreV1().Secrets(ns).Create(e.ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: strings.TrimSuffix(ns, "-ns") + "-ca"}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{"tls.crt": caPEM, "tls.key": keyPEM},
		}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	e.apply(trustTemplate("trust-a-v1", addon, "a-agent", "trust-a-hub"))
	e.apply(trustTemplate("trust-b-v1", "trust-b", "b-agent", "trust-b-hub"))
	// Both add-ons' roles granted bind by name (registration binds only those).
	e.apply(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: test-grants-trust
  labels: {addonops.io/aggregate-to-deploy-templates: "true"}
rules: [{apiGroups: [rbac.authorization.k8s.io], resources: [clusterroles], resourceNames: [trust-a-hub, trust-b-hub], verbs: [bind]}]
---
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnDeploymentConfig
metadata: {name: trust-a-config, namespace: default}
spec:
  agentInstallNamespace: ""
  customizedVariables: [{name: VALUE, value: a-value}]
---
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnDeploymentConfig
metadata: {name: trust-b-config, namespace: trust-b-ns}
spec:
  agentInstallNamespace: ""
  customizedVariables: [{name: VALUE, value: b-secret-value}]`)
	e.cleanup(cluster)
	e.cma("trust-a-v1", "default/trust-a-config")
	e.mca(cluster)

	// The add-on's own agent is deployed and its permission bound.
	const binding = "open-cluster-management:trust-a:clusterrole:agent"
	e.waitFor(time.Minute, "the add-on's own work and binding", func() string {
		ws := e.works(cluster)
		if len(ws) != 1 || !strings.Contains(string(ws[0].Spec.Workload.Manifests[0].Raw), `"a-value"`) {
			return fmt.Sprintf("%d works", len(ws))
		}
		if b := e.binding(cluster, binding); b == nil || b.RoleRef.Name != "trust-a-hub" {
			return "no binding to trust-a-hub"
		}
		return ""
	})
	before := e.works(cluster)[0]
	mca := e.getMCA(cluster)

	bTemplate, bADC := e.specHashOf("AddOnTemplate", "", "trust-b-v1"), e.specHashOf("AddOnDeploymentConfig", "trust-b-ns", "trust-b-config")
	forged := []addonv1alpha1.ConfigReference{
		{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"},
			ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "trust-b-ns", Name: "trust-b-config"},
			DesiredConfig:  &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "trust-b-ns", Name: "trust-b-config"}, SpecHash: bADC}},
		{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addontemplates"},
			ConfigReferent: addonv1alpha1.ConfigReferent{Name: "trust-b-v1"},
			DesiredConfig:  &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Name: "trust-b-v1"}, SpecHash: bTemplate}},
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"configReferences": forged}})
	if err != nil {
		t.Fatal(err)
	}
	agent, err := agentrbac.Clients(e.hub.Config, cluster)
	if err != nil {
		t.Fatal(err)
	}
	// The lie, repeated every 200 ms for 8 s (the controller's rollout writes the truth back).
	liarCtx, stopLiar := context.WithTimeout(e.ctx, 8*time.Second)
	defer stopLiar()
	var wg sync.WaitGroup
	lies := 0
	wg.Go(func() {
		for liarCtx.Err() == nil {
			_, err := agent.Addon.AddonV1alpha1().ManagedClusterAddOns(cluster).Patch(liarCtx, addon, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
			// The client's rate limiter refuses a request that would outlive liarCtx: the end too.
			if deadline, _ := liarCtx.Deadline(); err != nil && liarCtx.Err() == nil && time.Until(deadline) > time.Second {
				t.Errorf("the agent's status patch (its RBAC allows it): %v", err)
				return
			}
			lies++
			harness.Pass(200 * time.Millisecond) // the lie's pace
		}
	})
	// While it lies, it asks for a certificate of the other add-on's signer, the identity the
	// other template names (a second into the lie: the controller writes the truth back at once,
	// so nothing shows that the lie landed).
	harness.Pass(time.Second)
	const csrName = "addon-trust1-trust-a-b-signer"
	e.createCSR(agent.Kube, csrName, cluster, "example.com/trust-b-signer", pkix.Name{CommonName: "trust-b-user"})
	// While it lies: no work version with the other add-on's manifests or values, no binding of
	// its role, no certificate.
	liarEnd, _ := liarCtx.Deadline()
	e.holds(time.Until(liarEnd), "nothing of the other add-on while the agent lies", func() string {
		if c := e.csr(csrName); approved(c) || len(c.Status.Certificate) > 0 {
			return fmt.Sprintf("CSR %s for the other add-on's signer was approved or signed", csrName)
		}
		for _, w := range e.works(cluster) {
			raw := ""
			for _, m := range w.Spec.Workload.Manifests {
				raw += string(m.Raw)
			}
			if strings.Contains(raw, "b-agent") || strings.Contains(raw, "b-secret-value") {
				return fmt.Sprintf("work %s carries the other add-on's manifests or values: %s", w.Name, raw)
			}
		}
		list, err := e.c.Kube.RbacV1().RoleBindings(cluster).List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Sprintf("listing the RoleBindings of %s: %v", cluster, err)
		}
		for _, b := range list.Items {
			if b.RoleRef.Name == "trust-b-hub" {
				return fmt.Sprintf("RoleBinding %s binds the other add-on's role %s", b.Name, b.RoleRef.Name)
			}
		}
		return ""
	})
	wg.Wait()
	if lies < 10 {
		t.Fatalf("the agent wrote its lie only %d times", lies)
	}
	after := e.works(cluster)
	if len(after) != 1 || after[0].Generation != before.Generation {
		t.Errorf("the work changed while the cluster lied: generation %d → %d", before.Generation, after[0].Generation)
	}
	// Told, once, on the MCA.
	e.waitFor(30*time.Second, "a DesiredConfigsRefused event", func() string {
		var refused []string
		for _, ev := range e.eventsFor(cluster, addon, string(mca.UID)) {
			if strings.HasPrefix(ev, hubcache.EventReasonConfigsRefused+": ") {
				refused = append(refused, ev)
			}
		}
		if len(refused) == 0 {
			return "none"
		}
		if !strings.Contains(refused[0], "addontemplates.addon.open-cluster-management.io trust-b-v1") || !strings.Contains(refused[0], "trust-b-ns/trust-b-config") {
			return "event does not name the forged configs: " + refused[0]
		}
		return ""
	})
	// The lie stopped: the controller's rollout wrote the add-on's own configs back, and its
	// condition no longer says refused.
	e.waitFor(30*time.Second, "the MCA back on its own configs", func() string {
		m := e.getMCA(cluster)
		for _, r := range m.Status.ConfigReferences {
			if r.DesiredConfig != nil && strings.HasPrefix(r.DesiredConfig.Name, "trust-b") {
				return "still " + r.DesiredConfig.Name
			}
		}
		if c := condition(m, templatedeploy.ConditionManifestApplied); strings.Contains(c, templatedeploy.ReasonConfigsRefused) {
			return c
		}
		return ""
	})
	if b := e.binding(cluster, binding); b == nil || b.RoleRef.Name != "trust-a-hub" {
		t.Errorf("the add-on's own binding: %+v", b)
	}
	if c := e.csr(csrName); approved(c) || len(c.Status.Certificate) > 0 {
		t.Errorf("CSR %s for the other add-on's signer was approved or signed", csrName)
	}
	if _, err := e.c.Kube.RbacV1().RoleBindings(cluster).Get(e.ctx, "open-cluster-management:trust-b:clusterrole:agent", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a binding for the other add-on exists: %v", err)
	}
}
