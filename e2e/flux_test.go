//go:build integration

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/operations"
	"github.com/addonops/addonops/internal/rolloutview"
	"github.com/addonops/addonops/internal/testing/flux"
	"github.com/addonops/addonops/internal/testing/gitrepo"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/mdblock"
	"github.com/addonops/addonops/internal/testing/ssapply"
)

// TestFlux delivers the rollout examples to the hub through Flux, as health/README.md's Flux recipe
// says: every step is a commit of a Git repository on disk; CI's side of the recipe
// (health/flux/render-workflow.yaml's Render step and the README's publish lines, which are the
// workflow's Publish step without registry credentials, run as GitHub Actions runs a step) renders
// the commit with hack/render.sh and pushes it with `flux push artifact` / `flux tag artifact` to
// an OCI registry on loopback (plain HTTP: go-containerregistry, which the flux CLI uses, speaks
// HTTP to a loopback registry by itself, so the lines run unchanged; `flux push artifact` has
// --insecure-registry, `flux tag artifact` no such flag); Flux's own source-controller and kustomize-controller
// (internal/testing/flux) pull it and apply it with the OCIRepository and Kustomization of
// health/flux/addonops-hub.yaml (healthCheckExprs, wait, prune). The test never applies an add-on
// object itself: after a push, everything on the hub is Flux's and the controller's doing.
//
// Steps: the four rollout examples; `addonops pause` while Flux keeps reconciling and a commit lands
// paused; `addonops resume`; the bad version (its canary fails) and its `git revert`, a rollback
// reached by Git alone. At each step the Kustomization's conditions and health verdict are checked
// against `addonops status`, the superseded config versions against the hub, and, over quiet
// periods, kustomize-controller's writes per object (none: no apply loop).
func TestFlux(t *testing.T) {
	// A hub of its own: TestEndToEnd rolls out the same add-on with its own OCM on the package's
	// shared hub.
	hub := ownHub(t, "the Flux test")
	s := newSuiteOn(t, hub)
	fx := flux.ForTest(t, hub, flux.Options{})
	t.Logf("Flux ready in %s: OCI registry %s, source-controller, kustomize-controller (logs in %s)",
		fx.StartDuration.Round(time.Millisecond), fx.Registry, fx.Dir)

	r := newFluxRun(t, s, fx)
	r.rolloutExamples(t)
	good := r.pauseResume(t)
	r.badVersionAndRevert(t, good)
}

const (
	// renderWorkflow is CI's side of the recipe, and healthReadme says it in prose.
	renderWorkflow = "health/flux/render-workflow.yaml"
	healthReadme   = "health/README.md"
	// fluxKustomization is the name the recipe gives its OCIRepository and Kustomization.
	fluxKustomization = "hello-addon-hub"
	// fluxPruneAnnotation is what config-hash stamps on hashed configs.
	fluxPruneAnnotation = "kustomize.toolkit.fluxcd.io/prune"
	// The test's intervals, instead of the recipe's 1m and 10m: the source is polled every 2s, and
	// the Kustomization reconciles (applies again, checks health again) every 10s.
	fluxSourceInterval        = "2s"
	fluxKustomizationInterval = "10s"
	// fluxTimeout bounds one push-to-verdict wait: a whole rollout with its health-check polls
	// (Flux polls every 5s) on two shared cores.
	fluxTimeout = 4 * time.Minute
	// quietPeriod is how long writes are counted after a verdict; it spans at least two of the
	// Kustomization's own intervals besides the reconciles the test requests.
	quietPeriod = 25 * time.Second
	// pausedHold is how long the test watches a paused rollout stay paused under Flux (several
	// health-check polls).
	pausedHold = 15 * time.Second
	// paused is the Progressing reason of a paused placement; placementNotFound of one whose
	// Placement does not exist.
	paused            = "Paused"
	placementNotFound = "PlacementNotFound"
)

// fluxRun is one run of the recipe: the user's repository, CI's workflow steps and the hub's state.
type fluxRun struct {
	s    *suite
	fx   *flux.Flux
	repo *gitrepo.Repo
	// artifact is the OCI address CI pushes to and the OCIRepository follows: the workflow's
	// ARTIFACT with the registry on loopback.
	artifact string
	// render is the workflow's Render step; publish the README's publish lines (the workflow's
	// Publish step without credentials).
	render, publish string
	env             []string // the workflow's env, as the steps see it
	ciBin           string   // what the workflow's install steps leave on the PATH
	work            string   // CI checkouts
	kust            *recorder[kustSnap]
	mcas            *recorder[mcaSnap]
	cma             *recorder[progSnap]
	// configs are the hashed configs ("<Kind>/<namespace>/<name>") every commit so far rendered.
	configs map[string]bool
	// last is the newest step's rendered objects.
	last []*unstructured.Unstructured
}

func newFluxRun(t *testing.T, s *suite, fx *flux.Flux) *fluxRun {
	t.Helper()
	root := t.TempDir()
	repo, err := gitrepo.New(filepath.Join(root, "addons"))
	if err != nil {
		t.Fatal(err)
	}
	if err := gitrepo.RolloutExamples(repo, tools.Root); err != nil {
		t.Fatal(err)
	}
	r := &fluxRun{s: s, fx: fx, repo: repo, work: filepath.Join(root, "ci"), configs: map[string]bool{}}
	r.loadWorkflow(t)

	// What the workflow's install steps leave on the PATH ($HOME/.local/bin): the functions and
	// kustomize (built by TestMain from this tree and the go.mod), and the flux CLI (which
	// fluxcd/flux2/action installs: here the one tools/flux builds).
	r.ciBin = filepath.Join(root, "ci-bin")
	links := map[string]string{"kustomize": tools.Kustomize, "flux": fx.CLI}
	for _, f := range []string{"config-hash", "addon-template", "rollout-strategy"} {
		links[f] = filepath.Join(tools.Bin, f)
	}
	if err := os.MkdirAll(r.ciBin, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(r.ciBin, name)); err != nil {
			t.Fatal(err)
		}
	}

	r.kust = r.recordKustomization(s.ctx, t)
	r.mcas = s.recordMCAs(s.ctx, t, rolloutAddon)
	r.cma = s.recordCMA(s.ctx, t, rolloutAddon)
	return r
}

// loadWorkflow reads the Render and Publish steps and the env of render-workflow.yaml.
func (r *fluxRun) loadWorkflow(t *testing.T) {
	t.Helper()
	var wf struct {
		Env  map[string]string `json:"env"`
		Jobs map[string]struct {
			Steps []struct {
				Name string `json:"name"`
				Run  string `json:"run"`
			} `json:"steps"`
		} `json:"jobs"`
	}
	data, err := os.ReadFile(filepath.Join(tools.Root, renderWorkflow))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatalf("%s: %v", renderWorkflow, err)
	}
	var publish string
	for _, job := range wf.Jobs {
		for _, step := range job.Steps {
			switch {
			case strings.Contains(step.Run, "hack/render.sh"):
				r.render = step.Run
			case strings.Contains(step.Run, "flux push artifact"):
				publish = step.Run
			}
		}
	}
	if r.render == "" || publish == "" {
		t.Fatalf("%s: want a step running hack/render.sh and one running flux push artifact", renderWorkflow)
	}
	// The README's publish lines are what runs (they are marked covered by this test); they must be
	// the workflow's Publish step but for the registry credentials (--creds).
	r.publish = readmeBlock(t, healthReadme, "flux push artifact")
	want := shellLines(publish)
	for i := range want {
		want[i] = strings.Join(strings.Fields(regexp.MustCompile(`--creds="[^"]*"`).ReplaceAllString(want[i], "")), " ")
	}
	if got := shellLines(r.publish); !slices.Equal(got, want) {
		t.Fatalf("%s's publish lines are not %s's Publish step without --creds:\n%s\nvs\n%s", healthReadme, renderWorkflow,
			strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if strings.Contains(r.render, "${{") {
		t.Fatalf("%s: the Render step uses a GitHub expression the test does not provide: %s", renderWorkflow, r.render)
	}
	// The workflow's ARTIFACT with owner "example" is the recipe's OCIRepository url
	// (TestRenderWorkflow checks it); here it is on the local registry.
	artifact := strings.ReplaceAll(wf.Env["ARTIFACT"], "${{ github.repository_owner }}", "example")
	if !strings.HasPrefix(artifact, "oci://ghcr.io/") {
		t.Fatalf("%s: ARTIFACT %q, want an oci://ghcr.io/ address", renderWorkflow, wf.Env["ARTIFACT"])
	}
	r.artifact = "oci://" + r.fx.Registry + strings.TrimPrefix(artifact, "oci://ghcr.io")
	for k, v := range wf.Env {
		switch k {
		case "ARTIFACT":
			v = r.artifact
		case "PACKAGES":
			v = gitrepo.HubDir // the package the hub runs
		}
		r.env = append(r.env, k+"="+v)
	}
	t.Logf("CI: %s's Render step %q, then %s's publish lines:\n%s", renderWorkflow, r.render, healthReadme, r.publish)
}

// readmeBlock returns the content of the sh block of the markdown file (relative to the
// repository root) that contains what.
func readmeBlock(t *testing.T, file, what string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(tools.Root, file))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := mdblock.Extract(file, string(src))
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, b := range blocks {
		if b.Lang == "sh" && strings.Contains(b.Content, what) {
			found = append(found, b.Content)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s: %d sh blocks run %q, want one", file, len(found), what)
	}
	return found[0]
}

// shellLines are the commands of a shell script, continuation lines joined, comments and spacing
// dropped.
func shellLines(script string) []string {
	var out []string
	for _, c := range mdblock.Commands(mdblock.Block{Lang: "sh", Content: script}) {
		out = append(out, strings.Join(strings.Fields(mdblock.StripComment(c.Text)), " "))
	}
	return out
}

// ci runs CI for commit sha, as GitHub Actions would run the workflow on a push to main: a
// checkout of the commit with addonops in .addonops, then the Render step and the README's publish
// lines (each with bash --noprofile --norc -eo pipefail, the workflow's env, GITHUB_* of the push). It returns the rendered objects
// and remembers the hashed configs among them.
func (r *fluxRun) ci(t *testing.T, sha string) []*unstructured.Unstructured {
	t.Helper()
	checkout := filepath.Join(r.work, sha[:12])
	if err := r.repo.Checkout(sha, checkout); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(tools.Root, filepath.Join(checkout, ".addonops")); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), r.env...)
	env = append(env,
		"PATH="+r.ciBin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"GITHUB_SHA="+sha, "GITHUB_REF_NAME=main",
		// $GITHUB_SERVER_URL/$GITHUB_REPOSITORY, the artifact's --source, is the repository.
		"GITHUB_SERVER_URL=file://"+filepath.Dir(r.repo.Dir), "GITHUB_REPOSITORY="+filepath.Base(r.repo.Dir),
	)
	for _, step := range []struct{ name, script string }{{"Render", r.render}, {"Publish (" + healthReadme + ")", r.publish}} {
		cmd := exec.CommandContext(r.s.ctx, "bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step.script)
		cmd.Dir, cmd.Env = checkout, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("CI step %q on %s: %v\n%s", step.name, sha[:12], err, out)
		}
		t.Logf("CI step %q on %s:\n%s", step.name, sha[:12], strings.TrimSpace(string(out)))
	}
	rendered, err := os.ReadFile(filepath.Join(checkout, "rendered", gitrepo.HubDir+".yaml"))
	if err != nil {
		t.Fatalf("CI rendered no %s.yaml: %v", gitrepo.HubDir, err)
	}
	objs, err := ssapply.Decode(bytes.NewReader(rendered))
	if err != nil {
		t.Fatalf("the rendered %s.yaml: %v", gitrepo.HubDir, err)
	}
	for _, o := range objs {
		if o.GetAnnotations()[fluxPruneAnnotation] == "disabled" {
			r.configs[configKey(o)] = true
		}
	}
	r.last = objs
	return objs
}

// commit points hub/ at dir and commits it.
func (r *fluxRun) commit(t *testing.T, dir, msg string) string {
	t.Helper()
	sha, err := gitrepo.CommitStep(r.repo, dir, nil, msg)
	if err != nil {
		t.Fatal(err)
	}
	return sha
}

// applyRecipe applies the recipe's OCIRepository and Kustomization as a user would (`kubectl
// apply`), changed only where the test must (flux.LocalRecipe): the url (the local registry),
// insecure (it speaks plain HTTP) and the intervals. Everything else, healthCheckExprs, wait,
// prune, timeout and path included, is the file's.
func (r *fluxRun) applyRecipe(t *testing.T) {
	t.Helper()
	recipe, err := r.fx.LocalRecipe(tools.Root, flux.RecipeOptions{SourceInterval: fluxSourceInterval,
		Interval: fluxKustomizationInterval, RetryInterval: fluxKustomizationInterval})
	if err != nil {
		t.Fatal(err)
	}
	if recipe.Artifact != r.artifact {
		t.Fatalf("%s: the OCIRepository follows %s (here %s), the workflow pushes to %s", flux.RecipeFile,
			strings.Replace(recipe.Artifact, r.fx.Registry, "ghcr.io", 1), recipe.Artifact, r.artifact)
	}
	if recipe.Name != fluxKustomization {
		t.Fatalf("%s: the OCIRepository and the Kustomization are %s, want %s", flux.RecipeFile, recipe.Name, fluxKustomization)
	}
	if err := r.fx.ApplyRecipe(r.s.ctx, recipe, fieldManager); err != nil {
		t.Fatal(err)
	}
	t.Logf("applied %s with %s", flux.RecipeFile, strings.Join(recipe.Changes, "; "))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// kustSnap is what the test follows of the Kustomization.
type kustSnap struct {
	// Ready, Healthy, Reconciling and Stalled are "<status>/<reason>" of those conditions, "" when
	// the condition is absent.
	Ready, Healthy, Reconciling, Stalled string
	// Message and Progress are the Ready and the Reconciling conditions' messages.
	Message, Progress string
	// Attempted and Applied are status.lastAttemptedRevision and lastAppliedRevision.
	Attempted, Applied string
	// ReadySince is the Ready condition's lastTransitionTime.
	ReadySince string
}

func (k kustSnap) Key() string { return fluxKustomization }

func (k kustSnap) String() string {
	s := fmt.Sprintf("Ready=%s Healthy=%s Reconciling=%s Stalled=%s attempted=%s applied=%s: %q", orDash(k.Ready), orDash(k.Healthy),
		orDash(k.Reconciling), orDash(k.Stalled), orDash(k.Attempted), orDash(k.Applied), k.Message)
	if k.Progress != "" {
		s += fmt.Sprintf(" (reconciling: %q)", k.Progress)
	}
	return s
}

func snapKustomization(u *unstructured.Unstructured) []kustSnap {
	if u.GetName() != fluxKustomization {
		return nil
	}
	var k kustSnap
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		v := fmt.Sprintf("%v/%v", m["status"], m["reason"])
		msg, _ := m["message"].(string)
		switch m["type"] {
		case "Ready":
			k.Ready, k.Message = v, msg
			k.ReadySince, _ = m["lastTransitionTime"].(string)
		case "Healthy":
			k.Healthy = v
		case "Reconciling":
			k.Reconciling, k.Progress = v, msg
		case "Stalled":
			k.Stalled = v
		}
	}
	k.Attempted, _, _ = unstructured.NestedString(u.Object, "status", "lastAttemptedRevision")
	k.Applied, _, _ = unstructured.NestedString(u.Object, "status", "lastAppliedRevision")
	return []kustSnap{k}
}

// recordKustomization records every change of the recipe's Kustomization, in the server's order.
func (r *fluxRun) recordKustomization(ctx context.Context, t *testing.T) *recorder[kustSnap] {
	api := r.s.c.Dynamic.Resource(flux.KustomizationGVR).Namespace(flux.Namespace)
	sel := fields.OneTermEqualSelector("metadata.name", fluxKustomization).String()
	return record(ctx, t, "Kustomization "+fluxKustomization,
		func(ctx context.Context, o metav1.ListOptions) ([]*unstructured.Unstructured, string, error) {
			o.FieldSelector = sel
			l, err := api.List(ctx, o)
			if err != nil {
				return nil, "", err
			}
			var out []*unstructured.Unstructured
			for i := range l.Items {
				out = append(out, &l.Items[i])
			}
			return out, l.GetResourceVersion(), nil
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return api.Watch(ctx, o)
		}, snapKustomization)
}

// waitLong is suite.eventually with a deadline of its own (a push-to-verdict wait spans a whole
// rollout and Flux's polls).
func (r *fluxRun) waitLong(t *testing.T, what string, d time.Duration, check func() string) {
	t.Helper()
	harness.Eventually(t, d, what, check, harness.Every(200*time.Millisecond), harness.Within(r.s.ctx))
}

// ociRevision waits until source-controller fetched the artifact CI pushed for commit sha and
// returns its revision ("main@sha256:..."), the one the Kustomization reports.
func (r *fluxRun) ociRevision(t *testing.T, sha string) string {
	t.Helper()
	want := flux.SourceRevision(sha)
	var rev string
	r.waitLong(t, "source-controller fetches the artifact of "+sha[:12], fluxTimeout, func() string {
		o, err := r.s.c.Dynamic.Resource(flux.OCIRepositoryGVR).Namespace(flux.Namespace).Get(r.s.ctx, fluxKustomization, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		var source string
		rev, source = flux.Artifact(o)
		if source != want {
			conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
			return fmt.Sprintf("artifact %s from %s, want from %s; conditions %v", rev, source, want, conds)
		}
		return ""
	})
	return rev
}

// waitKustomization waits until the Kustomization's latest state satisfies check and returns it.
func (r *fluxRun) waitKustomization(t *testing.T, what string, check func(kustSnap) string) kustSnap {
	t.Helper()
	var got kustSnap
	r.waitLong(t, what, fluxTimeout, func() string {
		if err := r.kust.Err(); err != nil {
			return err.Error()
		}
		got, _ = r.kust.Get(fluxKustomization)
		return check(got)
	})
	return got
}

// waitCommit waits until what Flux did with commit sha (flux's CommitState, which the demo reads
// too) satisfies check, and returns it. A part of Flux that exited fails the test at once.
func (r *fluxRun) waitCommit(t *testing.T, what, sha string, check func(gitrepo.CommitState) bool) gitrepo.CommitState {
	t.Helper()
	var st gitrepo.CommitState
	r.waitLong(t, what, fluxTimeout, func() string {
		if st = r.fx.CommitState(r.s.ctx, fluxKustomization, sha); st.Fatal {
			t.Fatalf("%s: %s", what, st.Problem)
		}
		if !check(st) {
			return st.Line
		}
		return ""
	})
	return st
}

// waitReady waits until Flux calls commit sha healthy (waitCommit) and the Kustomization is Ready
// with its artifact rev, and checks the conditions it went
// through since mark: the health checks ran for rev (Reconciling, Healthy Unknown), nothing was
// Ready=False on the way but what tolerated allows (nil: nothing), and nothing Stalled.
func (r *fluxRun) waitReady(t *testing.T, sha, rev string, mark int, tolerated func(kustSnap) bool) kustSnap {
	t.Helper()
	r.waitCommit(t, "Flux applied "+sha[:12]+" and calls it healthy", sha, func(st gitrepo.CommitState) bool { return st.Verdict == gitrepo.Healthy })
	got := r.waitKustomization(t, "the Kustomization is Ready with "+rev, func(k kustSnap) string {
		if k.Applied != rev || k.Ready != "True/ReconciliationSucceeded" {
			return k.String()
		}
		return ""
	})
	if got.Healthy != "True/Succeeded" || got.Reconciling != "" || got.Stalled != "" || !strings.Contains(got.Message, "Applied revision: "+rev) {
		t.Errorf("Ready Kustomization: %s; want Healthy True/Succeeded, no Reconciling or Stalled condition, message \"Applied revision: %s\"", got, rev)
	}
	_, events := r.kust.Since(mark)
	t.Logf("Kustomization changes:%s", eventLog(events))
	healthChecks := false
	for _, e := range events {
		if e.Attempted == rev && e.Reconciling == "True/Progressing" && e.Healthy == "Unknown/Progressing" &&
			strings.Contains(e.Progress, "Running health checks for revision "+rev) {
			healthChecks = true
		}
		if e.Stalled != "" && !strings.HasPrefix(e.Stalled, "False") {
			t.Errorf("the Kustomization stalled: %s", e)
		}
		if strings.HasPrefix(e.Ready, "False") {
			if tolerated != nil && tolerated(e) {
				t.Logf("on the way to %s, as documented: %s", rev, e)
			} else {
				t.Errorf("the Kustomization was Ready=False on the way to %s: %s", rev, e)
			}
		}
	}
	if !healthChecks {
		t.Errorf("no Kustomization state ran the health checks for %s (Reconciling True/Progressing, Healthy Unknown)", rev)
	}
	return got
}

// checkAgreement compares Flux's verdict with `addonops status` when the Kustomization is Ready:
// the add-on is Healthy and Succeeded there, and every placement's rollout succeeded no later than
// Flux turned Ready (Flux did not call a rollout done before the controller did).
func (r *fluxRun) checkAgreement(t *testing.T, k kustSnap) {
	t.Helper()
	view := r.s.addonopsStatus(t)
	if view.Phase != rolloutview.PhaseSucceeded || view.Health.Health != rolloutview.Healthy {
		t.Errorf("Flux is Ready, addonops status says phase %s, health %s (%s)", view.Phase, view.Health.Health, view.Health.Message)
	}
	readyAt, err := time.Parse(time.RFC3339, k.ReadySince)
	if err != nil {
		t.Errorf("the Ready condition's lastTransitionTime %q: %v", k.ReadySince, err)
		return
	}
	for _, p := range view.Placements {
		if p.Since == nil {
			t.Errorf("addonops status: placement %s has no Progressing condition time", p.Key())
		} else if p.Since.After(readyAt) {
			t.Errorf("Flux turned Ready at %s, before placement %s reported %s (at %s)", readyAt, p.Key(), p.Reason, p.Since.Time)
		}
	}
}

// inventory is the Kustomization's status.inventory: "<namespace>_<name>_<group>_<Kind>" ids.
func (r *fluxRun) inventory(t *testing.T) map[string]bool {
	t.Helper()
	k, err := r.s.c.Dynamic.Resource(flux.KustomizationGVR).Namespace(flux.Namespace).Get(r.s.ctx, fluxKustomization, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	entries, _, _ := unstructured.NestedSlice(k.Object, "status", "inventory", "entries")
	out := map[string]bool{}
	for _, e := range entries {
		if m, ok := e.(map[string]any); ok {
			out[fmt.Sprint(m["id"])] = true
		}
	}
	return out
}

func configKey(o *unstructured.Unstructured) string {
	return o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
}

func inventoryID(o *unstructured.Unstructured) string {
	return fmt.Sprintf("%s_%s_%s_%s", o.GetNamespace(), o.GetName(), o.GroupVersionKind().Group, o.GetKind())
}

// checkInventory: Flux's inventory is exactly the newest commit's rendered objects, and every
// hashed config an earlier commit rendered is still on the hub, marked prune disabled (config-hash),
// though out of the inventory: Flux pruned nothing that clusters or the version history may still
// read (the controller's own garbage collection keeps a version at least 10 minutes).
func (r *fluxRun) checkInventory(t *testing.T) {
	t.Helper()
	inv := r.inventory(t)
	want := map[string]bool{}
	current := map[string]bool{}
	for _, o := range r.last {
		want[inventoryID(o)] = true
		current[configKey(o)] = true
	}
	for id := range want {
		if !inv[id] {
			t.Errorf("Flux's inventory lacks %s (rendered by the commit)", id)
		}
	}
	for id := range inv {
		if !want[id] {
			t.Errorf("Flux's inventory holds %s, which the commit did not render", id)
		}
	}
	var kept []string
	for cfg := range r.configs {
		if current[cfg] {
			continue
		}
		parts := strings.SplitN(cfg, "/", 3)
		gvk := schema.GroupVersionKind{Group: "addon.open-cluster-management.io", Version: "v1alpha1", Kind: parts[0]}
		o, err := r.s.get(gvk, parts[1], parts[2])
		if err != nil {
			t.Errorf("superseded %s: %v (pruned?)", cfg, err)
			continue
		}
		if o.GetAnnotations()[fluxPruneAnnotation] != "disabled" {
			t.Errorf("superseded %s: annotations %v, want %s: disabled", cfg, o.GetAnnotations(), fluxPruneAnnotation)
		}
		kept = append(kept, cfg)
	}
	slices.Sort(kept)
	t.Logf("Flux's inventory: the commit's %d objects; superseded config versions still on the hub: %v", len(inv), kept)
}

// requestReconcile asks Flux to reconcile the Kustomization now, as `flux reconcile kustomization`
// does, and waits until it has handled the request (status.lastHandledReconcileAt): a whole
// reconcile, apply and health checks, ran. It returns how long that took.
func (r *fluxRun) requestReconcile(t *testing.T) time.Duration {
	t.Helper()
	api := r.s.c.Dynamic.Resource(flux.KustomizationGVR).Namespace(flux.Namespace)
	start := time.Now()
	at, err := r.fx.RequestReconcile(r.s.ctx, flux.KustomizationGVR, fluxKustomization, fieldManager)
	if err != nil {
		t.Fatal(err)
	}
	r.waitLong(t, "Flux handles the reconcile request "+at, fluxTimeout, func() string {
		k, err := api.Get(r.s.ctx, fluxKustomization, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if got, _, _ := unstructured.NestedString(k.Object, "status", "lastHandledReconcileAt"); got != at {
			return fmt.Sprintf("lastHandledReconcileAt %q", got)
		}
		return ""
	})
	return time.Since(start)
}

// writes are the changes of one object over a quiet period.
type writes struct {
	kustomize int      // kustomize-controller's: its managedFields entry changed
	others    []string // the managers whose entries changed in the other writes
}

// quiet watches every object of Flux's inventory for quietPeriod while requesting reconciles, and
// fails for every write kustomize-controller made: after a verdict, with nothing new in Git, an
// apply that changes anything is a fight with another writer (no apply loop). Writes by others
// (the controller's status) are logged.
func (r *fluxRun) quiet(t *testing.T, what string) {
	t.Helper()
	ctx, cancel := context.WithCancel(r.s.ctx)
	defer cancel()
	var mu sync.Mutex
	counts := map[string]*writes{}
	var wg sync.WaitGroup
	for id := range r.inventory(t) {
		parts := strings.Split(id, "_")
		if len(parts) != 4 {
			t.Fatalf("inventory id %q: want <namespace>_<name>_<group>_<Kind>", id)
		}
		ns, name, group, kind := parts[0], parts[1], parts[2], parts[3]
		mapping, err := r.s.mapper.RESTMapping(schema.GroupKind{Group: group, Kind: kind})
		if err != nil {
			t.Fatalf("inventory %s: %v", id, err)
		}
		api := r.s.c.Dynamic.Resource(mapping.Resource).Namespace(ns)
		cur, err := api.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("inventory %s: %v", id, err)
		}
		w := &writes{}
		counts[id] = w
		sel := fields.OneTermEqualSelector("metadata.name", name).String()
		rw, err := watchtools.NewRetryWatcherWithContext(ctx, cur.GetResourceVersion(),
			watcherFunc(func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				o.FieldSelector = sel
				return api.Watch(ctx, o)
			}))
		if err != nil {
			t.Fatalf("watching %s: %v", id, err)
		}
		prev := managerEntries(cur)
		wg.Go(func() {
			defer rw.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case ev, ok := <-rw.ResultChan():
					if !ok {
						return
					}
					o, isObj := ev.Object.(*unstructured.Unstructured)
					if !isObj || ev.Type != watch.Modified {
						continue
					}
					next := managerEntries(o)
					mu.Lock()
					if next[flux.KustomizeManager] != prev[flux.KustomizeManager] {
						w.kustomize++
					} else {
						var changed []string
						for m, e := range next {
							if prev[m] != e {
								changed = append(changed, m)
							}
						}
						slices.Sort(changed)
						w.others = append(w.others, strings.Join(changed, "+"))
					}
					mu.Unlock()
					prev = next
				}
			}
		})
	}
	start := time.Now()
	var took []string
	for time.Since(start) < quietPeriod {
		took = append(took, r.requestReconcile(t).Round(100*time.Millisecond).String())
		select {
		case <-ctx.Done():
		case <-time.After(quietPeriod / 3):
		}
	}
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	var ids []string
	for id := range counts {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var report []string
	for _, id := range ids {
		w := counts[id]
		report = append(report, fmt.Sprintf("%s: kustomize-controller %d, others %d %v", id, w.kustomize, len(w.others), w.others))
		if w.kustomize > 0 {
			t.Errorf("%s: kustomize-controller wrote %s %d times in %s with nothing new in Git (an apply loop)", what, id, w.kustomize, time.Since(start).Round(time.Second))
		}
	}
	t.Logf("%s: writes per object over %s with %d requested reconciles (each handled in %v) and the %s interval:\n  %s",
		what, time.Since(start).Round(time.Second), len(took), took, fluxKustomizationInterval, strings.Join(report, "\n  "))
}

// managerEntries returns each field manager's managedFields entries (operation, subresource,
// time, fields) as JSON, by manager.
func managerEntries(o *unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	for _, mf := range o.GetManagedFields() {
		b, _ := json.Marshal(mf)
		out[mf.Manager] += string(b)
	}
	return out
}

// rolloutExamples runs kustomize-rollout-examples 01 to 04 through Flux, each a commit, with the
// checks of TestEndToEnd's rollout steps on what the controller did, and Flux's own view.
func (r *fluxRun) rolloutExamples(t *testing.T) {
	s := r.s
	hist := &expectedHistory{}
	for i, step := range rolloutSteps[:4] {
		completed := false
		t.Run("flux-"+step.name, func(t *testing.T) {
			sha := r.commit(t, "e2e/testdata/rollout-examples/"+step.name, step.name)
			mcaMark, cmaMark, kMark := r.mcas.Mark(), r.cma.Mark(), r.kust.Mark()
			pushed := time.Now()
			objs := r.ci(t, sha)
			adc, tpl := only(t, objs, "AddOnDeploymentConfig"), only(t, objs, "AddOnTemplate")
			if v := customizedVariable(adc, "AGENT_VERSION"); v != step.version {
				t.Fatalf("CI rendered AddOnDeploymentConfig %s with AGENT_VERSION=%q, want %q", adc.GetName(), v, step.version)
			}
			if i == 0 {
				r.applyRecipe(t)
			}
			rev := r.ociRevision(t, sha)
			// No HealthCheckFailed on the way, not even for a commit that adds a placement: Flux
			// applies the ClusterManagementAddOn before its new Placement, and the controller calls
			// the missing Placement Progressing for --placement-grace (health/README.md, Flux).
			k := r.waitReady(t, sha, rev, kMark, func(e kustSnap) bool {
				// The Kustomization, applied with its OCIRepository, looked before the source had an
				// artifact.
				return i == 0 && e.Attempted == "" && e.Ready == "False/ArtifactFailed"
			})
			if _, events := r.cma.Since(cmaMark); slices.ContainsFunc(events, func(p progSnap) bool { return p.Reason == placementNotFound }) {
				t.Logf("%s: the controller saw the ClusterManagementAddOn before its Placement (PlacementNotFound within the grace); Flux stayed in progress", step.name)
			}
			t.Logf("%s: pushed %s (%s), Flux Ready after %s: %s", step.name, sha[:12], rev, time.Since(pushed).Round(100*time.Millisecond), k.Message)
			completed = true
			r.checkAgreement(t, k)

			placements := []string{globalPl}
			if step.canary {
				placements = append(placements, canaryPl)
			}
			waitRecorded(t, s, r.mcas, "every cluster applied "+adc.GetName(), func(m map[string]mcaSnap) string {
				for _, c := range clusters {
					got := m[c]
					_, done := reasonsOfKind(step.clusterKind(i, c))
					if got.AppliedADC != adc.GetName() || got.DesiredADC != adc.GetName() || got.AppliedTpl != tpl.GetName() || got.Progressing != done {
						return fmt.Sprintf("%s (want adc %s, template %s, %s)", got, adc.GetName(), tpl.GetName(), done)
					}
				}
				return ""
			})
			start, events := r.mcas.Since(mcaMark)
			cstart, cevents := r.cma.Since(cmaMark)
			t.Logf("ManagedClusterAddOn changes:%s", eventLog(events))
			t.Logf("install progression changes:%s", eventLog(cevents))
			nonCanaries := slices.DeleteFunc(slices.Clone(clusters), func(c string) bool { return slices.Contains(canaries, c) })
			checkMCASequences(t, step, i, start, events, adc.GetName())
			checkPacing(t, step, start, events, adc.GetName(), nonCanaries)
			checkProgressions(t, step, i, cstart, cevents, adc.GetName())
			hist.step(t, s, step, i, placements, adc.GetName(), tpl.GetName())
			s.checkAgents(t, step, adc.GetName())
			r.checkInventory(t)
		})
		if !completed {
			t.Fatalf("Flux did not deliver %s; the later steps build on it", step.name)
		}
	}
	t.Run("flux-no-apply-loop", func(t *testing.T) { r.quiet(t, "after 04-rollback") })
}

// pauseResume pauses the add-on with `addonops pause` once 04 is done, checks that Flux's
// reconciles keep the annotation (Git never sets it), commits the bad-version scenario's
// known-good version (v0.11.0, canary-gated, 20s progressDeadline) while paused, checks that Flux
// applies it, the annotation survives that apply, the rollout stays paused and Flux keeps waiting
// (InProgress, not failed), then resumes and checks the rollout completes and Flux turns Ready.
// It returns the known-good commit's AddOnDeploymentConfig.
func (r *fluxRun) pauseResume(t *testing.T) (good string) {
	s := r.s
	ok := t.Run("flux-pause-resume", func(t *testing.T) {
		cmaAPI := s.c.Addon.AddonV1alpha1().ClusterManagementAddOns()
		out := r.addonops(t, "pause", rolloutAddon)
		if !strings.Contains(out, operations.PauseAnnotation+": *") {
			t.Errorf("addonops pause printed %q, want the annotation %s: *", out, operations.PauseAnnotation)
		}
		// The annotation is the CLI's alone, and it stays through Flux's reconciles: a completed
		// rollout is simply done (README), so Flux stays Ready.
		checkPause := func(when string, want bool) {
			t.Helper()
			cma, err := cmaAPI.Get(s.ctx, rolloutAddon, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			v, has := cma.Annotations[operations.PauseAnnotation]
			if has != want || want && v != "*" {
				t.Errorf("%s: annotation %s=%q (set: %v), want set: %v", when, operations.PauseAnnotation, v, has, want)
			}
			for _, mf := range cma.ManagedFields {
				if mf.FieldsV1 != nil && strings.Contains(string(mf.FieldsV1.Raw), `"f:`+operations.PauseAnnotation+`"`) && mf.Manager != "addonops-cli" {
					t.Errorf("%s: %s owns the annotation %s (managedFields), want addonops-cli alone", when, mf.Manager, operations.PauseAnnotation)
				}
			}
		}
		kMark := r.kust.Mark()
		for n := 1; n <= 2; n++ {
			took := r.requestReconcile(t)
			checkPause(fmt.Sprintf("after Flux's reconcile %d while paused", n), true)
			t.Logf("paused: Flux reconcile %d handled in %s; the annotation stays", n, took.Round(100*time.Millisecond))
		}
		if _, events := r.kust.Since(kMark); slices.ContainsFunc(events, func(k kustSnap) bool { return !strings.HasPrefix(k.Ready, "True") && k.Reconciling == "" }) {
			t.Errorf("the Kustomization left Ready over reconciles of an unchanged, completed, paused add-on:%s", eventLog(events))
		}
		r.quiet(t, "paused, nothing new in Git")
		checkPause("after the quiet period", true)

		// A commit lands while paused: Flux applies it (the CMA's spec changes: progressDeadline),
		// the controller starts no cluster on it.
		before := s.agentImages(t)
		sha := r.commit(t, "e2e/testdata/bad-version/good", "known-good v0.11.0, canary-gated, 20s progressDeadline")
		mark := r.kust.Mark()
		pushed := time.Now()
		objs := r.ci(t, sha)
		good = only(t, objs, "AddOnDeploymentConfig").GetName()
		rev := r.ociRevision(t, sha)
		r.waitCommit(t, "Flux applied "+sha[:12]+" and runs its health checks", sha, func(st gitrepo.CommitState) bool {
			return st.Applied && st.Verdict == gitrepo.NoVerdict
		})
		k := r.waitKustomization(t, "Flux applied the commit made while paused and waits for its health", func(k kustSnap) string {
			if k.Attempted != rev || k.Reconciling != "True/Progressing" || !strings.Contains(k.Progress, "Running health checks for revision "+rev) {
				return k.String()
			}
			return ""
		})
		t.Logf("paused: pushed %s (%s); Flux applied it after %s: %s", sha[:12], rev, time.Since(pushed).Round(100*time.Millisecond), k)
		cma, err := cmaAPI.Get(s.ctx, rolloutAddon, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range cma.Spec.InstallStrategy.Placements {
			if p.RolloutStrategy.Progressive == nil || p.RolloutStrategy.Progressive.ProgressDeadline != "20s" {
				t.Errorf("placement %s/%s: Flux did not apply the commit's progressDeadline 20s: %+v", p.Namespace, p.Name, p.RolloutStrategy)
			}
		}
		checkPause("after Flux applied a change of the CMA", true)
		waitRecorded(t, s, r.cma, "both placements report Paused", func(m map[string]progSnap) string {
			for _, pl := range []string{globalPl, canaryPl} {
				if got := m[pl]; got.Reason != paused || got.DesiredADC != good {
					return fmt.Sprintf("%s, want Paused with desired %s", got, good)
				}
			}
			return ""
		})
		view := s.addonopsStatus(t)
		if view.Phase != rolloutview.PhaseSuspended || view.Health.Health != rolloutview.Suspended {
			t.Errorf("addonops status: phase %s, health %s while paused; want Suspended (Flux: InProgress)", view.Phase, view.Health.Health)
		}
		harness.Consistently(t, pausedHold, "the agent images while paused", func() string {
			if got := s.agentImages(t); !maps.Equal(got, before) {
				return fmt.Sprintf("%v, before %v", got, before)
			}
			return ""
		}, harness.Every(time.Second), harness.Within(s.ctx))
		if got := s.agentImages(t); !maps.Equal(got, before) {
			t.Errorf("agent images changed while paused: %v, before %v", got, before)
		}
		_, events := r.kust.Since(mark)
		for _, e := range events {
			if strings.HasPrefix(e.Ready, "False") || e.Stalled != "" && !strings.HasPrefix(e.Stalled, "False") || e.Applied == rev {
				t.Errorf("while paused the Kustomization went %s; want it waiting (Ready Unknown, Reconciling)", e)
			}
		}
		latest, _ := r.kust.Get(fluxKustomization)
		t.Logf("paused for %s: Flux %s; addonops status %s/%s", pausedHold, latest, view.Phase, view.Health.Health)
		if latest.Ready != "Unknown/Progressing" || latest.Healthy != "Unknown/Progressing" {
			t.Errorf("while paused: %s, want Ready and Healthy Unknown/Progressing", latest)
		}

		resumed := time.Now()
		r.addonops(t, "resume", rolloutAddon)
		checkPause("after addonops resume", false)
		k = r.waitReady(t, sha, rev, mark, nil)
		t.Logf("resumed: Flux Ready after %s (%s after the push): %s", time.Since(resumed).Round(100*time.Millisecond), time.Since(pushed).Round(100*time.Millisecond), k.Message)
		s.waitAllOn(t, r.mcas, r.cma, good)
		r.checkAgreement(t, k)
		r.checkInventory(t)
		checkPause("after Flux turned Ready", false)
	})
	if !ok {
		t.Fatal("the pause scenario failed; the bad version builds on its known-good commit")
	}
	return good
}

// badVersionAndRevert commits the bad version (its agent never becomes ready; the canary fails
// after 20s), checks that Flux reports the health check failed naming the add-on and agrees with
// `addonops status`, then `git revert`s it and checks that the revert alone rolls the canaries back
// (RollingBack, RollbackSucceeded) and Flux turns Ready.
func (r *fluxRun) badVersionAndRevert(t *testing.T, good string) {
	s := r.s
	t.Run("flux-bad-version", func(t *testing.T) {
		nonCanaries := slices.DeleteFunc(slices.Clone(clusters), func(c string) bool { return slices.Contains(canaries, c) })
		goodRender := r.last
		s.kubelet.markBad(badImage)
		// See testBadVersion: the canaries' agents are held unready before they are told the bad
		// version, so no status feedback of the old version passes for the new one.
		for _, c := range canaries {
			s.kubelet.hold(agentName(c))
		}
		badSHA := r.commit(t, "e2e/testdata/bad-version/bad", "v0.13.0-bad")
		mcaMark, cmaMark, kMark := r.mcas.Mark(), r.cma.Mark(), r.kust.Mark()
		pushed := time.Now()
		bad := only(t, r.ci(t, badSHA), "AddOnDeploymentConfig").GetName()
		rev := r.ociRevision(t, badSHA)
		r.waitCommit(t, "Flux applied "+badSHA[:12]+" and calls it failed", badSHA, func(st gitrepo.CommitState) bool { return st.Verdict == gitrepo.Failed })
		k := r.waitKustomization(t, "Flux reports the bad version's health check failed", func(k kustSnap) string {
			if k.Attempted != rev || k.Ready != "False/HealthCheckFailed" {
				return k.String()
			}
			return ""
		})
		t.Logf("bad version: pushed %s (%s), Flux failed the health check after %s: %s", badSHA[:12], rev, time.Since(pushed).Round(100*time.Millisecond), k)
		if k.Healthy != "False/HealthCheckFailed" || !strings.Contains(k.Message, "ClusterManagementAddOn/"+rolloutAddon) || k.Applied == rev {
			t.Errorf("failed Kustomization: %s; want Healthy False/HealthCheckFailed, the message naming ClusterManagementAddOn/%s, %s not the last applied revision", k, rolloutAddon, rev)
		}
		if k.Stalled != "" && !strings.HasPrefix(k.Stalled, "False") {
			t.Errorf("failed Kustomization stalled: %s; want Flux to retry at its interval", k)
		}
		view := s.addonopsStatus(t)
		if p := viewPlacement(view, canaryPl); p == nil || p.Reason != upgradeFailed || len(p.FailedClusters) == 0 {
			t.Errorf("addonops status: canary-placement %+v, want UpgradeFailed with the failed clusters", p)
		}
		if view.Phase != rolloutview.PhaseFailed || view.Health.Health != rolloutview.Degraded {
			t.Errorf("Flux failed the health check, addonops status says phase %s, health %s; want Failed, Degraded", view.Phase, view.Health.Health)
		}
		waitRecorded(t, s, r.cma, "global-placement waits for the canary", func(m map[string]progSnap) string {
			if got := m[globalPl]; got.Reason != waitingForCanary || got.AppliedADC != good {
				return fmt.Sprintf("%s, want WaitingForCanary on %s", got, good)
			}
			return ""
		})
		_, events := r.mcas.Since(mcaMark)
		for _, e := range events {
			if e.DesiredADC == bad && slices.Contains(nonCanaries, e.Cluster) {
				t.Errorf("%s (global-placement) was told to run the bad version: %s", e.Cluster, e)
			}
		}
		r.checkInventory(t)
		// Failing, Flux retries every interval: the retries apply nothing.
		r.quiet(t, "bad version failing")
		_, kevents := r.kust.Since(kMark)
		t.Logf("Kustomization changes since the bad push:%s", eventLog(kevents))

		// git revert: a real revert commit, rendered and published like any commit.
		for _, c := range canaries {
			s.kubelet.unhold(agentName(c))
		}
		// It must restore hub/ as the known-good commit had it.
		kustomization := filepath.Join(gitrepo.HubDir, "kustomization.yaml")
		before, err := r.repo.Show(badSHA+"^", kustomization)
		if err != nil {
			t.Fatal(err)
		}
		revertSHA, err := r.repo.RevertRestoring(badSHA, kustomization, before)
		if err != nil {
			t.Fatal(err)
		}
		revertMark, cmaRevertMark, kRevertMark := r.mcas.Mark(), r.cma.Mark(), r.kust.Mark()
		pushed = time.Now()
		objs := r.ci(t, revertSHA)
		if len(objs) != len(goodRender) {
			t.Errorf("the revert rendered %d objects, the known-good commit %d", len(objs), len(goodRender))
		}
		for i := range min(len(objs), len(goodRender)) {
			if d := sameObject(objs[i], goodRender[i]); d != "" {
				t.Errorf("the revert rendered %s differently from the known-good commit:%s", ssapply.Name(objs[i]), d)
			}
		}
		badRev := rev
		rev = r.ociRevision(t, revertSHA)
		k = r.waitReady(t, revertSHA, rev, kRevertMark, func(e kustSnap) bool {
			// Flux's retries of the bad revision until it fetched the revert.
			return e.Attempted == badRev && e.Ready == "False/HealthCheckFailed"
		})
		t.Logf("revert: pushed %s (%s), Flux Ready after %s: %s", revertSHA[:12], rev, time.Since(pushed).Round(100*time.Millisecond), k.Message)
		s.waitAllOn(t, r.mcas, r.cma, good)
		waitRecorded(t, s, r.cma, "canary-placement reports the rollback", func(m map[string]progSnap) string {
			if got := m[canaryPl]; got.Reason != rollbackSucceeded {
				return fmt.Sprintf("%s, want RollbackSucceeded", got)
			}
			return ""
		})
		r.checkAgreement(t, k)
		cstart, cevents := r.cma.Since(cmaRevertMark)
		t.Logf("install progression changes after the revert:%s", eventLog(cevents))
		if got := onlyValues(reasonsOf(cstart, cevents, canaryPl, func(p progSnap) string { return p.Reason }), rollingBack, rollbackSucceeded); !slices.Equal(got, []string{rollingBack, rollbackSucceeded}) {
			t.Errorf("%s: Progressing reasons over the revert %v, want [RollingBack RollbackSucceeded]", canaryPl, got)
		}
		start, events := r.mcas.Since(revertMark)
		t.Logf("ManagedClusterAddOn changes after the revert:%s", eventLog(events))
		for _, c := range canaries {
			if start[c].DesiredADC != bad {
				continue // never told the bad version
			}
			got := onlyValues(reasonsOf(start, events, c, func(m mcaSnap) string { return m.Progressing }), rollingBack, rollbackSucceeded, upgrading, upgradeSucceed)
			if !slices.Equal(got, []string{rollingBack, rollbackSucceeded}) {
				t.Errorf("%s: Progressing reasons after the revert %v, want [RollingBack RollbackSucceeded]", c, got)
			}
		}
		if _, cevents := r.cma.Since(cmaMark); !slices.ContainsFunc(cevents, func(p progSnap) bool { return p.Placement == canaryPl && p.Reason == upgradeFailed }) {
			t.Errorf("canary-placement never reported UpgradeFailed over the bad version")
		}
		r.checkInventory(t)
		r.quiet(t, "after the revert")
	})
}

// addonops runs the addonops CLI against the hub and returns its output.
func (r *fluxRun) addonops(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(r.s.ctx, filepath.Join(tools.Bin, "addonops"), append(args, "--kubeconfig", r.s.hub.Kubeconfig)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("addonops %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("$ addonops %s\n%s", strings.Join(args, " "), strings.TrimSpace(string(out)))
	return string(out)
}

// agentImages returns the image of every cluster's agent Deployment.
func (s *suite) agentImages(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, c := range clusters {
		d, err := s.c.Kube.AppsV1().Deployments(installNamespace).Get(s.ctx, agentName(c), metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		out[c] = d.Spec.Template.Spec.Containers[0].Image
	}
	return out
}
