package ocmwebhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	certutil "k8s.io/client-go/util/cert"

	"github.com/addonops/addonops/internal/testing/childproc"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/ocmhub"
)

// Options tune Start. The zero value is what tests want.
type Options struct {
	// AddonPath is OCM's addon binary. Default: $ADDONOPS_OCM_ADDON, else bin/ocm-addon at the
	// repository root (`make ocm-binaries`).
	AddonPath string
	// RepoRoot is the addonops repository root. Default: the one above the working directory.
	RepoRoot string
	// CRDRoot is the open-cluster-management.io/api module's directory, as localhub.Options.CRDRoot
	// (give the hub's if it was given one). Default: what localhub.APIModuleDir finds.
	CRDRoot string
	// LogDir receives webhook-server.log, the serving certificate and the process's temporary
	// files. Default: a new directory under os.TempDir(), removed by Stop unless KeepLogs.
	LogDir string
	// KeepLogs keeps a LogDir created by Start after Stop.
	KeepLogs bool
	// ReadyTimeout bounds each wait of Start: the lock, the webhook's first answer, the CRDs.
	// Default 2 minutes (two cores shared by parallel test packages).
	ReadyTimeout time.Duration
}

// Webhook is OCM's add-on conversion webhook running for a hub whose ClusterManagementAddOn and
// ManagedClusterAddOn CRDs serve v1beta1 through it.
type Webhook struct {
	Hub *localhub.Hub
	// URL is where the API server sends ConversionReviews (https://127.0.0.1:<port>/convert).
	URL string
	// CABundle verifies the webhook's serving certificate (the CRDs' caBundle).
	CABundle []byte
	// LogDir holds LogPath and the serving certificate.
	LogDir string
	// LogPath is the webhook-server's log.
	LogPath string
	// Startup is how long the process took from launch to its first successful conversion.
	Startup time.Duration

	opts      Options
	proc      *childproc.Process
	lock      *os.File
	ownLogDir bool
	forTest   bool // started by ForTest: its cleanup removes the logs

	stopOnce sync.Once
	stopErr  error
}

// Fixed ports of OCM v1.2.1's webhook-server (see the package doc).
var fixedPorts = []struct {
	port int
	what string
}{
	{8000, "its health probes (HealthProbeBindAddress \":8000\" in OCM v1.2.1 pkg/common/options/webhook.go)"},
	{8080, "controller-runtime's metrics (default \":8080\", which OCM v1.2.1 does not change)"},
}

// lockName is the machine-wide lock of the fixed ports, under os.TempDir().
const lockName = "addonops-ocm-webhook.lock"

const stopGrace = 15 * time.Second

// Start runs OCM's webhook-server for hub and makes the hub serve v1beta1 ClusterManagementAddOns
// and ManagedClusterAddOns through it (and v1beta1 AddOnDeploymentConfigs, which need no
// conversion), as an OCM v1.3 hub does. It returns once the API server converts through it: a
// v1beta1 ClusterManagementAddOn was created, read back in v1alpha1 and deleted. ctx bounds the
// start only.
//
// The CRDs stay as they are after Stop: v1beta1 requests then fail with the API server's
// conversion error, v1alpha1 ones (the storage version) keep working, as on an OCM hub whose
// webhook is down. Use a hub of the test's own, or put localhub's CRDs back with RestoreV1alpha1.
func Start(ctx context.Context, hub *localhub.Hub, opts Options) (_ *Webhook, err error) {
	if hub == nil || hub.Clients == nil || hub.Kubeconfig == "" {
		return nil, errors.New("ocmwebhook: Start needs a running localhub.Hub")
	}
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = 2 * time.Minute
	}
	bin, err := ocmhub.AddonBinary(opts.AddonPath, opts.RepoRoot)
	if err != nil {
		return nil, fmt.Errorf("ocmwebhook: %w", err)
	}
	crds, err := readCRDs(ctx, opts, v1beta1Files)
	if err != nil {
		return nil, err
	}
	w := &Webhook{Hub: hub, opts: opts}
	defer func() {
		if err != nil {
			_ = w.stopProcess()
			if w.LogDir != "" {
				err = fmt.Errorf("%w\n(webhook log kept in %s)", err, w.LogDir)
			}
		}
	}()
	if w.lock, err = lockPorts(ctx, opts.ReadyTimeout); err != nil {
		return nil, err
	}
	for _, p := range fixedPorts {
		if err := portFree(p.port); err != nil {
			return nil, fmt.Errorf("ocmwebhook: OCM v1.2.1's webhook-server binds port %d for %s, and it is taken: %v. "+
				"Find the program with `ss -ltnp 'sport = :%d'` and stop it, or give it another port",
				p.port, p.what, err, p.port)
		}
	}

	w.LogDir = opts.LogDir
	if w.LogDir == "" {
		if w.LogDir, err = os.MkdirTemp("", "addonops-ocm-webhook-"); err != nil {
			return nil, fmt.Errorf("ocmwebhook: creating the log directory: %w", err)
		}
		w.ownLogDir = true
	} else if err := os.MkdirAll(w.LogDir, 0o755); err != nil {
		return nil, fmt.Errorf("ocmwebhook: creating the log directory: %w", err)
	}
	certDir := filepath.Join(w.LogDir, "serving-certs")
	if w.CABundle, err = writeServingCert(certDir); err != nil {
		return nil, err
	}
	tmp := filepath.Join(w.LogDir, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, fmt.Errorf("ocmwebhook: creating %s: %w", tmp, err)
	}
	port, err := childproc.FreePort()
	if err != nil {
		return nil, err
	}
	w.URL = "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) + "/convert"
	w.proc, err = childproc.Start(childproc.Spec{
		Name: "webhook-server", Path: bin, Dir: w.LogDir,
		Args: []string{"webhook-server",
			"--port=" + strconv.Itoa(port),
			"--certdir=" + certDir,
			"--kubeconfig=" + hub.Kubeconfig,
		},
		// controller-runtime writes nothing there with --certdir given; TMPDIR keeps anything else
		// it might create inside LogDir.
		Env:        append(os.Environ(), "TMPDIR="+tmp),
		LogCommand: true,
	})
	if err != nil {
		return nil, fmt.Errorf("ocmwebhook: %w", err)
	}
	w.LogPath = w.proc.LogPath
	if err := w.waitConverting(ctx); err != nil {
		return nil, err
	}
	w.Startup = time.Since(w.proc.Started)
	if err := installCRDs(ctx, hub, crds, &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: &w.URL, CABundle: w.CABundle},
			ConversionReviewVersions: []string{"v1", "v1beta1"},
		},
	}, opts.ReadyTimeout); err != nil {
		return nil, err
	}
	if err := w.waitServed(ctx); err != nil {
		return nil, err
	}
	return w, nil
}

// PID is the webhook-server's process ID.
func (w *Webhook) PID() int { return w.proc.PID() }

// Stop ends the webhook-server (SIGTERM, SIGKILL after a grace period) and releases the port lock.
// The CRDs keep pointing at it (see Start). Safe to call more than once. Under ForTest the log
// stays until the test ends, for its failure report.
func (w *Webhook) Stop() error {
	err := w.stopProcess()
	if !w.forTest && (err != nil || !w.opts.KeepLogs) {
		if rmErr := w.removeLogs(err != nil); rmErr != nil {
			return errors.Join(err, rmErr)
		}
	}
	return err
}

func (w *Webhook) stopProcess() error {
	w.stopOnce.Do(func() {
		var errs []error
		if w.proc != nil {
			if err := w.proc.Stop(stopGrace); err != nil {
				errs = append(errs, fmt.Errorf("ocmwebhook: %w", err))
			}
		}
		if w.lock != nil {
			// Closing the file releases the flock.
			if err := w.lock.Close(); err != nil {
				errs = append(errs, fmt.Errorf("ocmwebhook: releasing the port lock: %w", err))
			}
		}
		w.stopErr = errors.Join(errs...)
	})
	return w.stopErr
}

// removeLogs removes a LogDir Start created, unless keep.
func (w *Webhook) removeLogs(keep bool) error {
	if !w.ownLogDir || keep || w.LogDir == "" {
		return nil
	}
	if err := os.RemoveAll(w.LogDir); err != nil {
		return fmt.Errorf("ocmwebhook: removing %s: %w", w.LogDir, err)
	}
	return nil
}

// TB is what ForTest needs of a test (childproc.TB).
type TB = childproc.TB

// ForTest is Start for one test, stopped when the test ends; when the test failed the log is kept
// and its last lines printed. A webhook that cannot start fails the test.
func ForTest(t TB, hub *localhub.Hub, opts Options) *Webhook {
	t.Helper()
	w, err := Start(context.Background(), hub, opts)
	if err != nil {
		t.Fatalf("ocmwebhook.ForTest: %v", err)
	}
	w.forTest = true
	t.Cleanup(func() {
		err := w.stopProcess()
		if err != nil {
			t.Errorf("stopping OCM's webhook-server: %v", err)
		}
		failed := t.Failed()
		if failed {
			childproc.LogTails(t, "the webhook's", w.LogDir, []string{w.LogPath}, 25)
		}
		if err := w.removeLogs(failed || err != nil || w.opts.KeepLogs); err != nil {
			t.Errorf("%v", err)
		}
	})
	return w
}

// lockPorts takes the machine-wide lock of the fixed ports, waiting up to timeout for another
// test's webhook to stop.
func lockPorts(ctx context.Context, timeout time.Duration) (*os.File, error) {
	path := filepath.Join(os.TempDir(), lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("ocmwebhook: opening the port lock %s: %w", path, err)
	}
	var held bool
	_, err = harness.UntilErr(ctx, timeout, 200*time.Millisecond, func() (string, error) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if held = errors.Is(err, syscall.EWOULDBLOCK); held {
			return "held", nil
		}
		return "", err
	})
	switch {
	case err == nil:
		// The holder's PID, for the message of the next one who waits.
		_ = f.Truncate(0)
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		return f, nil
	case held:
		holder, _ := os.ReadFile(path)
		f.Close()
		return nil, fmt.Errorf("ocmwebhook: another OCM webhook-server (started by process %s) still runs after %s: "+
			"OCM v1.2.1's webhook-server binds fixed ports, so only one runs at a time (lock %s)",
			strings.TrimSpace(string(holder)), timeout, path)
	default:
		f.Close()
		return nil, fmt.Errorf("ocmwebhook: locking %s: %w", path, err)
	}
}

// portFree tells whether port can be bound on every interface, as the webhook-server binds it.
func portFree(port int) error {
	l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		return err
	}
	return l.Close()
}

// writeServingCert writes tls.crt and tls.key (controller-runtime's file names) for 127.0.0.1 into
// dir and returns the certificate chain, whose self-signed CA the API server is to trust.
func writeServingCert(dir string) ([]byte, error) {
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, []string{"localhost"})
	if err != nil {
		return nil, fmt.Errorf("ocmwebhook: generating the serving certificate: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("ocmwebhook: creating %s: %w", dir, err)
	}
	for name, data := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, fmt.Errorf("ocmwebhook: writing %s: %w", name, err)
		}
	}
	return certPEM, nil
}

// probeCMA is the v1beta1 ClusterManagementAddOn the readiness checks convert.
func probeCMA(name string) map[string]any {
	return map[string]any{
		"apiVersion": "addon.open-cluster-management.io/v1beta1",
		"kind":       "ClusterManagementAddOn",
		"metadata":   map[string]any{"name": name},
		"spec": map[string]any{
			"defaultConfigs": []any{map[string]any{
				"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs",
				"namespace": "probe", "name": "probe",
			}},
		},
	}
}

// waitConverting posts a ConversionReview to the webhook until it converts the probe to v1alpha1
// as OCM does (defaultConfigs → supportedConfigs[].defaultConfig), or the process exits.
func (w *Webhook) waitConverting(ctx context.Context) error {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(w.CABundle) {
		return errors.New("ocmwebhook: the generated serving certificate does not parse")
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	defer client.CloseIdleConnections()
	obj, err := json.Marshal(probeCMA("probe"))
	if err != nil {
		return err
	}
	review, err := json.Marshal(apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request: &apiextensionsv1.ConversionRequest{UID: "addonops-ocmwebhook-probe",
			DesiredAPIVersion: "addon.open-cluster-management.io/v1alpha1", Objects: []runtime.RawExtension{{Raw: obj}}},
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, w.opts.ReadyTimeout)
	defer cancel()
	err = w.proc.WaitReady(ctx, 100*time.Millisecond, func(ctx context.Context) error { return convertOnce(ctx, client, w.URL, review) })
	if err != nil {
		return fmt.Errorf("ocmwebhook: OCM's webhook-server at %s %v; last lines of %s:\n%s", w.URL, err, w.LogPath, childproc.Tail(w.LogPath, 25))
	}
	return nil
}

func convertOnce(ctx context.Context, client *http.Client, url string, review []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(review))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, body)
	}
	var out apiextensionsv1.ConversionReview
	if err := json.Unmarshal(body, &out); err != nil {
		return fmt.Errorf("decoding the ConversionReview it answered: %w", err)
	}
	if out.Response == nil || out.Response.Result.Status != metav1.StatusSuccess || len(out.Response.ConvertedObjects) != 1 {
		return fmt.Errorf("conversion failed: %s", body)
	}
	var got unstructured.Unstructured
	if err := got.UnmarshalJSON(out.Response.ConvertedObjects[0].Raw); err != nil {
		return fmt.Errorf("decoding the converted object: %w", err)
	}
	configs, _, _ := unstructured.NestedSlice(got.Object, "spec", "supportedConfigs")
	if got.GetAPIVersion() != "addon.open-cluster-management.io/v1alpha1" || len(configs) != 1 {
		return fmt.Errorf("converted the probe to %s", out.Response.ConvertedObjects[0].Raw)
	}
	return nil
}

// waitServed creates a v1beta1 ClusterManagementAddOn until the API server stores it through the
// webhook, checks its v1alpha1 form and deletes it: the CRDs point at the webhook and it answers.
func (w *Webhook) waitServed(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, w.opts.ReadyTimeout)
	defer cancel()
	cmas := w.Hub.Clients.Dynamic.Resource(V1beta1.WithResource("clustermanagementaddons"))
	name := fmt.Sprintf("addonops-ocmwebhook-probe-%d", time.Now().UnixNano())
	var last error
	for {
		_, last = cmas.Create(ctx, &unstructured.Unstructured{Object: probeCMA(name)}, metav1.CreateOptions{})
		if last == nil {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ocmwebhook: the API server does not store v1beta1 ClusterManagementAddOns through OCM's webhook (last: %v); last lines of %s:\n%s",
				last, w.LogPath, childproc.Tail(w.LogPath, 25))
		case <-time.After(200 * time.Millisecond):
		}
	}
	defer func() {
		_ = cmas.Delete(context.Background(), name, metav1.DeleteOptions{})
	}()
	stored, err := w.Hub.Clients.Addon.AddonV1alpha1().ClusterManagementAddOns().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("ocmwebhook: reading the probe ClusterManagementAddOn in v1alpha1: %w", err)
	}
	if sc := stored.Spec.SupportedConfigs; len(sc) != 1 || sc[0].DefaultConfig == nil || sc[0].DefaultConfig.Name != "probe" {
		return fmt.Errorf("ocmwebhook: a v1beta1 ClusterManagementAddOn with defaultConfigs was stored with supportedConfigs %+v", sc)
	}
	return nil
}
