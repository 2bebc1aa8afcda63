// Command addonops-controller runs addonops' hub controller: it installs ManagedClusterAddOns from
// placements and rolls add-on config changes out with OCM's rollout strategies and canary
// placements. See package github.com/addonops/addonops/controller.
//
// It runs under controller-runtime's manager: leader election on a Lease, a Prometheus metrics
// endpoint and health probes (README.md, "How the controller runs").
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/addonops/addonops/controller"
	"github.com/addonops/addonops/controller/deploytemplates"
	"github.com/addonops/addonops/controller/mcastatus"
	"github.com/addonops/addonops/controller/registration"
	"github.com/addonops/addonops/controller/rolloutmetrics"
	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/version"
)

func main() { os.Exit(runProcess(os.Args[1:])) }

// runProcess is the process: run until SIGINT or SIGTERM, and the exit code. The integration tests
// run it as a process of its own too (the test binary re-executed), to kill it.
func runProcess(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, args, os.Stdout)
	stop()
	klog.Flush()
	if err != nil {
		fmt.Fprintln(os.Stderr, "addonops-controller:", err)
		return 1
	}
	return 0
}

// LeaderElectionID is the name of the coordination.k8s.io Lease the replicas compete for.
const LeaderElectionID = "addonops-controller-leader"

// inClusterNamespaceFile holds the pod's namespace in a pod with a service account token.
var inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// run is the command: it parses args and runs the manager until ctx is done.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("addonops-controller", flag.ContinueOnError)
	var opts controller.Options
	kubeconfig := fs.String("kubeconfig", "", "path to the hub's kubeconfig; empty: in-cluster configuration")
	qps := fs.Float64("kube-api-qps", 200, "client-side requests per second to the hub API server")
	burst := fs.Int("kube-api-burst", 400, "client-side request burst to the hub API server")
	fs.StringVar(&opts.Addons, "addons", controller.AddonsSelf, `which ClusterManagementAddOns to manage: "self" (annotated addon.open-cluster-management.io/lifecycle, except "addon-manager": the ones OCM's addon-manager leaves alone) or "all" (a hub without OCM's addon-manager)`)
	fs.IntVar(&opts.Workers, "workers", 4, "concurrent ManagedClusterAddOn progress reconciles")
	fs.IntVar(&opts.WriteParallelism, "write-parallelism", 16, "concurrent status writes of one rollout decision")
	fs.DurationVar(&opts.Resync, "resync", 0, "informer resync period: everything is reconciled again this often (default 10m)")
	fs.DurationVar(&opts.Coalesce, "coalesce", 0, "delay that merges bursts of events into one rollout decision (default 250ms)")
	configGC := fs.Bool("config-gc", true, "delete superseded config versions (objects with config-hash's addonops.io/base-name and addonops.io/content-hash annotations that nothing references and a newer version of which is in use); see the README")
	fs.IntVar(&opts.ConfigGC.Keep, "config-gc-keep", 1, "unused versions kept per config base name, newest first")
	fs.DurationVar(&opts.ConfigGC.MinAge, "config-gc-min-age", 10*time.Minute, "how old a superseded config version must be before it is deleted (0: any age)")
	fs.BoolVar(&opts.ConfigGC.DryRun, "config-gc-dry-run", false, "only report (events, logs, metric) the config versions the garbage collection would delete")
	fs.DurationVar(&opts.ConfigGC.Interval, "config-gc-interval", time.Minute, "how often the garbage collection of config versions runs")
	deployTemplates := fs.Bool("deploy-templates", false, "deploy template add-ons (AddOnTemplate) of the managed CMAs ourselves: ManifestWorks paced by the rollout, agent registration (CSR approval and signing, hub RoleBindings) and the Available condition; for hubs without OCM's addon-manager (leave off where it runs: it deploys them)")
	signingCANamespace := fs.String("signing-ca-namespace", registration.DefaultSigningCANamespace, "with --deploy-templates: namespace of a CustomSigner's signingCA secret when the AddOnTemplate names none (the controller must be allowed to get secrets there)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile to this file until the controller stops (for benchmarks)")
	leaderElect := fs.Bool("leader-elect", true, "run the controller only while holding the Lease "+LeaderElectionID+", so several replicas can run; --leader-elect=false for a single local process")
	leaderNamespace := fs.String("leader-election-namespace", "", "namespace of the leader election Lease (default: the pod's namespace, from POD_NAMESPACE or the service account's namespace file)")
	historyNamespace := fs.String("history-namespace", "", "namespace of the add-ons' version histories, one ConfigMap per add-on (default: --leader-election-namespace, else the pod's namespace)")
	fs.IntVar(&opts.HistoryLimit, "history-limit", history.DefaultLimit, "config versions kept per placement in an add-on's version history (a revert to any of them that once completed is a rollback)")
	fs.DurationVar(&opts.DeployerWait, "deployer-wait", mcastatus.DefaultDeployerWait, "how long a cluster told to run its configs may go without any ManifestApplied from a deployer before its ManagedClusterAddOn, its placement's progression and a Warning event on the ClusterManagementAddOn say that no add-on manager seems to deploy the add-on")
	metricsAddr := fs.String("metrics-bind-address", ":8080", `address of the Prometheus /metrics endpoint (controller-runtime's registry: workqueue, REST client, leader election and addonops_* metrics); "0" disables it`)
	probeAddr := fs.String("health-probe-bind-address", ":8081", `address of the /healthz and /readyz probes; "0" disables them`)
	logFormat := fs.String("log-format", "text", `log format: "text" (klog) or "json" (one JSON object per line; -v still sets the verbosity)`)
	showVersion := fs.Bool("version", false, "print the version and exit")
	klog.InitFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	if *showVersion {
		_, err := fmt.Fprintln(stdout, version.String("addonops-controller"))
		return err
	}
	if err := setUpLogging(*logFormat, fs); err != nil {
		return err
	}
	opts.ConfigGC.Disabled = !*configGC
	if opts.ConfigGC.MinAge == 0 {
		opts.ConfigGC.MinAge = -1 // the flag's 0 is "any age"; Options' zero is "the default"
	}
	if opts.ConfigGC.Keep < 0 {
		return fmt.Errorf("--config-gc-keep=%d: want 0 or more unused versions to keep", opts.ConfigGC.Keep)
	}
	if opts.DeployerWait <= 0 {
		return fmt.Errorf("--deployer-wait=%s: want a positive duration", opts.DeployerWait)
	}
	if err := opts.Complete(); err != nil {
		return err
	}
	leaseNamespace := ""
	if *leaderElect {
		var err error
		if leaseNamespace, err = leaderElectionNamespace(*leaderNamespace); err != nil {
			return err
		}
	}
	if opts.HistoryLimit < 1 {
		return fmt.Errorf("--history-limit=%d: want 1 or more versions per placement", opts.HistoryLimit)
	}
	opts.HistoryNamespace = *historyNamespace
	if opts.HistoryNamespace == "" {
		if opts.HistoryNamespace = *leaderNamespace; opts.HistoryNamespace == "" {
			opts.HistoryNamespace = podNamespace()
		}
	}
	if opts.HistoryNamespace == "" {
		return fmt.Errorf("the version history needs a namespace (one ConfigMap per add-on) and the pod's namespace is unknown (POD_NAMESPACE is unset and %s is missing, so this is not a pod): set --history-namespace", inClusterNamespaceFile)
	}

	var cfg *rest.Config
	var err error
	if *kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", *kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return fmt.Errorf("loading the hub configuration (set --kubeconfig outside a cluster): %w", err)
	}
	cfg.QPS, cfg.Burst = float32(*qps), *burst
	cfg.UserAgent = "addonops-controller"

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer func() {
			pprof.StopCPUProfile()
			_ = f.Close()
		}()
	}

	// The process logs through klog; tests running several instances give each its own logger.
	logger := klog.FromContext(ctx)
	ctx = klog.NewContext(ctx, logger)
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	mgr, err := manager.New(cfg, manager.Options{
		Scheme:                        scheme,
		Logger:                        logger,
		Metrics:                       metricsserver.Options{BindAddress: *metricsAddr},
		HealthProbeBindAddress:        *probeAddr,
		LeaderElection:                *leaderElect,
		LeaderElectionID:              LeaderElectionID,
		LeaderElectionNamespace:       leaseNamespace,
		LeaderElectionReleaseOnCancel: true,
		// Run cancels every runnable at once on a signal; the controller stops within a second.
		GracefulShutdownTimeout: ptr(30 * time.Second),
	})
	if err != nil {
		return fmt.Errorf("setting up the manager: %w", err)
	}

	if *deployTemplates {
		opts.DeployTemplates = &deploytemplates.Options{SigningCANamespace: *signingCANamespace}
	}
	// One runnable holds the one cache and runs every reconciler on it (package hubcache).
	c, err := controller.New(cfg, opts)
	if err != nil {
		return err
	}
	if err := mgr.Add(withLogger{c, logger}); err != nil {
		return err
	}
	synced := c.Synced
	hub, err := newHubChecker(cfg)
	if err != nil {
		return err
	}
	if err := mgr.Add(withLogger{hub, logger}); err != nil {
		return err
	}
	defer rolloutmetrics.AddSource(c.MetricsSnapshot)()

	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("hub", hub.Check); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("informers", informersSynced(mgr.Elected(), synced)); err != nil {
		return err
	}
	logger.Info("Starting", "version", version.Get(), "hub", cfg.Host, "leaderElection", *leaderElect,
		"leaseNamespace", leaseNamespace, "metrics", *metricsAddr, "probes", *probeAddr)
	return mgr.Start(ctx)
}

// leaderRunnable is a manager.Runnable that says whether it needs the Lease.
type leaderRunnable interface {
	manager.Runnable
	NeedLeaderElection() bool
}

// withLogger gives a runnable the command's logger: the manager starts runnables with contexts
// of its own, which carry none.
type withLogger struct {
	r      leaderRunnable
	logger klog.Logger
}

func (w withLogger) Start(ctx context.Context) error {
	return w.r.Start(klog.NewContext(ctx, w.logger))
}
func (w withLogger) NeedLeaderElection() bool { return w.r.NeedLeaderElection() }

// informersSynced is the readiness check of the controller's caches. A replica waiting for the
// Lease starts no informers and counts as ready: a standby that never got ready would stall every
// rolling update of the Deployment.
func informersSynced(elected <-chan struct{}, synced func() bool) healthz.Checker {
	return func(*http.Request) error {
		select {
		case <-elected:
		default:
			return nil
		}
		if !synced() {
			return errors.New("the controller's informer caches have not synced yet")
		}
		return nil
	}
}

// leaderElectionNamespace is flag, else the pod's namespace.
func leaderElectionNamespace(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if ns := podNamespace(); ns != "" {
		return ns, nil
	}
	return "", fmt.Errorf("leader election needs the namespace of its Lease, and the pod's namespace is unknown (POD_NAMESPACE is unset and %s is missing, so this is not a pod): set --leader-election-namespace, or --leader-elect=false to run a single replica without leader election", inClusterNamespaceFile)
}

// podNamespace is the pod's namespace (POD_NAMESPACE or the service account's namespace file), or
// "" outside a pod.
func podNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if data, err := os.ReadFile(inClusterNamespaceFile); err == nil {
		return strings.TrimSpace(string(data))
	}
	return ""
}

// setUpLogging makes klog (and controller-runtime, through klog) write text or JSON.
func setUpLogging(format string, fs *flag.FlagSet) error {
	switch format {
	case "text":
	case "json":
		v := 0
		if f := fs.Lookup("v"); f != nil {
			v, _ = strconv.Atoi(f.Value.String())
		}
		// logr's V(n) is slog level -n; -v=4 enables V(0) to V(4).
		h := slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.Level(-v)})
		klog.SetLogger(logr.FromSlogHandler(h))
	default:
		return fmt.Errorf("--log-format=%q: want \"text\" or \"json\"", format)
	}
	crlog.SetLogger(klog.Background())
	return nil
}

func ptr[T any](v T) *T { return &v }
