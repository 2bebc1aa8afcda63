//go:build integration

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	watchtools "k8s.io/client-go/tools/watch"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/rolloutview"
	"github.com/addonops/addonops/internal/testing/argocd"
	"github.com/addonops/addonops/internal/testing/gitrepo"
	"github.com/addonops/addonops/internal/testing/mdblock"
)

// TestArgoCD is the GitOps loop with real Argo CD (internal/testing/argocd: its application
// controller, repo server and our CMP server, built from its module) on a hub of its own with
// OCM, the clusters and the addonops controller (newSuiteOn). The rollout examples live in a Git
// repository on disk (internal/testing/gitrepo), served over Git's smart HTTP; every step is a
// commit that Argo CD syncs by itself (automated sync, prune, self-heal), never our own apply:
//
//	01 → 02 → 03 → 04 (e2e/testdata/rollout-examples); a hand edit that self-heal undoes;
//	`addonops pause` of global-placement; the known-good commit of e2e/testdata/bad-version
//	(rolls out behind the pause: Suspended); `addonops resume`; the bad version (the canary
//	fails: Degraded) and its `git revert` (a rollback, reached by Git alone).
//
// At each step it checks Argo CD's own view (the Application's sync status and health, the
// ClusterManagementAddOn's health in status.resources and in the resource tree, the latter
// compared with rolloutview on every version of the object Argo CD judged) against `addonops
// status`; that superseded config versions stay on the hub while the Application stays Synced;
// that the CLI's pause annotation survives refreshes and a sync that rewrites the
// ClusterManagementAddOn; and that Argo CD writes nothing during a quiet period after each step
// (no sync loop). It logs the time from each commit to Synced and to the expected health.
func TestArgoCD(t *testing.T) {
	// A hub of its own: TestEndToEnd rolls out the same helloworld add-on on the package's hub.
	hub := ownHub(t, "the Argo CD test")
	s := newSuiteOn(t, hub)
	argo := argocd.ForTest(t, hub, argocd.Options{Kustomize: tools.Kustomize, PluginPath: []string{tools.Bin}})
	t.Logf("Argo CD ready in %s (logs in %s): redis %s, repo server %s, CMP %s",
		argo.StartDuration.Round(time.Millisecond), argo.LogDir, argo.RedisAddr, argo.RepoServerAddr, argo.PluginName)

	g := newGitopsRun(t, s, argo)
	g.step(t, gitopsStep{name: "01-fresh-install", dir: "e2e/testdata/rollout-examples/01-fresh-install",
		during: "Progressing", want: "Healthy", reasons: map[string]string{globalPl: installSucceed}})
	g.step(t, gitopsStep{name: "02-rolling-update", dir: "e2e/testdata/rollout-examples/02-rolling-update",
		during: "Progressing", want: "Healthy", reasons: map[string]string{globalPl: upgradeSucceed}})
	g.step(t, gitopsStep{name: "03-rolling-update-with-canary", dir: "e2e/testdata/rollout-examples/03-rolling-update-with-canary",
		during: "Progressing", want: "Healthy", reasons: map[string]string{globalPl: upgradeSucceed, canaryPl: upgradeSucceed}})
	g.step(t, gitopsStep{name: "04-rollback", dir: "e2e/testdata/rollout-examples/04-rollback",
		during: "Progressing", want: "Healthy", reasons: map[string]string{globalPl: rollbackSucceeded, canaryPl: rollbackSucceeded},
		sequence: map[string][]string{globalPl: {rollingBack, rollbackSucceeded}}})

	// A hand edit of a field Git sets: Argo CD's self-heal puts Git's value back.
	g.selfHeal(t)

	// Day 2 from the CLI while Argo CD keeps syncing: pause global-placement, then commit the
	// known-good version of bad-version (v0.11.0, 20s progressDeadlines). v0.11.0 ran on every
	// cluster in step 02, so both placements roll back to it: the canary placement does;
	// global-placement, paused, starts no cluster: Suspended.
	g.cli(t, "pause", rolloutAddon, "--placement", globalPl)
	g.annotationStays(t, "addonops.io/pause", globalPl)
	g.step(t, gitopsStep{name: "05-paused", dir: "e2e/testdata/bad-version/good",
		during: "Progressing", want: "Suspended", reasons: map[string]string{globalPl: "Paused", canaryPl: rollbackSucceeded},
		annotation: "addonops.io/pause"})
	g.cli(t, "resume", rolloutAddon, "--placement", globalPl)
	// Resumed, global-placement's move back to v0.11.0 is still a rollback (it was an upgrade here
	// before rolloutplan's TestPausedRollbackResumesAsARollback).
	g.settle(t, "resume", "Progressing", "Healthy", map[string]string{globalPl: rollbackSucceeded, canaryPl: rollbackSucceeded}, nil)

	// The bad version: the canary's agents never become ready (the kubelet stand-in), so the canary
	// fails after its 20s progressDeadline and global-placement never moves.
	s.kubelet.markBad(badImage)
	for _, c := range canaries {
		s.kubelet.hold(agentName(c))
	}
	bad := g.step(t, gitopsStep{name: "06-bad-version", dir: "e2e/testdata/bad-version/bad",
		during: "Progressing", want: "Degraded", reasons: map[string]string{canaryPl: upgradeFailed}})
	for _, c := range canaries {
		s.kubelet.unhold(agentName(c))
	}
	// git revert of the bad commit: a rollback, by Git alone.
	g.step(t, gitopsStep{name: "07-revert", revert: bad,
		during: "Progressing", want: "Healthy", reasons: map[string]string{canaryPl: rollbackSucceeded},
		sequence: map[string][]string{canaryPl: {rollingBack, rollbackSucceeded}}})

	g.finish(t)
}

// argoAppName is the Application of the test, named after the add-on it syncs.
const argoAppName = "helloworld"

// argoQuiet is how long after each Healthy (or Suspended, Degraded) the test watches for writes
// by Argo CD: four reconciliation periods (argocd.Options' default, 5s), each a refresh that would
// find and fix a drift.
const argoQuiet = 20 * time.Second

// gitopsStep is one commit Argo CD syncs.
type gitopsStep struct {
	name string
	// dir is the package hub/kustomization.yaml points to (gitrepo.Step); revert, when set, is a
	// commit to `git revert` instead.
	dir, revert string
	// during is the health Argo CD must report between the sync and want; want the health it ends
	// with, for the Application and the ClusterManagementAddOn.
	during, want string
	// reasons are the install progressions' Progressing reasons at the end, by placement ("A|B":
	// either).
	reasons map[string]string
	// sequence are Progressing reasons a placement must go through in this order during the step.
	sequence map[string][]string
	// annotation must still be on the ClusterManagementAddOn after the sync (a day-2 annotation).
	annotation string
}

// gitopsRun is the state the steps share.
type gitopsRun struct {
	s       *suite
	argo    *argocd.ArgoCD
	repo    *gitrepo.Repo
	ctx     context.Context
	app     *appRecorder
	health  *verdicts
	cma     *recorder[progSnap]
	configs []string // AddOnDeploymentConfig names of the steps so far
	commits int
	// argoManagers are the field managers Argo CD writes with, found on the objects it synced.
	argoManagers []string
	appObject    *unstructured.Unstructured // created with the first commit
	waves        []byte                     // health/README.md's sync-wave patch
	summary      []string                   // one line per step, logged at the end
}

func newGitopsRun(t *testing.T, s *suite, argo *argocd.ArgoCD) *gitopsRun {
	t.Helper()
	root := t.TempDir()
	repo, err := gitrepo.New(filepath.Join(root, "addons"))
	if err != nil {
		t.Fatal(err)
	}
	if err := gitrepo.RolloutExamples(repo, tools.Root); err != nil {
		t.Fatal(err)
	}
	// The Application, as health/argocd/application.yaml gives it, pointed at this repository
	// served over Git's smart HTTP.
	a, srv, url, err := argocd.ServeApplication(tools.Root, repo, argoAppName, gitrepo.HubDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	g := &gitopsRun{s: s, argo: argo, repo: repo, ctx: s.ctx}
	g.app = recordApp(s.ctx, t, s, argoAppName)
	g.health = recordVerdicts(s.ctx, t, s, rolloutAddon)
	g.cma = s.recordCMA(s.ctx, t, rolloutAddon)
	go g.health.sampleLoop(s.ctx, argo)

	g.appObject = a
	// The block of "Sync waves: configs before the ClusterManagementAddOn".
	g.waves = readmeYAML(t, "health/README.md", "argocd.argoproj.io/sync-wave")
	t.Logf("repository %s served at %s", repo.Dir, url)
	return g
}

type timedApp struct {
	appSnap
	at time.Time
}

// appRecorder records every distinct appSnap of the Application from one watch.
type appRecorder struct {
	mu     sync.Mutex
	events []timedApp
	latest *argocd.Application
	err    error
}

func recordApp(ctx context.Context, t *testing.T, s *suite, name string) *appRecorder {
	t.Helper()
	r := &appRecorder{}
	api := s.c.Dynamic.Resource(argocd.ApplicationResource).Namespace(argocd.Namespace)
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	list, err := api.List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		t.Fatalf("recording the Application: %v", err)
	}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.GetResourceVersion(), watcherFunc(func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.FieldSelector = sel
		return api.Watch(ctx, o)
	}))
	if err != nil {
		t.Fatalf("recording the Application: %v", err)
	}
	go func() {
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				u, isObj := ev.Object.(*unstructured.Unstructured)
				if !isObj || (ev.Type != watch.Added && ev.Type != watch.Modified) {
					continue
				}
				app, err := decodeApp(u)
				r.mu.Lock()
				if err != nil && r.err == nil {
					r.err = err
				}
				if err == nil {
					r.latest = app
					snap := snapApp(app)
					if n := len(r.events); n == 0 || r.events[n-1].appSnap != snap {
						r.events = append(r.events, timedApp{snap, time.Now()})
					}
				}
				r.mu.Unlock()
			}
		}
	}()
	return r
}

func decodeApp(u *unstructured.Unstructured) (*argocd.Application, error) {
	raw, err := u.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var app argocd.Application
	if err := yaml.Unmarshal(raw, &app); err != nil {
		return nil, fmt.Errorf("decoding the Application: %w", err)
	}
	return &app, nil
}

func snapApp(a *argocd.Application) appSnap {
	s := appSnap{Revision: a.Status.Sync.Revision, Sync: a.Status.Sync.Status, Health: a.Status.Health.Status}
	if r := a.Resource("ClusterManagementAddOn", "", rolloutAddon); r != nil && r.Health != nil {
		s.CMA = r.Health.Status
	}
	if op := a.Status.Operation; op != nil {
		s.OpPhase, s.OpStarted = op.Phase, op.StartedAt.UTC().Format(time.RFC3339)
		if op.SyncResult != nil {
			s.OpRevision = op.SyncResult.Revision
		}
	}
	return s
}

// mark is the position of the next event.
func (r *appRecorder) mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// since returns the events from mark on.
func (r *appRecorder) since(mark int) []timedApp {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events[mark:])
}

// current returns the latest Application seen.
func (r *appRecorder) current() (*argocd.Application, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return nil, r.err
	}
	if r.latest == nil {
		return nil, fmt.Errorf("no Application %s seen yet", argoAppName)
	}
	return r.latest, nil
}

// verdicts keeps, for every version of the ClusterManagementAddOn (by resourceVersion), the health
// internal/rolloutview gives it, and compares with them the health Argo CD gives the same version
// in its resource tree, sampled throughout the test.
type verdicts struct {
	mu       sync.Mutex
	byRV     map[string]string // "<kind>/<namespace>/<name>@<rv>" -> rolloutview's health
	compared map[string]string // the same keys -> Argo CD's health, once compared
	seen     map[string]map[string]bool
	mismatch []string
	missing  int // samples that found a version the watch had not delivered yet (compared later, if still there)
	err      error
}

func treeKey(kind, namespace, name, rv string) string {
	return kind + "/" + namespace + "/" + name + "@" + rv
}

func recordVerdicts(ctx context.Context, t *testing.T, s *suite, addon string) *verdicts {
	t.Helper()
	v := &verdicts{byRV: map[string]string{}, compared: map[string]string{}, seen: map[string]map[string]bool{}}
	cmas := s.c.Addon.AddonV1alpha1().ClusterManagementAddOns()
	sel := fields.OneTermEqualSelector("metadata.name", addon).String()
	record(ctx, t, "verdicts of the ClusterManagementAddOn",
		func(ctx context.Context, o metav1.ListOptions) ([]*addonv1alpha1.ClusterManagementAddOn, string, error) {
			o.FieldSelector = sel
			l, err := cmas.List(ctx, o)
			if err != nil {
				return nil, "", err
			}
			var out []*addonv1alpha1.ClusterManagementAddOn
			for i := range l.Items {
				out = append(out, &l.Items[i])
			}
			return out, l.ResourceVersion, nil
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return cmas.Watch(ctx, o)
		},
		func(c *addonv1alpha1.ClusterManagementAddOn) []noSnap {
			v.put(treeKey("ClusterManagementAddOn", "", c.Name, c.ResourceVersion), string(rolloutview.AddonHealth(c).Health))
			return nil
		})
	return v
}

func (v *verdicts) put(key, health string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.byRV[key] = health
}

// sample reads Argo CD's resource tree and compares the health of the ClusterManagementAddOn's node
// with rolloutview's verdict on the same version of the object.
func (v *verdicts) sample(ctx context.Context, argo *argocd.ArgoCD) (*argocd.Tree, error) {
	tree, err := argo.ResourceTree(ctx, argoAppName)
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, n := range tree.Nodes {
		if n.Kind != "ClusterManagementAddOn" {
			continue
		}
		key := treeKey(n.Kind, n.Namespace, n.Name, n.ResourceVersion)
		if _, done := v.compared[key]; done {
			continue
		}
		got := ""
		if n.Health != nil {
			got = n.Health.Status
		}
		want, ok := v.byRV[key]
		if !ok {
			v.missing++
			continue
		}
		v.compared[key] = got
		if v.seen[n.Kind] == nil {
			v.seen[n.Kind] = map[string]bool{}
		}
		v.seen[n.Kind][got] = true
		if got != want {
			msg := ""
			if n.Health != nil {
				msg = n.Health.Message
			}
			v.mismatch = append(v.mismatch, fmt.Sprintf("%s: Argo CD %s (%s), rolloutview %s", key, orDash(got), msg, want))
		}
	}
	return tree, nil
}

// sampleLoop samples the tree every 300ms until ctx ends.
func (v *verdicts) sampleLoop(ctx context.Context, argo *argocd.ArgoCD) {
	for {
		if _, err := v.sample(ctx, argo); err != nil && ctx.Err() == nil && !strings.Contains(err.Error(), "no resource tree") {
			v.mu.Lock()
			v.err = err
			v.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// commit makes step's commit and, with the first one, creates the Application. A commit points
// hub/ at the step's package with health/README.md's sync-wave patch ("Sync waves: configs before
// the ClusterManagementAddOn"), as the README tells Argo CD users to: without it Argo CD applies the
// ClusterManagementAddOn before the config versions it names (same wave, ordered by name, and
// config-hash's names extend the add-on's), and reports the add-on Degraded
// (ConfigurationNotFound) until they arrive. A revert must restore hub/ as the commit before the
// reverted one had it.
func (g *gitopsRun) commit(t *testing.T, step gitopsStep) string {
	t.Helper()
	var sha string
	var err error
	if step.revert != "" {
		kustomization := filepath.Join(gitrepo.HubDir, "kustomization.yaml")
		var before []byte
		if before, err = g.repo.Show(step.revert+"^", kustomization); err == nil {
			sha, err = g.repo.RevertRestoring(step.revert, kustomization, before)
		}
	} else {
		sha, err = gitrepo.CommitStep(g.repo, step.dir, g.waves, step.name+": "+step.dir)
	}
	if err != nil {
		t.Fatalf("%s: committing: %v", step.name, err)
	}
	g.commits++
	if g.commits == 1 {
		if err := g.argo.CreateApplication(g.ctx, g.appObject, ""); err != nil {
			t.Fatal(err)
		}
		t.Logf("created Application %s/%s (health/argocd/application.yaml)", argocd.Namespace, argoAppName)
	}
	return sha
}

// readmeYAML returns the one yaml block of the Markdown file at path (relative to the repository
// root) that contains what, without its comment lines.
func readmeYAML(t *testing.T, path, what string) []byte {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(tools.Root, path))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := mdblock.Extract(path, string(src))
	if err != nil {
		t.Fatal(err)
	}
	var found []mdblock.Block
	for _, b := range blocks {
		if b.Lang == "yaml" && strings.Contains(b.Content, what) {
			found = append(found, b)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s: %d yaml blocks hold %q, want one", path, len(found), what)
	}
	var out []string
	for _, l := range strings.Split(found[0].Content, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			out = append(out, l)
		}
	}
	return []byte(strings.Join(out, "\n"))
}

// step commits step and follows Argo CD's sync and the rollout to the step's end; it returns the
// commit.
func (g *gitopsRun) step(t *testing.T, step gitopsStep) string {
	t.Helper()
	var sha string
	ok := t.Run(step.name, func(t *testing.T) {
		appMark, cmaMark := g.app.mark(), g.cma.Mark()
		sha = g.commit(t, step)
		committed := time.Now()
		what := "commit " + sha[:7]
		if step.revert != "" {
			what = fmt.Sprintf("revert of %.7s: commit %.7s", step.revert, sha)
		}
		t.Logf("%s (%s)", what, orDash(step.dir))

		// argocd's CommitState, which the demo reads too: Current once a sync of the commit
		// succeeded and a comparison after it says Synced.
		synced := g.waitApp(t, "Argo CD synced "+sha[:7], func(app *argocd.Application) string {
			if st := app.CommitState(sha); !st.Current {
				return fmt.Sprintf("%s, want Synced to %.7s by a sync of it that Succeeded (%s)", snapApp(app), sha, st.Line)
			}
			return ""
		})
		healthy := g.waitApp(t, fmt.Sprintf("the Application %s at %.7s", step.want, sha), func(app *argocd.Application) string {
			if a := snapApp(app); a.Revision != sha || a.Sync != "Synced" || a.Health != step.want || a.CMA != step.want {
				return fmt.Sprintf("%s, want Synced at %.7s, %s", a, sha, step.want)
			}
			return ""
		})
		g.checkReasons(t, step.reasons)
		g.summary = append(g.summary, fmt.Sprintf("%-30s %.7s synced after %5s, %-9s after %5s", step.name, sha,
			synced.Sub(committed).Round(100*time.Millisecond), step.want, healthy.Sub(committed).Round(100*time.Millisecond)))
		t.Logf("sync-to-%s: synced %s after the commit, %s after %s", step.want, synced.Sub(committed).Round(100*time.Millisecond),
			step.want, healthy.Sub(committed).Round(100*time.Millisecond))

		g.checkPath(t, appMark, sha, step.during, step.want)
		g.checkSequences(t, cmaMark, step.sequence)
		g.checkApp(t, step.want)
		g.checkConfigs(t, step.dir)
		if step.annotation != "" {
			g.checkAnnotation(t, step.annotation)
		}
		g.quiet(t, step.name)
	})
	if !ok {
		t.Fatalf("step %s failed; the later steps build on it", step.name)
	}
	return sha
}

// settle follows a change made outside Git (a day-2 command) to its end, as step does after a
// commit.
func (g *gitopsRun) settle(t *testing.T, name, during, want string, reasons map[string]string, sequence map[string][]string) {
	t.Helper()
	ok := t.Run(name, func(t *testing.T) {
		appMark, cmaMark := g.app.mark(), g.cma.Mark()
		started := time.Now()
		a, err := g.app.current()
		if err != nil {
			t.Fatal(err)
		}
		sha := a.Status.Sync.Revision
		healthy := g.waitApp(t, "the Application "+want, func(app *argocd.Application) string {
			if a := snapApp(app); a.Revision != sha || a.Sync != "Synced" || a.Health != want || a.CMA != want {
				return fmt.Sprintf("%s, want Synced at %.7s, %s", a, sha, want)
			}
			return ""
		})
		g.checkReasons(t, reasons)
		g.summary = append(g.summary, fmt.Sprintf("%-30s %.7s (no commit)          %-9s after %5s", name, sha, want, healthy.Sub(started).Round(100*time.Millisecond)))
		t.Logf("%s after %s", want, healthy.Sub(started).Round(100*time.Millisecond))
		g.checkPath(t, appMark, sha, during, want)
		g.checkSequences(t, cmaMark, sequence)
		g.checkApp(t, want)
		g.quiet(t, name)
	})
	if !ok {
		t.Fatalf("%s failed; the later steps build on it", name)
	}
}

// waitApp polls the recorded Application until check passes and returns when the state that
// passed was seen. It fails early when an Argo CD part died.
func (g *gitopsRun) waitApp(t *testing.T, what string, check func(*argocd.Application) string) time.Time {
	t.Helper()
	var at time.Time
	g.s.eventually(t, what, func() string {
		if err := g.argo.Failure(); err != nil {
			t.Fatal(err)
		}
		a, err := g.app.current()
		if err != nil {
			return err.Error()
		}
		if msg := check(a); msg != "" {
			for _, c := range a.Status.Conditions {
				msg += fmt.Sprintf("; condition %s: %s", c.Type, c.Message)
			}
			return msg
		}
		g.app.mu.Lock()
		at = g.app.events[len(g.app.events)-1].at
		g.app.mu.Unlock()
		return ""
	})
	return at
}

// checkPath checks the Application's states since mark: at sha it went through during before
// reaching want, and it never reported Degraded at sha unless want is Degraded.
func (g *gitopsRun) checkPath(t *testing.T, mark int, sha, during, want string) {
	t.Helper()
	events := g.app.since(mark)
	var path []string
	sawDuring := false
	for _, e := range events {
		path = append(path, e.String())
		if e.Revision != sha || e.Sync != "Synced" {
			continue
		}
		if e.Health == during {
			sawDuring = true
		}
		if e.Health == "Degraded" && want != "Degraded" {
			t.Errorf("the Application was Degraded at %.7s on its way to %s: %s", sha, want, e)
		}
		if e.Health == want && e.CMA == want {
			break
		}
	}
	t.Logf("the Application's states since the change:\n  %s", strings.Join(path, "\n  "))
	if !sawDuring && during != "" && during != want {
		t.Errorf("the Application was never %s at %.7s before %s", during, sha, want)
	}
}

// checkSequences checks that each placement went through the Progressing reasons given, in order.
func (g *gitopsRun) checkSequences(t *testing.T, mark int, sequence map[string][]string) {
	t.Helper()
	start, events := g.cma.Since(mark)
	for pl, want := range sequence {
		got := reasonsOf(start, events, pl, func(p progSnap) string { return p.Reason })
		if !containsInOrder(got, want) {
			t.Errorf("%s: Progressing reasons %v, want %v in this order", pl, got, want)
		}
	}
	t.Logf("install progression changes:%s", eventLog(events))
}

// containsInOrder reports whether want is a subsequence of got.
func containsInOrder(got, want []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

// checkReasons checks the placements' current Progressing reasons ("A|B": either).
func (g *gitopsRun) checkReasons(t *testing.T, reasons map[string]string) {
	t.Helper()
	waitRecorded(t, g.s, g.cma, "the install progressions' reasons", func(m map[string]progSnap) string {
		for pl, want := range reasons {
			if !slices.Contains(strings.Split(want, "|"), m[pl].Reason) {
				return fmt.Sprintf("%s, want %s", m[pl], want)
			}
		}
		return ""
	})
}

// checkApp checks Argo CD's view at the end of a step against `addonops status`: the Application
// was built by the CMP and every resource is Synced; the ClusterManagementAddOn's health (in
// status.resources and in the resource tree) is want, and so is the add-on's health in `addonops
// status`.
func (g *gitopsRun) checkApp(t *testing.T, want string) {
	t.Helper()
	a, err := g.app.current()
	if err != nil {
		t.Fatal(err)
	}
	if a.Status.SourceType != "Plugin" {
		t.Errorf("the Application's source type is %q, want Plugin: the CMP's discover rule did not pick the package", a.Status.SourceType)
	}
	var listed []string
	for _, r := range a.Status.Resources {
		h := "-"
		if r.Health != nil {
			h = r.Health.Status
		}
		listed = append(listed, fmt.Sprintf("%s %s/%s %s %s (requiresPruning %v)", r.Kind, r.Namespace, r.Name, r.Status, h, r.RequiresPruning))
		// What Git holds is Synced. What it no longer holds is extraneous: OutOfSync and "requires
		// pruning" in the list (and the UI), yet ignored for the Application's sync status
		// (IgnoreExtraneous) and never pruned (Prune=false): only config versions may be that.
		switch {
		case r.Status == "Synced" && !r.RequiresPruning:
		case r.RequiresPruning && (r.Kind == "AddOnDeploymentConfig" || r.Kind == "AddOnTemplate"):
		default:
			t.Errorf("status.resources: %s %s/%s is %s (requiresPruning %v), want Synced", r.Kind, r.Namespace, r.Name, r.Status, r.RequiresPruning)
		}
	}
	t.Logf("status.resources:\n  %s", strings.Join(listed, "\n  "))
	if cma := a.Resource("ClusterManagementAddOn", "", rolloutAddon); cma == nil || cma.Health == nil || cma.Health.Status != want {
		t.Errorf("status.resources: ClusterManagementAddOn %s %+v, want health %s", rolloutAddon, cma, want)
	} else {
		t.Logf("Argo CD: ClusterManagementAddOn %s: %s: %s", rolloutAddon, cma.Health.Status, cma.Health.Message)
	}

	view := g.s.addonopsStatus(t)
	if string(view.Health.Health) != want {
		t.Errorf("addonops status: %s (%s), Argo CD: %s", view.Health.Health, view.Health.Message, want)
	}
	g.s.eventually(t, "the resource tree agrees", func() string {
		tree, err := g.health.sample(g.ctx, g.argo)
		if err != nil {
			return err.Error()
		}
		if n := tree.Node("ClusterManagementAddOn", "", rolloutAddon); n == nil || n.Health == nil || n.Health.Status != want {
			return fmt.Sprintf("ClusterManagementAddOn node %+v, want %s", n, want)
		}
		return ""
	})
	tree, err := g.argo.ResourceTree(g.ctx, argoAppName)
	if err != nil {
		t.Fatal(err)
	}
	var nodes []string
	for _, n := range tree.Nodes {
		h := "-"
		if n.Health != nil {
			h = n.Health.Status
		}
		nodes = append(nodes, fmt.Sprintf("%s %s/%s %s", n.Kind, n.Namespace, n.Name, h))
	}
	slices.Sort(nodes)
	t.Logf("resource tree:\n  %s", strings.Join(nodes, "\n  "))
	// Argo CD v3.2 builds the tree per namespace (gitops-engine's IterateHierarchyV2): the
	// ManagedClusterAddOns the controller creates in the cluster namespaces, owned by the
	// cluster-scoped ClusterManagementAddOn, and its version history ConfigMap are not in it, so
	// Argo CD judges them only when they are in Git (health/README.md says so). Should a later
	// Argo CD show them, this fails: compare their health with rolloutview then.
	for _, n := range tree.Nodes {
		if n.Kind == "ManagedClusterAddOn" || (n.Kind == "ConfigMap" && strings.HasPrefix(n.Name, "addonops-history-")) {
			t.Errorf("%s %s/%s is in Argo CD's resource tree (health %+v): compare its health with rolloutview's", n.Kind, n.Namespace, n.Name, n.Health)
		}
	}
}

// checkConfigs checks that every config version of the steps so far is still on the hub, with
// config-hash's marks, while the Application is Synced: Argo CD lists a superseded version as
// extraneous (OutOfSync, requires pruning) but neither prunes it (Prune=false) nor counts it for
// the Application's sync status (IgnoreExtraneous). dir is the step's package ("" for a revert,
// which brings back a version already seen).
func (g *gitopsRun) checkConfigs(t *testing.T, dir string) {
	t.Helper()
	current := ""
	if dir != "" {
		objs, _ := g.s.build(t, dir)
		current = only(t, objs, "AddOnDeploymentConfig").GetName()
		if !slices.Contains(g.configs, current) {
			g.configs = append(g.configs, current)
		}
	}
	gvk := schema.GroupVersionKind{Group: "addon.open-cluster-management.io", Version: "v1alpha1", Kind: "AddOnDeploymentConfig"}
	a, err := g.app.current()
	if err != nil {
		t.Fatal(err)
	}
	superseded := 0
	for _, name := range g.configs {
		o, err := g.s.get(gvk, "default", name)
		if err != nil {
			t.Errorf("config version %s: %v", name, err)
			continue
		}
		ann := o.GetAnnotations()
		if ann["argocd.argoproj.io/sync-options"] != "Prune=false" || ann["argocd.argoproj.io/compare-options"] != "IgnoreExtraneous" {
			t.Errorf("config version %s lacks config-hash's Argo CD marks: %v", name, ann)
		}
		r := a.Resource("AddOnDeploymentConfig", "default", name)
		if r == nil {
			t.Errorf("config version %s is on the hub but not in the Application's status.resources", name)
			continue
		}
		if r.RequiresPruning {
			superseded++
		}
		if name == current && (r.Status != "Synced" || r.RequiresPruning) {
			t.Errorf("config version %s of this commit: %s (requiresPruning %v), want Synced", name, r.Status, r.RequiresPruning)
		}
		// health/README.md's sync-wave patch (addSyncWaves) reached the config: Argo CD applies it before
		// the ClusterManagementAddOn.
		if name == current && ann["argocd.argoproj.io/sync-wave"] != "-1" {
			t.Errorf("config version %s of this commit has sync wave %q, want -1 (health/README.md's patch)", name, ann["argocd.argoproj.io/sync-wave"])
		}
		t.Logf("config version %s: on the hub, %s (requiresPruning %v), tracking id %q", name, r.Status, r.RequiresPruning, ann["argocd.argoproj.io/tracking-id"])
	}
	if a.Status.Sync.Status != "Synced" {
		t.Errorf("the Application is %s with %d superseded config versions on the hub", a.Status.Sync.Status, superseded)
	}
}

// checkAnnotation checks that the ClusterManagementAddOn still carries a day-2 annotation.
func (g *gitopsRun) checkAnnotation(t *testing.T, key string) {
	t.Helper()
	cma, err := g.s.c.Addon.AddonV1alpha1().ClusterManagementAddOns().Get(g.ctx, rolloutAddon, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, ok := cma.Annotations[key]
	if !ok {
		t.Errorf("the sync removed %s from the ClusterManagementAddOn (annotations %v)", key, cma.Annotations)
		return
	}
	// The sync must have written the ClusterManagementAddOn (its spec changed in this commit), or
	// the annotation survived nothing.
	a, err := g.app.current()
	if err != nil {
		t.Fatal(err)
	}
	written := ""
	if op := a.Status.Operation; op != nil && op.SyncResult != nil {
		for _, r := range op.SyncResult.Resources {
			if r.Kind == "ClusterManagementAddOn" && r.Name == rolloutAddon {
				written = r.Message
			}
		}
	}
	if !strings.Contains(written, "configured") {
		t.Errorf("the sync's result for the ClusterManagementAddOn is %q, want it configured (written)", written)
	}
	t.Logf("%s: %q kept through the sync, which wrote the ClusterManagementAddOn (%s)", key, v, written)
}

// annotationStays waits for three of Argo CD's refreshes after a day-2 command and checks that the
// annotation is still there with value and that the Application stayed Synced without a sync.
func (g *gitopsRun) annotationStays(t *testing.T, key, value string) {
	t.Helper()
	a, err := g.app.current()
	if err != nil {
		t.Fatal(err)
	}
	op := snapApp(a).OpStarted
	var refreshes []time.Time
	if a.Status.ReconciledAt != nil {
		refreshes = append(refreshes, a.Status.ReconciledAt.Time)
	}
	g.s.eventually(t, "three refreshes of the Application after the command", func() string {
		a, err := g.app.current()
		if err != nil {
			return err.Error()
		}
		if r := a.Status.ReconciledAt; r != nil && (len(refreshes) == 0 || r.After(refreshes[len(refreshes)-1])) {
			refreshes = append(refreshes, r.Time)
		}
		if len(refreshes) < 4 {
			return fmt.Sprintf("%d refreshes", len(refreshes)-1)
		}
		return ""
	})
	a, err = g.app.current()
	if err != nil {
		t.Fatal(err)
	}
	if s := snapApp(a); s.Sync != "Synced" || s.OpStarted != op {
		t.Errorf("after the command: %s (last sync started %s, before the command %s), want Synced and no new sync", s, s.OpStarted, op)
	}
	cma, err := g.s.c.Addon.AddonV1alpha1().ClusterManagementAddOns().Get(g.ctx, rolloutAddon, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := cma.Annotations[key]; got != value {
		t.Errorf("after three refreshes: %s=%q, want %q (Argo CD removed or changed the annotation)", key, got, value)
	} else {
		t.Logf("%s=%q kept through three refreshes; the Application stayed %s without a sync", key, got, a.Status.Sync.Status)
	}
}

// cli runs the addonops binary against the hub.
func (g *gitopsRun) cli(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(g.ctx, filepath.Join(tools.Bin, "addonops"), append(args, "--kubeconfig", g.s.hub.Kubeconfig)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("addonops %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	t.Logf("$ addonops %s\n%s", strings.Join(args, " "), strings.TrimSpace(out.String()))
}

// quiet watches every resource the Application manages for argoQuiet and fails if Argo CD wrote
// any of them or started a sync: a sync loop (Argo CD and the controller fighting over a field, or
// a diff Argo CD cannot settle) shows up as writes by Argo CD's field manager at every refresh.
// Writes are attributed by managedFields: a write by a manager updates the time of its entry.
func (g *gitopsRun) quiet(t *testing.T, name string) {
	t.Helper()
	a, err := g.app.current()
	if err != nil {
		t.Fatal(err)
	}
	if g.argoManagers == nil {
		g.argoManagers = g.findArgoManagers(t)
	}
	opBefore := snapApp(a).OpStarted
	ctx, cancel := context.WithTimeout(g.ctx, argoQuiet)
	defer cancel()
	var mu sync.Mutex
	writes := map[string]map[string]int{} // object -> manager -> writes
	total := 0
	var wg sync.WaitGroup
	for _, r := range a.Status.Resources {
		mapping, err := g.s.mapper.RESTMapping(schema.GroupKind{Group: r.Group, Kind: r.Kind}, r.Version)
		if err != nil {
			t.Fatalf("%s %s: %v", r.Kind, r.Name, err)
		}
		var res = g.s.c.Dynamic.Resource(mapping.Resource).Namespace(r.Namespace)
		obj, err := res.Get(ctx, r.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s %s/%s: %v", r.Kind, r.Namespace, r.Name, err)
		}
		w, err := res.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", r.Name).String(), ResourceVersion: obj.GetResourceVersion()})
		if err != nil {
			t.Fatalf("watching %s %s/%s: %v", r.Kind, r.Namespace, r.Name, err)
		}
		id := fmt.Sprintf("%s %s/%s", r.Kind, r.Namespace, r.Name)
		prev := managerTimes(obj)
		wg.Go(func() {
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case ev, ok := <-w.ResultChan():
					if !ok {
						return
					}
					u, isObj := ev.Object.(*unstructured.Unstructured)
					if !isObj || ev.Type != watch.Modified {
						continue
					}
					now := managerTimes(u)
					mu.Lock()
					total++
					if writes[id] == nil {
						writes[id] = map[string]int{}
					}
					for k, v := range now {
						if prev[k] != v {
							writes[id][k]++
						}
					}
					mu.Unlock()
					prev = now
				}
			}
		})
	}
	wg.Wait()
	var argoWrites, lines []string
	for id, byManager := range writes {
		for m, n := range byManager {
			lines = append(lines, fmt.Sprintf("%s: %s %d", id, m, n))
			for _, am := range g.argoManagers {
				if strings.HasPrefix(m, am+"/") {
					argoWrites = append(argoWrites, fmt.Sprintf("%s: %d writes by %s", id, n, m))
				}
			}
		}
	}
	slices.Sort(lines)
	t.Logf("%s: quiet period of %s: %d writes to the %d managed objects\n  %s", name, argoQuiet, total, len(a.Status.Resources), strings.Join(lines, "\n  "))
	if len(argoWrites) > 0 {
		t.Errorf("Argo CD wrote during the quiet period after %s (a sync loop):\n  %s", name, strings.Join(argoWrites, "\n  "))
	}
	a, err = g.app.current()
	if err != nil {
		t.Fatal(err)
	}
	if op := snapApp(a).OpStarted; op != opBefore {
		t.Errorf("Argo CD started a sync during the quiet period after %s (at %s; the one before started %s): %s", name, op, opBefore, snapApp(a))
	}
}

// managerTimes maps "<manager>/<operation>/<subresource>" to the time of its managedFields entry.
func managerTimes(u *unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	for _, m := range u.GetManagedFields() {
		k := m.Manager + "/" + string(m.Operation) + "/" + m.Subresource
		if m.Time != nil {
			out[k] = m.Time.UTC().Format(time.RFC3339)
		} else {
			out[k] = ""
		}
	}
	return out
}

// findArgoManagers returns the field managers Argo CD wrote the ClusterManagementAddOn with.
func (g *gitopsRun) findArgoManagers(t *testing.T) []string {
	t.Helper()
	cma, err := g.s.c.Addon.AddonV1alpha1().ClusterManagementAddOns().Get(g.ctx, rolloutAddon, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var all, argo []string
	for _, m := range cma.ManagedFields {
		all = append(all, m.Manager+"/"+string(m.Operation)+"/"+m.Subresource)
		if strings.Contains(m.Manager, "argocd") && !slices.Contains(argo, m.Manager) {
			argo = append(argo, m.Manager)
		}
	}
	if len(argo) == 0 {
		t.Fatalf("no field manager of Argo CD on the synced ClusterManagementAddOn (managers %v): the write count would find nothing", all)
	}
	t.Logf("Argo CD's field managers: %v (all managers of the ClusterManagementAddOn: %v)", argo, all)
	return argo
}

// finish checks the health comparisons made throughout the test and logs the summary.
func (g *gitopsRun) finish(t *testing.T) {
	t.Helper()
	v := g.health
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.err != nil {
		t.Errorf("sampling the resource tree: %v", v.err)
	}
	for _, m := range v.mismatch {
		t.Errorf("Argo CD and rolloutview disagree on %s", m)
	}
	seen := map[string][]string{}
	for kind, hs := range v.seen {
		for h := range hs {
			seen[kind] = append(seen[kind], h)
		}
		slices.Sort(seen[kind])
	}
	t.Logf("health compared on %d object versions (%d samples found a version the watch had not delivered yet); Argo CD reported %v",
		len(v.compared), v.missing, seen)
	// The comparison must have covered every verdict the steps go through.
	for kind, want := range map[string][]string{
		"ClusterManagementAddOn": {"Degraded", "Healthy", "Progressing", "Suspended"},
	} {
		for _, h := range want {
			if !v.seen[kind][h] {
				t.Errorf("no %s was compared while Argo CD reported it %s", kind, h)
			}
		}
	}
	t.Logf("per step, from the commit (or the command):\n  %s", strings.Join(g.summary, "\n  "))
}

// selfHeal edits, by hand, an annotation Git sets on the config version in use (config-hash's
// addonops.io/base-name: metadata, outside the spec hash, so nothing rolls out) and waits for
// Argo CD's self-heal to sync Git's value back.
func (g *gitopsRun) selfHeal(t *testing.T) {
	t.Helper()
	ok := t.Run("self-heal", func(t *testing.T) {
		a, err := g.app.current()
		if err != nil {
			t.Fatal(err)
		}
		name := ""
		for _, r := range a.Status.Resources {
			if r.Kind == "AddOnDeploymentConfig" && !r.RequiresPruning {
				name = r.Name
			}
		}
		if name == "" {
			t.Fatalf("no AddOnDeploymentConfig in Git among %d resources", len(a.Status.Resources))
		}
		opBefore := snapApp(a).OpStarted
		gvr := schema.GroupVersionResource{Group: "addon.open-cluster-management.io", Version: "v1alpha1", Resource: adcResource}
		res := g.s.c.Dynamic.Resource(gvr).Namespace("default")
		patch := []byte(`{"metadata":{"annotations":{"addonops.io/base-name":"edited-by-hand"}}}`)
		if _, err := res.Patch(g.ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "e2e-hand-edit"}); err != nil {
			t.Fatal(err)
		}
		edited := time.Now()
		t.Logf("edited AddOnDeploymentConfig default/%s by hand: addonops.io/base-name=edited-by-hand", name)
		g.s.eventually(t, "Argo CD's self-heal restores Git's value", func() string {
			o, err := res.Get(g.ctx, name, metav1.GetOptions{})
			if err != nil {
				return err.Error()
			}
			if v := o.GetAnnotations()["addonops.io/base-name"]; v != "helloworld-config" {
				return fmt.Sprintf("addonops.io/base-name=%q", v)
			}
			a, err := g.app.current()
			if err != nil {
				return err.Error()
			}
			if s := snapApp(a); s.OpStarted == opBefore || s.OpPhase != "Succeeded" || s.Sync != "Synced" || s.Health != "Healthy" {
				return fmt.Sprintf("%s, want a new sync (self-heal), Synced and Healthy", s)
			}
			return ""
		})
		a, err = g.app.current()
		if err != nil {
			t.Fatal(err)
		}
		if h := a.Status.History; len(h) > 0 && !h[len(h)-1].InitiatedBy.Automated {
			t.Errorf("the last sync was not automated: %+v", h[len(h)-1])
		}
		t.Logf("self-heal restored Git's value %s after the edit", time.Since(edited).Round(100*time.Millisecond))
		g.summary = append(g.summary, fmt.Sprintf("%-30s %.7s (hand edit)          restored  after %5s", "self-heal", a.Status.Sync.Revision, time.Since(edited).Round(100*time.Millisecond)))
		g.quiet(t, "self-heal")
	})
	if !ok {
		t.Fatal("self-heal failed; the later steps build on it")
	}
}
