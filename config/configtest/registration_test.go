//go:build integration

package configtest_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/config/configtest"
	"github.com/addonops/addonops/internal/controller"
	"github.com/addonops/addonops/internal/templatedeploy"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/rolloutsim"
	"github.com/addonops/addonops/internal/testing/ssapply"
)

// What a user adds for a template add-on with the deploy-templates component: the grant of the
// role its hubPermissions bind and of its CustomSigner, by label; the template, its CMA, the MCA
// and the agents' right to ask for certificates (what OCM's cluster-manager grants them).
const registrationObjects = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: addonops-grants-cfgt
  labels: {addonops.io/aggregate-to-deploy-templates: "true"}
rules:
- apiGroups: [rbac.authorization.k8s.io]
  resources: [clusterroles]
  resourceNames: [cfgt-hub]
  verbs: [bind]
- apiGroups: [certificates.k8s.io]
  resources: [signers]
  resourceNames: [example.com/cfgt-signer]
  verbs: [approve, sign]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: cfgt-hub}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: cfgt-registration-agent}
rules: [{apiGroups: [certificates.k8s.io], resources: [certificatesigningrequests], verbs: [create, get, list, watch]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: cfgt-registration-agent}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cfgt-registration-agent}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: "system:open-cluster-management:managed-clusters"}]
---
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnTemplate
metadata: {name: cfgt-v1}
spec:
  addonName: cfgt
  agentSpec:
    workload:
      manifests:
      - apiVersion: v1
        kind: ConfigMap
        metadata: {name: cfgt-settings, namespace: default}
  registration:
  - type: KubeClient
    kubeClient:
      hubPermissions:
      - type: CurrentCluster
        currentCluster: {clusterRoleName: cfgt-hub}
  - type: CustomSigner
    customSigner:
      signerName: example.com/cfgt-signer
      subject: {user: cfgt-user, groups: [g1]}
      signingCA: {name: cfgt-ca}
---
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ClusterManagementAddOn
metadata:
  name: cfgt
  annotations: {addon.open-cluster-management.io/lifecycle: self}
spec:
  supportedConfigs:
  - {group: addon.open-cluster-management.io, resource: addontemplates, defaultConfig: {name: cfgt-v1}}
  installStrategy: {type: Manual}
`

// TestRegistrationWithComponentRBAC runs the rollout controller and the template reconcilers
// (--deploy-templates) with nothing but the ServiceAccount's token, on config/default plus the
// deploy-templates component plus the user's grants: the agent's hub RoleBinding is created, its
// KubeClient CSR approved, its CustomSigner CSR approved and signed with the CA read from the
// controller's namespace, and nothing is refused.
func TestRegistrationWithComponentRBAC(t *testing.T) {
	const addon, cluster = "cfgt", "cfgt1"
	hub, _ := hubWith(t, deployTemplates)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := hub.Clients
	if _, err := localhub.EnsureManagedCluster(ctx, c, cluster, nil); err != nil {
		t.Fatal(err)
	}
	objs, err := ssapply.Decode(strings.NewReader(registrationObjects))
	if err != nil {
		t.Fatal(err)
	}
	if err := configtest.Apply(ctx, hub, objs); err != nil {
		t.Fatal(err)
	}
	caPEM, keyPEM := testCA(t)
	if _, err := c.Kube.CoreV1().Secrets(configtest.Namespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: configtest.Namespace, Name: "cfgt-ca"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": caPEM, "tls.key": keyPEM},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		bg := context.Background()
		_ = c.Addon.AddonV1alpha1().ClusterManagementAddOns().Delete(bg, addon, metav1.DeleteOptions{})
		_ = c.Addon.AddonV1alpha1().ManagedClusterAddOns(cluster).Delete(bg, addon, metav1.DeleteOptions{})
		for _, name := range []string{"cfgt-kube", "cfgt-custom"} {
			_ = c.Kube.CertificatesV1().CertificateSigningRequests().Delete(bg, name, metav1.DeleteOptions{})
		}
	})
	if _, err := c.Addon.AddonV1alpha1().ManagedClusterAddOns(cluster).Create(ctx,
		&addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: addon, Namespace: cluster}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	cfg, err := configtest.ServiceAccountConfig(ctx, hub, configtest.Namespace, configtest.ServiceAccount)
	if err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(2), textlogger.Output(&log)))
	klog.SetLogger(logger)
	defer klog.ClearLogger()
	runCtx := klog.NewContext(ctx, logger)
	ctrl, err := rolloutsim.StartController(runCtx, cfg, controller.Options{Addons: controller.AddonsSelf, HistoryNamespace: configtest.Namespace, Only: []string{addon}, Coalesce: 50 * time.Millisecond,
		DeployTemplates: &templatedeploy.Options{SigningCANamespace: configtest.Namespace}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		// Only a controller that does not stop fails the test: the test's context is cancelled, so
		// an error it returns is about the stop.
		if err := ctrl.Stop(); errors.Is(err, rolloutsim.ErrNotStopped) {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("controller log:\n%s", log.String())
		}
	}()
	waitFor := func(what string, check func() string) {
		t.Helper()
		harness.Eventually(t, time.Minute, what, func() string {
			msg := check()
			if msg != "" && strings.Contains(log.String(), "forbidden") {
				t.Fatalf("%s: the controller was refused by the RBAC of %s", what, deployTemplates)
			}
			return msg
		})
	}

	waitFor("the agent's hub RoleBinding", func() string {
		_, err := c.Kube.RbacV1().RoleBindings(cluster).Get(ctx, "open-cluster-management:cfgt:clusterrole:agent", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		return ""
	})

	// The cluster's registration agent asks for both certificates.
	agentCfg := rest.CopyConfig(hub.Config)
	agentCfg.Impersonate = rest.ImpersonationConfig{UserName: "system:open-cluster-management:" + cluster + ":agent1",
		Groups: []string{"system:open-cluster-management:" + cluster, "system:open-cluster-management:managed-clusters"}}
	agent, err := kubernetes.NewForConfig(agentCfg)
	if err != nil {
		t.Fatal(err)
	}
	createCSR(t, agent, "cfgt-kube", cluster, addon, certificatesv1.KubeAPIServerClientSignerName, pkix.Name{
		CommonName:   "system:open-cluster-management:cluster:cfgt1:addon:cfgt:agent:cfgt-agent",
		Organization: []string{"system:open-cluster-management:cluster:cfgt1:addon:cfgt", "system:open-cluster-management:addon:cfgt", "system:authenticated"}})
	createCSR(t, agent, "cfgt-custom", cluster, addon, "example.com/cfgt-signer", pkix.Name{CommonName: "cfgt-user", Organization: []string{"g1"}})

	csrs := c.Kube.CertificatesV1().CertificateSigningRequests()
	waitFor("both CSRs approved, the CustomSigner one signed", func() string {
		for _, name := range []string{"cfgt-kube", "cfgt-custom"} {
			csr, err := csrs.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err.Error()
			}
			ok := false
			for _, cond := range csr.Status.Conditions {
				ok = ok || cond.Type == certificatesv1.CertificateApproved && cond.Status == corev1.ConditionTrue
			}
			if !ok {
				return name + " not approved"
			}
			if name == "cfgt-custom" && len(csr.Status.Certificate) == 0 {
				return name + " not signed"
			}
		}
		return ""
	})
	harness.Consistently(t, time.Second, "no refusal by the RBAC", func() string {
		if strings.Contains(log.String(), "forbidden") {
			return fmt.Sprintf("the controller was refused by the RBAC of %s", deployTemplates)
		}
		return ""
	})
}

func createCSR(t *testing.T, as kubernetes.Interface, name, cluster, addon, signer string, subject pkix.Name) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject}, key)
	if err != nil {
		t.Fatal(err)
	}
	_, err = as.CertificatesV1().CertificateSigningRequests().Create(context.Background(), &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"open-cluster-management.io/cluster-name": cluster, addonv1alpha1.AddonLabelKey: addon}},
		Spec: certificatesv1.CertificateSigningRequestSpec{Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: signer, Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating CSR %s: %v", name, err)
	}
}

func testCA(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "cfgt-ca"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(365 * 24 * time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	k, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: k})
}
