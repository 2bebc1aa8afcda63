//go:build integration

package templatedeploy_test

// The trust boundary of template add-ons: a managed cluster's agent, acting with exactly the hub RBAC OCM gives it
// (internal/testing/agentrbac), cannot choose the identity its add-on is registered as, nor a certificate
// subject other than the template's; and a template's hubPermissions bind only what the controller
// was granted by name, never in the controller's namespace or another cluster's.

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/registration"
	"github.com/addonops/addonops/internal/testing/agentrbac"
	"github.com/addonops/addonops/internal/testing/localhub"
)

// hostileCluster makes a managed cluster whose agents have OCM's hub RBAC, and returns clients that
// act as its agent.
func (e *env) hostileCluster(cluster string) *localhub.Clients {
	e.t.Helper()
	if _, err := localhub.EnsureManagedCluster(e.ctx, e.c, cluster, nil); err != nil {
		e.t.Fatal(err)
	}
	if err := agentrbac.Apply(e.ctx, e.c.Kube, cluster); err != nil {
		e.t.Fatal(err)
	}
	agent, err := agentrbac.Clients(e.hub.Config, cluster)
	if err != nil {
		e.t.Fatal(err)
	}
	return agent
}

// agentWritesStatus changes the MCA's status as the cluster's agent may.
func (e *env) agentWritesStatus(agent *localhub.Clients, cluster string, f func(*addonv1alpha1.ManagedClusterAddOnStatus)) {
	e.t.Helper()
	api := agent.Addon.AddonV1alpha1().ManagedClusterAddOns(cluster)
	for range 20 {
		m, err := api.Get(e.ctx, e.addon, metav1.GetOptions{})
		if err != nil {
			e.t.Fatal(err)
		}
		f(&m.Status)
		if _, err = api.UpdateStatus(e.ctx, m, metav1.UpdateOptions{}); err == nil {
			return
		} else if !apierrors.IsConflict(err) {
			e.t.Fatalf("the agent writing the MCA status: %v", err)
		}
	}
	e.t.Fatal("the agent's status writes kept conflicting")
}

// waitEvent waits for a Warning event on the MCA whose "reason: message" contains each of want.
func (e *env) waitMCAEvent(cluster string, want ...string) {
	e.t.Helper()
	m := e.getMCA(cluster)
	e.waitFor(time.Minute, fmt.Sprintf("an event on %s/%s with %q", cluster, e.addon, want), func() string {
		evs := e.eventsFor(cluster, e.addon, string(m.UID))
	next:
		for _, ev := range evs {
			for _, w := range want {
				if !strings.Contains(ev, w) {
					continue next
				}
			}
			return ""
		}
		return fmt.Sprintf("events %q", evs)
	})
}

// bindingsOf lists the add-on's RoleBindings in a namespace.
func (e *env) bindingsOf(ns string) []rbacv1.RoleBinding {
	e.t.Helper()
	l, err := e.c.Kube.RbacV1().RoleBindings(ns).List(e.ctx, metav1.ListOptions{LabelSelector: addonv1alpha1.AddonLabelKey + "=" + e.addon})
	if err != nil {
		e.t.Fatal(err)
	}
	return l.Items
}

// TestTokenIdentityPinned: with the token driver, the cluster's agent reports its subject in the MCA
// status. Reporting the groups of every service account, of unauthenticated users or of another
// cluster binds nothing (and the binding made before goes): RegistrationApplied=False
// SetPermissionFailed naming the subject, a Warning event. OCM's own token identity is bound,
// user alone.
func TestTokenIdentityPinned(t *testing.T) {
	const addon, cluster = "tok", "tok1"
	e := newEnv(t, addon, envOptions{})
	agent := e.hostileCluster(cluster)
	e.apply(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: test-grants-tok
  labels: {addonops.io/aggregate-to-deploy-templates: "true"}
rules: [{apiGroups: [rbac.authorization.k8s.io], resources: [clusterroles], resourceNames: [tok-hub], verbs: [bind]}]
---
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnTemplate
metadata: {name: tok-v1}
spec:
  addonName: tok
  agentSpec:
    workload:
      manifests:
      - {apiVersion: v1, kind: ConfigMap, metadata: {name: tok-settings, namespace: default}}
  registration:
  - type: KubeClient
    kubeClient:
      hubPermissions:
      - type: CurrentCluster
        currentCluster: {clusterRoleName: tok-hub}
`)
	e.cleanup(cluster)
	e.cma("tok-v1", "")
	e.mca(cluster)
	const binding = "open-cluster-management:tok:clusterrole:agent"
	e.waitCondition(time.Minute, cluster, "RegistrationApplied", "True/SetPermissionApplied")
	if e.binding(cluster, binding) == nil {
		t.Fatal("no binding for the CSR driver's subject")
	}

	pinned := "system:serviceaccount:tok1:tok-agent"
	hostile := []struct {
		name    string
		subject addonv1alpha1.Subject
		named   string
	}{
		{"every service account and unauthenticated users", addonv1alpha1.Subject{User: pinned, Groups: []string{"system:serviceaccounts", "system:unauthenticated"}}, "system:serviceaccounts system:unauthenticated"},
		{"another cluster's group", addonv1alpha1.Subject{User: pinned, Groups: []string{"system:open-cluster-management:cluster:tok2:addon:tok"}}, "system:open-cluster-management:cluster:tok2:addon:tok"},
		{"another cluster's service account", addonv1alpha1.Subject{User: "system:serviceaccount:tok2:tok-agent"}, `user "system:serviceaccount:tok2:tok-agent"`},
	}
	for _, h := range hostile {
		// No subtests: the env's helpers fail the test they were made for.
		t.Logf("the agent reports %s", h.name)
		e.agentWritesStatus(agent, cluster, func(st *addonv1alpha1.ManagedClusterAddOnStatus) {
			st.KubeClientDriver = "token"
			st.Registrations = []addonv1alpha1.RegistrationConfig{{SignerName: certificatesv1.KubeAPIServerClientSignerName, Subject: h.subject}}
		})
		e.waitFor(time.Minute, "the refusal of "+h.name, func() string {
			got := condition(e.getMCA(cluster), "RegistrationApplied")
			if strings.HasPrefix(got, "False/SetPermissionFailed: ") && strings.Contains(got, h.named) && strings.Contains(got, `is user "`+pinned+`" and no group`) {
				return ""
			}
			return got
		})
		e.waitMCAEvent(cluster, "RegistrationRefused: ", h.named)
		e.waitFor(time.Minute, "no binding for "+h.name, func() string {
			if rbs := e.bindingsOf(cluster); len(rbs) > 0 {
				return fmt.Sprintf("bindings %v", rbs[0].Subjects)
			}
			return ""
		})
	}

	// OCM's token identity: bound, the user alone.
	e.agentWritesStatus(agent, cluster, func(st *addonv1alpha1.ManagedClusterAddOnStatus) {
		st.Registrations = []addonv1alpha1.RegistrationConfig{{SignerName: certificatesv1.KubeAPIServerClientSignerName, Subject: addonv1alpha1.Subject{User: pinned}}}
	})
	e.waitCondition(time.Minute, cluster, "RegistrationApplied", "True/SetPermissionApplied")
	var rb *rbacv1.RoleBinding
	e.waitFor(time.Minute, "the token identity's binding", func() string {
		if rb = e.binding(cluster, binding); rb == nil {
			return "missing"
		}
		return ""
	})
	if diff := cmp.Diff([]rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: pinned}}, rb.Subjects); diff != "" {
		t.Errorf("subjects (-want +got):\n%s", diff)
	}
}

// agentCSR files a certificate signing request as the cluster's agent.
func (e *env) agentCSR(agent *localhub.Clients, name, cluster, signer string, subject pkix.Name, expirationSeconds int32) {
	e.t.Helper()
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"open-cluster-management.io/cluster-name": cluster, addonv1alpha1.AddonLabelKey: e.addon}},
		Spec: certificatesv1.CertificateSigningRequestSpec{Request: csrPEM(e.t, subject), SignerName: signer,
			Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth}},
	}
	if expirationSeconds > 0 {
		csr.Spec.ExpirationSeconds = &expirationSeconds
	}
	if _, err := agent.Kube.CertificatesV1().CertificateSigningRequests().Create(e.ctx, csr, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("creating CSR %s as the agent: %v", name, err)
	}
	e.t.Cleanup(func() {
		_ = e.c.Kube.CertificatesV1().CertificateSigningRequests().Delete(e.ctx, name, metav1.DeleteOptions{})
	})
}

func (e *env) waitCertificate(name string) *x509.Certificate {
	e.t.Helper()
	var out []byte
	e.waitFor(time.Minute, "the certificate of "+name, func() string {
		c := e.csr(name)
		if !approved(c) || len(c.Status.Certificate) == 0 {
			return fmt.Sprintf("approved %v, certificate %d bytes", approved(c), len(c.Status.Certificate))
		}
		out = c.Status.Certificate
		return ""
	})
	block, _ := pem.Decode(out)
	if block == nil {
		e.t.Fatal("certificate is not PEM")
	}
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		e.t.Fatal(err)
	}
	return leaf
}

func (e *env) waitCSRRefused(name, why string) {
	e.t.Helper()
	uid := string(e.csr(name).UID)
	e.waitFor(time.Minute, "the refusal of "+name, func() string {
		evs := e.eventsFor("default", name, uid)
		for _, ev := range evs {
			if strings.HasPrefix(ev, "CertificateNotApproved: not approved: ") && strings.Contains(ev, why) {
				return ""
			}
		}
		return fmt.Sprintf("events %v", evs)
	})
}

// TestCustomSignerIdentity: a CustomSigner certificate carries the template's subject, not the
// request's, and lives no longer than asked nor than 24h; a request with other subject attributes
// is refused; a CustomSigner of Kubernetes' own (kubernetes.io/...) is refused in the template and
// its requests are never approved.
func TestCustomSignerIdentity(t *testing.T) {
	const addon, cluster = "csi", "csi1"
	e := newEnv(t, addon, envOptions{caRecheck: time.Second})
	agent := e.hostileCluster(cluster)
	if err := localhub.EnsureNamespace(e.ctx, e.c.Kube, "csi-ca"); err != nil {
		t.Fatal(err)
	}
	caPEM, keyPEM := testCA(t)
	if _, err := e.c.Kube.CoreV1().Secrets("csi-ca").Create(e.ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "csi-ca", Name: "csi-ca"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": caPEM, "tls.key": keyPEM},
	}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	e.apply(`apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnTemplate
metadata: {name: csi-v1}
spec:
  addonName: csi
  agentSpec:
    workload:
      manifests:
      - {apiVersion: v1, kind: ConfigMap, metadata: {name: csi-settings, namespace: default}}
  registration:
  - type: CustomSigner
    customSigner:
      signerName: example.com/csi-signer
      subject: {user: csi-user, groups: [g1, g2]}
      signingCA: {namespace: csi-ca, name: csi-ca}
  - type: CustomSigner
    customSigner:
      signerName: kubernetes.io/kube-apiserver-client-kubelet
      subject: {user: "system:node:csi1", groups: ["system:nodes"]}
      signingCA: {namespace: csi-ca, name: csi-ca}
`)
	e.cleanup(cluster)
	e.cma("csi-v1", "")
	e.mca(cluster)

	e.waitCondition(time.Minute, cluster, "RegistrationApplied",
		"False/SignerNameReserved: customSigner signerName kubernetes.io/kube-apiserver-client-kubelet is Kubernetes' own (kubernetes.io, k8s.io): it is never registered, approved or signed")
	e.waitMCAEvent(cluster, "RegistrationRefused: ", "kubernetes.io/kube-apiserver-client-kubelet")
	wantRegs := []addonv1alpha1.RegistrationConfig{{SignerName: "example.com/csi-signer", Subject: addonv1alpha1.Subject{User: "csi-user", Groups: []string{"g1", "g2"}}}}
	if diff := cmp.Diff(wantRegs, e.getMCA(cluster).Status.Registrations); diff != "" {
		t.Errorf("status.registrations (-want +got):\n%s", diff)
	}

	const signer = "example.com/csi-signer"
	// The template's identity, groups in another order, asking for a year.
	e.agentCSR(agent, "addon-csi1-csi-year", cluster, signer, pkix.Name{CommonName: "csi-user", Organization: []string{"g2", "g1", "system:authenticated"}}, 365*24*3600)
	// Asking for an hour.
	e.agentCSR(agent, "addon-csi1-csi-hour", cluster, signer, pkix.Name{CommonName: "csi-user", Organization: []string{"g1", "g2"}}, 3600)
	// The identity plus attributes of the cluster's choosing.
	e.agentCSR(agent, "addon-csi1-csi-extra", cluster, signer, pkix.Name{CommonName: "csi-user", Organization: []string{"g1", "g2"}, Country: []string{"XX"}, SerialNumber: "1"}, 0)
	// Kubernetes' kubelet client signer, as the template names it.
	e.agentCSR(agent, "addon-csi1-csi-kubelet", cluster, "kubernetes.io/kube-apiserver-client-kubelet", pkix.Name{CommonName: "system:node:csi1", Organization: []string{"system:nodes"}}, 0)

	year := e.waitCertificate("addon-csi1-csi-year")
	if got := year.Subject.String(); got != "CN=csi-user,O=g1+O=g2" {
		t.Errorf("certificate subject %s, want the template's CN=csi-user,O=g1+O=g2", got)
	}
	if got := year.NotAfter.Sub(year.NotBefore); got != registration.CertValidity {
		t.Errorf("a year asked: valid %v, want the cap %v", got, registration.CertValidity)
	}
	if got := e.waitCertificate("addon-csi1-csi-hour"); got.NotAfter.Sub(got.NotBefore) != time.Hour {
		t.Errorf("an hour asked: valid %v", got.NotAfter.Sub(got.NotBefore))
	}
	e.waitCSRRefused("addon-csi1-csi-extra", "subject attribute 2.5.4.6 (XX) is not part of an agent's identity")
	e.waitCSRRefused("addon-csi1-csi-kubelet", "signer kubernetes.io/kube-apiserver-client-kubelet is Kubernetes' own")
	for _, name := range []string{"addon-csi1-csi-extra", "addon-csi1-csi-kubelet"} {
		if c := e.csr(name); approved(c) || len(c.Status.Certificate) > 0 {
			t.Errorf("%s approved or signed", name)
		}
	}
}

// canReadSecrets asks the API server whether the add-on agent's default identity on cluster may
// read secrets in ns.
func (e *env) canReadSecrets(cluster, ns string) bool {
	e.t.Helper()
	groups := registration.DefaultGroups(cluster, e.addon)
	sar, err := e.c.Kube.AuthorizationV1().SubjectAccessReviews().Create(e.ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: registration.DefaultUser(cluster, e.addon), Groups: groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "secrets"},
	}}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return sar.Status.Allowed
}

// TestHubPermissionsChecked: a template's hubPermissions bind only roles granted bind by name, in
// the cluster's namespace or one of the template's, never the controller's own (its signing CA
// role there, even granted) nor another managed cluster's; a binding made before (by an older
// controller) goes; a grant added later is bound; a namespace that becomes a managed cluster's
// loses the binding.
func TestHubPermissionsChecked(t *testing.T) {
	const addon, cluster, ctlNS = "hp", "hp1", "hp-ctl"
	e := newEnv(t, addon, envOptions{signingCANamespace: ctlNS, controllerNamespaces: []string{ctlNS}})
	e.hostileCluster(cluster)
	e.hostileCluster("hp2")
	for _, ns := range []string{ctlNS, "hp3"} {
		if err := localhub.EnsureNamespace(e.ctx, e.c.Kube, ns); err != nil {
			t.Fatal(err)
		}
	}
	// The controller's signing CA role (config/components/deploy-templates), a role for the agent,
	// and grants: the signing CA role granted by name too, as a careless admin might.
	e.apply(`apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: addonops-controller-signing-ca, namespace: hp-ctl}
rules: [{apiGroups: [""], resources: [secrets], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: hp-hub}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: test-grants-hp
  labels: {addonops.io/aggregate-to-deploy-templates: "true"}
rules: [{apiGroups: [rbac.authorization.k8s.io], resources: [roles], resourceNames: [addonops-controller-signing-ca], verbs: [bind]}]
---
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnTemplate
metadata: {name: hp-v1}
spec:
  addonName: hp
  agentSpec:
    workload:
      manifests:
      - {apiVersion: v1, kind: ConfigMap, metadata: {name: hp-settings, namespace: default}}
  registration:
  - type: KubeClient
    kubeClient:
      hubPermissions:
      - type: CurrentCluster
        currentCluster: {clusterRoleName: hp-hub}
      - type: SingleNamespace
        singleNamespace:
          namespace: hp-ctl
          roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: addonops-controller-signing-ca}
      - type: SingleNamespace
        singleNamespace:
          namespace: hp2
          roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: hp-hub}
---
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnTemplate
metadata: {name: hp-v2}
spec:
  addonName: hp
  agentSpec:
    workload:
      manifests:
      - {apiVersion: v1, kind: ConfigMap, metadata: {name: hp-settings, namespace: default}}
  registration:
  - type: KubeClient
    kubeClient:
      hubPermissions:
      - type: SingleNamespace
        singleNamespace:
          namespace: hp3
          roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: hp-hub}
`)
	// What an older controller bound: the signing CA role in the controller's namespace.
	signingRef := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "addonops-controller-signing-ca"}
	old := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ctlNS, Name: registration.SingleNamespaceBindingName(addon, cluster, signingRef), Labels: registration.BindingLabels(cluster, addon)},
		RoleRef:    signingRef,
		Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: registration.DefaultUser(cluster, addon)}},
	}
	if _, err := e.c.Kube.RbacV1().RoleBindings(ctlNS).Create(e.ctx, old, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.c.Kube.RbacV1().RoleBindings(ctlNS).Delete(e.ctx, old.Name, metav1.DeleteOptions{}) })
	if !e.canReadSecrets(cluster, ctlNS) {
		t.Fatal("the old binding does not let the agent read the signing CA: the test proves nothing")
	}
	e.cleanup(cluster)
	e.cma("hp-v1", "")
	e.mca(cluster)

	refusals := []string{
		`hubPermissions[0] (ClusterRole hp-hub in namespace hp1): ClusterRole "hp-hub" is not granted to the controller for binding by name`,
		"hubPermissions[1] (Role addonops-controller-signing-ca in namespace hp-ctl): namespace hp-ctl is the controller's own",
		"hubPermissions[2] (ClusterRole hp-hub in namespace hp2): namespace hp2 is managed cluster hp2's; an agent of cluster hp1 is bound only in its own",
	}
	waitRefused := func(want ...string) {
		t.Helper()
		e.waitFor(time.Minute, "the refusals", func() string {
			got := condition(e.getMCA(cluster), "RegistrationApplied")
			if !strings.HasPrefix(got, "False/SetPermissionFailed: ") {
				return got
			}
			for _, w := range want {
				if !strings.Contains(got, w) {
					return got
				}
			}
			return ""
		})
	}
	waitRefused(refusals...)
	e.waitMCAEvent(cluster, "RegistrationRefused: ", "namespace hp-ctl is the controller's own", "namespace hp2 is managed cluster hp2's")
	e.waitFor(time.Minute, "the old binding to go", func() string {
		if e.binding(ctlNS, old.Name) != nil {
			return "still there"
		}
		return ""
	})
	if e.canReadSecrets(cluster, ctlNS) {
		t.Error("the agent can still read secrets in the controller's namespace")
	}
	for _, ns := range []string{cluster, ctlNS, "hp2"} {
		if rbs := e.bindingsOf(ns); len(rbs) > 0 {
			t.Errorf("bindings in %s: %s", ns, rbs[0].Name)
		}
	}

	// hp-hub granted: bound in the cluster's namespace; the rest stays refused.
	e.apply(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: test-grants-hp-hub
  labels: {addonops.io/aggregate-to-deploy-templates: "true"}
rules: [{apiGroups: [rbac.authorization.k8s.io], resources: [clusterroles], resourceNames: [hp-hub], verbs: [bind]}]`)
	t.Cleanup(func() {
		for _, n := range []string{"test-grants-hp", "test-grants-hp-hub"} {
			_ = e.c.Kube.RbacV1().ClusterRoles().Delete(e.ctx, n, metav1.DeleteOptions{})
		}
	})
	e.waitFor(time.Minute, "the granted binding", func() string {
		if e.binding(cluster, "open-cluster-management:hp:clusterrole:agent") == nil {
			return "missing"
		}
		return ""
	})
	waitRefused(refusals[1:]...)
	e.waitFor(time.Minute, "hubPermissions[0] no longer refused", func() string {
		if got := condition(e.getMCA(cluster), "RegistrationApplied"); strings.Contains(got, "hubPermissions[0]") || !strings.Contains(got, refusals[1]) {
			return got
		}
		return ""
	})
	for _, ns := range []string{ctlNS, "hp2"} {
		if rbs := e.bindingsOf(ns); len(rbs) > 0 {
			t.Errorf("bindings in %s: %s", ns, rbs[0].Name)
		}
	}

	// A namespace of the template's, bound; then a managed cluster of that name appears: the
	// binding goes.
	e.setDefaultTemplate("hp-v2")
	e.waitCondition(time.Minute, cluster, "RegistrationApplied", "True/SetPermissionApplied")
	e.waitFor(time.Minute, "the binding in hp3", func() string {
		if len(e.bindingsOf("hp3")) != 1 {
			return "missing"
		}
		return ""
	})
	e.hostileCluster("hp3")
	waitRefused("hubPermissions[0] (ClusterRole hp-hub in namespace hp3): namespace hp3 is managed cluster hp3's")
	e.waitFor(time.Minute, "the binding in hp3 to go", func() string {
		if rbs := e.bindingsOf("hp3"); len(rbs) > 0 {
			return "still there"
		}
		return ""
	})
}
