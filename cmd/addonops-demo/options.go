package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/addonops/addonops/internal/testing/localhub"
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
