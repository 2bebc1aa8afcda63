// Command addonops-demo is `make demo`: the whole product on one machine in a minute or two.
//
// It starts a local OCM hub (a real kube-apiserver and etcd with OCM's CRDs, internal/testing/localhub),
// the addonops controller in-process, OCM's own placement controller (bin/ocm-placement,
// internal/testing/ocmhub), which decides every Placement, and a simulated work agent for N
// simulated clusters (internal/testing/simagent); registers the clusters (a tenth labelled
// addonops.io/canary=true); then applies kustomize-rollout-examples 01 -> 02 -> 03 -> 04 in turn
// the way Argo CD or Flux would (`go tool kustomize build --enable-alpha-plugins --enable-exec`,
// the KRM functions from bin/, then server-side apply of every object) and shows each rollout live as `addonops status` shows it
// (internal/rolloutview, without the per-cluster lines). It ends with a summary table and the
// version history as `addonops history` prints it, and stops everything it started.
//
// Step 04-rollback goes back to v0.10.0, which completed on global-placement in step 01: the
// controller's version history makes that a rollback at any moment (RollingBack, then
// RollbackSucceeded, not gated by the canary, paced by maxConcurrency), and the demo checks it.
//
// After the examples come the demo's own steps (--demo-steps, steps/: kustomize overlays of the
// step before, as a user's next commits are). 05-pause-resume rolls out a new good version,
// v0.12.1, behind the canary; once the gated placement started its first batch, the demo pauses
// it exactly as `addonops pause helloworld --placement default/global-placement` does (the
// addonops.io/pause annotation), shows that no new cluster starts while the clusters in flight
// finish, then resumes it (`addonops resume`) and the rollout completes.
//
// 06-gates (gates.go) rolls out v0.12.2 with a webhook verification gate on every placement (an
// Argo Rollouts AnalysisTemplate whose web provider is a local receiver the demo runs: it prints
// each batch and its verdict, and no batch starts before the verdict on the one before),
// subscribes the add-on to notifications (the demo writes the catalog with a webhook service to a
// second local receiver, which prints each notification as it arrives) and sets a deny
// maintenance window in force on the gated placement: once the canary passed, it waits
// (WaitingForWindow, with when the window opens) until the demo runs `addonops override-window`,
// as a person letting a hotfix through does.
//
// 07-bad-version rolls out v0.13.0-bad, whose agent never becomes ready (the simulated agent
// reports its Deployments without a ready replica, so the controller's health check reports the
// add-on unavailable), with a 20s progressDeadline (scaled by --speed). It must stop at the
// canary, the failure named, no other cluster touched; then 08-revert renders 06-gates again (a
// version every placement completed), which the controller must report as a rollback
// (RollbackSucceeded).
//
// With --engine=flux or --engine=argocd (make demo DEMO_ENGINE=...), a real GitOps engine built
// from its Go module delivers the same steps: each is a commit of the rendered objects in a Git
// repository on disk, the revert a `git revert`, applied by Flux (the OCI recipe of
// health/flux/addonops-hub.yaml) or Argo CD (an Application with our health checks), whose status
// the demo shows next to its own view (engine.go, docs/demo-engines.md).
//
// A step whose rollout fails (injected failures with --fail-rate, a maxFailures breach, a
// placement held by a failed canary) is reported failed and the demo moves on to the next step,
// as a GitOps user pushes the next commit; the last step is the rollback. Exit code: 0 when every
// step ended as expected (all succeed without --fail-rate; with it, each step fails through the
// injected clusters only), 1 when one did not or something was left running, 2 when the demo
// could not run, 130 when interrupted. Ctrl-C stops the demo and cleans up; a second Ctrl-C
// exits at once (the hub's processes die with the demo, see localhub).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/addonops/addonops/internal/version"
)

func main() { os.Exit(runCommand(os.Args[1:])) }

func runCommand(args []string) int {
	fs := flag.NewFlagSet("addonops-demo", flag.ContinueOnError)
	var o Options
	var steps string
	var plain bool
	fs.IntVar(&o.Clusters, "clusters", 20, "number of simulated clusters")
	fs.IntVar(&o.Canaries, "canaries", 0, "how many clusters are labelled addonops.io/canary=true (default a tenth, at least 1)")
	fs.Float64Var(&o.FailRate, "fail-rate", 0, "share of clusters whose work the simulated agent reports failed, for every version (0..1)")
	fs.Float64Var(&o.Speed, "speed", 1, "speed-up of the simulation: divides the agent's delay and the rollouts' minSuccessTime and progressDeadline")
	fs.DurationVar(&o.StepTimeout, "step-timeout", 10*time.Minute, "give up on a step's rollout after this long (the step is reported TimedOut and the demo moves on)")
	fs.StringVar(&steps, "steps", "", "comma-separated steps to apply, in order, each a folder of --examples or --demo-steps (default every NN-* folder of both)")
	fs.StringVar(&o.Examples, "examples", "", "folder of the rollout examples (default kustomize-rollout-examples of the repository)")
	fs.StringVar(&o.DemoSteps, "demo-steps", "", "folder of the demo's own steps after the examples: a paused and resumed rollout, a gated one, a bad version and its revert "+
		"(default cmd/addonops-demo/steps of the repository); 'none' leaves them out")
	fs.StringVar(&o.Engine, "engine", engineNone, "what delivers the steps: none (the demo's own server-side apply), flux or argocd "+
		"(a real GitOps engine applying each step as a commit of a local Git repository; make flux or make argocd builds it; see docs/demo-engines.md)")
	fs.BoolVar(&o.SimulatedManager, "simulated-manager", false, "let a simulated add-on manager write the works instead of the controller's template deployment (--deploy-templates)")
	showVersion := fs.Bool("version", false, "print the version and exit")
	fs.BoolVar(&plain, "plain", false, "print progress lines instead of redrawing in place, even on a terminal")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: addonops-demo [flags]\n\n"+
			"Runs the four rollout examples, a paused and resumed rollout, a gated rollout (webhook gate, notifications, maintenance window), a bad version and its revert on a local hub\n"+
			"with simulated clusters (see `make demo`).\n"+
			"Exit codes: 0 every step ended as expected, 1 a step did not (or a process was left running),\n"+
			"2 the demo could not run, 130 interrupted.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return exitOK
		}
		return exitError
	}
	if *showVersion {
		fmt.Println(version.String("addonops-demo"))
		return exitOK
	}
	if o.DemoSteps == "none" {
		o.DemoSteps, o.NoDemoSteps = "", true
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "addonops-demo: unexpected arguments %q (flags only; see --help)\n", fs.Args())
		return exitError
	}
	// Zero means "default" in Options; on the command line it is a mistake.
	switch {
	case o.Clusters < 1:
		fmt.Fprintf(os.Stderr, "addonops-demo: --clusters %d: want at least 1 simulated cluster\n", o.Clusters)
		return exitError
	case o.Speed <= 0:
		fmt.Fprintf(os.Stderr, "addonops-demo: --speed %g: want a positive factor (2 runs the simulation twice as fast)\n", o.Speed)
		return exitError
	case o.StepTimeout <= 0:
		fmt.Fprintf(os.Stderr, "addonops-demo: --step-timeout %s: want a positive duration\n", o.StepTimeout)
		return exitError
	}
	if steps != "" {
		for _, s := range strings.Split(steps, ",") {
			if s = strings.TrimSpace(s); s != "" {
				o.Steps = append(o.Steps, s)
			}
		}
	}
	fd := int(os.Stdout.Fd())
	if !plain && term.IsTerminal(fd) && os.Getenv("TERM") != "dumb" {
		o.TTY = true
		if w, _, err := term.GetSize(fd); err == nil {
			o.Width = w
		}
	}

	// The first Ctrl-C (or SIGTERM) stops the demo cleanly; a second one exits at once.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		fmt.Fprintln(os.Stderr, "\naddonops-demo: interrupted; stopping everything (Ctrl-C again to exit at once)")
		cancel()
		<-sigs
		fmt.Fprintln(os.Stderr, "addonops-demo: exiting at once; the hub's processes die with the demo")
		os.Exit(exitInterrupted)
	}()

	sum, err := Run(ctx, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "addonops-demo: %v\n", err)
		if ctx.Err() != nil {
			return exitInterrupted
		}
		return exitError
	}
	code := sum.ExitCode()
	switch code {
	case exitOK:
		fmt.Println("Every step ended as expected.")
	case exitInterrupted:
		fmt.Fprintln(os.Stderr, "addonops-demo: interrupted")
	default:
		fmt.Fprintln(os.Stderr, "addonops-demo: not every step ended as expected (see the summary)")
	}
	return code
}
