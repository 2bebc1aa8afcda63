// Package flux runs Flux against a test hub (internal/testing/localhub), as Flux's own install runs it on a
// cluster: Flux's source-controller and kustomize-controller built from their Go modules (`make
// flux`, tools/flux), their CRDs from those modules, the RBAC Flux's install gives them (flux2's
// manifests/rbac), each authenticated with nothing but a token of its own ServiceAccount in
// flux-system, and the CNCF distribution registry on a loopback port as the OCI registry CI pushes
// the rendered manifests to (health/flux/render-workflow.yaml).
//
// Every part listens on loopback only, on ports chosen free at start. A part that cannot start is
// named in the error, with why and the last lines of its log. Stop (or the test's cleanup with
// ForTest) stops everything and removes the temporary directory.
package flux

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/addonops/addonops/config/configtest"
	"github.com/addonops/addonops/internal/testing/childproc"
	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/ssapply"
)

const (
	// Namespace is where Flux's install puts the controllers, their ServiceAccounts and the
	// objects of health/flux/addonops-hub.yaml.
	Namespace = "flux-system"
	// SourceController and KustomizeController are the controllers' ServiceAccounts, named as in
	// Flux's install (flux2's manifests/rbac binds these names).
	SourceController    = "source-controller"
	KustomizeController = "kustomize-controller"
	// KustomizeManager is the field manager kustomize-controller applies with (its controller
	// name, kustomize-controller main.go): its writes carry it in managedFields.
	KustomizeManager = "kustomize-controller"

	// The modules tools/flux/go.mod (the controllers) and tools/flux-cli/go.mod (flux2) pin.
	sourceModule    = "github.com/fluxcd/source-controller"
	kustomizeModule = "github.com/fluxcd/kustomize-controller"
	flux2Module     = "github.com/fluxcd/flux2/v2"

	// installManager applies the CRDs and RBAC, in the role of `flux install`.
	installManager = "addonops-flux-install"

	loopback  = "127.0.0.1"
	stopGrace = 15 * time.Second
)

// Binaries are the programs tools/flux/flux.mk builds, relative to the repository root.
var Binaries = struct{ SourceController, KustomizeController, CLI, Registry string }{
	SourceController:    "bin/flux-source-controller",
	KustomizeController: "bin/flux-kustomize-controller",
	CLI:                 "bin/flux",
	Registry:            "bin/oci-registry",
}

// MissingBinaries lists the Binaries that are not executable files under the repository root,
// relative to it: what `make flux` builds.
func MissingBinaries(root string) []string {
	var missing []string
	for _, rel := range []string{Binaries.SourceController, Binaries.KustomizeController, Binaries.CLI, Binaries.Registry} {
		if childproc.CheckExecutable(filepath.Join(root, rel)) != nil {
			missing = append(missing, rel)
		}
	}
	return missing
}

// rbacFiles are the files of flux2's manifests/rbac that grant the controllers their rights:
// crd-controller (Flux's own kinds, events, leases, reading Secrets and ConfigMaps) for both, and
// cluster-reconciler (cluster-admin) for kustomize-controller, which applies whatever the
// Kustomization holds. The directory's other files are for people (view, edit: aggregated roles)
// and pods (a ResourceQuota), neither of which exists here.
var rbacFiles = []string{"manifests/rbac/controller.yaml", "manifests/rbac/reconciler.yaml"}

// Options tune Start. The zero value is what the tests want.
type Options struct {
	// RepoRoot is the addonops repository: its bin/ holds the binaries and tools/flux pins the
	// modules whose CRDs and RBAC are installed. Default: localhub.RepoRoot("").
	RepoRoot string
	// StartTimeout bounds the whole start. Default 2 minutes (two shared cores).
	StartTimeout time.Duration
	// KeepLogs keeps the directory of logs after Stop (ForTest keeps it when the test failed).
	KeepLogs bool
}

// Flux is a running registry, source-controller and kustomize-controller.
type Flux struct {
	// Registry is the OCI registry's host:port on loopback, plain HTTP (for oci:// URLs).
	Registry string
	// CLI is the flux command built from flux2's cmd/flux.
	CLI string
	// Dir holds the logs, the source-controller's storage and the kubeconfigs; Stop removes it
	// unless Options.KeepLogs.
	Dir string
	// StartDuration is how long Start took.
	StartDuration time.Duration

	opts     Options
	hub      *localhub.Hub
	procs    []*childproc.Process // started, in order
	stopOnce sync.Once
	stopErr  error
	stopped  atomic.Bool
}

// part is one process to start: its name (also its log's), binary, arguments and environment
// beyond the parent's, and how to tell it is ready.
type part struct {
	name  string
	bin   string
	args  []string
	env   []string
	ready func(ctx context.Context) error
}

// Start installs Flux's CRDs, namespace, ServiceAccounts and RBAC on hub and starts the registry,
// source-controller and kustomize-controller, each ready when Start returns.
func Start(ctx context.Context, hub *localhub.Hub, opts Options) (_ *Flux, err error) {
	start := time.Now()
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	root, err := localhub.RepoRoot(opts.RepoRoot)
	if err != nil {
		return nil, fmt.Errorf("flux: locating the repository: %w", err)
	}
	opts.RepoRoot = root
	bins := map[string]string{}
	for _, rel := range []string{Binaries.SourceController, Binaries.KustomizeController, Binaries.CLI, Binaries.Registry} {
		path := filepath.Join(root, rel)
		if err := childproc.CheckExecutable(path); err != nil {
			return nil, fmt.Errorf("flux: %s %v: run `make flux` (builds it from tools/flux)", path, err)
		}
		bins[rel] = path
	}
	mods, err := moduleDirs(ctx, root)
	if err != nil {
		return nil, err
	}

	dir, err := os.MkdirTemp("", "addonops-flux-")
	if err != nil {
		return nil, fmt.Errorf("flux: creating a directory for the logs: %w", err)
	}
	f := &Flux{CLI: bins[Binaries.CLI], Dir: dir, opts: opts, hub: hub}
	defer func() {
		if err != nil {
			f.opts.KeepLogs = true // the error names logs in it
			_ = f.Stop()
		}
	}()

	if err := install(ctx, hub, mods); err != nil {
		return nil, err
	}
	storage := filepath.Join(dir, "source-controller-storage")
	if err := os.Mkdir(storage, 0o700); err != nil {
		return nil, fmt.Errorf("flux: creating source-controller's storage: %w", err)
	}

	// The registry: in-memory storage, plain HTTP on loopback (what `flux push artifact` and the
	// OCIRepository with `insecure: true` talk to).
	if err := f.startWithPorts(ctx, 1, func(p []int) (part, error) {
		f.Registry = net.JoinHostPort(loopback, strconv.Itoa(p[0]))
		config := filepath.Join(dir, "oci-registry.yaml")
		if err := os.WriteFile(config, registryConfig(f.Registry), 0o600); err != nil {
			return part{}, fmt.Errorf("flux: writing the registry's configuration: %w", err)
		}
		return part{
			name: "oci-registry",
			bin:  bins[Binaries.Registry],
			args: []string{"serve", config},
			// It would export traces to an OpenTelemetry collector on localhost:4318 otherwise.
			env: []string{"OTEL_TRACES_EXPORTER=none"},
			ready: func(ctx context.Context) error {
				return httpOK(ctx, "http://"+f.Registry+"/v2/")
			},
		}, nil
	}); err != nil {
		return nil, err
	}

	for _, c := range []struct {
		sa, bin string
		ports   int
		args    func(p []int) []string
		// serves is an address the part listens on besides its health probe, bound after the
		// probe answers: ready only once it accepts connections, so that a port another process
		// took in the meantime is a failed start (retried) and not a part that exits later.
		serves func(p []int) string
	}{
		{SourceController, bins[Binaries.SourceController], 3, func(p []int) []string {
			addr := net.JoinHostPort(loopback, strconv.Itoa(p[2]))
			return []string{
				"--storage-path=" + storage,
				"--storage-addr=" + addr,
				// The address kustomize-controller downloads artifacts from (status.artifact.url).
				"--storage-adv-addr=" + addr,
			}
		}, func(p []int) string { return net.JoinHostPort(loopback, strconv.Itoa(p[2])) }},
		{KustomizeController, bins[Binaries.KustomizeController], 2, func([]int) []string {
			return []string{"--no-remote-bases=true"}
		}, nil},
	} {
		kubeconfig, err := f.serviceAccountKubeconfig(ctx, hub, c.sa)
		if err != nil {
			return nil, err
		}
		if err := f.startWithPorts(ctx, c.ports, func(p []int) (part, error) {
			health := net.JoinHostPort(loopback, strconv.Itoa(p[1]))
			return part{
				name: c.sa,
				bin:  c.bin,
				args: append([]string{
					"--watch-all-namespaces=true",
					"--enable-leader-election=false",
					"--metrics-addr=" + net.JoinHostPort(loopback, strconv.Itoa(p[0])),
					"--health-addr=" + health,
					"--log-encoding=console",
					"--log-level=info",
					// Short retries: a test waits for every requeue of a failed reconcile.
					"--requeue-dependency=5s",
					"--min-retry-delay=250ms",
					"--max-retry-delay=5s",
				}, c.args(p)...),
				// RUNTIME_NAMESPACE is the controllers' own namespace, as the pod's downward API
				// sets it in Flux's install (events and leases go there).
				env: []string{"KUBECONFIG=" + kubeconfig, "RUNTIME_NAMESPACE=" + Namespace},
				ready: func(ctx context.Context) error {
					if err := httpOK(ctx, "http://"+health+"/readyz"); err != nil || c.serves == nil {
						return err
					}
					conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", c.serves(p))
					if err != nil {
						return fmt.Errorf("%s does not serve %s yet: %w", c.sa, c.serves(p), err)
					}
					return conn.Close()
				},
			}, nil
		}); err != nil {
			return nil, err
		}
	}
	f.StartDuration = time.Since(start)
	return f, nil
}

// LogFiles are the logs of the started parts.
func (f *Flux) LogFiles() []string {
	var out []string
	for _, p := range f.procs {
		out = append(out, p.LogPath)
	}
	return out
}

// Failure reports the parts that have exited since Start, each with the end of its log; nil while
// all run (a caller waiting on Flux learns at once that nothing will happen).
func (f *Flux) Failure() error {
	if f.stopped.Load() {
		return nil
	}
	var errs []error
	for _, p := range f.procs {
		if p.Exited() {
			errs = append(errs, fmt.Errorf("flux: %s exited (%v); last lines of %s:\n%s", p.Name, p.Err(), p.LogPath, childproc.Tail(p.LogPath, 30)))
		}
	}
	return errors.Join(errs...)
}

// Stop stops every part (last started first) and removes Dir unless Options.KeepLogs. It is safe
// to call more than once; later calls return the first call's result.
func (f *Flux) Stop() error {
	f.stopOnce.Do(func() {
		f.stopped.Store(true)
		var errs []error
		for i := len(f.procs) - 1; i >= 0; i-- {
			if err := f.procs[i].Stop(stopGrace); err != nil {
				errs = append(errs, fmt.Errorf("flux: stopping %w", err))
			}
		}
		if !f.opts.KeepLogs && len(errs) == 0 {
			if err := os.RemoveAll(f.Dir); err != nil {
				errs = append(errs, fmt.Errorf("flux: removing %s: %w", f.Dir, err))
			}
		}
		f.stopErr = errors.Join(errs...)
	})
	return f.stopErr
}

// startWithPorts starts the part mk describes on n free loopback ports and waits until it is
// ready. A port taken between choosing and binding it is retried with new ports, twice.
func (f *Flux) startWithPorts(ctx context.Context, n int, mk func(ports []int) (part, error)) error {
	for attempt := 1; ; attempt++ {
		ports, err := childproc.FreePorts(n)
		if err != nil {
			return err
		}
		p, err := mk(ports)
		if err != nil {
			return err
		}
		proc, err := childproc.Start(childproc.Spec{Name: p.name, Path: p.bin, Args: p.args, Dir: f.Dir,
			Env: append(os.Environ(), p.env...), LogCommand: true})
		if err != nil {
			return fmt.Errorf("flux: %w", err)
		}
		f.procs = append(f.procs, proc)
		err = waitReady(ctx, proc, p.ready)
		if err == nil {
			return nil
		}
		if attempt < 3 && strings.Contains(childproc.Tail(proc.LogPath, 40), "address already in use") {
			_ = proc.Stop(stopGrace)
			f.procs = f.procs[:len(f.procs)-1]
			continue
		}
		return err
	}
}

// waitReady polls ready until it succeeds, the process exits or ctx ends (childproc's WaitReady);
// the error names the part and quotes the end of its log.
func waitReady(ctx context.Context, p *childproc.Process, ready func(context.Context) error) error {
	if err := p.WaitReady(ctx, 200*time.Millisecond, ready); err != nil {
		return fmt.Errorf("flux: %s %v; last lines of %s:\n%s", p.Name, err, p.LogPath, childproc.Tail(p.LogPath, 30))
	}
	return nil
}

func httpOK(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s %s", url, resp.Status, bytes.TrimSpace(body))
	}
	return nil
}

// registryConfig is the distribution registry's configuration: in-memory storage (a test's pushes
// are small and die with it), plain HTTP on addr, warnings and errors only in its log (every
// poll of source-controller is a request).
func registryConfig(addr string) []byte {
	return []byte(fmt.Sprintf(`version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  inmemory: {}
  delete:
    enabled: true
http:
  addr: %s
`, addr))
}

// serviceAccountKubeconfig writes a kubeconfig holding only a token of ServiceAccount
// flux-system/sa, as the pod's mounted token would be, and returns its path.
func (f *Flux) serviceAccountKubeconfig(ctx context.Context, hub *localhub.Hub, sa string) (string, error) {
	dir := filepath.Join(f.Dir, sa+"-kubeconfig")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("flux: %w", err)
	}
	path, err := configtest.ServiceAccountKubeconfig(ctx, hub, Namespace, sa, dir)
	if err != nil {
		return "", fmt.Errorf("flux: credentials of %s: %w", sa, err)
	}
	return path, nil
}

// moduleDirs returns the module cache directories of the modules tools/flux/go.mod (the
// controllers) and tools/flux-cli/go.mod (flux2) pin, as `go list -m -json` reports them there
// (GOWORK=off: their own modules, as flux.mk builds them).
func moduleDirs(ctx context.Context, root string) (map[string]string, error) {
	dirs := map[string]string{}
	for tools, mods := range map[string][]string{
		filepath.Join(root, "tools", "flux"):     {sourceModule, kustomizeModule},
		filepath.Join(root, "tools", "flux-cli"): {flux2Module},
	} {
		cmd := exec.CommandContext(ctx, "go", append([]string{"list", "-m", "-json"}, mods...)...)
		cmd.Dir = tools
		cmd.Env = append(os.Environ(), "GOWORK=off")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("flux: `go list -m -json` of %s in %s: %w: %s (run `make flux`, which downloads them)",
				strings.Join(mods, ", "), tools, err, strings.TrimSpace(stderr.String()))
		}
		dec := json.NewDecoder(&stdout)
		for dec.More() {
			var m struct{ Path, Version, Dir string }
			if err := dec.Decode(&m); err != nil {
				return nil, fmt.Errorf("flux: reading `go list -m -json` in %s: %w", tools, err)
			}
			if m.Dir == "" {
				return nil, fmt.Errorf("flux: module %s %s is not downloaded: run `make flux` or `go mod download %s` in %s", m.Path, m.Version, m.Path, tools)
			}
			dirs[m.Path] = m.Dir
		}
		for _, m := range mods {
			if dirs[m] == "" {
				return nil, fmt.Errorf("flux: `go list -m -json` in %s did not report %s: is it still required in its go.mod?", tools, m)
			}
		}
	}
	return dirs, nil
}

// install applies what Flux's install puts on a cluster before the controllers run: the CRDs of
// the two controllers (config/crd/bases of each module), the namespace, the controllers'
// ServiceAccounts and their RBAC.
func install(ctx context.Context, hub *localhub.Hub, mods map[string]string) error {
	var crds []*unstructured.Unstructured
	for _, m := range []string{sourceModule, kustomizeModule} {
		files, err := filepath.Glob(filepath.Join(mods[m], "config", "crd", "bases", "*.yaml"))
		if err != nil || len(files) == 0 {
			return fmt.Errorf("flux: no CRDs in %s/config/crd/bases (%v): is the module download complete?", mods[m], err)
		}
		for _, file := range files {
			objs, err := decodeFile(file)
			if err != nil {
				return err
			}
			crds = append(crds, objs...)
		}
	}
	if err := localhub.ApplyCRDs(ctx, hub.Clients, installManager, crds); err != nil {
		return fmt.Errorf("flux: installing the controllers' CRDs: %w", err)
	}

	kube := hub.Clients.Kube
	if err := localhub.EnsureNamespace(ctx, kube, Namespace); err != nil {
		return fmt.Errorf("flux: %w", err)
	}
	for _, sa := range []string{SourceController, KustomizeController} {
		_, err := kube.CoreV1().ServiceAccounts(Namespace).Create(ctx,
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: Namespace}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("flux: creating ServiceAccount %s/%s: %w", Namespace, sa, err)
		}
	}
	var rbac []*unstructured.Unstructured
	for _, file := range rbacFiles {
		objs, err := decodeFile(filepath.Join(mods[flux2Module], file))
		if err != nil {
			return err
		}
		rbac = append(rbac, objs...)
	}
	applier, err := ssapply.New(hub.Clients.Dynamic, kube.Discovery(), installManager)
	if err != nil {
		return fmt.Errorf("flux: %w", err)
	}
	if _, err := applier.ApplyAll(ctx, rbac); err != nil {
		return fmt.Errorf("flux: applying flux2's %s: %w", strings.Join(rbacFiles, ", "), err)
	}
	return nil
}

func decodeFile(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("flux: %w", err)
	}
	objs, err := ssapply.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("flux: %s: %w", path, err)
	}
	return objs, nil
}
