package registration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/hubcache"
	"github.com/addonops/addonops/internal/render"
)

func helloTemplate(t testing.TB) *addonv1alpha1.AddOnTemplate {
	t.Helper()
	b, err := os.ReadFile("../render/testdata/hello/addon-template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := render.DecodeAddOnTemplate(j)
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

// helloPolicy lets the hello template bind its two roles anywhere.
var helloPolicy = BindPolicy{Bindable: Bindable{ClusterRoles: sets.New("cm-admin"), Roles: sets.New("cm-reader")}}

func mcaOf(cluster, addon string) *addonv1alpha1.ManagedClusterAddOn {
	return &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: addon, Namespace: cluster, UID: "mca-uid"}}
}

func TestRegistrations(t *testing.T) {
	tpl := helloTemplate(t)
	mca := mcaOf("cluster1", "hello-template")
	got := Registrations(tpl, mca)
	want := []addonv1alpha1.RegistrationConfig{
		{SignerName: "kubernetes.io/kube-apiserver-client", Subject: addonv1alpha1.Subject{
			User: "system:open-cluster-management:cluster:cluster1:addon:hello-template:agent:hello-template-agent",
			Groups: []string{"system:open-cluster-management:cluster:cluster1:addon:hello-template",
				"system:open-cluster-management:addon:hello-template", "system:authenticated"}}},
		{SignerName: "example.com/signer-name", Subject: addonv1alpha1.Subject{User: "user1", Groups: []string{"g1", "g2"}, OrganizationUnits: []string{"o1", "o2"}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("registrations (-want +got):\n%s", diff)
	}

	// Without a subject a CustomSigner gets the default one; duplicates of a signer count once.
	tpl.Spec.Registration[1].CustomSigner.Subject = nil
	tpl.Spec.Registration = append(tpl.Spec.Registration, tpl.Spec.Registration...)
	got = Registrations(tpl, mca)
	if len(got) != 2 || got[1].Subject.User != DefaultUser("cluster1", "hello-template") || !slices.Equal(got[1].Subject.Groups, DefaultGroups("cluster1", "hello-template")) {
		t.Errorf("default subject: %+v", got)
	}

	// Token driver: the subject the agent reported is kept.
	mca.Status.KubeClientDriver = "token"
	mca.Status.Registrations = []addonv1alpha1.RegistrationConfig{{SignerName: "kubernetes.io/kube-apiserver-client", Subject: addonv1alpha1.Subject{User: "system:serviceaccount:x:y"}}}
	if got := Registrations(tpl, mca); got[0].Subject.User != "system:serviceaccount:x:y" || len(got[0].Subject.Groups) != 0 {
		t.Errorf("token driver: %+v", got[0])
	}
	mca.Status.Registrations = nil
	if got := Registrations(tpl, mca); got[0].Subject.User != "" {
		t.Errorf("token driver before the agent reported: %+v", got[0])
	}
}

func TestRoleBindings(t *testing.T) {
	tpl := helloTemplate(t)
	mca := mcaOf("cluster1", "hello-template")
	regs := Registrations(tpl, mca)
	got, pending, err := RoleBindings(tpl, mca, regs, helloPolicy)
	if err != nil || pending {
		t.Fatalf("err %v pending %v", err, pending)
	}
	subjects := []rbacv1.Subject{
		{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "system:open-cluster-management:cluster:cluster1:addon:hello-template:agent:hello-template-agent"},
		{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "system:open-cluster-management:cluster:cluster1:addon:hello-template"},
		{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "system:open-cluster-management:addon:hello-template"},
	}
	labels := map[string]string{"open-cluster-management.io/addon-name": "hello-template", "open-cluster-management.io/addon-template-name": "", "open-cluster-management.io/cluster-name": "cluster1"}
	want := []*rbacv1.RoleBinding{
		{ObjectMeta: metav1.ObjectMeta{Name: "open-cluster-management:hello-template:clusterrole:agent", Namespace: "cluster1", Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "addon.open-cluster-management.io/v1alpha1", Kind: "ManagedClusterAddOn", Name: "hello-template", UID: "mca-uid"}}},
			RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cm-admin"}, Subjects: subjects},
		{ObjectMeta: metav1.ObjectMeta{Name: "open-cluster-management:hello-template:cluster1:role:agent", Namespace: "open-cluster-management", Labels: labels},
			RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "cm-reader"}, Subjects: subjects},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("bindings (-want +got):\n%s", diff)
	}

	cases := []struct {
		name    string
		change  func(*addonv1alpha1.AddOnTemplate)
		regs    []addonv1alpha1.RegistrationConfig
		pending bool
		err     string
		count   int
	}{
		{"two bindings for one namespace and kind", func(t *addonv1alpha1.AddOnTemplate) {
			p := &t.Spec.Registration[0].KubeClient.HubPermissions
			*p = append(*p, (*p)[0])
		}, regs, false, "hubPermissions[0] and hubPermissions[2] both need RoleBinding cluster1/open-cluster-management:hello-template:clusterrole:agent", 0},
		{"CurrentCluster without its config", func(t *addonv1alpha1.AddOnTemplate) {
			t.Spec.Registration[0].KubeClient.HubPermissions[0].CurrentCluster = nil
		}, regs, false, "hubPermissions[0]: type CurrentCluster needs currentCluster.clusterRoleName", 0},
		{"SingleNamespace without its config", func(t *addonv1alpha1.AddOnTemplate) {
			t.Spec.Registration[0].KubeClient.HubPermissions[1].SingleNamespace = nil
		}, regs, false, "hubPermissions[1]: type SingleNamespace needs", 0},
		{"subject not reported yet (token driver)", nil, []addonv1alpha1.RegistrationConfig{{SignerName: "kubernetes.io/kube-apiserver-client"}}, true, "", 0},
		{"no hub permissions", func(t *addonv1alpha1.AddOnTemplate) { t.Spec.Registration[0].KubeClient = nil }, regs, false, "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tpl := helloTemplate(t)
			if tc.change != nil {
				tc.change(tpl)
			}
			got, pending, err := RoleBindings(tpl, mca, tc.regs, helloPolicy)
			if pending != tc.pending || len(got) != tc.count || (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Errorf("got %d bindings, pending %v, err %v; want %d, %v, %q", len(got), pending, err, tc.count, tc.pending, tc.err)
			}
		})
	}

	// Bindings are per cluster, so clusters never overwrite each other's subjects.
	other, _, _ := RoleBindings(tpl, mcaOf("cluster2", "hello-template"), Registrations(tpl, mcaOf("cluster2", "hello-template")), helloPolicy)
	if other[1].Namespace != got[1].Namespace || other[1].Name == got[1].Name {
		t.Errorf("SingleNamespace bindings of two clusters: %s and %s", got[1].Name, other[1].Name)
	}
}

func TestDiffBindings(t *testing.T) {
	tpl := helloTemplate(t)
	mca := mcaOf("cluster1", "hello-template")
	desired, _, _ := RoleBindings(tpl, mca, Registrations(tpl, mca), helloPolicy)
	existing := func(rbs ...*rbacv1.RoleBinding) func(string, string) *rbacv1.RoleBinding {
		return func(ns, name string) *rbacv1.RoleBinding {
			for _, rb := range rbs {
				if rb.Namespace == ns && rb.Name == name {
					return rb
				}
			}
			return nil
		}
	}
	stale := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "old", Name: "open-cluster-management:hello-template:cluster1:role:agent", Labels: BindingLabels("cluster1", "hello-template")}}
	cc, sn := desired[0].DeepCopy(), desired[1].DeepCopy()
	cc.ResourceVersion = "5"
	changedSubjects := sn.DeepCopy()
	changedSubjects.Subjects = changedSubjects.Subjects[:1]
	changedSubjects.Labels = map[string]string{"keep": "me"}
	changedRole := cc.DeepCopy()
	changedRole.RoleRef.Name = "other"

	t.Run("nothing exists", func(t *testing.T) {
		ch := DiffBindings(desired, nil, existing())
		if len(ch.Create) != 2 || len(ch.Update)+len(ch.Replace)+len(ch.Delete) != 0 {
			t.Errorf("%+v", ch)
		}
	})
	t.Run("up to date", func(t *testing.T) {
		if ch := DiffBindings(desired, []*rbacv1.RoleBinding{cc, sn}, existing(cc, sn)); !ch.Empty() {
			t.Errorf("%+v", ch)
		}
	})
	t.Run("subjects changed, foreign labels kept", func(t *testing.T) {
		ch := DiffBindings(desired, nil, existing(cc, changedSubjects))
		if len(ch.Update) != 1 || len(ch.Update[0].Subjects) != 3 || ch.Update[0].Labels["keep"] != "me" || ch.Update[0].Labels["open-cluster-management.io/cluster-name"] != "cluster1" {
			t.Errorf("%+v", ch)
		}
	})
	t.Run("roleRef changed: replaced", func(t *testing.T) {
		ch := DiffBindings(desired, nil, existing(changedRole, sn))
		if len(ch.Replace) != 1 || ch.Replace[0].RoleRef.Name != "cm-admin" {
			t.Errorf("%+v", ch)
		}
	})
	t.Run("no longer asked for: deleted", func(t *testing.T) {
		ch := DiffBindings(desired, []*rbacv1.RoleBinding{cc, sn, stale}, existing(cc, sn, stale))
		if len(ch.Delete) != 1 || ch.Delete[0] != stale {
			t.Errorf("%+v", ch)
		}
	})
	t.Run("MCA gone: all deleted", func(t *testing.T) {
		ch := DiffBindings(nil, []*rbacv1.RoleBinding{cc, sn}, existing(cc, sn))
		if len(ch.Delete) != 2 || len(ch.Create) != 0 {
			t.Errorf("%+v", ch)
		}
	})
}

func TestCondition(t *testing.T) {
	regs := []addonv1alpha1.RegistrationConfig{{SignerName: "x/y"}}
	cases := []struct {
		name           string
		regs           []addonv1alpha1.RegistrationConfig
		pending        bool
		err            error
		signers        []string
		ca             []string
		status, reason string
	}{
		{"applied", regs, false, nil, nil, nil, "True", ReasonPermissionApplied},
		{"nothing to register", nil, false, nil, nil, nil, "True", ReasonNilRegistration},
		{"binding failed", regs, false, errors.New("boom"), []string{"s"}, []string{"ca"}, "False", ReasonPermissionFailed},
		{"signer refused", regs, false, nil, []string{"customSigner signerName kubernetes.io/x is Kubernetes' own"}, []string{"ca"}, "False", ReasonSignerReserved},
		{"CA problem", regs, false, nil, nil, []string{"signing CA of signer x/y: secret ns/n not found"}, "False", ReasonSigningCAInvalid},
		{"pending subject", regs, true, nil, nil, nil, "False", ReasonPermissionPending},
	}
	for _, tc := range cases {
		c := Condition(tc.regs, tc.pending, Problems{Bind: tc.err, Signers: tc.signers, CAs: tc.ca})
		if string(c.Status) != tc.status || c.Reason != tc.reason || c.Type != "RegistrationApplied" {
			t.Errorf("%s: %+v", tc.name, c)
		}
	}
	if c := Condition(regs, false, Problems{CAs: []string{"signing CA of signer x/y: secret ns/n not found"}}); !strings.Contains(c.Message, "secret ns/n not found") {
		t.Errorf("CA message %q", c.Message)
	}
}

func TestInstallNamespaceAndSigningCAs(t *testing.T) {
	tpl := helloTemplate(t)
	if got := InstallNamespace(tpl, nil); got != "open-cluster-management-agent-addon" {
		t.Errorf("namespace %q", got)
	}
	adc := &addonv1alpha1.AddOnDeploymentConfig{Spec: addonv1alpha1.AddOnDeploymentConfigSpec{AgentInstallNamespace: "elsewhere"}}
	if got := InstallNamespace(tpl, []*addonv1alpha1.AddOnDeploymentConfig{adc}); got != "elsewhere" {
		t.Errorf("namespace with ADC %q", got)
	}
	if got := SigningCAs(tpl, "hub-ns"); got["example.com/signer-name"] != (addonv1alpha1.SigningCARef{Namespace: "default", Name: "ca-secret"}) || len(got) != 1 {
		t.Errorf("signing CAs %v", got)
	}
	tpl.Spec.Registration[1].CustomSigner.SigningCA.Namespace = ""
	if got := SigningCAs(tpl, "hub-ns"); got["example.com/signer-name"].Namespace != "hub-ns" {
		t.Errorf("default CA namespace: %v", got)
	}
}

// Certificates.

func newCA(t testing.TB, notAfter time.Time) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter,
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	k, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: k})
}

// NewRequest makes a PEM certificate request for subject.
func newRequest(t testing.TB, subject pkix.Name, sans ...string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.CertificateRequest{Subject: subject}
	for _, s := range sans {
		if ip := net.ParseIP(s); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, s)
		}
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

type csrSpec struct {
	cluster, addon, signer, user string
	groups                       []string
	subject                      pkix.Name
	sans                         []string
	usages                       []certificatesv1.KeyUsage
}

func kubeClientCSR(cluster, addon string) csrSpec {
	return csrSpec{cluster: cluster, addon: addon, signer: certificatesv1.KubeAPIServerClientSignerName,
		user: "system:open-cluster-management:" + cluster + ":abcde", groups: []string{"system:open-cluster-management:" + cluster, "system:open-cluster-management:managed-clusters", "system:authenticated"},
		subject: pkix.Name{CommonName: DefaultUser(cluster, addon), Organization: DefaultGroups(cluster, addon)},
		usages:  []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth}}
}

func (s csrSpec) build(t testing.TB) *certificatesv1.CertificateSigningRequest {
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "addon-" + s.cluster + "-" + s.addon + "-x", Labels: map[string]string{
			hubcache.ClusterNameLabel: s.cluster, addonv1alpha1.AddonLabelKey: s.addon}},
		Spec: certificatesv1.CertificateSigningRequestSpec{Request: newRequest(t, s.subject, s.sans...), SignerName: s.signer,
			Username: s.user, Groups: s.groups, Usages: s.usages},
	}
}

func TestReview(t *testing.T) {
	tpl := helloTemplate(t)
	custom := func() csrSpec {
		s := kubeClientCSR("cluster1", "hello-template")
		s.signer = "example.com/signer-name"
		s.subject = pkix.Name{CommonName: "user1", Organization: []string{"g2", "g1"}, OrganizationalUnit: []string{"o1", "o2"}}
		return s
	}
	with := func(s csrSpec, f func(*csrSpec)) csrSpec { f(&s); return s }
	ok := kubeClientCSR("cluster1", "hello-template")
	cases := []struct {
		name   string
		csr    csrSpec
		refuse string // "" = approve
		sign   bool
	}{
		{"KubeClient: the agent's identity", ok, "", false},
		{"KubeClient: without system:authenticated", with(ok, func(s *csrSpec) { s.subject.Organization = s.subject.Organization[:2] }), "", false},
		{"wrong cluster in the subject", with(ok, func(s *csrSpec) { s.subject = kubeClientCSR("cluster2", "hello-template").subject }), "common name", false},
		{"wrong cluster requesting", with(ok, func(s *csrSpec) {
			s.user, s.groups = kubeClientCSR("cluster2", "hello-template").user, kubeClientCSR("cluster2", "hello-template").groups
		}), "not by the registration agent of cluster cluster1", false},
		{"cluster name prefix is not the cluster", with(ok, func(s *csrSpec) { s.user = "system:open-cluster-management:cluster1x:abcde" }), "not by the registration agent", false},
		{"requester not in the cluster's group", with(ok, func(s *csrSpec) { s.groups = []string{"system:authenticated"} }), "is not in group system:open-cluster-management:cluster1", false},
		{"wrong add-on in the subject", with(ok, func(s *csrSpec) { s.subject = kubeClientCSR("cluster1", "other").subject }), "common name", false},
		{"wrong add-on label", with(ok, func(s *csrSpec) { s.addon = "other" }), `labelled for add-on "other"`, false},
		{"wrong signer", with(ok, func(s *csrSpec) { s.signer = "example.com/other" }), `signer "example.com/other" is not one`, false},
		{"extra group", with(ok, func(s *csrSpec) { s.subject.Organization = append(s.subject.Organization, "system:masters") }), "[system:masters] are not the agent's", false},
		{"missing group", with(ok, func(s *csrSpec) { s.subject.Organization = s.subject.Organization[:1] }), "are missing", false},
		{"organizational unit", with(ok, func(s *csrSpec) { s.subject.OrganizationalUnit = []string{"x"} }), "organizational units", false},
		{"subject alternative name", with(ok, func(s *csrSpec) { s.sans = []string{"kubernetes.default"} }), "subject alternative names", false},
		{"server usage", with(ok, func(s *csrSpec) { s.usages = append(s.usages, certificatesv1.UsageServerAuth) }), `usage "server auth"`, false},
		{"CustomSigner: the template's subject", custom(), "", true},
		{"CustomSigner: wrong user", with(custom(), func(s *csrSpec) { s.subject.CommonName = "user2" }), `common name "user2", want "user1"`, false},
		{"CustomSigner: extra group", with(custom(), func(s *csrSpec) { s.subject.Organization = append(s.subject.Organization, "g3") }), "[g3] are not the agent's", false},
		{"CustomSigner: wrong OU", with(custom(), func(s *csrSpec) { s.subject.OrganizationalUnit = []string{"o1"} }), "organizational units", false},
		{"CustomSigner: another cluster's requester", with(custom(), func(s *csrSpec) { s.user = "system:open-cluster-management:cluster2:abcde" }), "not by the registration agent", false},
		{"KubeClient: a country", with(ok, func(s *csrSpec) { s.subject.Country = []string{"XX"} }), "subject attribute 2.5.4.6 (XX) is not part of an agent's identity", false},
		{"CustomSigner: a serial number", with(custom(), func(s *csrSpec) { s.subject.SerialNumber = "42" }), "subject attribute 2.5.4.5 (42)", false},
		{"CustomSigner: a locality", with(custom(), func(s *csrSpec) { s.subject.Locality = []string{"here"} }), "subject attribute 2.5.4.7", false},
		{"CustomSigner: an extra attribute", with(custom(), func(s *csrSpec) {
			s.subject.ExtraNames = []pkix.AttributeTypeAndValue{{Type: asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 1}, Value: "uid"}}
		}), "subject attribute 0.9.2342.19200300.100.1.1", false},
		{"CustomSigner: a second common name", with(custom(), func(s *csrSpec) {
			// The expected one last: the parsed CommonName is the last.
			s.subject.ExtraNames = []pkix.AttributeTypeAndValue{{Type: asn1.ObjectIdentifier{2, 5, 4, 3}, Value: "admin"}, {Type: asn1.ObjectIdentifier{2, 5, 4, 3}, Value: "user1"}}
		}), "more than one common name", false},
		{"CustomSigner: a Kubernetes signer", with(custom(), func(s *csrSpec) { s.signer = "kubernetes.io/kubelet-serving" }), "signer kubernetes.io/kubelet-serving is Kubernetes' own", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := Review(tc.csr.build(t), "cluster1", "hello-template", tpl, "hub-ns")
			if tc.refuse == "" {
				if !v.Approve || v.Sign != tc.sign {
					t.Errorf("verdict %+v, want approve (sign %v)", v, tc.sign)
				}
				return
			}
			if v.Approve || !strings.Contains(v.Reason, tc.refuse) {
				t.Errorf("verdict %+v, want refusal containing %q", v, tc.refuse)
			}
		})
	}

	// A template without KubeClient registration refuses kube-apiserver-client requests.
	noKube := helloTemplate(t)
	noKube.Spec.Registration = noKube.Spec.Registration[1:]
	if v := Review(ok.build(t), "cluster1", "hello-template", noKube, "hub-ns"); v.Approve || !strings.Contains(v.Reason, "has no KubeClient registration") {
		t.Errorf("no KubeClient: %+v", v)
	}
	// The CustomSigner CA and the certificate's subject come from the template (groups in its
	// order, whatever the request's).
	v := Review(custom().build(t), "cluster1", "hello-template", tpl, "hub-ns")
	if v.SigningCA != (addonv1alpha1.SigningCARef{Namespace: "default", Name: "ca-secret"}) {
		t.Errorf("signing CA %+v", v.SigningCA)
	}
	if diff := cmp.Diff(pkix.Name{CommonName: "user1", Organization: []string{"g1", "g2"}, OrganizationalUnit: []string{"o1", "o2"}}, v.Subject); diff != "" {
		t.Errorf("subject to issue (-want +got):\n%s", diff)
	}
	// A template whose CustomSigner is Kubernetes': refused, though the template names it.
	reserved := helloTemplate(t)
	reserved.Spec.Registration[1].CustomSigner.SignerName = "kubernetes.io/kube-apiserver-client-kubelet"
	if v := Review(with(custom(), func(s *csrSpec) { s.signer = "kubernetes.io/kube-apiserver-client-kubelet" }).build(t), "cluster1", "hello-template", reserved, "hub-ns"); v.Approve || !strings.Contains(v.Reason, "is Kubernetes' own") {
		t.Errorf("reserved signer: %+v", v)
	}
	// A request whose PEM is garbage.
	bad := ok.build(t)
	bad.Spec.Request = []byte("nope")
	if v := Review(bad, "cluster1", "hello-template", tpl, "hub-ns"); v.Approve || !strings.Contains(v.Reason, "not a PEM CERTIFICATE REQUEST") {
		t.Errorf("garbage request: %+v", v)
	}
}

func TestSignVerifiesAgainstCA(t *testing.T) {
	now := time.Now()
	crt, key := newCA(t, now.Add(48*time.Hour))
	ca, err := ParseCA(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ca"}, Data: map[string][]byte{"tls.crt": crt, "tls.key": key}}, now)
	if err != nil {
		t.Fatal(err)
	}
	s := kubeClientCSR("cluster1", "hello-template")
	s.signer = "example.com/signer-name"
	s.subject = pkix.Name{CommonName: "user1", Organization: []string{"g1", "g2"}, OrganizationalUnit: []string{"o1", "o2"}}
	out, err := Sign(s.build(t), pkix.Name{CommonName: "user1", Organization: []string{"g1", "g2"}, OrganizationalUnit: []string{"o1", "o2"}}, ca, now, CertValidity)
	if err != nil {
		t.Fatal(err)
	}
	leaf := verify(t, out, crt)
	if leaf.Subject.CommonName != "user1" || !slices.Equal(leaf.Subject.Organization, []string{"g1", "g2"}) || !leaf.NotAfter.Equal(now.Add(CertValidity).Truncate(time.Second)) {
		t.Errorf("certificate subject %v, not after %v", leaf.Subject, leaf.NotAfter)
	}

	// Capped at the CA's expiry.
	crt2, key2 := newCA(t, now.Add(time.Hour).Truncate(time.Second))
	ca2, err := ParseCA(&corev1.Secret{Data: map[string][]byte{"tls.crt": crt2, "tls.key": key2}}, now)
	if err != nil {
		t.Fatal(err)
	}
	out, err = Sign(s.build(t), pkix.Name{CommonName: "user1"}, ca2, now, CertValidity)
	if err != nil {
		t.Fatal(err)
	}
	if leaf := verify(t, out, crt2); !leaf.NotAfter.Equal(ca2.Cert.NotAfter) {
		t.Errorf("not after %v, want the CA's %v", leaf.NotAfter, ca2.Cert.NotAfter)
	}
}

// TestSignIssuesTheComputedSubject: whatever the request's subject carries, the certificate has
// the subject it is given (Review's, from the template), and no longer than asked.
func TestSignIssuesTheComputedSubject(t *testing.T) {
	now := time.Now()
	crt, key := newCA(t, now.Add(48*time.Hour))
	ca, err := ParseCA(&corev1.Secret{Data: map[string][]byte{"tls.crt": crt, "tls.key": key}}, now)
	if err != nil {
		t.Fatal(err)
	}
	s := kubeClientCSR("cluster1", "hello-template")
	s.signer = "example.com/signer-name"
	s.subject = pkix.Name{CommonName: "user1", Organization: []string{"g1", "g2"}, Country: []string{"XX"}, SerialNumber: "42",
		ExtraNames: []pkix.AttributeTypeAndValue{{Type: asn1.ObjectIdentifier{2, 5, 4, 11}, Value: "admins"}}}
	csr := s.build(t)
	csr.Spec.ExpirationSeconds = ptr(int32(3600))
	out, err := Sign(csr, pkix.Name{CommonName: "user1", Organization: []string{"g1", "g2"}}, ca, now, Validity(csr, CertValidity))
	if err != nil {
		t.Fatal(err)
	}
	leaf := verify(t, out, crt)
	if got := leaf.Subject.String(); got != "CN=user1,O=g1+O=g2" {
		t.Errorf("certificate subject %s", got)
	}
	if got := leaf.NotAfter.Sub(leaf.NotBefore); got > time.Hour {
		t.Errorf("valid %v, asked for 1h", got)
	}
}

func TestValidity(t *testing.T) {
	cases := []struct {
		seconds *int32
		want    time.Duration
	}{
		{nil, CertValidity},
		{ptr(int32(600)), 10 * time.Minute},
		{ptr(int32(3600)), time.Hour},
		{ptr(int32(86400)), CertValidity},
		{ptr(int32(365 * 86400)), CertValidity}, // capped
		{ptr(int32(0)), CertValidity},
	}
	for _, tc := range cases {
		csr := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{ExpirationSeconds: tc.seconds}}
		if got := Validity(csr, CertValidity); got != tc.want {
			t.Errorf("expirationSeconds %v: %v, want %v", tc.seconds, got, tc.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// verify checks that a PEM certificate chains to the CA for client authentication.
func verify(t testing.TB, certPEM, caPEM []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	if block == nil {
		t.Fatalf("not PEM: %q", certPEM)
	}
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("CA does not parse")
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("certificate does not verify against the CA: %v", err)
	}
	return leaf
}

func TestParseCA(t *testing.T) {
	now := time.Now()
	crt, key := newCA(t, now.Add(time.Hour))
	otherCrt, _ := newCA(t, now.Add(time.Hour))
	expired, expiredKey := newCA(t, now.Add(-time.Minute))
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pkcs1 := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)})
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "leaf"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour)}
	leafDER, _ := x509.CreateCertificate(rand.Reader, leafTmpl, leafTmpl, rsaKey.Public(), rsaKey)
	leaf := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER})
	cases := []struct {
		name     string
		crt, key []byte
		want     string
	}{
		{"good", crt, key, ""},
		{"no key", crt, nil, "needs tls.crt and tls.key"},
		{"garbage certificate", []byte("x"), key, "tls.crt"},
		{"garbage key", crt, []byte("x"), "tls.key"},
		{"key of another certificate", otherCrt, key, "does not belong"},
		{"not a CA", leaf, pkcs1, "not a CA certificate"},
		{"expired", expired, expiredKey, "expired"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseCA(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ca"}, Data: map[string][]byte{"tls.crt": tc.crt, "tls.key": tc.key}}, now)
			if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
			if err != nil && !strings.Contains(err.Error(), "ns/ca") {
				t.Errorf("error %v does not name the secret", err)
			}
		})
	}
}
