//go:build integration

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/addonops/addonops/internal/testing/childproc"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/localhub"
)

// TestDemoDeliveredByFlux runs the whole demo with --engine=flux: Flux's own source-controller
// and kustomize-controller (built by `make flux`) apply every step, each a commit of the demo's
// Git repository pushed as an OCI artifact as health/README.md's recipe does, the revert a `git
// revert`. The steps must end as without an engine, and Flux's verdict must agree with the demo's
// view at every step: healthy, and failed for the bad version.
func TestDemoDeliveredByFlux(t *testing.T) {
	text := runWithEngine(t, engineFlux, "Flux", regexp.MustCompile(`^main@sha256:[0-9a-f]{12}$`), "(Running health checks)")
	for _, want := range []string{
		"$ flux push artifact oci://127.0.0.1:", "--path=rendered", "--revision=main@sha1:",
		"$ kubectl apply -f health/flux/addonops-hub.yaml",
		"$ flux reconcile source oci hello-addon-hub",
		"Flux Kustomization hello-addon-hub: Ready=True Healthy=True at main@sha256:",
		"Flux Kustomization hello-addon-hub: Ready=False/HealthCheckFailed Healthy=False at main@sha256:",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the output does not say %q", want)
		}
	}
}

// TestDemoDeliveredByArgoCD runs the whole demo with --engine=argocd: Argo CD's own application
// controller and repo server (built by `make argocd`) sync every step from the demo's Git
// repository, served over Git's smart HTTP, through health/argocd/application.yaml's Application
// (automated sync) with our health checks in argocd-cm, the configs in sync wave -1 as
// health/README.md asks. The steps must end as without an engine, and the Application's health
// must agree with the demo's view at every step: Healthy, and Degraded for the bad version.
func TestDemoDeliveredByArgoCD(t *testing.T) {
	// No status in progress is required: at --speed 10 a rollout may be over before Argo CD's
	// first comparison after the sync (the pause's Suspended likewise; TestArgoCD checks both).
	text := runWithEngine(t, engineArgoCD, "Argo CD", regexp.MustCompile(`^[0-9a-f]{12}$`), "")
	for _, want := range []string{
		"$ kubectl apply -f health/argocd/application.yaml",
		"$ argocd app get addons-hub --refresh",
		`argocd.argoproj.io/sync-wave "-1" (health/README.md's sync-wave patch`,
		"Argo CD Application addons-hub: Synced Healthy at commit ",
		"Argo CD Application addons-hub: Synced Degraded at commit ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the output does not say %q", want)
		}
	}
}

// runWithEngine runs every step of a quick demo delivered by engine (skipped when it is not
// built), checks it as checkWholeDemo does and checks what the engine did at each step: one
// commit each, applied as revision (its name for what it applied), a verdict agreeing with the
// demo's (failed for the bad version, healthy otherwise) and, unless progressing is empty, a
// status showing the rollout in progress (progressing) or a failure on the way. It returns the
// demo's output.
func runWithEngine(t *testing.T, engine, name string, revision *regexp.Regexp, progressing string) string {
	t.Helper()
	root, err := localhub.RepoRoot("")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkEngine(engine, root); err != nil {
		t.Fatalf("%s is not built (an integration test never passes by skipping): %v", name, err)
	}
	var out syncBuffer
	o := quick(&out)
	o.Engine = engine
	sum, err := Run(context.Background(), o)
	t.Logf("demo output:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	text := out.String()
	checkWholeDemo(t, sum, text)
	if sum.Engine != name {
		t.Errorf("summary engine %q, want %s", sum.Engine, name)
	}

	sha := regexp.MustCompile(`^[0-9a-f]{40}$`)
	var commits []string
	for _, st := range sum.Steps {
		e := st.Engine
		if e == nil {
			t.Errorf("%s: no engine result", st.Step)
			continue
		}
		commits = append(commits, e.Commit)
		want := verdictHealthy
		if st.Step == "07-bad-version" {
			want = verdictFailed
		}
		if e.Engine != name || !sha.MatchString(e.Commit) || !revision.MatchString(e.Revision) ||
			e.AppliedAfter <= 0 || e.VerdictAfter < e.AppliedAfter || e.Verdict != want || e.Problem != "" {
			t.Errorf("%s: %+v; want %s applying a commit as %s, then a %s verdict agreeing with the demo", st.Step, e, name, revision, want)
		}
		if e.Revert != (st.Step == "08-revert") {
			t.Errorf("%s: revert %v; only 08-revert is a git revert", st.Step, e.Revert)
		}
		// The engine followed the rollout: it showed the commit in progress (or failed) first.
		if progressing != "" && !slices.ContainsFunc(e.Statuses, func(s string) bool { return strings.Contains(s, progressing) || strings.Contains(s, "Failed") }) {
			t.Errorf("%s: %s's statuses %q never show the rollout in progress (%q)", st.Step, name, e.Statuses, progressing)
		}
	}
	slices.Sort(commits)
	if len(slices.Compact(commits)) != len(sum.Steps) {
		t.Fatalf("commits %v: want one per step", commits)
	}
	for _, want := range []string{
		"delivered in turn to a local hub by " + name + " from a local Git repository",
		"Placement default/global-placement, 6 clusters decided by OCM's placement controller",
		"Placement default/canary-placement, 2 clusters decided by OCM's placement controller",
		"it decides every Placement, as on a real hub", // the placements line of what runs
		"git revert " + short(sum.Steps[6].Engine.Commit) + ": commit " + short(sum.Steps[7].Engine.Commit),
		"the demo's view agrees",
		"delivered by " + name + " from a local Git repository, speed 10",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the output does not say %q", want)
		}
	}
	// The Git repository and the engine's logs are removed after a run that ended as expected.
	m := regexp.MustCompile(`Git repository of the steps: (\S+)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatal("the output does not name the Git repository")
	}
	if _, err := os.Stat(filepath.Dir(m[1])); !os.IsNotExist(err) {
		t.Errorf("the demo's Git repository %s is still there after the run (%v)", m[1], err)
	}
	if strings.Contains(text, "Logs of "+name) {
		t.Errorf("the output names kept logs of %s after a run that ended as expected", name)
	}
	return text
}

// TestDemoSaysWhenFluxDies kills Flux's source-controller as the first step starts: the step must
// fail at once with an error naming it and quoting its log (not wait for --step-timeout), the demo
// must stop, keep Flux's logs and the Git repository, and leave nothing running.
func TestDemoSaysWhenFluxDies(t *testing.T) {
	root, err := localhub.RepoRoot("")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkFluxBinaries(root); err != nil {
		t.Fatalf("Flux is not built (an integration test never passes by skipping): %v", err)
	}
	var out syncBuffer
	o := quick(&out)
	o.Engine = engineFlux
	o.Steps = []string{"01-fresh-install", "02-rolling-update"}
	killed := make(chan string, 1)
	// The killing waits for step 01 until the demo ends.
	running, ended := context.WithCancel(context.Background())
	go func() {
		if _, err := harness.Until(running, 10*time.Minute, 20*time.Millisecond, func() string {
			if !strings.Contains(out.String(), "== 01-fresh-install") {
				return "step 01 has not started"
			}
			return ""
		}); err != nil {
			killed <- "nothing: " + err.Error()
			return
		}
		// The kernel keeps the first 15 bytes of a command's name.
		for _, c := range childproc.Children(os.Getpid()) {
			if strings.HasSuffix(c, "(flux-source-con)") {
				pid, _ := strconv.Atoi(strings.Fields(c)[0])
				if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
					killed <- "kill: " + err.Error()
					return
				}
				killed <- c
				return
			}
		}
		killed <- fmt.Sprintf("no source-controller among the children %v", childproc.Children(os.Getpid()))
	}()
	sum, err := Run(context.Background(), o)
	ended()
	t.Logf("killed %s; demo output:\n%s", <-killed, out.String())
	if err != nil {
		t.Fatal(err)
	}
	checkNothingLeft(t, sum)
	if len(sum.Steps) != 1 || sum.Steps[0].Result != Error || !strings.Contains(sum.Steps[0].Why, "source-controller exited") {
		t.Fatalf("steps %+v; want 01-fresh-install alone, an Error naming source-controller's exit", sum.Steps)
	}
	if sum.ExitCode() != exitUnexpected {
		t.Errorf("exit code %d, want %d", sum.ExitCode(), exitUnexpected)
	}
	text := out.String()
	for _, want := range []string{"Stopping: step 01-fresh-install could not be applied", "Logs of Flux: ", "The demo's Git repository is kept: "} {
		if !strings.Contains(text, want) {
			t.Errorf("the output does not say %q", want)
		}
	}
	// What the demo kept is there; the test removes it (the repository's parent holds the CI
	// checkouts too).
	for re, remove := range map[string]func(string) string{
		`Logs of Flux: (\S+)`:                              func(p string) string { return p },
		`The demo's Git repository is kept: (\S+)`:         filepath.Dir,
		`Logs of the controller and the simulation: (\S+)`: func(p string) string { return p },
	} {
		if m := regexp.MustCompile(re).FindStringSubmatch(text); m != nil {
			if _, err := os.Stat(m[1]); err != nil {
				t.Errorf("%s: %v", m[0], err)
			}
			os.RemoveAll(remove(m[1]))
		}
	}
}
