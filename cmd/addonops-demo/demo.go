package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/controller"
	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/notify"
	"github.com/addonops/addonops/internal/planner"
	"github.com/addonops/addonops/internal/rolloutview"
	"github.com/addonops/addonops/internal/templatedeploy"
	"github.com/addonops/addonops/internal/testing/childproc"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/krmfntest"
	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/ocmhub"
	"github.com/addonops/addonops/internal/testing/rolloutsim"
	"github.com/addonops/addonops/internal/testing/simagent"
	"github.com/addonops/addonops/internal/testing/ssapply"
	"github.com/addonops/addonops/internal/testing/stepcheck"
)

// Options configure one run of the demo. Zero values get the defaults of the command's flags.
type Options struct {
	// Clusters is the number of simulated clusters (default 20).
	Clusters int
	// Canaries is how many of them are labelled addonops.io/canary=true (default a tenth, at least 1).
	Canaries int
	// FailRate is the share of clusters whose work the simulated agent reports failed, for every
	// version (0 to 1).
	FailRate float64
	// Speed divides the simulated agent's delay and the rollouts' minSuccessTime and
	// progressDeadline (default 1).
	Speed float64
	// StepTimeout bounds each step's rollout (default 10m).
	StepTimeout time.Duration
	// SimulatedManager makes simagent write the works (a simulated add-on manager) instead of the
	// controller's template deployment (--deploy-templates).
	SimulatedManager bool
	// Engine delivers the steps: "" or "none" for the demo's own server-side apply, "flux" or
	// "argocd" for a real GitOps engine applying each step as a commit of a Git repository (see
	// engine.go).
	Engine string
	// Steps are the step folders applied in turn, each looked up in Examples, then in DemoSteps
	// (default every NN-* folder of Examples, then of DemoSteps, in order).
	Steps []string
	// Examples is the rollout examples' folder (default <repo>/kustomize-rollout-examples).
	Examples string
	// DemoSteps is the folder of the demo's own steps after the examples (default
	// <repo>/cmd/addonops-demo/steps: a paused and resumed rollout, a gated one, a bad version and
	// its revert; steps.go). NoDemoSteps leaves them out of the default Steps.
	DemoSteps   string
	NoDemoSteps bool
	// RepoRoot is the addonops repository, where `go tool kustomize` runs (default: found above the
	// working directory or the demo binary).
	RepoRoot string
	// ToolDirs go first on kustomize's PATH: the exampleFunctions must be in them (default
	// <repo>/bin and the demo binary's folder).
	ToolDirs []string
	// Out receives the demo's output (default stdout). TTY redraws the live progress in place;
	// Width is the terminal's width.
	Out   io.Writer
	TTY   bool
	Width int
	// Interval is how often plain output may print the progress when it changed (default 1s; a
	// terminal redraws five times a second).
	Interval time.Duration
	// Settle is how long a failed state must hold before a step is called failed: the controller
	// may briefly show a failure it is about to move past (default 2s).
	Settle time.Duration
}

// Pacing of the simulation at --speed 1: the simulated work agent answers a new work generation
// after agentDelay, slow enough to watch a 25% rollout go batch by batch, fast enough that the
// four steps take well under a minute with 20 clusters.
const agentDelay = 1500 * time.Millisecond

// historyNamespace is where the demo's controller keeps the version histories
// (controller.Options.HistoryNamespace, --history-namespace).
const historyNamespace = "default"

func (o *Options) complete() error {
	if o.Clusters == 0 {
		o.Clusters = 20
	}
	switch {
	case o.Clusters < 1:
		return fmt.Errorf("--clusters %d: want at least 1 simulated cluster", o.Clusters)
	case o.Clusters > 10000:
		return fmt.Errorf("--clusters %d: at most 10000 simulated clusters fit one local API server and etcd", o.Clusters)
	}
	if o.Canaries == 0 {
		o.Canaries = defaultCanaries(o.Clusters)
	}
	if o.Canaries < 0 || o.Canaries > o.Clusters {
		return fmt.Errorf("--canaries %d: want between 1 and --clusters (%d)", o.Canaries, o.Clusters)
	}
	if o.FailRate < 0 || o.FailRate > 1 {
		return fmt.Errorf("--fail-rate %g: want a share between 0 and 1, e.g. 0.1 for one cluster in ten", o.FailRate)
	}
	if o.Speed == 0 {
		o.Speed = 1
	}
	if o.Speed < 0 {
		return fmt.Errorf("--speed %g: want a positive factor (2 runs the simulation twice as fast)", o.Speed)
	}
	if o.StepTimeout == 0 {
		o.StepTimeout = 10 * time.Minute
	}
	if o.StepTimeout < 0 {
		return fmt.Errorf("--step-timeout %s: want a positive duration", o.StepTimeout)
	}
	if o.Engine == engineNone {
		o.Engine = ""
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.Settle <= 0 {
		o.Settle = 2 * time.Second
	}
	exe, _ := os.Executable()
	if o.RepoRoot == "" {
		root, err := localhub.RepoRoot("")
		if err != nil {
			return fmt.Errorf("cannot find the addonops repository: %w; run the demo from the repository (make demo)", err)
		}
		o.RepoRoot = root
	}
	if o.Examples == "" {
		o.Examples = filepath.Join(o.RepoRoot, "kustomize-rollout-examples")
	}
	if o.DemoSteps == "" {
		o.DemoSteps = filepath.Join(o.RepoRoot, "cmd", "addonops-demo", "steps")
	}
	if len(o.Steps) == 0 {
		dirs := []string{o.Examples}
		if !o.NoDemoSteps {
			dirs = append(dirs, o.DemoSteps)
		}
		for _, d := range dirs {
			found, err := filepath.Glob(filepath.Join(d, "[0-9][0-9]-*"))
			if err != nil || len(found) == 0 {
				return fmt.Errorf("no steps (NN-name folders) in %s; pass --examples or --demo-steps", d)
			}
			sort.Strings(found)
			for _, f := range found {
				o.Steps = append(o.Steps, filepath.Base(f))
			}
		}
	}
	for _, s := range o.Steps {
		if _, err := o.stepDir(s); err != nil {
			return err
		}
	}
	if err := checkEngine(o.Engine, o.RepoRoot); err != nil {
		return err
	}
	if len(o.ToolDirs) == 0 {
		o.ToolDirs = []string{filepath.Join(o.RepoRoot, "bin")}
		if exe != "" && !slices.Contains(o.ToolDirs, filepath.Dir(exe)) {
			o.ToolDirs = append(o.ToolDirs, filepath.Dir(exe))
		}
	}
	return nil
}

// stepDir is the folder of step name: in Examples, else in DemoSteps.
func (o *Options) stepDir(name string) (string, error) {
	for _, d := range []string{o.Examples, o.DemoSteps} {
		dir := filepath.Join(d, name)
		if _, err := os.Stat(filepath.Join(dir, "kustomization.yaml")); err == nil {
			return dir, nil
		}
	}
	return "", fmt.Errorf("step %q: neither %s nor %s has a kustomization.yaml (steps are folders of --examples or --demo-steps)",
		name, filepath.Join(o.Examples, name), filepath.Join(o.DemoSteps, name))
}

// demoRun is one demo: its options, fleet and the running parts.
type demoRun struct {
	o        Options
	fleet    fleet
	hub      *localhub.Hub
	ocm      *ocmhub.OCM
	clients  *localhub.Clients
	apply    *ssapply.Applier
	view     *hubView
	disp     *display
	versions map[string]string // "<namespace>/<name>" of an AddOnDeploymentConfig -> AGENT_VERSION
	// badConfigs are the bad commit's AddOnDeploymentConfigs ("<namespace>/<name>"), whose agents
	// the simulated work agent reports unhealthy.
	badConfigs []string
	// planBin is the addonops CLI each step is planned with (planStep).
	planBin string
	// firstPlanned names, per version id of the plans so far, the step whose plan first rolled it
	// out (notePlanned): what the demo calls the version a later step rolls back to.
	firstPlanned map[string]string
	// With --engine: the engine and the Git repository of the steps' commits.
	engine engine
	git    *gitSteps
	// placementsBefore are the Placements of the last step delivered.
	placementsBefore map[string]bool
	// gates are the local receivers of the gates step's webhook gate and notifications (nil
	// without the demo's own steps).
	gates *gateServers
	// What start started, for shutdown: the in-process parts' context, the controller, and the
	// processes that must not outlive the demo.
	cancelComps context.CancelFunc
	ctrl        *rolloutsim.Controller
	pids        []int
}

// Run runs the demo: it renders the steps, starts a hub, the controller and the simulated agents,
// registers the clusters, applies each step and follows its rollout, prints the summary and stops
// everything it started. It returns an error only when the demo could not run at all; how the
// steps went is in the summary (and its ExitCode). Cancelling ctx (Ctrl-C) stops the demo and
// still cleans up.
func Run(ctx context.Context, o Options) (_ *Summary, err error) {
	begin := time.Now()
	if err := o.complete(); err != nil {
		return nil, err
	}
	// Checked here, not in complete: the unit tests complete Options on a machine without it.
	if _, err := ocmhub.PlacementBinary("", o.RepoRoot); err != nil {
		return nil, fmt.Errorf("the demo runs OCM's placement controller: %w", err)
	}
	r := &demoRun{o: o, fleet: newFleet(o.Clusters, o.Canaries, o.FailRate), versions: map[string]string{},
		firstPlanned: map[string]string{}}
	r.disp = newDisplay(o.Out, o.TTY, o.Width, o.Interval)
	sum := &Summary{Clusters: o.Clusters, Canaries: len(r.fleet.canary), Failing: r.fleet.sorted(r.fleet.failing), Speed: o.Speed}
	out := o.Out
	r.intro()
	defer func() { r.gates.close() }()
	steps, addons, err := r.render(ctx)
	if err != nil {
		return nil, err
	}
	if r.engine != nil {
		if r.git, err = newGitSteps(); err != nil {
			return nil, err
		}
		fmt.Fprintf(out, "\nGit repository of the steps: %s (each step a commit of %s, the revert a `git revert`; `git -C %s log` while the demo runs)\n",
			r.git.repo.Dir, renderedFile, r.git.repo.Dir)
	}

	// Logs of the controller and the simulation go to a file: the terminal shows the progress.
	if err := logs.open(); err != nil {
		return nil, err
	}
	defer func() {
		keep := err != nil || sum.ExitCode() == exitUnexpected
		if path := logs.close(keep); path != "" {
			fmt.Fprintf(out, "Logs of the controller and the simulation: %s\n", path)
		}
	}()

	fmt.Fprintf(out, "\nStarting the hub: kube-apiserver + etcd with OCM's CRDs (internal/testing/localhub)\n")
	hubStart := time.Now()
	r.hub, err = localhub.Start(ctx, localhub.Options{ExtraAPIServerArgs: []string{
		"--max-requests-inflight=1000", "--max-mutating-requests-inflight=1000"}})
	if err != nil {
		return r.failed(ctx, sum, fmt.Errorf("starting the hub: %w", err))
	}
	sum.HubStart = time.Since(hubStart)
	r.pids = r.hub.PIDs()
	fmt.Fprintf(out, "  up in %s at %s (kube-apiserver pid %d, etcd pid %d)\n", seconds(sum.HubStart), r.hub.URL, r.pids[0], r.pids[1])
	fmt.Fprintf(out, "  kubeconfig %s: kubectl works against it while the demo runs\n", r.hub.Kubeconfig)
	defer r.shutdown(sum, begin, &err)
	if err := r.start(ctx, sum, addons); err != nil {
		return r.failed(ctx, sum, err)
	}

	for i, st := range steps {
		res := r.runStep(ctx, st)
		sum.Steps = append(sum.Steps, res)
		if res.Result == Interrupted {
			sum.Interrupted = true
			break
		}
		if res.Result == Error {
			fmt.Fprintf(out, "Stopping: step %s could not be applied, so the later steps would not mean anything.\n", st.Name)
			break
		}
		if res.Result != Succeeded && i < len(steps)-1 {
			fmt.Fprintf(out, "Moving on to %s anyway, as a GitOps user pushes the next commit after a rollout that failed or stalled.\n", steps[i+1].Name)
		}
	}
	r.gates.flush(r.disp)
	if !sum.Interrupted {
		r.showHistories(ctx, addons, sum)
	}
	return sum, nil
}

// failed ends a demo that could not start: interrupted (ctx ended) when it was, else with err.
func (r *demoRun) failed(ctx context.Context, sum *Summary, err error) (*Summary, error) {
	if ctx.Err() != nil {
		sum.Interrupted = true
		return sum, nil
	}
	return nil, err
}

// intro says what the demo is about to do.
func (r *demoRun) intro() {
	var extra []string
	for _, name := range r.o.Steps {
		switch kindOf(name) {
		case stepPauseResume:
			extra = append(extra, "a rollout paused and resumed")
		case stepGates:
			extra = append(extra, "a rollout behind a webhook gate and a maintenance window, with notifications")
		case stepBadVersion:
			extra = append(extra, "a bad version")
		case stepRevert:
			extra = append(extra, "its revert")
		}
	}
	then := ""
	if len(extra) > 0 {
		then = "; then " + strings.Join(extra, ", then ")
	}
	if r.o.Engine == "" {
		fmt.Fprintf(r.o.Out, "addonops demo: the rollout examples %s applied in turn to a local hub, as Argo CD or Flux would%s\n", strings.Join(r.o.Steps, " -> "), then)
		return
	}
	r.engine = newEngine(r.o.Engine, r.o)
	fmt.Fprintf(r.o.Out, "addonops demo: the rollout examples %s delivered in turn to a local hub by %s from a local Git repository%s\n",
		strings.Join(r.o.Steps, " -> "), r.engine.Name(), then)
}

// render renders every step first, as a GitOps repo-server would: a broken example stops the demo
// before anything starts. It returns the steps and the add-ons they hold.
func (r *demoRun) render(ctx context.Context) ([]step, []string, error) {
	o, out := r.o, r.o.Out
	env := toolEnv(o.ToolDirs)
	if _, err := lookPathIn(env, "go"); err != nil {
		return nil, nil, fmt.Errorf("the demo builds the examples with `go tool kustomize`: %w", err)
	}
	var found []string
	for _, fn := range exampleFunctions {
		path, err := lookPathIn(env, fn)
		if err != nil {
			return nil, nil, fmt.Errorf("the examples run the %s KRM function by name: %w (looked first in %s; `make build` puts it in bin/)",
				fn, err, strings.Join(o.ToolDirs, ", "))
		}
		found = append(found, fn+": "+path)
	}
	var err error
	if r.planBin, err = lookPathIn(env, planTool); err != nil {
		return nil, nil, fmt.Errorf("the demo prints each step's plan with `%s plan`: %w (looked first in %s; `make build` puts it in bin/)",
			planTool, err, strings.Join(o.ToolDirs, ", "))
	}
	fmt.Fprintf(out, "\nRendering: go tool kustomize %s <step> (%s)\n", strings.Join(krmfntest.BuildArgs, " "), strings.Join(found, ", "))
	gateURL := ""
	if slices.ContainsFunc(o.Steps, func(n string) bool { return kindOf(n) != stepExample }) {
		r.gates = startGateServers(o.Speed)
		gateURL = r.gates.gate.URL + "/verify"
	}
	windowStart := time.Now()
	var steps []step
	var addons []string
	for _, name := range o.Steps {
		dir, _ := o.stepDir(name) // complete checked it
		objs, err := buildStep(ctx, o.RepoRoot, dir, env)
		if err != nil {
			return nil, nil, fmt.Errorf("rendering step %s: %w", name, err)
		}
		notes, err := scaleRollouts(objs, o.Speed)
		if err != nil {
			return nil, nil, fmt.Errorf("step %s: %w", name, err)
		}
		notes = append(notes, setHealthSoak(objs, o.Speed)...)
		if r.engine != nil {
			notes = append(notes, r.engine.Prepare(objs)...)
		}
		st := step{Name: name, Dir: dir, Objects: objs, Notes: notes, Kind: kindOf(name)}
		if st.Kind != stepExample {
			var prev *step
			if len(steps) > 0 {
				prev = &steps[len(steps)-1]
			}
			if err := planDemoStep(&st, prev, gateURL, windowStart); err != nil {
				return nil, nil, err
			}
		}
		if st.Kind == stepBadVersion {
			config, _, _ := deployedConfig(st.Name, st.Objects) // planDemoStep checked it
			r.badConfigs = append(r.badConfigs, config)
		}
		steps = append(steps, st)
		r.noteVersions(st)
		fmt.Fprintf(out, "  %-32s %2d objects; %s\n", name, len(objs), r.describeStep(st))
		for _, n := range st.Notes {
			fmt.Fprintf(out, "  %-32s %s\n", "", n)
		}
		for _, o := range objs {
			if o.GroupVersionKind() == cmaGVK && !slices.Contains(addons, o.GetName()) {
				addons = append(addons, o.GetName())
			}
		}
	}
	return steps, addons, nil
}

// start starts, against the hub, the controller and the simulated agent (in this process, under a
// context shutdown cancels first), OCM's placement controller, the clusters, the demo's view and
// the engine.
func (r *demoRun) start(ctx context.Context, sum *Summary, addons []string) error {
	o, out := r.o, r.o.Out
	compCtx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	r.cancelComps = cancel
	cfg := rest.CopyConfig(r.hub.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	clients, err := localhub.NewClients(cfg)
	if err != nil {
		return err
	}
	r.clients = clients
	if r.apply, err = ssapply.New(clients.Dynamic, clients.Kube.Discovery(), FieldManager); err != nil {
		return err
	}

	copts := controller.Options{
		Workers:          min(16, 4+o.Clusters/200),
		WriteParallelism: 32,
		Coalesce:         100 * time.Millisecond,
		HistoryNamespace: historyNamespace,
		// As addonops-controller --notifications (its default): nothing is sent until the gates
		// step writes the configuration and subscribes the add-on.
		Notifications: &notify.Options{Namespace: notifyNamespace},
	}
	aopts := simagent.Options{
		Addons:  addons,
		Delay:   time.Duration(float64(agentDelay) / o.Speed),
		Workers: min(32, 4+o.Clusters/50),
		Outcome: func(cluster, _ string, configs map[string]string) simagent.Outcome {
			return outcome(r.fleet.failing[cluster], configs, r.badConfigs)
		},
		WorkAgentOnly: !o.SimulatedManager,
	}
	deployerShort, deployer := describeDeployer(o.SimulatedManager)
	sum.Deployer = deployerShort
	if !o.SimulatedManager {
		// What addonops-controller --deploy-templates runs next to the rollout controller.
		copts.DeployTemplates = &templatedeploy.Options{}
	}
	if r.ctrl, err = rolloutsim.StartController(compCtx, cfg, copts); err != nil {
		return err
	}
	agent, err := simagent.New(cfg, aopts)
	if err != nil {
		return fmt.Errorf("building the simulated agent: %w", err)
	}
	if err := agent.Start(compCtx); err != nil {
		return fmt.Errorf("starting the simulated agent: %w", err)
	}
	fmt.Fprintf(out, "\nRunning in this process:\n")
	fmt.Fprintf(out, "  controller:     addonops controller (controller.New/Run, --addons=self, %d workers)\n", copts.Workers)
	fmt.Fprintf(out, "  notifications:  on (--notifications), configured by ConfigMap %s and Secret %s in %s\n", notify.ConfigMapName, notify.SecretName, notifyNamespace)
	fmt.Fprintf(out, "  add-on manager: %s\n", deployer)
	fmt.Fprintf(out, "  work agents:    SIMULATED: one simulated work agent (internal/testing/simagent) answers for every cluster, reporting "+
		"Applied/Available %s after each new work generation; no real cluster, kubelet or agent runs\n", seconds(aopts.Delay))

	fmt.Fprintf(out, "\nStarting OCM's placement controller (internal/testing/ocmhub)\n")
	if r.ocm, err = ocmhub.Start(ctx, r.hub, ocmhub.Options{SimulatedAgents: true, RepoRoot: o.RepoRoot}); err != nil {
		return fmt.Errorf("starting OCM's placement controller: %w", err)
	}
	fmt.Fprintf(out, "  up in %s (bin/ocm-placement, pid %d; log %s): it decides every Placement, as on a real hub\n",
		seconds(r.ocm.PlacementStartup), r.ocm.PIDs()[0], r.ocm.PlacementLog)

	fmt.Fprintf(out, "\nRegistering %d simulated clusters (ManagedClusters, joined and available, and their namespaces)\n", o.Clusters)
	regStart := time.Now()
	if _, err := r.ocm.AddClusters(ctx, r.fleet.clusters()...); err != nil {
		return err
	}
	sum.Register = time.Since(regStart)
	fmt.Fprintf(out, "  done in %s; canary (label %s=true): %s; failing work (--fail-rate %g): %s\n", seconds(sum.Register),
		CanaryLabel, describe(r.fleet.sorted(r.fleet.canary), 5), o.FailRate, describe(sum.Failing, 5))

	if r.view, err = newHubView(compCtx, cfg); err != nil {
		return err
	}
	if r.engine == nil {
		return nil
	}
	fmt.Fprintf(out, "\nStarting %s against the hub\n", r.engine.Name())
	lines, err := r.engine.Start(ctx, r.hub, r.git.repo)
	if err != nil {
		return fmt.Errorf("starting %s: %w", r.engine.Name(), err)
	}
	for _, l := range lines {
		fmt.Fprintf(out, "  %s\n", l)
	}
	sum.Engine = r.engine.Name()
	return nil
}

// shutdown stops what start started, the in-process parts first so nothing retries against a
// stopped API server, then the hub; it prints the summary and whether a process was left running.
// A shutdown error becomes the demo's error when it had none.
func (r *demoRun) shutdown(sum *Summary, begin time.Time, err *error) {
	out := r.o.Out
	if r.cancelComps != nil {
		r.cancelComps()
	}
	var errs []error
	if r.ctrl != nil {
		if cerr := r.ctrl.Stop(); cerr != nil {
			errs = append(errs, fmt.Errorf("the controller: %w", cerr))
		}
	}
	if r.view != nil {
		r.view.shutdown()
	}
	if r.engine != nil {
		// Kept too when interrupted: a person who stops a demo that seems stuck wants them.
		keep := *err != nil || sum.ExitCode() != exitOK
		dir, eerr := r.engine.Stop(keep)
		if eerr != nil {
			errs = append(errs, fmt.Errorf("stopping %s: %w", r.engine.Name(), eerr))
		}
		if dir != "" {
			fmt.Fprintf(out, "Logs of %s: %s\n", r.engine.Name(), dir)
		}
		if keep {
			fmt.Fprintf(out, "The demo's Git repository is kept: %s\n", r.git.repo.Dir)
		} else if rerr := os.RemoveAll(r.git.dir); rerr != nil {
			errs = append(errs, rerr)
		}
	}
	if r.ocm != nil {
		if oerr := r.ocm.Stop(); oerr != nil {
			errs = append(errs, fmt.Errorf("stopping OCM's placement controller: %w", oerr))
		}
		r.pids = append(r.pids, r.ocm.PIDs()...)
	}
	if serr := r.hub.Stop(); serr != nil {
		errs = append(errs, serr)
	}
	sum.Leftovers = childproc.Leftovers(r.pids)
	sum.Total = time.Since(begin)
	if sum.Steps != nil || sum.Interrupted {
		printSummary(out, sum)
	}
	if len(sum.Leftovers) > 0 {
		fmt.Fprintf(out, "STILL RUNNING after the shutdown: %s\n", strings.Join(sum.Leftovers, ", "))
	} else {
		fmt.Fprintf(out, "Stopped the controller, the simulated agents, OCM's placement controller, kube-apiserver (pid %d) and etcd (pid %d); "+
			"no process of the demo is left running.\n", r.pids[0], r.pids[1])
	}
	if *err == nil && len(errs) > 0 {
		*err = fmt.Errorf("shutting down: %w", errors.Join(errs...))
	}
}

// showHistories prints the version history the controller kept of each add-on, as `addonops
// history` shows it: what made 04-rollback and the revert rollbacks.
func (r *demoRun) showHistories(ctx context.Context, addons []string, sum *Summary) {
	for _, a := range addons {
		rec, err := harness.ReadHistory(ctx, r.clients.Kube, r.clients.Addon, historyNamespace, a)
		if err != nil {
			fmt.Fprintf(r.o.Out, "\n%v\n", err)
			continue
		}
		if sum.Histories == nil {
			sum.Histories = map[string]*history.Record{}
		}
		sum.Histories[a] = rec
		fmt.Fprintf(r.o.Out, "\nVersion history of %s, kept by the controller in ConfigMap %s/%s, as `addonops history %s` prints it "+
			"(a version with a COMPLETED time is a rollback target on its placement):\n", a, historyNamespace, history.ConfigMapName(a), a)
		if err := history.WriteTable(r.o.Out, rec, nil); err != nil {
			fmt.Fprintf(r.o.Out, "writing the version history of %s: %v\n", a, err)
		}
	}
}

// noteVersions remembers the AGENT_VERSION of the step's AddOnDeploymentConfigs, to name versions
// in the progress.
func (r *demoRun) noteVersions(st step) {
	for _, o := range st.Objects {
		if o.GroupVersionKind().GroupKind() != adcGK {
			continue
		}
		vars, _, _ := unstructured.NestedSlice(o.Object, "spec", "customizedVariables")
		for _, v := range vars {
			if m, ok := v.(map[string]any); ok && m["name"] == "AGENT_VERSION" {
				if s, ok := m["value"].(string); ok {
					r.versions[o.GetNamespace()+"/"+o.GetName()] = s
				}
			}
		}
	}
}

// describeStep says what a step rolls out: the add-on's placements and strategies and its config.
func (r *demoRun) describeStep(st step) string {
	var parts []string
	for _, o := range st.Objects {
		switch o.GroupVersionKind().GroupKind() {
		case adcGK:
			parts = append(parts, fmt.Sprintf("config %s (%s)", o.GetName(), cmp.Or(r.versions[o.GetNamespace()+"/"+o.GetName()], "no AGENT_VERSION")))
		case cmaGVK.GroupKind():
			placements, _, _ := unstructured.NestedSlice(o.Object, "spec", "installStrategy", "placements")
			for _, raw := range placements {
				p, _ := raw.(map[string]any)
				typ, _, _ := unstructured.NestedString(p, "rolloutStrategy", "type")
				s := fmt.Sprintf("%v: %s", p["name"], cmp.Or(typ, "All"))
				if mc, found, _ := unstructured.NestedFieldNoCopy(p, "rolloutStrategy", "progressive", "maxConcurrency"); found {
					s += fmt.Sprintf(" %v at a time", mc)
				}
				parts = append(parts, s)
			}
			if c, ok := o.GetAnnotations()["addonops.io/canary-placements"]; ok {
				parts = append(parts, "canary gate "+c)
			}
		}
	}
	return strings.Join(parts, "; ")
}

// stepWatch is what a step watches while it runs, beyond the snapshots: the placements it plans to
// roll back, the reasons each placement reported, when each first reported success, and the pause.
type stepWatch struct {
	start time.Time
	// With an engine: the step's commit, when it was handed to the engine, what the engine did and
	// what it said last.
	sha        string
	handed     time.Time
	engine     *EngineResult
	lastEngine engineState
	// addsPlacement: the step has a Placement the step before did not have.
	addsPlacement bool

	// plans are what the step's objects ask of each install placement (strategy, canary, config);
	// planned the kind of change the step's plan (`addonops plan`) gives each, rollbacks what those
	// it rolls back go back to (rollbacksOf).
	plans     map[string]stepcheck.PlacementPlan
	planned   map[string]string
	rollbacks map[string]string
	reasons   map[string][]string // placement -> distinct reasons seen, in order (fresh progressions only)
	doneAt    map[string]time.Duration
	pause     *pauser
	gates     *gater
	// rec records the MCAs' changes while the step runs.
	rec *harness.Recorder[harness.MCAStateEvent]
}

// observe notes the placements' reasons in the snapshots.
func (w *stepWatch) observe(snaps []snapshot, now time.Time) {
	for _, s := range snaps {
		for _, p := range s.View.Placements {
			key := p.Key()
			if p.Behind != "" || p.Reason == "" {
				continue
			}
			if rs := w.reasons[key]; len(rs) == 0 || rs[len(rs)-1] != p.Reason {
				w.reasons[key] = append(rs, p.Reason)
			}
			if _, ok := w.doneAt[key]; !ok && addonstatus.IsDoneReason(p.Reason) {
				w.doneAt[key] = now.Sub(w.start)
			}
		}
	}
}

// plannedChanges pairs what the step's plan said of each placement with the reasons it reported
// during the step and the one it ended with (placements), for stepcheck.PlanCameTrue.
func (w *stepWatch) plannedChanges(placements []PlacementResult) []stepcheck.PlannedChange {
	var out []stepcheck.PlannedChange
	for _, key := range slices.Sorted(maps.Keys(w.planned)) {
		c := stepcheck.PlannedChange{Placement: key, Change: w.planned[key], Seen: w.reasons[key]}
		for _, p := range placements {
			if p.Key == key {
				c.Reason = p.Reason
			}
		}
		out = append(out, c)
	}
	return out
}

// versionOf names a placement's version for people: its agent version, else its config.
func (r *demoRun) versionOf(p stepcheck.PlacementPlan) string {
	if v, ok := r.versions[p.Config]; ok {
		return v
	}
	return p.Config
}

// runStep applies one step and follows its rollout until it ends, fails, times out or ctx ends.
func (r *demoRun) runStep(ctx context.Context, st step) StepResult {
	res := StepResult{Step: st.Name, Notes: st.Notes, kind: st.Kind}
	start := time.Now()
	w := &stepWatch{start: start, reasons: map[string][]string{}, doneAt: map[string]time.Duration{}}
	if r.engine == nil {
		r.disp.printf("\n== %s: server-side apply of %d objects (field manager %s)\n", st.Name, len(st.Objects), FieldManager)
	} else {
		r.disp.printf("\n== %s: %d objects delivered by %s\n", st.Name, len(st.Objects), r.engine.Name())
	}
	fail := func(err error) StepResult {
		if w.rec != nil {
			w.rec.Stop()
		}
		res.Duration = time.Since(start)
		if ctx.Err() != nil {
			res.Result = Interrupted
		} else {
			res.Result = Error
			res.Why = err.Error()
			r.disp.printf("   ERROR: %v\n", err)
		}
		res.Expected, _ = stepcheck.Expect(res.Result, nil, r.fleet.failing)
		res.Engine = w.engine
		return res
	}

	var err error
	if w.rec, err = harness.RecordMCAStates(ctx, r.clients.Addon); err != nil {
		return fail(err)
	}
	if r.gates != nil && !r.gates.setUp && slices.ContainsFunc(st.Objects, func(o *unstructured.Unstructured) bool { return o.GroupVersionKind() == analysisTemplateGVK }) {
		if err := r.setupGates(ctx); err != nil {
			return fail(err)
		}
		r.gates.setUp = true
	}
	var gens map[string]int64
	var addons []string
	var plan *planner.Report
	if r.engine == nil {
		gens, addons, plan, err = r.applyStep(ctx, st)
	} else {
		// The engine applies the whole step at once: the plan comes first, and a Placement the
		// step adds has no decisions in it yet (the plan says so).
		if plan, err = r.planStep(ctx, st); err != nil {
			return fail(err)
		}
		gens, addons, err = r.deliverByEngine(ctx, st, w)
	}
	if err != nil {
		return fail(err)
	}
	r.view.noteBaseNames(st)
	// What the plan says the step does to each placement, the controller's own decisions: which
	// of them roll back, and to what.
	w.plans = map[string]stepcheck.PlacementPlan{}
	for _, p := range stepcheck.PlacementPlans(st.Objects) {
		w.plans[p.Key] = p
	}
	w.planned, w.rollbacks = stepcheck.PlannedChanges(plan), rollbacksOf(plan, r.firstPlanned)
	notePlanned(plan, st.Name, r.firstPlanned)
	for _, key := range slices.Sorted(maps.Keys(w.rollbacks)) {
		r.disp.printf("   %s\n", rollbackNote(w.plans[key], w.rollbacks[key], r.versionOf(w.plans[key])))
	}
	if len(w.rollbacks) > 0 {
		for _, key := range slices.Sorted(maps.Keys(w.planned)) {
			if c := w.planned[key]; c == planner.ChangeInstall || c == planner.ChangeUpgrade {
				r.disp.printf("   %s: the plan says %s, not Rollback: its version history has no completed %s\n", key, c, r.versionOf(w.plans[key]))
			}
		}
	}
	if st.Pause != nil {
		w.pause = r.newPauser(*st.Pause, start, w.rec)
	}
	if st.Gates != nil {
		w.gates = r.newGater(*st.Gates, start)
	}

	// --step-timeout bounds the whole step, the engine's delivery included.
	timeout := time.NewTimer(r.o.StepTimeout - time.Since(start))
	defer timeout.Stop()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var failingSince, endedSince, engineRead time.Time
	var snaps []snapshot
	for {
		now := time.Now()
		if err := w.rec.Err(); err != nil {
			return fail(err)
		}
		if r.engine != nil && now.Sub(engineRead) >= 500*time.Millisecond {
			r.noteEngine(w, r.engine.State(ctx, w.sha))
			engineRead = now
			if w.lastEngine.Fatal {
				return fail(fmt.Errorf("%s: %s", r.engine.Name(), w.lastEngine.Problem))
			}
		}
		r.gates.flush(r.disp)
		ss, ok, err := r.snapshots(addons, gens, now)
		if err != nil {
			return fail(err)
		}
		if ok {
			snaps = ss
			w.observe(snaps, now)
			if w.pause != nil {
				w.pause.advance(ctx, snaps, now)
			}
			if w.gates != nil {
				w.gates.advance(ctx, snaps, harness.LatestStates(w.rec, st.Gates.Addon), now)
			}
			v := judge(viewsOf(snaps))
			if r.engine != nil && v.Ended && uncounted(snaps) {
				// The controller has not counted the clusters the demo just decided for a
				// placement the engine created (see uncounted): the rollout has not started.
				v.Ended = false
			}
			f := frame{Views: viewsOf(snaps)}
			if r.engine != nil {
				f.Extra = []string{w.lastEngine.Line}
			}
			r.disp.update(st.Name, now.Sub(start), f, now)
			// The pause holds the step open until it resumed; the gates until the notifications
			// the rollout sends arrived (or notifyWait passed).
			pausing := w.pause != nil && w.pause.phase != pauseWaiting && w.pause.phase != pauseDone ||
				w.gates.holds(v.Ended && !v.Failed, now)
			var ended Result
			switch {
			case pausing:
				failingSince = time.Time{}
			case v.Ended && !v.Failed:
				ended = Succeeded
			case v.Ended && failingSince.IsZero():
				failingSince = now
			case v.Ended && now.Sub(failingSince) >= r.o.Settle:
				ended = Failed
			case !v.Ended:
				failingSince = time.Time{}
			}
			switch {
			case ended == "":
				endedSince = time.Time{}
			case r.engine == nil:
				return r.finishStep(res, ended, w, snaps, v)
			case engineAgrees(ended, w.lastEngine, failingSince):
				// time.Since, not now: noteEngine timed the engine's "applied" after now was taken,
				// and the verdict cannot come before it.
				w.engine.VerdictAfter = time.Since(w.handed)
				return r.finishStep(res, ended, w, snaps, v)
			case endedSince.IsZero():
				endedSince = now
			case now.Sub(endedSince) >= engineVerdictWait:
				w.engine.Problem = fmt.Sprintf("the demo's view says %s, but %s did not say so within %s: %s",
					ended, r.engine.Name(), engineVerdictWait, w.lastEngine.Line)
				return r.finishStep(res, ended, w, snaps, v)
			}
		}
		for waiting := true; waiting; {
			select {
			case <-ctx.Done():
				return r.finishStep(res, Interrupted, w, snaps, verdict{})
			case <-timeout.C:
				return r.finishStep(res, TimedOut, w, snaps, judge(viewsOf(snaps)))
			case <-tick.C:
				waiting = false
			case <-w.pause.waiting(w.rec.Changed()):
				// An MCA changed while the pause waits for the first batch: pause at once.
				waiting = !w.pause.trigger(ctx, time.Now())
			}
		}
	}
}

// snapshots reads the step's add-ons; ok is false until the caches hold what the demo applied.
func (r *demoRun) snapshots(addons []string, gens map[string]int64, now time.Time) ([]snapshot, bool, error) {
	var out []snapshot
	for _, a := range addons {
		s, ok, err := r.view.snapshot(a, gens[a], now)
		if err != nil || !ok {
			return nil, false, err
		}
		out = append(out, s)
	}
	return out, len(out) > 0, nil
}

func viewsOf(snaps []snapshot) []rolloutview.View {
	out := make([]rolloutview.View, len(snaps))
	for i, s := range snaps {
		out[i] = s.View
	}
	return out
}

// finishStep fills in the step's result from the last snapshots and the recorded MCA changes, and
// prints how it ended.
func (r *demoRun) finishStep(res StepResult, result Result, w *stepWatch, snaps []snapshot, v verdict) StepResult {
	w.rec.Stop()
	recStart, events := harness.RecordedStates(w.rec)
	views := viewsOf(snaps)
	res.Duration = time.Since(w.start)
	res.Result = result
	res.Failed = failedClusters(views)
	res.Reasons = failureReasons(views, 5)
	res.Notes = append(slices.Clone(res.Notes), v.Notes...)
	var configs, versions []string
	for _, view := range views {
		for _, p := range view.Placements {
			pr := PlacementResult{Key: p.Key(), Reason: p.Reason, Total: p.Progress.Total, Done: p.Progress.Done,
				InProgress: p.Progress.InProgress, Failed: p.Progress.Failed + p.Progress.TimedOut}
			for _, c := range p.Configs {
				if strings.HasPrefix(c.Resource, "addondeploymentconfigs.") && c.Desired != nil {
					pr.Desired, pr.DesiredVersion = c.Desired.Name, r.versions[c.Desired.Namespace+"/"+c.Desired.Name]
				}
			}
			if p.Canary != nil {
				pr.Canary = p.Canary.State
			}
			res.Placements = append(res.Placements, pr)
			configs = append(configs, pr.Desired)
			versions = append(versions, pr.DesiredVersion)
		}
	}
	res.Clusters, res.Done = stepClusters(snaps, configs, res.Failed)
	res.Config, res.Version = joinNonEmpty(configs), joinNonEmpty(versions)

	// The placements it rolled back: how they ended, whether they waited for the canary, how many
	// clusters moved at once (from the recorded MCA changes).
	for _, key := range slices.Sorted(maps.Keys(w.rollbacks)) {
		plan := w.plans[key]
		c := RollbackCheck{Placement: key, Version: r.versionOf(plan), Since: w.rollbacks[key], Canary: plan.Canary,
			WaitedForCanary: slices.Contains(w.reasons[key], addonstatus.ReasonWaitingForCanary), CanaryDone: -1, FirstMoved: -1}
		for _, p := range res.Placements {
			if p.Key == key {
				c.Reason = p.Reason
			}
		}
		if at, ok := w.doneAt[plan.Canary]; ok && plan.Canary != "" {
			c.CanaryDone = at
		}
		for _, s := range snaps {
			if s.View.Addon != plan.Addon {
				continue
			}
			owned := s.owned(key)
			c.Clusters, c.Limit = len(owned), plan.Limit(len(s.Clusters[key]))
			c.MaxInFlight, _ = harness.MovingInFlight(recStart, events, plan.Addon, plan.Config, owned)
			for _, at := range harness.FirstTold(events, plan.Addon, plan.Config, owned) {
				if d := at.Sub(w.start); c.FirstMoved < 0 || d < c.FirstMoved {
					c.FirstMoved = d
				}
			}
		}
		res.Rollbacks = append(res.Rollbacks, c)
		res.Notes = append(res.Notes, "rollback: "+c.Describe())
	}
	if w.pause != nil {
		res.Pause = w.pause.finish(events)
		res.Notes = append(res.Notes, stepcheck.DescribePause(res.Pause))
	}
	r.gates.flush(r.disp)
	if w.gates != nil {
		res.Gates = w.gates.finish(events)
		res.Notes = append(res.Notes, stepcheck.DescribeGates(res.Gates))
	}

	var why string
	switch res.kind {
	case stepBadVersion:
		var told []string
		for _, c := range r.badConfigs {
			told = append(told, toldConfig(snaps, c)...)
		}
		res.Expected, why = stepcheck.BadVersion(result, res.Failed, told, r.fleet.canary, r.fleet.failing)
	case stepRevert:
		var reasons []string
		for _, p := range res.Placements {
			reasons = append(reasons, p.Reason)
		}
		res.Expected, why = stepcheck.Revert(result, res.Failed, r.fleet.failing, reasons)
	case stepPauseResume:
		res.Expected, why = stepcheck.PauseResume(result, res.Failed, r.fleet.failing, res.Pause)
	case stepGates:
		res.Expected, why = stepcheck.Gates(result, res.Failed, r.fleet.failing, res.Gates)
	default:
		res.Expected, why = stepcheck.Expect(result, res.Failed, r.fleet.failing)
	}
	if res.Expected && result != Interrupted {
		res.Expected, why = stepcheck.Rollbacks(res.Rollbacks, r.fleet.failing)
	}
	if res.Expected && result != Interrupted {
		res.Expected, why = stepcheck.PlanCameTrue(w.plannedChanges(res.Placements), r.fleet.failing)
	}
	if res.Engine = w.engine; res.Expected && res.Engine != nil && res.Engine.Problem != "" {
		res.Expected, why = false, res.Engine.Problem
	}
	if !res.Expected {
		res.Why = why
	}

	if len(snaps) > 0 {
		r.disp.finish(res.Step, res.Duration, frame{Views: views})
	}
	switch result {
	case Succeeded:
		r.disp.printf("== %s: Succeeded in %s: %d/%d clusters run %s\n", res.Step, seconds(res.Duration), res.Done, res.Clusters, configLabel(res))
	case Interrupted:
		r.disp.printf("== %s: interrupted after %s\n", res.Step, seconds(res.Duration))
	default:
		r.disp.printf("== %s: %s after %s: %d/%d clusters run %s, %d failed\n", res.Step, result, seconds(res.Duration),
			res.Done, res.Clusters, configLabel(res), len(res.Failed))
		for _, n := range v.Notes {
			r.disp.printf("   %s\n", n)
		}
	}
	if e := res.Engine; e != nil && e.VerdictAfter >= 0 {
		r.disp.printf("   %s, %s after %s (applied %s after it): the demo's view agrees\n", e.Last, seconds(e.VerdictAfter), e.HandOver, seconds(e.AppliedAfter))
		if failed := e.failedOnTheWay(); failed != "" {
			why := ""
			if nf := r.view.placementNotFoundSince(w.start); len(nf) > 0 && w.addsPlacement {
				why = fmt.Sprintf(" when the controller reported PlacementNotFound (%s)%s", strings.Join(nf, ", "), r.engine.WhyFailedOnTheWay())
			}
			r.disp.printf("   on the way %s said %s%s\n", e.Engine, failed, why)
		}
	}
	switch {
	case result == Interrupted:
	case !res.Expected:
		r.disp.printf("   NOT AS EXPECTED: %s\n", res.Why)
	case res.kind == stepBadVersion:
		r.disp.printf("   as expected: the bad version stopped at the canary, named above; no cluster outside the canary was told to run it\n")
	case res.kind == stepRevert && result == Succeeded:
		r.disp.printf("   as expected: the revert is a rollback: %s\n", placementReasons(res.Placements))
	case res.kind == stepPauseResume && result == Succeeded:
		r.disp.printf("   as expected: %s\n", stepcheck.DescribePause(res.Pause))
	case res.kind == stepGates && result == Succeeded:
		r.disp.printf("   as expected: %s\n", stepcheck.DescribeGates(res.Gates))
	case result == Failed:
		r.disp.printf("   as expected: only clusters whose failure was injected (--fail-rate) failed\n")
	}
	if res.Expected && result == Succeeded {
		for _, c := range res.Rollbacks {
			r.disp.printf("   as expected, a rollback: %s\n", c.Describe())
		}
	}
	return res
}

// plural counts things as the step checks do (stepcheck.Count): "1 cluster", "3 clusters".
func plural(n int, noun string) string { return stepcheck.Count(n, noun) }

func configLabel(res StepResult) string {
	if res.Version == "" {
		return res.Config
	}
	return res.Config + " (" + res.Version + ")"
}

// describeDeployer says who writes the clusters' ManifestWorks: the controller with
// --deploy-templates (the product on a hub without OCM's addon-manager), or, with
// --simulated-manager, simagent's simulated add-on manager.
func describeDeployer(simulated bool) (short, detail string) {
	if !simulated {
		return "works rendered by the controller (--deploy-templates)",
			"the addonops controller with --deploy-templates renders the AddOnTemplate into each cluster's ManifestWorks"
	}
	return "works written by a simulated add-on manager",
		"SIMULATED (--simulated-manager: internal/testing/simagent writes one ManifestWork per cluster when its rollout turn comes, " +
			"so the AddOnTemplate is not rendered)"
}

// logSink is the log file of the controller and the simulation, behind klog (their logger). klog's
// logger may be set only once, before anything logs, so the sink stays and each run opens and
// closes its file; writes while no file is open (parts of a stopped run winding down) are dropped.
type logSink struct {
	mu   sync.Mutex
	f    *os.File
	once sync.Once
}

var logs = &logSink{}

func (l *logSink) open() error {
	l.once.Do(func() {
		klog.SetLogger(textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(l), textlogger.Verbosity(2))))
	})
	f, err := os.CreateTemp("", "addonops-demo-*.log")
	if err != nil {
		return fmt.Errorf("creating the demo's log file: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.f = f
	return nil
}

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return len(p), nil
	}
	return l.f.Write(p)
}

// close closes the file and removes it unless keep; it returns the path of a kept file.
func (l *logSink) close(keep bool) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return ""
	}
	f := l.f
	l.f = nil
	f.Close()
	if keep {
		return f.Name()
	}
	os.Remove(f.Name())
	return ""
}
