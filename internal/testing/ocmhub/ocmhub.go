package ocmhub

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	"github.com/addonops/addonops/internal/testing/childproc"
	"github.com/addonops/addonops/internal/testing/localhub"
)

const (
	// PlacementNamespace is where the placement controller runs: its leader-election lease and events
	// live there. OCM's installer uses the same name.
	PlacementNamespace = "open-cluster-management-hub"

	// DefaultClusterSet is the ManagedClusterSet clusters join unless Options.ClusterSet says
	// otherwise; OCM's registration controller puts clusters in a set of this name too.
	DefaultClusterSet = "default"

	// Leader-election leases of OCM's commands: "<component>-lock" (openshift/library-go's
	// controllercmd). A lease acquired after the process started means its controllers are running,
	// which is the readiness this package waits for; neither command reports more than that.
	placementLease = "placement-lock"
	// addonManagerLease is the addon-manager's: `addon manager` names its controller command
	// "manager" (OCM pkg/cmd/hub/addon.go).
	addonManagerLease = "manager-lock"
	workAgentLease    = "work-agent-lock"

	stopGrace = 15 * time.Second
)

// Options tune Start. The zero value is what tests and the demo want.
type Options struct {
	// PlacementPath and WorkPath are OCM's binaries. Default: $ADDONOPS_OCM_PLACEMENT and
	// $ADDONOPS_OCM_WORK, else bin/ocm-placement and bin/ocm-work at the repository root
	// (`make ocm-binaries`).
	PlacementPath, WorkPath string
	// AddonManager also starts OCM's addon-manager (`addon manager`): it installs add-ons from
	// ClusterManagementAddOns not annotated lifecycle "self", renders AddOnTemplates into
	// ManifestWorks, registers agents and writes add-on health. Off by default: most tests run the
	// addonops controller with --deploy-templates, which must not share add-ons with it.
	AddonManager bool
	// AddonPath is OCM's addon binary. Default: $ADDONOPS_OCM_ADDON, else bin/ocm-addon at the
	// repository root (`make ocm-binaries`). Used only with AddonManager.
	AddonPath string
	// RepoRoot is the addonops repository root. Default: the nearest directory above the working
	// directory whose go.mod declares the module.
	RepoRoot string
	// LogDir receives one log per process (placement.log, addon-manager.log,
	// work-agent-<cluster>.log), the agents'
	// kubeconfigs and the processes' temporary files. Default: a new directory under os.TempDir(),
	// removed by Stop unless KeepLogs is set. A given LogDir is never removed.
	LogDir string
	// KeepLogs keeps a LogDir created by Start after Stop.
	KeepLogs bool
	// ClusterSet is the ManagedClusterSet every cluster added joins. Default DefaultClusterSet.
	ClusterSet string
	// StatusSyncInterval is the work agents' --status-sync-interval: how often they refresh the
	// Available condition and status feedback of applied resources. Default: OCM's own, 10 s.
	StatusSyncInterval time.Duration
	// Verbosity is klog's -v for OCM's processes. Default 0 (OCM's default logging).
	Verbosity int
	// WithoutPlacementController starts no placement controller, for callers that write
	// PlacementDecisions themselves (the controller benchmark, whose thousands of simulated clusters
	// are in no ClusterSet: the controller would empty their decisions).
	WithoutPlacementController bool
	// SimulatedAgents starts no work agent: AddClusters only registers the clusters, and something
	// else answers for their ManifestWorks (internal/testing/simagent, as the demo runs it: one
	// process for thousands of clusters). Start then needs no bin/ocm-work.
	SimulatedAgents bool
	// AddonManagerKubeconfig is the addon-manager's kubeconfig. Default: the hub's. A kubeconfig of
	// its own user (localhub.Options.Users) tells its requests from others' in the audit log.
	AddonManagerKubeconfig string
	// AddonManagerArgs are appended to the addon-manager's flags, e.g. --kube-api-qps.
	AddonManagerArgs []string
	// ReadyTimeout bounds the wait for each process to be ready. Default 2 minutes: two cores are
	// shared by parallel test packages; idle, the placement controller is ready in about a second.
	ReadyTimeout time.Duration
}

// Cluster is one simulated managed cluster: a ManagedCluster on the hub, its cluster namespace, and
// an OCM work agent applying the cluster's ManifestWorks back into the same API server.
type Cluster struct {
	Name string
	// Labels are added to the ManagedCluster (the ClusterSet label is added by AddClusters). Placements
	// select on them: a canary decision group's labelSelector, say.
	Labels map[string]string
}

// Agent is a running work agent.
type Agent struct {
	Cluster string
	// AgentID is the agent's --agent-id; OCM writes it into the spec of its AppliedManifestWorks.
	AgentID string
	// HubURL is the hub address as this agent spells it; AppliedManifestWorks of this agent are named
	// "<sha256 of HubURL>-<work name>" (see alias.go for why every agent spells it differently).
	HubURL string
	// Kubeconfig is the agent's hub kubeconfig (HubURL as server).
	Kubeconfig string
	// LogPath is the agent's log.
	LogPath string
	// Startup is how long the agent took from launch to running its controllers.
	Startup time.Duration

	proc *process
}

// OCM is OCM's placement controller and work agents running against a localhub.Hub.
type OCM struct {
	Hub *localhub.Hub
	// LogDir holds every process's log.
	LogDir string
	// ClusterSet is the ManagedClusterSet of the clusters added.
	ClusterSet string
	// PlacementLog is the placement controller's log ("" with WithoutPlacementController).
	PlacementLog string
	// PlacementStartup is how long the placement controller took from launch to running its
	// controllers.
	PlacementStartup time.Duration
	// AddonManagerLog is the addon-manager's log, "" unless Options.AddonManager.
	AddonManagerLog string
	// AddonManagerPath is the addon-manager's binary. client-go names the field manager of what
	// the addon-manager writes after it (its base name), which tells its writes from others'.
	AddonManagerPath string
	// AddonManagerStartup is how long the addon-manager took from launch to running its
	// controllers.
	AddonManagerStartup time.Duration

	opts         Options
	placementBin string
	workBin      string
	addonBin     string
	ownLogDir    bool

	mu           sync.Mutex
	placement    *process
	addonManager *process
	agents       map[string]*Agent
	stopped      bool // Stop has begun: nothing new may start

	stopOnce sync.Once
	stopErr  error
}

// Start prepares the hub for OCM's placement controller (its namespace, the ManagedClusterSet) and
// starts the controller; ctx bounds the start only. Add clusters, each with its work agent, with
// AddClusters, and bind the set to the namespaces of your Placements with BindClusterSet. Stop ends
// every process. Missing binaries fail before anything starts, with the make target to run.
func Start(ctx context.Context, hub *localhub.Hub, opts Options) (_ *OCM, err error) {
	if hub == nil || hub.Clients == nil || hub.Kubeconfig == "" {
		return nil, errors.New("ocmhub: Start needs a running localhub.Hub (localhub.Start or localhub.ForTest)")
	}
	if opts.ClusterSet == "" {
		opts.ClusterSet = DefaultClusterSet
	}
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = 2 * time.Minute
	}
	o := &OCM{Hub: hub, ClusterSet: opts.ClusterSet, opts: opts, agents: map[string]*Agent{}}

	var problems []string
	if o.placementBin, err = placementBinary.resolve(opts.PlacementPath, opts.RepoRoot); err != nil {
		problems = append(problems, err.Error())
	}
	if !opts.SimulatedAgents {
		if o.workBin, err = workBinary.resolve(opts.WorkPath, opts.RepoRoot); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if opts.AddonManager {
		if o.addonBin, err = addonBinary.resolve(opts.AddonPath, opts.RepoRoot); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("ocmhub: missing OCM binaries (`make ocm-binaries` builds them all):\n  %s",
			strings.Join(problems, "\n  "))
	}

	o.LogDir = opts.LogDir
	if o.LogDir == "" {
		if o.LogDir, err = os.MkdirTemp("", "addonops-ocm-"); err != nil {
			return nil, fmt.Errorf("ocmhub: creating the log directory: %w", err)
		}
		o.ownLogDir = true
	} else if err := os.MkdirAll(o.LogDir, 0o755); err != nil {
		return nil, fmt.Errorf("ocmhub: creating the log directory: %w", err)
	}
	defer func() {
		if err != nil {
			// Keep the logs: the error quotes them.
			_ = o.stop(true)
			err = fmt.Errorf("%w\n(OCM logs kept in %s)", err, o.LogDir)
		}
	}()

	c := hub.Clients
	if err := localhub.EnsureNamespace(ctx, c.Kube, PlacementNamespace); err != nil {
		return nil, fmt.Errorf("ocmhub: the placement controller's namespace: %w", err)
	}
	if err := localhub.EnsureClusterSet(ctx, c, o.ClusterSet); err != nil {
		return nil, fmt.Errorf("ocmhub: %w", err)
	}

	if opts.WithoutPlacementController {
		if opts.AddonManager {
			if err := o.startAddonManager(ctx); err != nil {
				return nil, err
			}
		}
		return o, nil
	}
	p, err := o.launchWithPort(ctx, func(listen string) (*process, error) {
		args := []string{"controller",
			"--kubeconfig=" + hub.Kubeconfig,
			"--namespace=" + PlacementNamespace,
			"--listen=" + listen,
		}
		p, err := launch("placement", o.placementBin, append(args, o.verbosity()...), o.LogDir)
		if err != nil {
			return nil, err
		}
		return p, o.track(func() { o.placement = p }, p)
	}, PlacementNamespace, placementLease)
	if err != nil {
		return nil, err
	}
	o.PlacementLog = p.LogPath
	o.PlacementStartup = time.Since(p.Started)

	if opts.AddonManager {
		if err := o.startAddonManager(ctx); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// startAddonManager starts OCM's addon-manager and waits until it runs its controllers. Like the
// placement controller it keeps its lease and events in PlacementNamespace (where OCM's
// cluster-manager runs it); template add-ons' CustomSigner CAs are looked up there too.
func (o *OCM) startAddonManager(ctx context.Context) error {
	kubeconfig := o.opts.AddonManagerKubeconfig
	if kubeconfig == "" {
		kubeconfig = o.Hub.Kubeconfig
	}
	p, err := o.launchWithPort(ctx, func(listen string) (*process, error) {
		args := []string{"manager",
			"--kubeconfig=" + kubeconfig,
			"--namespace=" + PlacementNamespace,
			"--listen=" + listen,
		}
		args = append(append(args, o.verbosity()...), o.opts.AddonManagerArgs...)
		p, err := launch("addon-manager", o.addonBin, args, o.LogDir)
		if err != nil {
			return nil, err
		}
		return p, o.track(func() { o.addonManager = p }, p)
	}, PlacementNamespace, addonManagerLease)
	if err != nil {
		return err
	}
	o.AddonManagerLog, o.AddonManagerPath = p.LogPath, o.addonBin
	o.AddonManagerStartup = time.Since(p.Started)
	return nil
}

// launchWithPort launches a process on a free loopback --listen port and waits until it holds its
// lease; when the port was taken between choosing and binding it (parallel test packages), it
// tries again with another.
func (o *OCM) launchWithPort(ctx context.Context, start func(listen string) (*process, error), leaseNS, lease string) (*process, error) {
	const attempts = 3
	for attempt := 1; ; attempt++ {
		port, err := childproc.FreePort()
		if err != nil {
			return nil, err
		}
		p, err := start(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			return nil, err
		}
		err = o.waitLease(ctx, p, leaseNS, lease)
		if err == nil {
			return p, nil
		}
		_ = p.stop(stopGrace)
		if attempt == attempts || !strings.Contains(childproc.Tail(p.LogPath, 50), "address already in use") {
			return nil, err
		}
	}
}

// waitLease waits until p holds the leader-election lease ns/name, acquired after p started: only
// then does an OCM command run its controllers.
func (o *OCM) waitLease(ctx context.Context, p *process, ns, name string) error {
	ctx, cancel := context.WithTimeout(ctx, o.opts.ReadyTimeout)
	defer cancel()
	leases := o.Hub.Clients.Kube.CoordinationV1().Leases(ns)
	// Lease times come from the process's clock, the same as ours, at microsecond precision.
	since := p.Started.Add(-time.Second)
	return p.waitReady(ctx, 100*time.Millisecond, func(ctx context.Context) error {
		l, err := leases.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("no lease %s/%s yet", ns, name)
		}
		if err != nil {
			return fmt.Errorf("reading lease %s/%s: %w", ns, name, err)
		}
		holder := ""
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		if holder == "" || l.Spec.AcquireTime == nil || l.Spec.AcquireTime.Time.Before(since) {
			return fmt.Errorf("lease %s/%s not acquired since the start (holder %q); another process of the same "+
				"component may hold it", ns, name, holder)
		}
		return nil
	})
}

func (o *OCM) verbosity() []string {
	if o.opts.Verbosity > 0 {
		return []string{"--v=" + strconv.Itoa(o.opts.Verbosity)}
	}
	return nil
}

// AddClusters registers each cluster on the hub (its namespace, a ManagedCluster that joined, is
// available and is labelled into the ClusterSet plus Cluster.Labels) and starts its work agent,
// then waits until every new agent runs (with Options.SimulatedAgents it only registers them and
// returns no agent). A cluster whose agent already runs only gets its labels
// updated. Agents are returned in the order of clusters. On error, the agents this call started are
// stopped again.
func (o *OCM) AddClusters(ctx context.Context, clusters ...Cluster) ([]*Agent, error) {
	o.mu.Lock()
	stopped := o.stopped
	o.mu.Unlock()
	if stopped {
		return nil, errors.New("ocmhub: AddClusters after Stop")
	}
	seen := map[string]bool{}
	for _, cl := range clusters {
		if errs := validation.IsDNS1123Label(cl.Name); len(errs) > 0 {
			return nil, fmt.Errorf("ocmhub: cluster name %q: %s (it names a namespace)", cl.Name, strings.Join(errs, "; "))
		}
		if seen[cl.Name] {
			return nil, fmt.Errorf("ocmhub: cluster %s given twice", cl.Name)
		}
		seen[cl.Name] = true
	}
	if err := o.register(ctx, clusters); err != nil {
		return nil, err
	}
	if o.opts.SimulatedAgents {
		return nil, nil
	}

	// New agents start at once: together they take hardly longer than one.
	out := make([]*Agent, len(clusters))
	errs := make([]error, len(clusters))
	var wg sync.WaitGroup
	for i, cl := range clusters {
		o.mu.Lock()
		a := o.agents[cl.Name]
		o.mu.Unlock()
		if a != nil && !a.proc.Exited() {
			out[i] = a
			continue
		}
		wg.Go(func() { out[i], errs[i] = o.startAgent(ctx, cl.Name) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for i, a := range out {
			if a != nil && errs[i] == nil {
				_ = o.StopAgent(a.Cluster)
			}
		}
		return nil, fmt.Errorf("%w\n(OCM logs in %s)", err, o.LogDir)
	}
	return out, nil
}

// registerParallel is how many clusters AddClusters registers at once: the demo registers
// thousands.
const registerParallel = 32

// register makes each cluster a joined, available ManagedCluster of the ClusterSet, with its
// cluster namespace: what OCM's registration controller and a cluster's registration agent would
// leave on the hub.
func (o *OCM) register(ctx context.Context, clusters []Cluster) error {
	sem := make(chan struct{}, registerParallel)
	errs := make([]error, len(clusters))
	var wg sync.WaitGroup
	for i, cl := range clusters {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return ctx.Err()
		}
		wg.Go(func() {
			defer func() { <-sem }()
			labels := maps.Clone(cl.Labels)
			if labels == nil {
				labels = map[string]string{}
			}
			labels[clusterv1beta2.ClusterSetLabel] = o.ClusterSet
			if _, err := localhub.EnsureManagedCluster(ctx, o.Hub.Clients, cl.Name, labels); err != nil {
				errs[i] = fmt.Errorf("ocmhub: registering cluster %s: %w", cl.Name, err)
			}
		})
	}
	wg.Wait()
	var failed []error
	for _, err := range errs {
		if err != nil {
			failed = append(failed, err)
		}
	}
	if len(failed) > 3 {
		return fmt.Errorf("ocmhub: registering %d of %d clusters failed; the first three: %w", len(failed), len(clusters), errors.Join(failed[:3]...))
	}
	return errors.Join(failed...)
}

// startAgent starts the work agent of cluster and waits until it runs. Hub and spoke are the same
// API server, as in OCM's own integration tests; the agent's lease lives in the cluster namespace,
// so agents never compete for one lease, and its hub kubeconfig spells the hub's address its own
// way (see alias.go).
func (o *OCM) startAgent(ctx context.Context, cluster string) (*Agent, error) {
	n, err := aliasFor(o.Hub.URL, cluster)
	if err != nil {
		return nil, fmt.Errorf("ocmhub: %w", err)
	}
	a := &Agent{Cluster: cluster, AgentID: "ocmhub-" + cluster, Kubeconfig: filepath.Join(o.LogDir, cluster+".kubeconfig")}
	if a.HubURL, err = writeAliasKubeconfig(o.Hub.Kubeconfig, a.Kubeconfig, n); err != nil {
		return nil, fmt.Errorf("ocmhub: work agent of %s: %w", cluster, err)
	}
	p, err := o.launchWithPort(ctx, func(listen string) (*process, error) {
		args := []string{"agent",
			"--spoke-cluster-name=" + cluster,
			"--hub-kubeconfig=" + a.Kubeconfig,
			"--workload-source-config=" + a.Kubeconfig,
			"--kubeconfig=" + o.Hub.Kubeconfig,
			"--namespace=" + cluster,
			"--agent-id=" + a.AgentID,
			"--listen=" + listen,
		}
		if o.opts.StatusSyncInterval > 0 {
			args = append(args, "--status-sync-interval="+o.opts.StatusSyncInterval.String())
		}
		p, err := launch("work-agent-"+cluster, o.workBin, append(args, o.verbosity()...), o.LogDir)
		if err != nil {
			return nil, err
		}
		// Known to Stop from now on, ready or not.
		a.proc, a.LogPath = p, p.LogPath
		return p, o.track(func() { o.agents[cluster] = a }, p)
	}, cluster, workAgentLease)
	if err != nil {
		return nil, err
	}
	a.Startup = time.Since(p.Started)
	return a, nil
}

// track records a launched process under o.mu, unless Stop has begun: then it stops the process
// and reports that.
func (o *OCM) track(record func(), p *process) error {
	o.mu.Lock()
	stopped := o.stopped
	if !stopped {
		record()
	}
	o.mu.Unlock()
	if stopped {
		_ = p.stop(stopGrace)
		return errors.New("ocmhub: stopped while starting " + p.Name)
	}
	return nil
}

// BindClusterSet binds the ClusterSet to each namespace (creating it if needed): OCM's placement
// controller selects no cluster for a Placement whose namespace has no ManagedClusterSetBinding.
func (o *OCM) BindClusterSet(ctx context.Context, namespaces ...string) error {
	if err := localhub.EnsureClusterSet(ctx, o.Hub.Clients, o.ClusterSet, namespaces...); err != nil {
		return fmt.Errorf("ocmhub: %w", err)
	}
	return nil
}

// Agent returns the running agent of cluster, or nil.
func (o *OCM) Agent(cluster string) *Agent {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.agents[cluster]
}

// StopAgent stops the work agent of cluster (the cluster stays registered), as when a managed
// cluster goes away; AddClusters starts it again. ManifestWorks of the cluster then keep their last
// status, and deleting one waits for an agent to remove its finalizer.
func (o *OCM) StopAgent(cluster string) error {
	o.mu.Lock()
	a := o.agents[cluster]
	delete(o.agents, cluster)
	o.mu.Unlock()
	if a == nil {
		return fmt.Errorf("ocmhub: no work agent runs for cluster %s", cluster)
	}
	return a.proc.stop(stopGrace)
}

// PIDs returns the process IDs of every process started (running or not), so callers can check
// that nothing is left running after Stop.
func (o *OCM) PIDs() []int {
	o.mu.Lock()
	defer o.mu.Unlock()
	var pids []int
	if o.placement != nil {
		pids = append(pids, o.placement.PID())
	}
	if o.addonManager != nil {
		pids = append(pids, o.addonManager.PID())
	}
	for _, name := range slices.Sorted(maps.Keys(o.agents)) {
		pids = append(pids, o.agents[name].proc.PID())
	}
	return pids
}

// AddonManagerPID returns the addon-manager's process ID, 0 unless Options.AddonManager.
func (o *OCM) AddonManagerPID() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.addonManager == nil {
		return 0
	}
	return o.addonManager.PID()
}

// LogFiles returns the log of every process: placement controller, addon-manager, work agents.
func (o *OCM) LogFiles() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var logs []string
	if o.placement != nil {
		logs = append(logs, o.placement.LogPath)
	}
	if o.addonManager != nil {
		logs = append(logs, o.addonManager.LogPath)
	}
	for _, name := range slices.Sorted(maps.Keys(o.agents)) {
		logs = append(logs, o.agents[name].LogPath)
	}
	return logs
}

// Stop terminates every process (SIGTERM, so each releases its lease; SIGKILL after 15 s), waits
// for all of them, and removes the log directory if Start created it and KeepLogs is not set. It is
// safe to call more than once; later calls return the first call's result. Stop OCM before the
// hub: agents whose API server vanished log a storm of retries.
func (o *OCM) Stop() error { return o.stop(o.opts.KeepLogs) }

func (o *OCM) stop(keepLogs bool) error {
	o.stopOnce.Do(func() {
		o.mu.Lock()
		o.stopped = true
		procs := []*process{}
		if o.placement != nil {
			procs = append(procs, o.placement)
		}
		if o.addonManager != nil {
			procs = append(procs, o.addonManager)
		}
		for _, a := range o.agents {
			procs = append(procs, a.proc)
		}
		o.mu.Unlock()

		errs := make([]error, len(procs))
		var wg sync.WaitGroup
		for i, p := range procs {
			wg.Go(func() { errs[i] = p.stop(stopGrace) })
		}
		wg.Wait()
		// A process that had to be killed left its reasons in its log: keep it.
		if o.ownLogDir && !keepLogs && errors.Join(errs...) == nil {
			if err := os.RemoveAll(o.LogDir); err != nil {
				errs = append(errs, fmt.Errorf("ocmhub: removing the log directory: %w", err))
			}
		}
		o.stopErr = errors.Join(errs...)
	})
	return o.stopErr
}
