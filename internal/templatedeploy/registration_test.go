//go:build integration

package templatedeploy_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/testing/localhub"
)

func regTemplate(name string, singleNamespace bool) string {
	perms := `          - type: CurrentCluster
            currentCluster: {clusterRoleName: reg-hub}
`
	if singleNamespace {
		perms += `          - type: SingleNamespace
            singleNamespace:
              namespace: reg-hub-ns
              roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reg-reader}
`
	}
	return fmt.Sprintf(`apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnTemplate
metadata: {name: %s}
spec:
  addonName: reg
  agentSpec:
    workload:
      manifests:
      - apiVersion: v1
        kind: ConfigMap
        metadata: {name: reg-settings, namespace: default}
  registration:
    - type: KubeClient
      kubeClient:
        hubPermissions:
%s    - type: CustomSigner
      customSigner:
        signerName: example.com/reg-signer
        subject: {user: reg-user, groups: [g1], organizationUnit: [o1]}
        signingCA: {namespace: reg-ca-ns, name: reg-ca}
`, name, perms)
}

// agentClient is a client acting as cluster's registration agent (the identity OCM's klusterlet
// creates add-on CSRs with).
func (e *env) agentClient(cluster string) kubernetes.Interface {
	e.t.Helper()
	cfg := rest.CopyConfig(e.hub.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:open-cluster-management:" + cluster + ":agent1",
		Groups: []string{"system:open-cluster-management:" + cluster, "system:open-cluster-management:managed-clusters"}}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

func csrPEM(t *testing.T, subject pkix.Name) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func (e *env) createCSR(as kubernetes.Interface, name, cluster, signer string, subject pkix.Name) {
	e.t.Helper()
	_, err := as.CertificatesV1().CertificateSigningRequests().Create(e.ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"open-cluster-management.io/cluster-name": cluster, addonv1alpha1.AddonLabelKey: e.addon}},
		Spec: certificatesv1.CertificateSigningRequestSpec{Request: csrPEM(e.t, subject), SignerName: signer,
			Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth}},
	}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("creating CSR %s: %v", name, err)
	}
	e.t.Cleanup(func() {
		_ = e.c.Kube.CertificatesV1().CertificateSigningRequests().Delete(e.ctx, name, metav1.DeleteOptions{})
	})
}

func (e *env) csr(name string) *certificatesv1.CertificateSigningRequest {
	c, err := e.c.Kube.CertificatesV1().CertificateSigningRequests().Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

func approved(c *certificatesv1.CertificateSigningRequest) bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == certificatesv1.CertificateApproved && cond.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func (e *env) binding(ns, name string) *rbacv1.RoleBinding {
	rb, err := e.c.Kube.RbacV1().RoleBindings(ns).Get(e.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return rb
}

// TestRegistration: status.registrations and namespace; the hubPermissions' RoleBindings created,
// one removed when the template stops asking for it and the other when the MCA goes; CSRs approved
// only for the exact identity; CustomSigner CSRs signed with the template's CA once it exists, the
// certificate verifying against it.
func TestRegistration(t *testing.T) {
	const addon, cluster = "reg", "reg1"
	e := newEnv(t, addon, envOptions{caRecheck: time.Second})
	for _, c := range []string{cluster, "reg2"} {
		if _, err := localhub.EnsureManagedCluster(e.ctx, e.c, c, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, ns := range []string{"reg-hub-ns", "reg-ca-ns"} {
		if err := localhub.EnsureNamespace(e.ctx, e.c.Kube, ns); err != nil {
			t.Fatal(err)
		}
	}
	// What OCM's cluster-manager grants every registration agent on the hub: creating CSRs; and the
	// grant of bind on the template's roles (config/components/deploy-templates/grants_role.yaml).
	e.apply(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: test-grants-reg
  labels: {addonops.io/aggregate-to-deploy-templates: "true"}
rules:
- {apiGroups: [rbac.authorization.k8s.io], resources: [clusterroles], resourceNames: [reg-hub], verbs: [bind]}
- {apiGroups: [rbac.authorization.k8s.io], resources: [roles], resourceNames: [reg-reader], verbs: [bind]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: test-registration-agent}
rules: [{apiGroups: [certificates.k8s.io], resources: [certificatesigningrequests], verbs: [create, get, list, watch]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: test-registration-agent}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: test-registration-agent}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: "system:open-cluster-management:managed-clusters"}]`)
	e.apply(regTemplate("reg-v1", true))
	e.apply(regTemplate("reg-v2", false))
	e.cleanup(cluster)
	e.cma("reg-v1", "")
	e.mca(cluster)

	// No CA secret yet: a condition naming it, the rest of the registration in place.
	e.waitCondition(time.Minute, cluster, "RegistrationApplied", "False/SigningCAInvalid: signing CA of signer example.com/reg-signer: secret reg-ca-ns/reg-ca not found")
	m := e.getMCA(cluster)
	wantRegs := []addonv1alpha1.RegistrationConfig{
		{SignerName: "kubernetes.io/kube-apiserver-client", Subject: addonv1alpha1.Subject{User: "system:open-cluster-management:cluster:reg1:addon:reg:agent:reg-agent",
			Groups: []string{"system:open-cluster-management:cluster:reg1:addon:reg", "system:open-cluster-management:addon:reg", "system:authenticated"}}},
		{SignerName: "example.com/reg-signer", Subject: addonv1alpha1.Subject{User: "reg-user", Groups: []string{"g1"}, OrganizationUnits: []string{"o1"}}},
	}
	if diff := cmp.Diff(wantRegs, m.Status.Registrations); diff != "" {
		t.Errorf("status.registrations (-want +got):\n%s", diff)
	}
	if m.Status.Namespace != "open-cluster-management-agent-addon" {
		t.Errorf("status.namespace %q", m.Status.Namespace)
	}

	// RoleBindings for the agent's identity.
	const ccName, snName = "open-cluster-management:reg:clusterrole:agent", "open-cluster-management:reg:reg1:role:agent"
	e.waitFor(time.Minute, "both RoleBindings", func() string {
		if e.binding(cluster, ccName) == nil || e.binding("reg-hub-ns", snName) == nil {
			return "missing"
		}
		return ""
	})
	wantSubjects := []rbacv1.Subject{
		{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "system:open-cluster-management:cluster:reg1:addon:reg:agent:reg-agent"},
		{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "system:open-cluster-management:cluster:reg1:addon:reg"},
		{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "system:open-cluster-management:addon:reg"},
	}
	cc, sn := e.binding(cluster, ccName), e.binding("reg-hub-ns", snName)
	if diff := cmp.Diff(wantSubjects, cc.Subjects); diff != "" {
		t.Errorf("CurrentCluster subjects (-want +got):\n%s", diff)
	}
	if cc.RoleRef.Kind != "ClusterRole" || cc.RoleRef.Name != "reg-hub" || sn.RoleRef.Kind != "Role" || sn.RoleRef.Name != "reg-reader" {
		t.Errorf("roleRefs %v %v", cc.RoleRef, sn.RoleRef)
	}

	// Certificate signing requests, as the cluster's registration agent (and another's) makes them.
	agent, other := e.agentClient(cluster), e.agentClient("reg2")
	kubeSubject := pkix.Name{CommonName: "system:open-cluster-management:cluster:reg1:addon:reg:agent:reg-agent",
		Organization: []string{"system:open-cluster-management:cluster:reg1:addon:reg", "system:open-cluster-management:addon:reg", "system:authenticated"}}
	with := func(f func(*pkix.Name)) pkix.Name {
		s := kubeSubject
		s.Organization = slices.Clone(s.Organization)
		f(&s)
		return s
	}
	const kubeSigner = "kubernetes.io/kube-apiserver-client"
	refused := map[string]string{
		"addon-reg1-reg-wrong-cluster": "common name",
		"addon-reg1-reg-wrong-addon":   "common name",
		"addon-reg1-reg-wrong-signer":  `signer "example.com/unknown" is not one AddOnTemplate reg-v1 registers`,
		"addon-reg1-reg-extra-group":   "[system:open-cluster-management:addon:other] are not the agent's",
		"addon-reg1-reg-wrong-agent":   "not by the registration agent of cluster reg1",
	}
	e.createCSR(agent, "addon-reg1-reg-wrong-cluster", cluster, kubeSigner, with(func(s *pkix.Name) {
		s.CommonName = strings.Replace(s.CommonName, "reg1", "reg2", 1)
		s.Organization[0] = strings.Replace(s.Organization[0], "reg1", "reg2", 1)
	}))
	e.createCSR(agent, "addon-reg1-reg-wrong-addon", cluster, kubeSigner, with(func(s *pkix.Name) {
		s.CommonName = "system:open-cluster-management:cluster:reg1:addon:other:agent:other-agent"
		s.Organization = []string{"system:open-cluster-management:cluster:reg1:addon:other", "system:open-cluster-management:addon:other"}
	}))
	e.createCSR(agent, "addon-reg1-reg-wrong-signer", cluster, "example.com/unknown", kubeSubject)
	e.createCSR(agent, "addon-reg1-reg-extra-group", cluster, kubeSigner, with(func(s *pkix.Name) {
		// Another add-on's group: the agent would get that add-on's hub permissions too. (The API
		// server itself refuses system:masters for this signer.)
		s.Organization = append(s.Organization, "system:open-cluster-management:addon:other")
	}))
	e.createCSR(other, "addon-reg1-reg-wrong-agent", cluster, kubeSigner, kubeSubject)
	e.createCSR(agent, "addon-reg1-reg-kube", cluster, kubeSigner, kubeSubject)
	e.createCSR(agent, "addon-reg1-reg-custom", cluster, "example.com/reg-signer", pkix.Name{CommonName: "reg-user", Organization: []string{"g1"}, OrganizationalUnit: []string{"o1"}})

	e.waitFor(time.Minute, "the KubeClient CSR approved", func() string {
		if !approved(e.csr("addon-reg1-reg-kube")) {
			return "not approved"
		}
		return ""
	})
	for name, why := range refused {
		e.waitCSRRefused(name, why)
	}
	// Without its CA the CustomSigner request waits.
	if c := e.csr("addon-reg1-reg-custom"); approved(c) || len(c.Status.Certificate) > 0 {
		t.Fatal("CustomSigner CSR approved without a usable CA")
	}

	// The CA appears: the condition clears, the request is approved and signed by it.
	caPEM, keyPEM := testCA(t)
	if _, err := e.c.Kube.CoreV1().Secrets("reg-ca-ns").Create(e.ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "reg-ca-ns", Name: "reg-ca"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": caPEM, "tls.key": keyPEM},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.c.Kube.CoreV1().Secrets("reg-ca-ns").Delete(context.Background(), "reg-ca", metav1.DeleteOptions{})
	})
	e.waitCondition(time.Minute, cluster, "RegistrationApplied", "True/SetPermissionApplied")
	var signed []byte
	e.waitFor(time.Minute, "the CustomSigner certificate", func() string {
		c := e.csr("addon-reg1-reg-custom")
		if !approved(c) || len(c.Status.Certificate) == 0 {
			return fmt.Sprintf("approved %v, certificate %d bytes", approved(c), len(c.Status.Certificate))
		}
		signed = c.Status.Certificate
		return ""
	})
	block, _ := pem.Decode(signed)
	if block == nil {
		t.Fatal("certificate is not PEM")
	}
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("signed certificate does not verify against the CA: %v", err)
	}
	if leaf.Subject.CommonName != "reg-user" || !slices.Equal(leaf.Subject.Organization, []string{"g1"}) || leaf.NotAfter.Sub(leaf.NotBefore) != 24*time.Hour {
		t.Errorf("certificate subject %v valid %v", leaf.Subject, leaf.NotAfter.Sub(leaf.NotBefore))
	}
	for name := range refused {
		if approved(e.csr(name)) {
			t.Errorf("%s was approved", name)
		}
	}

	// The template stops asking for the SingleNamespace permission: its binding goes.
	e.setDefaultTemplate("reg-v2")
	e.waitFor(time.Minute, "the SingleNamespace binding to go", func() string {
		if e.binding("reg-hub-ns", snName) != nil {
			return "still there"
		}
		return ""
	})
	if e.binding(cluster, ccName) == nil {
		t.Fatal("CurrentCluster binding deleted with the SingleNamespace one")
	}
	// The MCA goes: so does the rest (no garbage collector runs on this hub).
	if err := e.c.Addon.AddonV1alpha1().ManagedClusterAddOns(cluster).Delete(e.ctx, addon, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitFor(time.Minute, "the CurrentCluster binding to go", func() string {
		if e.binding(cluster, ccName) != nil {
			return "still there"
		}
		return ""
	})
}

func testCA(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "reg-ca"}, NotBefore: time.Now().Add(-time.Hour),
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
