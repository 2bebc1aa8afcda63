// Command addonops-controller runs addonops' hub controller: it installs ManagedClusterAddOns from
// placements and rolls add-on config changes out with OCM's rollout strategies and canary
// placements. See package github.com/addonops/addonops/controller.
//
// It runs under controller-runtime's manager: leader election on a Lease, a Prometheus metrics
// endpoint and health probes.
package main

import (
	"context"
	"crypto/tls"
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
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/addonops/addonops/internal/controller"
	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/metricsauth"
	"github.com/addonops/addonops/internal/notify"
	"github.com/addonops/addonops/internal/ocmkinds"
	"github.com/addonops/addonops/internal/registration"
	"github.com/addonops/addonops/internal/rolloutmetrics"
	"github.com/addonops/addonops/internal/rolloutplan"
	"github.com/addonops/addonops/internal/templatedeploy"
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
		var usage usageError
		if errors.As(err, &usage) {
			fmt.Fprintln(os.Stderr, "Run 'addonops-controller --help' for usage.")
		}
		return 1
	}
	return 0
}

// LeaderElectionID is the name of the coordination.k8s.io Lease the replicas compete for.
const LeaderElectionID = "addonops-controller-leader"

// flags are the command line.
type flags struct {
	opts               controller.Options
	kubeconfig         string
	context            string
	qps                float64
	burst              int
	configGC           bool
	deployTemplates    bool
	signingCANamespace string
	cpuProfile         string
	memProfile         string
	gcPercent          int
	leaderElect        bool
	leaderNamespace    string
	historyNamespace   string
	notifications      bool
	metricsAddr        string
	metricsCertDir     string
	probeAddr          string
	logFormat          string
	showVersion        bool
}

// usageError is a command line the command cannot run: runProcess points at --help.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// newCommand is the command line, as a cobra command whose RunE runs the controller.
func newCommand(stdout io.Writer) (*cobra.Command, *flags) {
	f := &flags{}
	cmd := &cobra.Command{
		Use:   "addonops-controller [flags]",
		Short: "addonops' hub controller: installs add-ons from placements and rolls their config changes out",
		Long: `addonops-controller runs on an Open Cluster Management hub. It installs ManagedClusterAddOns from
the placements of the ClusterManagementAddOns it manages and rolls their config changes out with
OCM's rollout strategies and canary placements (docs/design/architecture.md).

It reaches the hub like controller-runtime's programs: --kubeconfig, else $KUBECONFIG, else the
in-cluster configuration of its pod, else ~/.kube/config; --context picks a kubeconfig context.
Out of a pod, the Lease and the version histories live in the kubeconfig context's namespace
("default" if it names none) unless --leader-election-namespace or --history-namespace say otherwise.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("unexpected arguments %q: addonops-controller takes flags only", args)}
			}
			return nil
		},
		SilenceErrors: true,
		SilenceUsage:  true,
		// No completion command: this is a server binary.
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	cmd.SetOut(stdout)
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	fs := cmd.Flags()
	fs.SortFlags = false
	opts := &f.opts
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "path to the hub's kubeconfig (default: $KUBECONFIG, else the in-cluster configuration, else ~/.kube/config)")
	fs.StringVar(&f.context, "context", "", "the kubeconfig context to use (default: its current context)")
	fs.Float64Var(&f.qps, "kube-api-qps", 200, "client-side requests per second to the hub API server")
	fs.IntVar(&f.burst, "kube-api-burst", 400, "client-side request burst to the hub API server")
	fs.StringVar(&opts.Addons, "addons", controller.AddonsSelf, `which ClusterManagementAddOns to manage: "self" (annotated addon.open-cluster-management.io/lifecycle, except "addon-manager": the ones OCM's addon-manager leaves alone) or "all" (a hub without OCM's addon-manager)`)
	fs.IntVar(&opts.Workers, "workers", 4, "concurrent reconciles of each per-ManagedClusterAddOn reconciler: progress, and with --deploy-templates the deployer and registration")
	fs.IntVar(&opts.WriteParallelism, "write-parallelism", 16, "concurrent status writes of one rollout decision")
	fs.DurationVar(&opts.Resync, "resync", 0, "informer resync period: everything is reconciled again this often (default 10m)")
	fs.DurationVar(&opts.Coalesce, "coalesce", 0, "delay that merges bursts of events into one rollout decision (default 250ms); while an add-on's ManagedClusterAddOns change, its next decision also waits nine times as long as its last one took, at most 2s")
	fs.BoolVar(&f.configGC, "config-gc", true, "delete superseded config versions (objects with config-hash's addonops.io/base-name and addonops.io/content-hash annotations that nothing references and a newer version of which is in use); see the README")
	fs.IntVar(&opts.ConfigGC.Keep, "config-gc-keep", 1, "unused versions kept per config base name, newest first")
	fs.DurationVar(&opts.ConfigGC.MinAge, "config-gc-min-age", 10*time.Minute, "how old a superseded config version must be before it is deleted (0: any age)")
	fs.BoolVar(&opts.ConfigGC.DryRun, "config-gc-dry-run", false, "only report (events, logs, metric) the config versions the garbage collection would delete")
	fs.DurationVar(&opts.ConfigGC.Interval, "config-gc-interval", time.Minute, "how often the garbage collection of config versions runs")
	fs.BoolVar(&f.deployTemplates, "deploy-templates", false, "deploy template add-ons (AddOnTemplate) of the managed CMAs ourselves: ManifestWorks paced by the rollout, agent registration (CSR approval and signing, hub RoleBindings) and the Available condition; for hubs without OCM's addon-manager (leave off where it runs: it deploys them)")
	fs.StringVar(&f.signingCANamespace, "signing-ca-namespace", registration.DefaultSigningCANamespace, "with --deploy-templates: namespace of a CustomSigner's signingCA secret when the AddOnTemplate names none (the controller must be allowed to get secrets there)")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile to this file until the controller stops (for benchmarks)")
	fs.IntVar(&f.gcPercent, "gc-percent", defaultGCPercent, "Go's garbage collection target: percent the heap may grow past what is live before a collection (GOGC; this flag wins over the environment variable, which wins over the default). Lower uses less memory and more CPU")
	fs.StringVar(&f.memProfile, "memprofile", "", "write a heap profile to this file each time the live heap reaches a new high (for benchmarks)")
	fs.BoolVar(&f.leaderElect, "leader-elect", true, "run the controller only while holding the Lease "+LeaderElectionID+", so several replicas can run; --leader-elect=false for a single local process")
	fs.StringVar(&f.leaderNamespace, "leader-election-namespace", "", "namespace of the leader election Lease (default: the pod's namespace, from POD_NAMESPACE or the service account's namespace file; out of a pod the kubeconfig context's namespace, else \"default\")")
	fs.StringVar(&f.historyNamespace, "history-namespace", "", "namespace of the add-ons' version histories, one ConfigMap per add-on (default: --leader-election-namespace, else as for the Lease)")
	fs.BoolVar(&f.notifications, "notifications", true, "send notifications of the rollouts' moments (docs/guides/notifications.md) as the ConfigMap "+notify.ConfigMapName+" and the Secret "+notify.SecretName+" in the controller's namespace (as for the Lease) configure them and the add-ons' subscription annotations ask; --notifications=false reads neither")
	fs.IntVar(&opts.HistoryLimit, "history-limit", history.DefaultLimit, "config versions kept per placement in an add-on's version history (a revert to any of them that once completed is a rollback)")
	fs.DurationVar(&opts.PlacementGrace, "placement-grace", rolloutplan.DefaultPlacementGrace, "how long a Placement an add-on's install strategy names may be missing before the placement is Degraded (PlacementNotFound); within it the placement is Progressing, since a GitOps sync may apply the Placement after the add-on")
	fs.DurationVar(&opts.DeployerWait, "deployer-wait", rolloutplan.DefaultDeployerWait, "how long a cluster told to run its configs may go without any ManifestApplied from a deployer before its ManagedClusterAddOn, its placement's progression and a Warning event on the ClusterManagementAddOn say that no add-on manager seems to deploy the add-on")
	fs.DurationVar(&opts.InterimHold, "interim-hold", rolloutplan.DefaultInterimHold, "how long a cluster's interim status (a health soak under way, health not known yet for a new version) stays in memory before it is written, unless the cluster's outcome comes first: a move to a new version costs two ManagedClusterAddOn status writes; also how long a new MCA's registration declaration and first ManifestApplied wait for another write of the MCA to go with; 0 writes every change at once")
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", ":8443", `address of the Prometheus /metrics endpoint (controller-runtime's registry: workqueue, REST client, leader election and addonops_* metrics), served over HTTPS to clients with a bearer token the hub authenticates (TokenReview) and allows to get the non-resource URL /metrics (SubjectAccessReview); "0" disables it`)
	fs.StringVar(&f.metricsCertDir, "metrics-cert-dir", "", "directory holding tls.crt and tls.key, the metrics endpoint's serving certificate (reloaded when they change); default: a self-signed certificate made at start")
	fs.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", `address of the /healthz and /readyz probes; "0" disables them`)
	fs.StringVar(&f.logFormat, "log-format", "text", `log format: "text" (klog) or "json" (one JSON object per line; -v still sets the verbosity)`)
	fs.BoolVar(&f.showVersion, "version", false, "print the version and exit")
	addKlogFlags(fs)
	return cmd, f
}

// klogShown are the klog flags --help shows, as kubectl does; the others (--logtostderr,
// --log_dir, ...) keep working but are hidden, since --log-format covers what a user of this
// binary needs.
var klogShown = map[string]bool{"v": true, "vmodule": true}

// addKlogFlags adds klog's flags. Each run gets its own Go flag set: the tests run several
// commands in one process, and flag.CommandLine may hold controller-runtime's own --kubeconfig.
func addKlogFlags(fs *pflag.FlagSet) {
	gofs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(gofs)
	gofs.VisitAll(func(gf *flag.Flag) {
		pf := pflag.PFlagFromGoFlag(gf) // -v gets its shorthand, so -v=4 and --v=4 both work
		pf.Hidden = !klogShown[gf.Name]
		fs.AddFlag(pf)
	})
}

// goStyleFlags rewrites Go-style single-dash long flags (-kubeconfig=x, -leader-elect=false),
// which the command accepted before it moved to pflag, to --kubeconfig=x, so existing scripts and
// manifests keep working. Single letters are pflag shorthands (-v=4) and stay as they are;
// everything after "--" is left alone.
func goStyleFlags(args []string, fs *pflag.FlagSet) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") {
			name, _, _ := strings.Cut(a[1:], "=")
			if len(name) > 1 && fs.Lookup(name) != nil {
				a = "-" + a
			}
		}
		out = append(out, a)
	}
	return out
}

// run is the command: it parses args and runs the manager until ctx is done.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	cmd, f := newCommand(stdout)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if f.showVersion {
			_, err := fmt.Fprintln(stdout, version.String("addonops-controller"))
			return err
		}
		return f.run(cmd.Context(), cmd.Flags())
	}
	cmd.SetArgs(goStyleFlags(args, cmd.Flags()))
	return cmd.ExecuteContext(ctx)
}

// run runs the manager until ctx is done.
func (f *flags) run(ctx context.Context, fs *pflag.FlagSet) error {
	opts := f.opts
	if err := setUpLogging(f.logFormat, fs); err != nil {
		return err
	}
	opts.ConfigGC.Disabled = !f.configGC
	if opts.ConfigGC.MinAge == 0 {
		opts.ConfigGC.MinAge = -1 // the flag's 0 is "any age"; Options' zero is "the default"
	}
	if opts.ConfigGC.Keep < 0 {
		return fmt.Errorf("--config-gc-keep=%d: want 0 or more unused versions to keep", opts.ConfigGC.Keep)
	}
	if opts.PlacementGrace <= 0 {
		return fmt.Errorf("--placement-grace=%s: want a positive duration", opts.PlacementGrace)
	}
	if opts.DeployerWait <= 0 {
		return fmt.Errorf("--deployer-wait=%s: want a positive duration", opts.DeployerWait)
	}
	switch {
	case opts.InterimHold < 0:
		return fmt.Errorf("--interim-hold=%s: want 0 (write every change at once) or a positive duration", opts.InterimHold)
	case opts.InterimHold == 0:
		opts.InterimHold = -1 // the flag's 0 is "no hold"; Options' zero is "the default"
	}
	if err := opts.Complete(); err != nil {
		return err
	}
	if opts.HistoryLimit < 1 {
		return fmt.Errorf("--history-limit=%d: want 1 or more versions per placement", opts.HistoryLimit)
	}
	gcPercent, gcSource, err := setGCPercent(f.gcPercent, fs.Changed("gc-percent"))
	if err != nil {
		return err
	}

	hub, err := loadHubConfig(f.kubeconfig, f.context)
	if err != nil {
		return err
	}
	cfg := hub.config
	cfg.QPS, cfg.Burst = float32(f.qps), f.burst
	cfg.UserAgent = "addonops-controller"

	// The process logs through klog; tests running several instances give each its own logger.
	logger := klog.FromContext(ctx)
	ctx = klog.NewContext(ctx, logger)

	podNS, podSource := podNamespace()
	ns := chooseNamespace(podNS, podSource, hub)
	leaseNamespace := ""
	if f.leaderElect {
		leaseNamespace = f.leaderNamespace
		if leaseNamespace == "" {
			leaseNamespace = ns.namespace
		}
	}
	opts.HistoryNamespace = f.historyNamespace
	if opts.HistoryNamespace == "" {
		if opts.HistoryNamespace = f.leaderNamespace; opts.HistoryNamespace == "" {
			opts.HistoryNamespace = ns.namespace
		}
	}
	if f.notifications {
		notifyNS := f.leaderNamespace
		if notifyNS == "" {
			notifyNS = ns.namespace
		}
		opts.Notifications = &notify.Options{Namespace: notifyNS}
	}
	logger.V(1).Info("Garbage collection target", "percent", gcPercent, "from", gcSource)
	if (f.leaderElect && f.leaderNamespace == "") || f.historyNamespace == "" && f.leaderNamespace == "" {
		logger.Info("Namespace of the leader election Lease and the version histories", "namespace", ns.namespace,
			"from", ns.source, "override", "--leader-election-namespace, --history-namespace")
	}

	if f.cpuProfile != "" {
		pf, err := os.Create(f.cpuProfile)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(pf); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer func() {
			pprof.StopCPUProfile()
			_ = pf.Close()
		}()
	}

	if f.memProfile != "" {
		if err := watchHeapPeaks(ctx, f.memProfile); err != nil {
			return err
		}
	}

	// The manager's own client and cache stay unused (the reconcilers share one hub cache, package
	// hubcache); it records the leader election's events on the Lease. So its scheme holds those
	// kinds only, not a second copy of every built-in API group (~0.6 MB of live heap).
	scheme := runtime.NewScheme()
	if err := errors.Join(corev1.AddToScheme(scheme), coordinationv1.AddToScheme(scheme)); err != nil {
		return err
	}
	mgr, err := manager.New(cfg, manager.Options{
		Scheme:                        scheme,
		Logger:                        logger,
		Metrics:                       metricsOptions(f.metricsAddr, f.metricsCertDir),
		HealthProbeBindAddress:        f.probeAddr,
		LeaderElection:                f.leaderElect,
		LeaderElectionID:              LeaderElectionID,
		LeaderElectionNamespace:       leaseNamespace,
		LeaderElectionReleaseOnCancel: true,
		// Run cancels every runnable at once on a signal; the controller stops within a second.
		GracefulShutdownTimeout: ptr(30 * time.Second),
	})
	if err != nil {
		return fmt.Errorf("setting up the manager: %w", err)
	}

	if f.deployTemplates {
		// No template binds an agent in the controller's own namespaces.
		opts.DeployTemplates = &templatedeploy.Options{SigningCANamespace: f.signingCANamespace, Workers: opts.Workers,
			ControllerNamespaces: []string{podNS, leaseNamespace, opts.HistoryNamespace}}
	}
	kinds, err := newKindsChecker(cfg, ocmkinds.Controller(f.deployTemplates))
	if err != nil {
		return err
	}
	if err := mgr.Add(withLogger{kinds, logger, nil}); err != nil {
		return err
	}
	// One runnable holds the one cache and runs every reconciler on it (package hubcache). It
	// starts once the hub serves OCM's kinds.
	c, err := controller.New(cfg, opts)
	if err != nil {
		return err
	}
	if err := mgr.Add(withLogger{c, logger, kinds.Passed()}); err != nil {
		return err
	}
	synced := c.Synced
	reach, err := newHubChecker(cfg)
	if err != nil {
		return err
	}
	if err := mgr.Add(withLogger{reach, logger, nil}); err != nil {
		return err
	}
	defer rolloutmetrics.AddSource(c.MetricsSnapshot)()

	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("hub", reach.Check); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("ocm-kinds", kinds.Check); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("informers", informersSynced(mgr.Elected(), synced)); err != nil {
		return err
	}
	logger.Info("Starting", "version", version.Get(), "hub", cfg.Host, "hubConfig", hub.source, "leaderElection", f.leaderElect,
		"leaseNamespace", leaseNamespace, "historyNamespace", opts.HistoryNamespace, "metrics", f.metricsAddr, "probes", f.probeAddr)
	return mgr.Start(ctx)
}

// metricsOptions serve /metrics as kubebuilder's scaffold does: HTTPS, and only to a client whose
// bearer token the hub authenticates (TokenReview) and whose identity the hub allows to get the
// non-resource URL /metrics (SubjectAccessReview; ClusterRole addonops-metrics-reader), checked by
// internal/metricsauth rather than by controller-runtime's filters package, whose k8s.io/apiserver
// dependencies nearly doubled the binary and added ~23 MB to an idle controller's RSS. The
// endpoint shows the add-ons, placements and config kinds of the hub, so it is no more public
// than they are. The controller's own RBAC needs create on tokenreviews and subjectaccessreviews
// (config/rbac/metrics_auth_role.yaml). Without certDir the certificate is a self-signed one made
// at start (controller-runtime's default, as kube-controller-manager's metrics do).
func metricsOptions(addr, certDir string) metricsserver.Options {
	return metricsserver.Options{
		BindAddress:    addr,
		SecureServing:  true,
		FilterProvider: metricsauth.FilterProvider,
		CertDir:        certDir,
		// HTTP/1.1 only: Go's HTTP/2 server was open to the rapid reset and stream
		// cancellation attacks (CVE-2023-44487, CVE-2023-39325), which kubebuilder's scaffold
		// avoids the same way; Prometheus scrapes over HTTP/1.1 anyway.
		TLSOpts: []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }},
	}
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
	// after, if set, delays the start until it is closed (or ctx is done).
	after <-chan struct{}
}

func (w withLogger) Start(ctx context.Context) error {
	if w.after != nil {
		select {
		case <-w.after:
		case <-ctx.Done():
			return nil
		}
	}
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

// setUpLogging makes klog (and controller-runtime, through klog) write text or JSON.
func setUpLogging(format string, fs *pflag.FlagSet) error {
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
