package registration

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/hubcache"
)

// RequesterPrefix is the user prefix of a cluster's registration agent on the hub: OCM's
// klusterlet registers as "system:open-cluster-management:<cluster>:<agent id>" in group
// "system:open-cluster-management:<cluster>".
func RequesterPrefix(cluster string) string { return "system:open-cluster-management:" + cluster + ":" }

// RequesterGroup is the group every user of a cluster's registration agent is in.
func RequesterGroup(cluster string) string { return "system:open-cluster-management:" + cluster }

// Verdict is the decision on one certificate signing request.
type Verdict struct {
	Approve bool
	// Sign is set for CustomSigner requests: the hub signs them itself.
	Sign bool
	// SigningCA is the secret to sign with (Sign only).
	SigningCA addonv1alpha1.SigningCARef
	// Subject is the certificate's subject, computed from the template (Sign only): the request's
	// was checked equal to it, and only this is issued.
	Subject pkix.Name
	// Reason says why a request is refused.
	Reason string
}

func refuse(format string, args ...any) Verdict { return Verdict{Reason: fmt.Sprintf(format, args...)} }

// Review decides whether the hub approves csr, a request labelled for cluster and the add-on whose
// template t (the template the cluster's MCA was told to run) registers the agent. The expected
// identity comes from the template alone: KubeClient ⇒ the default user and groups; CustomSigner ⇒
// the template's subject or the default. Approved only when
//   - the signer is one the template registers (kubernetes.io/kube-apiserver-client for KubeClient,
//     the CustomSigner's signerName);
//   - the requester is that cluster's registration agent (RequesterPrefix, RequesterGroup);
//   - the request parses, its signature verifies, its subject has one common name, the expected
//     user, organizations that are exactly the expected groups (system:authenticated optional),
//     organizational units exactly the expected ones, and no other attribute (country, serial
//     number...), and it asks for no subject alternative names;
//   - its usages are client certificate usages.
//
// CustomSigner names of Kubernetes' own domains (ReservedSigner) are refused.
func Review(csr *certificatesv1.CertificateSigningRequest, cluster, addon string, t *addonv1alpha1.AddOnTemplate, defaultCANamespace string) Verdict {
	if got := csr.Labels[hubcache.ClusterNameLabel]; got != cluster {
		return refuse("labelled for cluster %q, not %q", got, cluster)
	}
	if got := csr.Labels[addonv1alpha1.AddonLabelKey]; got != addon {
		return refuse("labelled for add-on %q, not %q", got, addon)
	}
	var want addonv1alpha1.Subject
	var v Verdict
	switch signer := csr.Spec.SignerName; {
	case signer == certificatesv1.KubeAPIServerClientSignerName:
		if !slices.ContainsFunc(t.Spec.Registration, func(r addonv1alpha1.RegistrationSpec) bool {
			return r.Type == addonv1alpha1.RegistrationTypeKubeClient
		}) {
			return refuse("signer %s: AddOnTemplate %s has no KubeClient registration", signer, t.Name)
		}
		want = addonv1alpha1.Subject{User: DefaultUser(cluster, addon), Groups: DefaultGroups(cluster, addon)}
	case ReservedSigner(signer):
		return refuse("signer %s is Kubernetes' own: addonops approves kubernetes.io/kube-apiserver-client requests of KubeClient registrations only", signer)
	default:
		i := slices.IndexFunc(t.Spec.Registration, func(r addonv1alpha1.RegistrationSpec) bool {
			return r.Type == addonv1alpha1.RegistrationTypeCustomSigner && r.CustomSigner != nil && r.CustomSigner.SignerName == signer
		})
		if i < 0 {
			return refuse("signer %q is not one AddOnTemplate %s registers", signer, t.Name)
		}
		cs := t.Spec.Registration[i].CustomSigner
		want = customSubject(cs, cluster, addon)
		v.Sign = true
		v.SigningCA = cs.SigningCA
		if v.SigningCA.Namespace == "" {
			v.SigningCA.Namespace = defaultCANamespace
		}
	}

	if !strings.HasPrefix(csr.Spec.Username, RequesterPrefix(cluster)) ||
		strings.Contains(strings.TrimPrefix(csr.Spec.Username, RequesterPrefix(cluster)), ":") ||
		csr.Spec.Username == RequesterPrefix(cluster) {
		return refuse("requested by %q, not by the registration agent of cluster %s (%s<agent>)", csr.Spec.Username, cluster, RequesterPrefix(cluster))
	}
	if !slices.Contains(csr.Spec.Groups, RequesterGroup(cluster)) {
		return refuse("requester %q is not in group %s", csr.Spec.Username, RequesterGroup(cluster))
	}

	req, err := ParseRequest(csr.Spec.Request)
	if err != nil {
		return refuse("%v", err)
	}
	if err := onlyNameAttributes(req.Subject); err != nil {
		return refuse("%v", err)
	}
	if req.Subject.CommonName != want.User {
		return refuse("common name %q, want %q", req.Subject.CommonName, want.User)
	}
	got := sets.New(req.Subject.Organization...).Delete(authenticatedGroup)
	exp := sets.New(want.Groups...).Delete(authenticatedGroup)
	if extra := got.Difference(exp); extra.Len() > 0 {
		return refuse("organizations (groups) %v are not the agent's", sets.List(extra))
	}
	if missing := exp.Difference(got); missing.Len() > 0 {
		return refuse("organizations (groups) %v are missing", sets.List(missing))
	}
	if !sets.New(req.Subject.OrganizationalUnit...).Equal(sets.New(want.OrganizationUnits...)) {
		return refuse("organizational units %v, want %v", req.Subject.OrganizationalUnit, want.OrganizationUnits)
	}
	if len(req.DNSNames)+len(req.IPAddresses)+len(req.EmailAddresses)+len(req.URIs) > 0 {
		return refuse("asks for subject alternative names; an add-on agent's client certificate has none")
	}
	if _, err := extKeyUsages(csr.Spec.Usages); err != nil {
		return refuse("%v", err)
	}
	v.Approve = true
	if v.Sign {
		v.Subject = pkix.Name{CommonName: want.User, Organization: slices.Clone(want.Groups), OrganizationalUnit: slices.Clone(want.OrganizationUnits)}
	}
	return v
}

// Attribute types of a certificate subject an agent's identity is made of.
var (
	oidCommonName         = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidOrganization       = asn1.ObjectIdentifier{2, 5, 4, 10}
	oidOrganizationalUnit = asn1.ObjectIdentifier{2, 5, 4, 11}
)

// onlyNameAttributes checks that a requested subject is made of at most one common name,
// organizations and organizational units: anything else (country, serial number, a second common
// name...) is not the computed identity, and kube-controller-manager would issue it as requested.
func onlyNameAttributes(n pkix.Name) error {
	cn := 0
	for _, a := range n.Names {
		switch {
		case a.Type.Equal(oidCommonName):
			if cn++; cn > 1 {
				return errors.New("subject has more than one common name")
			}
		case a.Type.Equal(oidOrganization), a.Type.Equal(oidOrganizationalUnit):
		default:
			return fmt.Errorf("subject attribute %v (%v) is not part of an agent's identity (common name, organizations, organizational units only)", a.Type, a.Value)
		}
	}
	return nil
}

// ParseRequest decodes and verifies a PEM certificate request.
func ParseRequest(pemBytes []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("spec.request is not a PEM CERTIFICATE REQUEST")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("spec.request: %w", err)
	}
	if err := req.CheckSignature(); err != nil {
		return nil, fmt.Errorf("spec.request signature: %w", err)
	}
	return req, nil
}

// extKeyUsages maps a CSR's usages to a client certificate's extended key usages; usages a client
// certificate has no use for are refused.
func extKeyUsages(usages []certificatesv1.KeyUsage) ([]x509.ExtKeyUsage, error) {
	var out []x509.ExtKeyUsage
	for _, u := range usages {
		switch u {
		case certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment:
		case certificatesv1.UsageClientAuth:
			out = append(out, x509.ExtKeyUsageClientAuth)
		default:
			return nil, fmt.Errorf("usage %q is not one of a client certificate (digital signature, key encipherment, client auth)", u)
		}
	}
	if len(out) == 0 {
		out = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	return out, nil
}

// CA is a signing certificate authority.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// ParseCA reads a signing CA from a Secret's tls.crt and tls.key (PEM; PKCS#1, PKCS#8 or EC keys),
// checking that the key belongs to the certificate, that the certificate may sign certificates
// and that it has not expired.
func ParseCA(s *corev1.Secret, now time.Time) (*CA, error) {
	crt, key := s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]
	if len(crt) == 0 || len(key) == 0 {
		return nil, fmt.Errorf("secret %s/%s needs %s and %s", s.Namespace, s.Name, corev1.TLSCertKey, corev1.TLSPrivateKeyKey)
	}
	certs, err := cert.ParseCertsPEM(crt)
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s %s: %w", s.Namespace, s.Name, corev1.TLSCertKey, err)
	}
	k, err := keyutil.ParsePrivateKeyPEM(key)
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s %s: %w", s.Namespace, s.Name, corev1.TLSPrivateKeyKey, err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("secret %s/%s %s: %T cannot sign", s.Namespace, s.Name, corev1.TLSPrivateKeyKey, k)
	}
	ca := certs[0]
	if pub, ok := signer.Public().(interface{ Equal(crypto.PublicKey) bool }); !ok || !pub.Equal(ca.PublicKey) {
		return nil, fmt.Errorf("secret %s/%s: %s does not belong to the certificate in %s", s.Namespace, s.Name, corev1.TLSPrivateKeyKey, corev1.TLSCertKey)
	}
	if !ca.IsCA || ca.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, fmt.Errorf("secret %s/%s: the certificate in %s is not a CA certificate allowed to sign certificates", s.Namespace, s.Name, corev1.TLSCertKey)
	}
	if !now.Before(ca.NotAfter) {
		return nil, fmt.Errorf("secret %s/%s: the CA certificate expired at %s", s.Namespace, s.Name, ca.NotAfter.UTC().Format(time.RFC3339))
	}
	return &CA{Cert: ca, Key: signer}, nil
}

// CertValidity is how long a CustomSigner certificate is valid (OCM: 24h), and the most a request
// may ask for (spec.expirationSeconds, Validity); capped by the CA's own expiry.
const CertValidity = 24 * time.Hour

// Validity is how long the certificate of csr is valid: spec.expirationSeconds when the request
// sets it (the API server allows no less than 10 minutes), at most limit.
func Validity(csr *certificatesv1.CertificateSigningRequest, limit time.Duration) time.Duration {
	if s := csr.Spec.ExpirationSeconds; s != nil && *s > 0 {
		if d := time.Duration(*s) * time.Second; d < limit {
			return d
		}
	}
	return limit
}

// Sign issues the client certificate csr asks for with subject (Verdict.Subject: computed, never
// the request's), signed by ca, valid from now for validity (at most until the CA expires). Only
// the request's public key is taken; usages are those of a client certificate.
func Sign(csr *certificatesv1.CertificateSigningRequest, subject pkix.Name, ca *CA, now time.Time, validity time.Duration) ([]byte, error) {
	req, err := ParseRequest(csr.Spec.Request)
	if err != nil {
		return nil, err
	}
	ext, err := extKeyUsages(csr.Spec.Usages)
	if err != nil {
		return nil, err
	}
	notAfter := now.Add(validity)
	if ca.Cert.NotAfter.Before(notAfter) {
		notAfter = ca.Cert.NotAfter
	}
	if !notAfter.After(now) {
		return nil, fmt.Errorf("the signing CA expired at %s", ca.Cert.NotAfter.UTC().Format(time.RFC3339))
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("generating a serial number: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      subject,
		NotBefore:    now,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  ext,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, req.PublicKey, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("signing: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// Decided reports whether a request was approved or denied already, and whether it has its
// certificate.
func Decided(csr *certificatesv1.CertificateSigningRequest) (approved, denied, issued bool) {
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved:
			approved = c.Status == corev1.ConditionTrue
		case certificatesv1.CertificateDenied:
			denied = c.Status == corev1.ConditionTrue
		case certificatesv1.CertificateFailed:
			denied = denied || c.Status == corev1.ConditionTrue
		}
	}
	return approved, denied, len(csr.Status.Certificate) > 0
}
