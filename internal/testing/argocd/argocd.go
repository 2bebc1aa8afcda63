// Package argocd runs real Argo CD against a test hub (internal/testing/localhub): the application
// controller, the repo server and our config management plugin (CMP) server, built from Argo CD's
// Go module at the version tools/argocd pins (`make argocd`), with Debian's redis-server as their
// cache (`make redis`).
//
// It installs what Argo CD's own install gives those parts, read from the pinned module's
// manifests/: the CRDs, the application controller's ServiceAccount and RBAC
// (cluster-rbac/application-controller and its namespaced role), and the ConfigMaps and Secret of
// base/config. argocd-cm then gets health/argocd/argocd-cm.yaml merged in, the README's recipe. The
// processes get the environment the install's StatefulSet and Deployment give their containers
// (settings read from argocd-cm and argocd-cmd-params-cm), so the test's settings (fast
// reconciliation, persisted resource health, the addresses of redis and the repo server) are
// written where a user writes them: argocd-cm and argocd-cmd-params-cm.
//
// The application controller authenticates with a token of its own ServiceAccount only. The
// in-cluster destination, https://kubernetes.default.svc, is the hub: outside a cluster Argo CD's
// own `make start-local` sets ARGOCD_FAKE_IN_CLUSTER=true, which makes that destination use
// $KUBECONFIG, here the ServiceAccount's kubeconfig.
//
// The CMP server runs health/argocd/cmp-plugin.yaml's plugin.yaml as the sidecar mounts it (the
// file plugin.yaml in its config directory), shares its socket directory with the repo server
// through ARGOCD_PLUGINSOCKFILEPATH, as the sidecar's and the repo server's shared volume does, and
// finds kustomize and the KRM functions on its PATH, as the tools image puts them there.
//
// Argo CD's API server and UI do not run: the tests read the Application from the hub and the
// resource tree (health of the objects an add-on's controller creates, such as
// ManagedClusterAddOns) from redis, where the API server reads it too (ResourceTree).
package argocd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/addonops/addonops/config/configtest"
	"github.com/addonops/addonops/internal/testing/childproc"
	"github.com/addonops/addonops/internal/testing/localhub"
)

const (
	// Namespace is where Argo CD runs and where Applications live, as in its install.
	Namespace = "argocd"
	// ControllerServiceAccount is the application controller's ServiceAccount in Argo CD's install.
	ControllerServiceAccount = "argocd-application-controller"
	// InClusterServer is the destination of Applications that deploy to the cluster Argo CD runs
	// in: here the hub.
	InClusterServer = "https://kubernetes.default.svc"

	module    = "github.com/argoproj/argo-cd/v3"
	stopGrace = 15 * time.Second
)

// Options tune Start. Kustomize is required; the rest has defaults.
type Options struct {
	// Binary is the Argo CD binary of tools/argocd. Default: $ADDONOPS_ARGOCD, else bin/argocd at
	// the repository root (`make argocd`).
	Binary string
	// RedisServer is Debian's redis-server. Default: $ADDONOPS_REDIS_SERVER, else
	// /usr/bin/redis-server (`make redis`).
	RedisServer string
	// Kustomize is the kustomize the CMP and the repo server run (the go.mod's tool, v5.8.2:
	// krmfntest.KustomizePath). It is linked as "kustomize" into a directory first on their
	// PATHs.
	Kustomize string
	// PluginPath are directories put on the CMP server's PATH after kustomize's, before the
	// inherited PATH: where the KRM functions are (the e2e suite's freshly built ones). Default:
	// none (the inherited PATH must have them).
	PluginPath []string
	// ReconciliationTimeout is argocd-cm's timeout.reconciliation: how often the controller
	// refreshes an Application and the repo server re-resolves a branch. Default 5s (Argo CD's
	// default, 120s, would make every step of a test wait for it).
	ReconciliationTimeout time.Duration
	// RepoRoot is the addonops repository root. Default: found from the working directory.
	RepoRoot string
	// LogDir receives redis.log, repo-server.log, cmp-server.log, application-controller.log and
	// the processes' private directories. Default: a new directory, removed by Stop unless KeepLogs.
	LogDir string
	// KeepLogs keeps a LogDir created by Start after Stop.
	KeepLogs bool
	// StartTimeout bounds the whole start. Default 2 minutes (two shared cores).
	StartTimeout time.Duration
}

// ArgoCD is a running Argo CD.
type ArgoCD struct {
	// LogDir holds one log per process and their private directories.
	LogDir string
	// ModuleDir is the directory of the Argo CD module whose manifests were installed.
	ModuleDir string
	// RedisAddr and RepoServerAddr are the loopback addresses of redis and the repo server.
	RedisAddr, RepoServerAddr string
	// PluginName is the CMP's name as Applications select it (metadata.name-spec.version).
	PluginName string
	// StartDuration is how long Start took.
	StartDuration time.Duration

	opts      Options
	ownLogDir bool
	hub       *localhub.Hub

	mu    sync.Mutex
	parts []*part // in start order

	stopOnce sync.Once
	stopErr  error
}

// part is one Argo CD process.
type part struct {
	*childproc.Process
	// what says what the part is, for messages ("the repo server").
	what string
	// ignoresSIGTERM: the part is known not to exit on SIGTERM, so Stop kills it after a short
	// grace and does not call that a failure.
	ignoresSIGTERM bool
}

// failure describes a part that exited or never became ready, with the end of its log.
func (p *part) failure(what string) error {
	return fmt.Errorf("argocd: %s (%s) %s; last lines of %s:\n%s", p.what, p.Name, what, p.LogPath, childproc.Tail(p.LogPath, 30))
}

// Start installs Argo CD on hub and starts its parts. On an error everything started is stopped
// and the error names the part that failed, why, and the end of its log.
func Start(ctx context.Context, hub *localhub.Hub, opts Options) (_ *ArgoCD, err error) {
	started := time.Now()
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 2 * time.Minute
	}
	if opts.ReconciliationTimeout == 0 {
		opts.ReconciliationTimeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()

	root, err := localhub.RepoRoot(opts.RepoRoot)
	if err != nil {
		return nil, fmt.Errorf("argocd: finding the repository root: %w", err)
	}
	opts.RepoRoot = root
	if err := resolveBinaries(&opts); err != nil {
		return nil, err
	}
	moduleDir, err := ModuleDir(ctx, root)
	if err != nil {
		return nil, err
	}
	plugin, err := readPlugin(root)
	if err != nil {
		return nil, err
	}

	a := &ArgoCD{opts: opts, hub: hub, ModuleDir: moduleDir, LogDir: opts.LogDir, PluginName: plugin.name}
	if a.LogDir == "" {
		if a.LogDir, err = os.MkdirTemp("", "addonops-argocd-"); err != nil {
			return nil, fmt.Errorf("argocd: creating the log directory: %w", err)
		}
		a.ownLogDir = true
	}
	defer func() {
		if err != nil {
			if stopErr := a.stop(true); stopErr != nil {
				err = errors.Join(err, stopErr)
			}
			err = fmt.Errorf("%w\n(Argo CD's logs are kept in %s)", err, a.LogDir)
		}
	}()

	ports, err := childproc.FreePorts(4)
	if err != nil {
		return nil, err
	}
	a.RedisAddr = "127.0.0.1:" + strconv.Itoa(ports[0])
	a.RepoServerAddr = "127.0.0.1:" + strconv.Itoa(ports[1])
	repoMetrics, controllerMetrics := ports[2], ports[3]

	if err := install(ctx, hub, moduleDir, root, a.settings()); err != nil {
		return nil, err
	}
	if err := a.startRedis(ctx); err != nil {
		return nil, err
	}
	if err := a.startCMPServer(ctx, plugin); err != nil {
		return nil, err
	}
	if err := a.startRepoServer(ctx, repoMetrics); err != nil {
		return nil, err
	}
	if err := a.startController(ctx, controllerMetrics); err != nil {
		return nil, err
	}
	a.StartDuration = time.Since(started)
	return a, nil
}

// settings are the test's additions to argocd-cm and argocd-cmd-params-cm: where a user sets
// them, read by the processes through the environment the install gives them.
func (a *ArgoCD) settings() settings {
	return settings{
		cm: map[string]string{
			// Refresh (and re-resolve the branch) every few seconds: a new commit is seen at once,
			// as with a Git webhook, and health is re-read as often. No jitter.
			"timeout.reconciliation":        a.opts.ReconciliationTimeout.String(),
			"timeout.reconciliation.jitter": "0s",
		},
		params: map[string]string{
			"redis.server": a.RedisAddr,
			"repo.server":  a.RepoServerAddr,
			// Resource health in the Application's status.resources, where the tests read it
			// (Argo CD 3 keeps it only in redis by default, for the API server).
			"controller.resource.health.persist": "true",
			// Self-heal soon after a drift: 1s, then Argo CD's backoff (factor 3).
			"controller.self.heal.backoff.timeout.seconds": "1",
			"controller.log.format":                        "text",
			"reposerver.log.format":                        "text",
		},
	}
}

// RedisServer is the redis-server Start runs unless Options.RedisServer says otherwise:
// $ADDONOPS_REDIS_SERVER, else Debian's.
func RedisServer() string {
	if p := os.Getenv("ADDONOPS_REDIS_SERVER"); p != "" {
		return p
	}
	return "/usr/bin/redis-server"
}

// MissingBinaries lists what Start, with default Options, would find missing: bin/argocd under the
// repository root (relative to it; not when $ADDONOPS_ARGOCD names the binary) and RedisServer.
func MissingBinaries(root string) []string {
	var missing []string
	if os.Getenv("ADDONOPS_ARGOCD") == "" && childproc.CheckExecutable(filepath.Join(root, "bin", "argocd")) != nil {
		missing = append(missing, "bin/argocd")
	}
	if childproc.CheckExecutable(RedisServer()) != nil {
		missing = append(missing, RedisServer())
	}
	return missing
}

// resolveBinaries fills in and checks the binaries Start runs.
func resolveBinaries(opts *Options) error {
	if opts.Binary == "" {
		opts.Binary = os.Getenv("ADDONOPS_ARGOCD")
	}
	if opts.Binary == "" {
		opts.Binary = filepath.Join(opts.RepoRoot, "bin", "argocd")
	}
	if err := childproc.CheckExecutable(opts.Binary); err != nil {
		return fmt.Errorf("argocd: Argo CD binary %s %v: run `make argocd` at the repository root (or set $ADDONOPS_ARGOCD)", opts.Binary, err)
	}
	if opts.RedisServer == "" {
		opts.RedisServer = RedisServer()
	}
	if err := childproc.CheckExecutable(opts.RedisServer); err != nil {
		return fmt.Errorf("argocd: redis-server %s %v: run `make redis` (Debian's redis-server) or set $ADDONOPS_REDIS_SERVER", opts.RedisServer, err)
	}
	if opts.Kustomize == "" {
		return errors.New("argocd: Options.Kustomize is empty: the CMP needs the go.mod's kustomize (krmfntest.KustomizePath)")
	}
	if err := childproc.CheckExecutable(opts.Kustomize); err != nil {
		return fmt.Errorf("argocd: kustomize %s %v", opts.Kustomize, err)
	}
	// The repo server clones with the git command.
	if _, err := exec.LookPath("git"); err != nil {
		return fmt.Errorf("argocd: the repo server needs git on the PATH: %w (apt-get install git)", err)
	}
	return nil
}

// privateDir creates and returns LogDir/name.
func (a *ArgoCD) privateDir(name string) (string, error) {
	d := filepath.Join(a.LogDir, name)
	if err := os.MkdirAll(d, 0o700); err != nil {
		return "", fmt.Errorf("argocd: creating %s: %w", d, err)
	}
	return d, nil
}

// launch starts one part with its log in LogDir/<name>.log, the command line at its head.
func (a *ArgoCD) launch(name, what, path string, args, env []string) (*part, error) {
	p, err := childproc.Start(childproc.Spec{Name: name, Path: path, Args: args, Dir: a.LogDir, Env: env, LogCommand: true})
	if err != nil {
		return nil, fmt.Errorf("argocd: %s: %w", what, err)
	}
	pt := &part{Process: p, what: what}
	a.mu.Lock()
	a.parts = append(a.parts, pt)
	a.mu.Unlock()
	return pt, nil
}

// waitReady polls ready until it returns nil, the part exits or ctx ends (childproc's WaitReady).
func (p *part) waitReady(ctx context.Context, ready func(context.Context) error) error {
	if err := p.WaitReady(ctx, 200*time.Millisecond, ready); err != nil {
		return p.failure(err.Error())
	}
	return nil
}

func (a *ArgoCD) startRedis(ctx context.Context) error {
	dir, err := a.privateDir("redis")
	if err != nil {
		return err
	}
	_, port, _ := net.SplitHostPort(a.RedisAddr)
	// No persistence, loopback only, a private working directory; the log to stdout (the part's
	// log file). Debian's packaged configuration is not read.
	p, err := a.launch("redis", "redis-server", a.opts.RedisServer,
		[]string{"--port", port, "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", ""}, os.Environ())
	if err != nil {
		return err
	}
	return p.waitReady(ctx, func(ctx context.Context) error {
		reply, err := redisCommand(ctx, a.RedisAddr, "PING")
		if err != nil {
			return err
		}
		if string(reply) != "PONG" {
			return fmt.Errorf("PING answered %q", reply)
		}
		return nil
	})
}

// baseEnv is the environment every Argo CD process gets besides the install's: the binary's
// command by name, as Argo CD's cmd/main.go picks it, and private HOME and TMPDIR (the install
// mounts emptyDirs at /home/argocd and /tmp).
func (a *ArgoCD) baseEnv(name, dir string, extra ...string) ([]string, error) {
	home, tmp := filepath.Join(dir, "home"), filepath.Join(dir, "tmp")
	for _, d := range []string{home, tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("argocd: creating %s: %w", d, err)
		}
	}
	env := withoutVars(os.Environ(), "KUBECONFIG", "ARGOCD_", "REDIS_")
	env = append(env, "ARGOCD_BINARY_NAME="+name, "HOME="+home, "TMPDIR="+tmp)
	return append(env, extra...), nil
}

// withoutVars drops the variables with any of the prefixes from env: the test's own environment
// must not configure Argo CD behind the harness's back.
func withoutVars(env []string, prefixes ...string) []string {
	var out []string
	for _, kv := range env {
		keep := true
		for _, p := range prefixes {
			if strings.HasPrefix(kv, p) {
				keep = false
			}
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}

func (a *ArgoCD) startCMPServer(ctx context.Context, plugin pluginConfig) error {
	dir, err := a.privateDir("cmp-server")
	if err != nil {
		return err
	}
	// The sidecar mounts the ConfigMap's plugin.yaml as <config dir>/plugin.yaml.
	configDir := filepath.Join(dir, "config")
	if err := os.MkdirAll(configDir, 0o700); err != nil {
		return fmt.Errorf("argocd: %w", err)
	}
	if err := os.WriteFile(filepath.Join(configDir, "plugin.yaml"), plugin.yaml, 0o600); err != nil {
		return fmt.Errorf("argocd: writing the CMP's plugin.yaml: %w", err)
	}
	// kustomize under its own name, first on the PATH, as in the tools image.
	toolsDir := filepath.Join(dir, "bin")
	if err := os.MkdirAll(toolsDir, 0o700); err != nil {
		return fmt.Errorf("argocd: %w", err)
	}
	if err := os.Symlink(a.opts.Kustomize, filepath.Join(toolsDir, "kustomize")); err != nil {
		return fmt.Errorf("argocd: linking kustomize for the CMP: %w", err)
	}
	path := strings.Join(append(append([]string{toolsDir}, a.opts.PluginPath...), os.Getenv("PATH")), string(os.PathListSeparator))
	sockets, err := a.sockets()
	if err != nil {
		return err
	}
	// The later PATH wins (os/exec keeps the last value of a duplicate variable).
	env, err := a.baseEnv("argocd-cmp-server", dir, "PATH="+path, "ARGOCD_PLUGINSOCKFILEPATH="+sockets)
	if err != nil {
		return err
	}
	p, err := a.launch("cmp-server", "the config management plugin server", a.opts.Binary,
		[]string{"--config-dir-path", configDir, "--loglevel", "info", "--logformat", "text"}, env)
	if err != nil {
		return err
	}
	// On SIGTERM Argo CD's CMP server removes its socket but never stops its gRPC server
	// (cmpserver.ArgoCDCMPServer.Shutdown), so it runs until killed, as the kubelet does at the
	// end of the pod's grace period.
	p.ignoresSIGTERM = true
	sock := filepath.Join(sockets, plugin.name+".sock")
	return p.waitReady(ctx, func(context.Context) error {
		if _, err := os.Stat(sock); err != nil {
			return fmt.Errorf("no plugin socket %s yet", sock)
		}
		return nil
	})
}

// sockets is the plugin socket directory the CMP server and the repo server share (the install's
// "plugins" volume at /home/argocd/cmp-server/plugins).
func (a *ArgoCD) sockets() (string, error) { return a.privateDir("plugins") }

func (a *ArgoCD) startRepoServer(ctx context.Context, metricsPort int) error {
	dir, err := a.privateDir("repo-server")
	if err != nil {
		return err
	}
	env, err := installEnv(ctx, a.hub.Clients.Kube, filepath.Join(a.ModuleDir, repoServerManifest), "argocd-repo-server", dir)
	if err != nil {
		return err
	}
	sockets, err := a.sockets()
	if err != nil {
		return err
	}
	// As Argo CD's Procfile runs it locally: no GnuPG, and its TLS, SSH and GnuPG data (volumes of
	// ConfigMaps in the install) in private directories.
	// Argo CD's image ships kustomize on the PATH (and none of addonops' functions: they are in the
	// CMP sidecar): the go.mod's kustomize under its own name, first on the PATH.
	toolsDir := filepath.Join(dir, "bin")
	if err := os.MkdirAll(toolsDir, 0o700); err != nil {
		return fmt.Errorf("argocd: %w", err)
	}
	if err := os.Symlink(a.opts.Kustomize, filepath.Join(toolsDir, "kustomize")); err != nil {
		return fmt.Errorf("argocd: linking kustomize for the repo server: %w", err)
	}
	// The later PATH wins (os/exec keeps the last value of a duplicate variable).
	extra := []string{"ARGOCD_PLUGINSOCKFILEPATH=" + sockets, "ARGOCD_GPG_ENABLED=false",
		"PATH=" + toolsDir + string(os.PathListSeparator) + os.Getenv("PATH")}
	for v, d := range map[string]string{"ARGOCD_TLS_DATA_PATH": "tls", "ARGOCD_SSH_DATA_PATH": "ssh", "ARGOCD_GNUPGHOME": "gpg/keys", "ARGOCD_GPG_DATA_PATH": "gpg/source"} {
		p := filepath.Join(dir, d)
		if err := os.MkdirAll(p, 0o700); err != nil {
			return fmt.Errorf("argocd: %w", err)
		}
		extra = append(extra, v+"="+p)
	}
	base, err := a.baseEnv("argocd-repo-server", dir, extra...)
	if err != nil {
		return err
	}
	_, port, _ := net.SplitHostPort(a.RepoServerAddr)
	p, err := a.launch("repo-server", "the repo server", a.opts.Binary,
		[]string{"--address", "127.0.0.1", "--port", port, "--metrics-address", "127.0.0.1", "--metrics-port", strconv.Itoa(metricsPort)},
		append(base, env...))
	if err != nil {
		return err
	}
	return p.waitReady(ctx, healthz(metricsPort))
}

func (a *ArgoCD) startController(ctx context.Context, metricsPort int) error {
	dir, err := a.privateDir("application-controller")
	if err != nil {
		return err
	}
	env, err := installEnv(ctx, a.hub.Clients.Kube, filepath.Join(a.ModuleDir, controllerManifest), "argocd-application-controller", dir)
	if err != nil {
		return err
	}
	// Nothing but a token of its own ServiceAccount: every request is authorized by the install's
	// RBAC. The same kubeconfig is the in-cluster destination (ARGOCD_FAKE_IN_CLUSTER, as Argo CD's
	// `make start-local` runs the controller outside a cluster).
	kubeconfig, err := configtest.ServiceAccountKubeconfig(ctx, a.hub, Namespace, ControllerServiceAccount, dir)
	if err != nil {
		return fmt.Errorf("argocd: the application controller's credentials: %w", err)
	}
	base, err := a.baseEnv("argocd-application-controller", dir, "KUBECONFIG="+kubeconfig, "ARGOCD_FAKE_IN_CLUSTER=true",
		// The StatefulSet's pod name: shard 0 of the one replica.
		"HOSTNAME=argocd-application-controller-0")
	if err != nil {
		return err
	}
	p, err := a.launch("application-controller", "the application controller", a.opts.Binary,
		[]string{"--kubeconfig", kubeconfig, "--namespace", Namespace, "--metrics-port", strconv.Itoa(metricsPort)},
		append(base, env...))
	if err != nil {
		return err
	}
	return p.waitReady(ctx, healthz(metricsPort))
}

// healthz checks the /healthz endpoint of a part's metrics server, the install's readiness probe.
func healthz(port int) func(context.Context) error {
	url := fmt.Sprintf("http://127.0.0.1:%d/healthz", port)
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return nil
	}
}

// Failure reports a part that has exited since Start, with the end of its log; nil while all run.
func (a *ArgoCD) Failure() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	var errs []error
	for _, p := range a.parts {
		if p.Exited() {
			errs = append(errs, p.failure(fmt.Sprintf("exited (%v)", p.Err())))
		}
	}
	return errors.Join(errs...)
}

// LogFiles returns the parts' log files, in start order.
func (a *ArgoCD) LogFiles() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, p := range a.parts {
		out = append(out, p.LogPath)
	}
	return out
}

// PIDs returns the parts' process IDs.
func (a *ArgoCD) PIDs() []int {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []int
	for _, p := range a.parts {
		out = append(out, p.PID())
	}
	return out
}

// Stop stops every part, the controller first and redis last, and removes a LogDir Start created
// unless Options.KeepLogs. Safe to call more than once.
func (a *ArgoCD) Stop() error { return a.stop(a.opts.KeepLogs) }

func (a *ArgoCD) stop(keepLogs bool) error {
	a.stopOnce.Do(func() {
		a.mu.Lock()
		parts := append([]*part(nil), a.parts...)
		a.mu.Unlock()
		var errs []error
		for i := len(parts) - 1; i >= 0; i-- {
			grace := stopGrace
			if parts[i].ignoresSIGTERM {
				grace = 2 * time.Second
			}
			err := parts[i].Stop(grace)
			var killed *childproc.KilledError
			if parts[i].ignoresSIGTERM && errors.As(err, &killed) {
				err = nil
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("argocd: stopping %s: %w", parts[i].what, err))
			}
		}
		if a.ownLogDir && !keepLogs && len(errs) == 0 {
			if err := os.RemoveAll(a.LogDir); err != nil {
				errs = append(errs, fmt.Errorf("argocd: removing %s: %w", a.LogDir, err))
			}
		}
		a.stopErr = errors.Join(errs...)
	})
	return a.stopErr
}
