package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/addonops/addonops/internal/controller"
	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/notify"
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
		if v := agentVersion(o); o.GroupVersionKind().GroupKind() == adcGK && v != "" {
			r.versions[o.GetNamespace()+"/"+o.GetName()] = v
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
