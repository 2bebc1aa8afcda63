// Package localhub starts a real, throw-away OCM hub API server on this machine: Debian's etcd and a
// kube-apiserver built from k8s.io/kubernetes (make hub-binaries), with OCM's CRDs from the
// open-cluster-management.io/api module installed and Established.
//
// Integration tests (see ForTest and RunTests), the e2e suite and `make demo` share it. Start has no
// dependency on the testing package, so a plain binary can use it.
//
// The processes are driven directly rather than through controller-runtime's envtest: callers (the
// package test, the demo's "nothing left running") need the process IDs, the processes must die with
// the process that started them even when it never reaches Stop (a `go test -timeout` panic), and
// start-up failures must quote the failing process's own log. envtest hides all three.
package localhub

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/rest"

	"github.com/addonops/addonops/internal/testing/childproc"
)

// Options tune Start. The zero value is what tests and the demo want.
type Options struct {
	// EtcdPath is the etcd binary. Default: $ADDONOPS_ETCD, else /usr/bin/etcd.
	EtcdPath string
	// APIServerPath is the kube-apiserver binary. Default: $ADDONOPS_KUBE_APISERVER, else
	// bin/kube-apiserver at the root of the addonops repository.
	APIServerPath string
	// CRDRoot is the root directory of the open-cluster-management.io/api module (it holds
	// addon/v1alpha1, work/v1, cluster/v1, ...). Default: $ADDONOPS_OCM_CRDS, else the directory
	// `go list -m open-cluster-management.io/api` reports in the repository.
	CRDRoot string
	// RepoRoot is the addonops repository root, used to find bin/kube-apiserver and to run `go list`.
	// Default: the nearest directory above the working directory whose go.mod declares the
	// github.com/addonops/addonops module.
	RepoRoot string
	// TempDir is where the hub's own directory (data, certificates, logs, kubeconfig) is created.
	// Default: $ADDONOPS_HUB_TMPDIR, else os.TempDir(). A tmpfs (/dev/shm) makes etcd much faster for
	// benchmarks, at the price of memory.
	TempDir string
	// StartTimeout bounds the whole start, CRDs included. Default 2 minutes: the machines have two
	// cores shared by parallel test packages, and kube-apiserver alone needs about 10 s when idle.
	StartTimeout time.Duration
	// ExtraAPIServerArgs are appended to kube-apiserver's flags (later flags win), e.g.
	// "--max-requests-inflight=2000" for benchmarks.
	ExtraAPIServerArgs []string
	// WithoutCRDs starts a bare Kubernetes API server without OCM's CRDs, for tests of what
	// addonops says on a hub that is not an OCM hub; Hub.InstallCRDs installs them later.
	WithoutCRDs bool
	// Users are more identities, each with its own static token and kubeconfig (Hub.UserKubeconfig,
	// Hub.UserConfig), all in system:masters like the admin: the API server's audit log then tells
	// one client's requests from another's (the controller benchmark counts each manager's).
	Users []string
}

// Hub is a running etcd + kube-apiserver pair with OCM's CRDs installed.
type Hub struct {
	// Config reaches the API server as a member of system:masters. Copy it (rest.CopyConfig) before
	// changing it. Its QPS and Burst are raised: the client-go defaults (5/10) would make the server
	// look slow.
	Config *rest.Config
	// Kubeconfig is the path of a kubeconfig file with the same credentials, for kubectl and for
	// processes started separately (OCM's work agent and placement controller, the controller).
	Kubeconfig string
	// Dir is the hub's private directory: etcd data, certificates, etcd.log, kube-apiserver.log and
	// the kubeconfig. Stop removes it.
	Dir string
	// URL is the API server's https address.
	URL string
	// Clients are typed clients built from Config.
	Clients *Clients
	// StartDuration is how long Start took, CRDs included.
	StartDuration time.Duration

	etcd *process
	// apiMu guards apiserver, which StopAPIServer and StartAPIServer replace.
	apiMu         sync.Mutex
	apiserver     *process
	apiServerPath string
	apiServerArgs []string

	stopOnce sync.Once
	stopErr  error

	// crdFiles are OCM's CRDs, read at Start; InstallCRDs applies them.
	crdFiles []crdFile

	creds       *credentials
	kubeconfigs map[string]string // of Options.Users
}

// UserKubeconfig returns the path of the kubeconfig of one of Options.Users, "" for another name.
func (h *Hub) UserKubeconfig(user string) string { return h.kubeconfigs[user] }

// UserConfig returns a new client configuration for one of Options.Users (QPS and Burst as
// Config's), or nil for another name.
func (h *Hub) UserConfig(user string) *rest.Config {
	token, ok := h.creds.userTokens[user]
	if !ok {
		return nil
	}
	return h.creds.restConfig(h.URL, token)
}

// PIDs returns the process IDs of etcd and kube-apiserver, so callers can check that nothing is
// left running after Stop.
func (h *Hub) PIDs() []int {
	var pids []int
	h.apiMu.Lock()
	api := h.apiserver
	h.apiMu.Unlock()
	for _, p := range []*process{api, h.etcd} {
		if p != nil {
			pids = append(pids, p.PID())
		}
	}
	return pids
}

// Stop terminates kube-apiserver, then etcd (SIGTERM, SIGKILL after a grace period), waits for both
// to exit and removes Dir. It is safe to call more than once and from several goroutines; later calls
// return the first call's result.
func (h *Hub) Stop() error {
	h.stopOnce.Do(func() {
		var errs []error
		// API server first: stopping etcd under it makes it log a storm of retries.
		h.apiMu.Lock()
		api := h.apiserver
		h.apiMu.Unlock()
		for _, p := range []*process{api, h.etcd} {
			if p == nil {
				continue
			}
			if err := p.stop(stopGrace); err != nil {
				errs = append(errs, err)
			}
		}
		if h.Dir != "" {
			if err := os.RemoveAll(h.Dir); err != nil {
				errs = append(errs, fmt.Errorf("removing hub directory %s: %w", h.Dir, err))
			}
		}
		h.stopErr = errors.Join(errs...)
	})
	return h.stopErr
}

// stopGrace is how long a process gets to exit after SIGTERM before SIGKILL.
const stopGrace = 10 * time.Second

// portAttempts is how often Start retries with new ports when a port it picked was taken by someone
// else between picking and binding (parallel test packages pick ports at the same time).
const portAttempts = 3

// Start starts etcd and kube-apiserver on free loopback ports with a fresh data directory, installs
// OCM's CRDs (unless Options.WithoutCRDs) and waits until they are Established and discoverable.
// ctx bounds the start only; the processes run until Stop (or until the calling process dies: they
// get SIGKILL then).
func Start(ctx context.Context, opts Options) (*Hub, error) {
	begin := time.Now()
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()

	bins, err := findBinaries(opts)
	if err != nil {
		return nil, err
	}
	crdFiles, err := findCRDFiles(ctx, opts)
	if err != nil {
		return nil, err
	}

	var h *Hub
	for attempt := 1; ; attempt++ {
		h, err = startProcesses(ctx, opts, bins)
		if err == nil {
			break
		}
		if !errors.Is(err, errPortTaken) || attempt == portAttempts {
			return nil, err
		}
	}

	h.crdFiles = crdFiles
	if !opts.WithoutCRDs {
		if err := installCRDs(ctx, h.Clients, crdFiles); err != nil {
			_ = h.Stop()
			return nil, err
		}
	}
	h.StartDuration = time.Since(begin)
	return h, nil
}

// startProcesses runs etcd then kube-apiserver in a new hub directory and waits until both are
// ready. On failure it stops what it started and removes the directory.
func startProcesses(ctx context.Context, opts Options, bins binaries) (_ *Hub, err error) {
	tmp := opts.TempDir
	if tmp == "" {
		tmp = os.Getenv("ADDONOPS_HUB_TMPDIR")
	}
	if tmp == "" {
		tmp = os.TempDir()
	}
	removeOrphanedDirs(tmp)
	dir, err := os.MkdirTemp(tmp, hubDirPrefix)
	if err != nil {
		return nil, fmt.Errorf("creating the hub directory: %w", err)
	}
	h := &Hub{Dir: dir}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("writing the hub's owner file: %w", err)
	}
	defer func() {
		if err != nil {
			_ = h.Stop()
		}
	}()

	ports, err := childproc.FreePorts(3)
	if err != nil {
		return nil, err
	}
	etcdClient, etcdPeer, apiPort := ports[0], ports[1], ports[2]

	h.etcd, err = startEtcd(ctx, bins.etcd, dir, etcdClient, etcdPeer)
	if err != nil {
		return nil, err
	}

	creds, err := writeCredentials(filepath.Join(dir, "pki"), opts.Users)
	if err != nil {
		return nil, err
	}
	h.creds = creds
	h.URL = "https://" + loopback + ":" + strconv.Itoa(apiPort)
	h.Config = creds.restConfig(h.URL, creds.token)
	h.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(h.Kubeconfig, h.URL, creds, creds.token); err != nil {
		return nil, err
	}
	h.kubeconfigs = map[string]string{}
	for i, u := range opts.Users {
		h.kubeconfigs[u] = filepath.Join(dir, fmt.Sprintf("kubeconfig-user-%d", i))
		if err := writeKubeconfig(h.kubeconfigs[u], h.URL, creds, creds.userTokens[u]); err != nil {
			return nil, err
		}
	}
	h.Clients, err = NewClients(h.Config)
	if err != nil {
		return nil, err
	}

	args := apiServerArgs(dir, creds, apiPort, etcdClient)
	args = append(args, opts.ExtraAPIServerArgs...)
	h.apiServerPath, h.apiServerArgs = bins.apiserver, args
	h.apiserver, err = startAPIServer(ctx, bins.apiserver, dir, args, h.Clients)
	if err != nil {
		return nil, err
	}
	return h, nil
}

// hubDirPrefix names hub directories; ownerFile in each holds the PID of the process that made it.
const (
	hubDirPrefix = "addonops-hub-"
	ownerFile    = "owner.pid"
)

// removeOrphanedDirs deletes hub directories whose owner process is gone: a test binary killed by
// `go test -timeout` takes its etcd and kube-apiserver with it (parent-death signal) but cannot
// remove their data (etcd alone preallocates 64 MB of WAL). Best effort: errors are ignored, and a
// directory whose owner cannot be read, or whose owner PID is alive, is left alone.
func removeOrphanedDirs(tmp string) {
	dirs, _ := filepath.Glob(filepath.Join(tmp, hubDirPrefix+"*"))
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = os.RemoveAll(dir)
		}
	}
}

// apiServerArgs are the flags verified against the etcd 3.4 that Debian packages (what the
// localhub.mk etcd target installs), plus envtest's choices for a controller-less server.
func apiServerArgs(dir string, creds *credentials, port, etcdPort int) []string {
	return []string{
		"--etcd-servers=http://" + loopback + ":" + strconv.Itoa(etcdPort),
		"--bind-address=" + loopback,
		"--advertise-address=" + loopback,
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(dir, "pki"),
		"--tls-cert-file=" + creds.servingCertFile,
		"--tls-private-key-file=" + creds.servingKeyFile,
		"--token-auth-file=" + creds.tokenFile,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://" + loopback + ":" + strconv.Itoa(port),
		"--service-account-key-file=" + creds.serviceAccountKeyFile,
		"--service-account-signing-key-file=" + creds.serviceAccountKeyFile,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--allow-privileged=true",
		// No controller-manager runs, so no "default" ServiceAccount is ever created; the admission
		// plugin would refuse every Pod without one.
		"--disable-admission-plugins=ServiceAccount",
	}
}
