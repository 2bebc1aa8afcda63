//go:build integration

package main

import (
	"context"
	"crypto/x509"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/localhub"
)

// scrapersNamespace holds the ServiceAccounts the tests scrape /metrics as.
const scrapersNamespace = "metrics-scrapers"

// serviceAccountToken creates the ServiceAccount namespace/name (if missing) and returns a token of
// it from the TokenRequest API, as the kubelet mounts one into a Prometheus pod.
func serviceAccountToken(t *testing.T, hub *localhub.Hub, namespace, name string) string {
	t.Helper()
	ctx := context.Background()
	if err := localhub.EnsureNamespace(ctx, hub.Clients.Kube, namespace); err != nil {
		t.Fatal(err)
	}
	sas := hub.Clients.Kube.CoreV1().ServiceAccounts(namespace)
	if _, err := sas.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	tr, err := sas.CreateToken(ctx, name, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token of ServiceAccount %s/%s: %v", namespace, name, err)
	}
	return tr.Status.Token
}

var reader struct {
	mu    sync.Mutex
	token string
}

// metricsReaderToken returns a token of the ServiceAccount metrics-scrapers/reader, bound to the
// ClusterRole addonops-metrics-reader exactly as config/rbac ships it.
func metricsReaderToken(t *testing.T) string {
	t.Helper()
	reader.mu.Lock()
	defer reader.mu.Unlock()
	if reader.token != "" {
		return reader.token
	}
	hub := localhub.ForTest(t)
	ctx := context.Background()
	root, err := localhub.RepoRoot("")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "config", "rbac", "metrics_reader_role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(data, role); err != nil {
		t.Fatalf("config/rbac/metrics_reader_role.yaml: %v", err)
	}
	rbac := hub.Clients.Kube.RbacV1()
	if _, err := rbac.ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	token := serviceAccountToken(t, hub, scrapersNamespace, "reader")
	if _, err := rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-scrapers-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: scrapersNamespace, Name: "reader"}},
	}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	reader.token = token
	return token
}

// The metrics endpoint is HTTPS and serves only a token the hub authenticates and allows to get
// /metrics: no token 401, an unknown token 401, a ServiceAccount without the ClusterRole 403, one
// bound to addonops-metrics-reader 200 with the addonops_ metrics; plain HTTP gets none of it.
func TestMetricsAskForAnAllowedToken(t *testing.T) {
	hub := localhub.ForTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	const addon = "metrics-auth"
	fx := newRolloutFixture(t, ctx, hub, addon, []string{"metrics-auth-c1"}, 1)
	in := startInstance(t, hub, "solo", "--leader-elect=false", "--history-namespace=default")
	fx.install(t, ctx)

	allowed := metricsReaderToken(t)
	denied := serviceAccountToken(t, hub, scrapersNamespace, "not-a-reader")
	var body string
	harness.EventuallyTrue(t, 60*time.Second, "the reader's scrape to show the add-on's clusters", func() bool {
		var code int
		code, body = getTLS(in.metrics, "/metrics", allowed, nil)
		return code == http.StatusOK && strings.Contains(body, `addonops_rollout_clusters{addon="`+addon+`"`)
	})
	for _, want := range []string{"addonops_rollout_max_concurrency", "workqueue_adds_total", "rest_client_requests_total"} {
		if !strings.Contains(body, want) {
			t.Errorf("the reader's /metrics lacks %s", want)
		}
	}

	for _, tc := range []struct {
		name, token string
		want        []int
	}{
		{"no token", "", []int{http.StatusUnauthorized}},
		// 401 whatever the TokenReview says (controller-runtime's filter answered 500 here).
		{"a token the hub does not know", "not-a-token", []int{http.StatusUnauthorized}},
		{"a ServiceAccount not bound to addonops-metrics-reader", denied, []int{http.StatusForbidden}},
		{"the hub's admin (system:masters)", hub.Config.BearerToken, []int{http.StatusOK}},
	} {
		code, got := getTLS(in.metrics, "/metrics", tc.token, nil)
		if !slices.Contains(tc.want, code) {
			t.Errorf("%s: GET /metrics answered %d, want %v: %.200s", tc.name, code, tc.want, got)
		}
		if code != http.StatusOK && strings.Contains(got, "addonops_") {
			t.Errorf("%s: GET /metrics showed metrics:\n%.500s", tc.name, got)
		}
	}
	// Another path of the same server is not a way around it.
	if code, _ := getTLS(in.metrics, "/metrics/", denied, nil); code == http.StatusOK {
		t.Errorf("GET /metrics/ with the token of a ServiceAccount that may not read metrics answered 200")
	}
	// Plain HTTP on the same port serves nothing.
	if code, got := get(in.metrics, "/metrics"); code == http.StatusOK || strings.Contains(got, "addonops_") {
		t.Errorf("plain HTTP GET /metrics answered %d:\n%.500s", code, got)
	}
}

// --metrics-cert-dir serves the certificate in that directory, so a scraper can verify it.
func TestMetricsServeTheCertificateGiven(t *testing.T) {
	hub := localhub.ForTest(t)
	dir := t.TempDir()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("addonops-controller-metrics.addonops-system.svc", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(certPEM) {
		t.Fatal("the generated certificate does not parse")
	}
	in := startInstance(t, hub, "cert", "--leader-elect=false", "--history-namespace=default", "--metrics-cert-dir", dir)
	token := metricsReaderToken(t)
	harness.EventuallyTrue(t, 30*time.Second, "/metrics over TLS verified against the given certificate", func() bool {
		code, body := getTLS(in.metrics, "/metrics", token, roots)
		if code != http.StatusOK {
			t.Logf("GET /metrics: %d %.200s", code, body)
		}
		return code == http.StatusOK
	})
	// And only that one: a scraper trusting another CA refuses the connection.
	other, _, err := certutil.GenerateSelfSignedCertKey("other", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	otherRoots := x509.NewCertPool()
	otherRoots.AppendCertsFromPEM(other)
	if code, body := getTLS(in.metrics, "/metrics", token, otherRoots); code != 0 {
		t.Errorf("a scraper trusting another CA got %d %.200s, want a TLS error", code, body)
	}
}

// The endpoint asks the hub at every scrape, so a scraper loses access as soon as the hub takes it
// away: 403 once its ClusterRoleBinding is gone, 401 once its ServiceAccount is deleted (its token
// then no longer authenticates; the API server's own token cache makes that up to 10s). controller-
// runtime's filter cached an allowed answer for five minutes and a token for one.
func TestMetricsForgetARevokedScraper(t *testing.T) {
	hub := localhub.ForTest(t)
	ctx := context.Background()
	metricsReaderToken(t) // creates the ClusterRole addonops-metrics-reader
	in := startInstance(t, hub, "revoke", "--leader-elect=false", "--history-namespace=default")

	const name = "revoked-reader"
	token := serviceAccountToken(t, hub, scrapersNamespace, name)
	rbac := hub.Clients.Kube.RbacV1()
	if _, err := rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-scrapers-" + name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "addonops-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: scrapersNamespace, Name: name}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.EventuallyTrue(t, 60*time.Second, "the bound scraper's GET /metrics to answer 200", func() bool {
		code, _ := getTLS(in.metrics, "/metrics", token, nil)
		return code == http.StatusOK
	})

	if err := rbac.ClusterRoleBindings().Delete(ctx, "metrics-scrapers-"+name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.EventuallyTrue(t, 10*time.Second, "GET /metrics to answer 403 once the scraper's binding is deleted", func() bool {
		code, _ := getTLS(in.metrics, "/metrics", token, nil)
		return code == http.StatusForbidden
	})

	if err := hub.Clients.Kube.CoreV1().ServiceAccounts(scrapersNamespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The API server itself keeps an authenticated token for 10s (kube-apiserver's token cache).
	harness.EventuallyTrue(t, 25*time.Second, "GET /metrics to answer 401 once the scraper's ServiceAccount is deleted", func() bool {
		code, _ := getTLS(in.metrics, "/metrics", token, nil)
		return code == http.StatusUnauthorized
	})
}
