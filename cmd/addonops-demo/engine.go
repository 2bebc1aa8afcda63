package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/addonops/addonops/internal/render"
	"github.com/addonops/addonops/internal/testing/gitrepo"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/ocmhub"
	"github.com/addonops/addonops/internal/testing/ssapply"
)

// With --engine=flux or --engine=argocd a real GitOps engine delivers the steps instead of the
// demo's own server-side apply: every step, rendered and tweaked as without an engine, becomes a
// commit of rendered YAML (renderedFile) in a Git repository on disk (internal/testing/gitrepo),
// the revert after the bad version a real `git revert` of the bad commit, and the engine applies
// each commit to the hub as it would from a user's repository: Flux from the rendered directory
// pushed as an OCI artifact (health/flux/addonops-hub.yaml's OCIRepository and Kustomization, with
// their health checks), Argo CD from an Application syncing the rendered directory (automated
// sync, our health checks in argocd-cm). The demo waits until the engine applied the commit and
// OCM's placement controller scheduled its Placements, follows the rollout as without an engine,
// and shows the engine's own status next to it; a step ends when the demo's view and the engine's health verdict agree (or the
// engine did not agree within engineVerdictWait, which the step reports as not expected).

// Engines (--engine).
const (
	engineNone   = "none"
	engineFlux   = "flux"
	engineArgoCD = "argocd"
)

const (
	// renderedDir is the directory of the demo's Git repository that holds the rendered objects,
	// renderedFile the file: what hack/render.sh writes for the hub package (rendered/hub.yaml),
	// the directory CI publishes for Flux and an Argo CD Application syncs.
	renderedDir  = "rendered"
	renderedFile = renderedDir + "/" + gitrepo.HubDir + ".yaml"
	// engineVerdictWait bounds how long a step waits, once the demo's view says how the rollout
	// ended, for the engine's health verdict to say the same: Flux re-reads health every 5 s and
	// retries a failed health check after the Kustomization's retryInterval; Argo CD refreshes
	// every few seconds.
	engineVerdictWait = 90 * time.Second
	// engineProblemGrace is how long the engine may report that it cannot apply a commit before
	// the step fails with its message (an engine retries, and a moment's error is no failure).
	engineProblemGrace = 30 * time.Second
	// engineStallNote is when a step says that the engine has not applied its commit yet, and
	// where the engine's logs are: it usually takes a second or two.
	engineStallNote = 30 * time.Second
)

// engine is a GitOps engine running against the demo's hub.
type engine interface {
	// Name names it for people: "Flux", "Argo CD".
	Name() string
	// HandOver names what hands a commit to it, for people: "the push" (Flux: CI pushes the
	// rendered directory), "the commit" (Argo CD reads the repository itself).
	HandOver() string
	// Prepare changes a step's rendered objects as the engine's recipe asks of a package (before
	// they are committed) and returns one note per change.
	Prepare(objs []*unstructured.Unstructured) []string
	// WhyFailedOnTheWay explains a failed status the engine showed on the way to a healthy verdict
	// for a step that adds a Placement, or returns "" when it has no explanation.
	WhyFailedOnTheWay() string
	// Start starts it against hub, delivering from repo; it returns lines saying what runs.
	Start(ctx context.Context, hub *localhub.Hub, repo *gitrepo.Repo) ([]string, error)
	// Deliver hands commit sha of the repository to the engine and returns what it ran, one
	// line each, for people.
	Deliver(ctx context.Context, sha string) ([]string, error)
	// State reads the engine's view of commit sha.
	State(ctx context.Context, sha string) engineState
	// Logs is the directory of its logs while it runs.
	Logs() string
	// Stop stops what Start started and removes its files unless keep; it returns the directory
	// of the logs it kept.
	Stop(keep bool) (string, error)
}

// engineState is what an engine says about one commit (gitrepo.CommitState, read by
// internal/testing/argocd and internal/testing/flux), engineVerdict its health verdict.
type (
	engineState   = gitrepo.CommitState
	engineVerdict = gitrepo.Verdict
)

const (
	verdictHealthy = gitrepo.Healthy
	verdictFailed  = gitrepo.Failed
)

// EngineResult is what the engine did for one step. Times are since the commit was handed to it.
type EngineResult struct {
	Engine, HandOver string
	// Commit is the step's commit; Revert says it is a `git revert` of the bad commit.
	Commit string
	Revert bool
	// Revision is the engine's name of what it applied.
	Revision string
	// Delivered is how long handing the commit over took (Flux: pushing the artifact).
	Delivered time.Duration
	// AppliedAfter is when the engine had applied it, VerdictAfter when its verdict agreed with
	// the demo's (-1: it did not, or not yet).
	AppliedAfter, VerdictAfter time.Duration
	// Verdict is the engine's last verdict, Last its last status line.
	Verdict engineVerdict
	Last    string
	// Statuses are the distinct statuses the engine showed for the commit once it applied it, in
	// order.
	Statuses []string
	// Problem says how the engine disagreed with the demo (empty when it agreed).
	Problem string
}

// newEngine returns the engine named by --engine, nil for none.
func newEngine(name string, o Options) engine {
	switch name {
	case engineFlux:
		return &fluxEngine{root: o.RepoRoot}
	case engineArgoCD:
		return newArgoCDEngine(o)
	}
	return nil
}

// checkEngine validates --engine and, for an engine, that its binaries are built.
func checkEngine(name, root string) error {
	switch name {
	case "", engineNone:
		return nil
	case engineFlux:
		return checkFluxBinaries(root)
	case engineArgoCD:
		return checkArgoCDBinaries(root)
	}
	return fmt.Errorf("--engine %q: want none (the demo's own server-side apply), flux or argocd", name)
}

// gitSteps is the demo's Git repository: one commit per step.
type gitSteps struct {
	repo *gitrepo.Repo
	// dir holds the repository and the engines' checkouts; removed at the end unless kept.
	dir string
	// bad is the bad version's commit, which the revert step reverts.
	bad string
}

func newGitSteps() (*gitSteps, error) {
	dir, err := os.MkdirTemp("", "addonops-demo-git-")
	if err != nil {
		return nil, fmt.Errorf("creating the demo's Git repository: %w", err)
	}
	repo, err := gitrepo.New(filepath.Join(dir, "addons"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &gitSteps{repo: repo, dir: dir}, nil
}

// commit records step st: the revert step as `git revert` of the bad commit (checked to restore
// exactly the objects the step expects), every other step as a commit of its rendered objects.
func (g *gitSteps) commit(st step) (sha string, revert bool, err error) {
	want, err := render.YAMLStream(st.Objects)
	if err != nil {
		return "", false, fmt.Errorf("step %s: %w", st.Name, err)
	}
	if st.Kind == stepRevert && g.bad != "" {
		sha, err := g.repo.RevertRestoring(g.bad, renderedFile, want)
		if err != nil {
			return "", false, fmt.Errorf("step %s (the commit before the bad one): %w", st.Name, err)
		}
		return sha, true, nil
	}
	msg := st.Name
	if len(st.Notes) > 0 {
		msg += "\n\n" + strings.Join(st.Notes, "\n")
	}
	sha, err = g.repo.CommitFile(renderedFile, want, msg)
	if err != nil {
		return "", false, fmt.Errorf("step %s (does it render what the step before rendered? an engine would see no change): %w", st.Name, err)
	}
	if st.Kind == stepBadVersion {
		g.bad = sha
	}
	return sha, false, nil
}

func short(sha string) string { return gitrepo.Short(sha) }

// deliverByEngine commits step st, hands the commit to the engine, waits until the engine applied
// it and the Placements it holds are decided, and returns the generations of its
// ClusterManagementAddOns on the hub and their names, as the demo's own apply does.
func (r *demoRun) deliverByEngine(ctx context.Context, st step, w *stepWatch) (map[string]int64, []string, error) {
	sha, revert, err := r.git.commit(st)
	if err != nil {
		return nil, nil, err
	}
	w.sha = sha
	for _, o := range st.Objects {
		if o.GroupVersionKind().GroupKind() == placementGK && !r.placementsBefore[ssapply.Name(o)] {
			w.addsPlacement = true
		}
	}
	r.placementsBefore = map[string]bool{}
	for _, o := range st.Objects {
		if o.GroupVersionKind().GroupKind() == placementGK {
			r.placementsBefore[ssapply.Name(o)] = true
		}
	}
	what := "commit"
	if revert {
		what = fmt.Sprintf("git revert %s: commit", short(r.git.bad))
	}
	r.disp.printf("   %s %s of the demo's Git repository (%s, %d objects)\n", what, short(sha), renderedFile, len(st.Objects))
	w.engine = &EngineResult{Engine: r.engine.Name(), HandOver: r.engine.HandOver(), Commit: sha, Revert: revert, AppliedAfter: -1, VerdictAfter: -1}
	w.handed = time.Now()
	lines, err := r.engine.Deliver(ctx, sha)
	if err != nil {
		return nil, nil, err
	}
	w.engine.Delivered = time.Since(w.handed)
	for _, l := range lines {
		r.disp.printf("   %s\n", l)
	}

	// Until the step's objects are on the hub, the live view shows what the engine says. The demo
	// watches the hub itself, as without an engine: the commit's ClusterManagementAddOns and
	// Placements as the commit has them, the Placements decided. The engine's own word that it
	// applied the commit is noted whenever it comes (noteEngine): Argo CD, for one, says so only
	// after its sync, by when the rollout (and the pause step's first batch) may be under way.
	// A fatal problem ends the wait at once.
	var problemSince time.Time
	stallNoted := false
	var failed bool
	var gens map[string]int64
	var addons []string
	var decided map[string]int
	var pending string
	var es engineState
	_, err = harness.UntilErr(ctx, r.o.StepTimeout, 100*time.Millisecond, func() (string, error) {
		es = r.engine.State(ctx, sha)
		r.noteEngine(w, es)
		now := time.Now()
		switch {
		case es.Problem == "":
			problemSince = time.Time{}
		case problemSince.IsZero() && !es.Fatal:
			problemSince = now
		case es.Fatal || now.Sub(problemSince) >= engineProblemGrace:
			failed = true
			return "", fmt.Errorf("%s cannot apply commit %s: %s", r.engine.Name(), short(sha), es.Problem)
		}
		var err error
		if gens, addons, decided, pending, err = r.onHub(ctx, st); err != nil {
			failed = true
			return "", err
		}
		if pending == "" {
			r.disp.finish(st.Name, now.Sub(w.start), frame{Extra: []string{es.Line}})
			r.disp.printf("   on the hub %s after %s: %s\n", seconds(now.Sub(w.handed)), w.engine.HandOver, describeOnHub(st, gens, decided))
			return "", nil
		}
		if !stallNoted && now.Sub(w.handed) >= engineStallNote {
			stallNoted = true
			r.disp.printf("   %s has not applied commit %s after %s (the hub lacks %s): %s (its logs: %s)\n", r.engine.Name(), short(sha),
				seconds(now.Sub(w.handed)), pending, es.Line, r.engine.Logs())
		}
		r.disp.update(st.Name, now.Sub(w.start), frame{Extra: []string{es.Line}}, now)
		return "the hub lacks " + pending, nil
	})
	switch {
	case failed:
		return nil, nil, err
	case ctx.Err() != nil:
		return nil, nil, ctx.Err()
	case err != nil:
		return nil, nil, fmt.Errorf("%s did not apply commit %s within --step-timeout %s (the hub lacks %s): %s",
			r.engine.Name(), short(sha), r.o.StepTimeout, pending, es.Line)
	}
	return gens, addons, nil
}

// onHub reads the step's ClusterManagementAddOns and Placements from the hub: pending names the
// first one that is not there as the step has it (every field the step sets, with the value it
// sets; the server adds defaults), or a Placement OCM's placement controller has not scheduled
// (ocmhub.Scheduled). Once none is pending it returns the add-ons' generations and names and the
// Placements' numbers of clusters.
func (r *demoRun) onHub(ctx context.Context, st step) (gens map[string]int64, addons []string, decided map[string]int, pending string, err error) {
	gens, decided = map[string]int64{}, map[string]int{}
	for _, o := range st.Objects {
		gk := o.GroupVersionKind().GroupKind()
		if gk != placementGK && gk != cmaGVK.GroupKind() {
			continue
		}
		what := o.GetKind() + " " + ssapply.Name(o)
		mapping, err := r.clients.Dynamic.Resource(gvrOf(o)).Namespace(o.GetNamespace()).Get(ctx, o.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil, nil, nil, what, nil
		case err != nil:
			return nil, nil, nil, "", fmt.Errorf("reading %s: %w", what, err)
		}
		if !holds(mapping.Object["spec"], o.Object["spec"]) || !holds(mapping.GetAnnotations(), o.GetAnnotations()) {
			return nil, nil, nil, what + " as the commit has it", nil
		}
		if gk == placementGK {
			n, pending, err := ocmhub.Scheduled(ctx, r.hub.Clients, o.GetNamespace(), o.GetName())
			if err != nil || pending != "" {
				return nil, nil, nil, pending, err
			}
			decided[ssapply.Name(o)] = n
			continue
		}
		gens[o.GetName()] = mapping.GetGeneration()
		addons = append(addons, o.GetName())
	}
	return gens, addons, decided, "", nil
}

// holds reports whether live holds every field of want with want's value: maps may have more keys
// (the server's defaults), lists must have as many elements, each holding want's.
func holds(live, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return len(w) == 0 && live == nil
		}
		for k, v := range w {
			if !holds(l[k], v) {
				return false
			}
		}
		return true
	case map[string]string:
		l, _ := live.(map[string]string)
		for k, v := range w {
			if lv, ok := l[k]; !ok || lv != v {
				return false
			}
		}
		return true
	case []any:
		l, ok := live.([]any)
		if !ok || len(l) != len(w) {
			return false
		}
		for i := range w {
			if !holds(l[i], w[i]) {
				return false
			}
		}
		return true
	case nil:
		return true
	}
	return fmt.Sprint(live) == fmt.Sprint(want)
}

// gvrOf is the resource of the two kinds onHub reads.
func gvrOf(o *unstructured.Unstructured) schema.GroupVersionResource {
	if o.GroupVersionKind().GroupKind() == placementGK {
		return schema.GroupVersionResource{Group: placementGK.Group, Version: "v1beta1", Resource: "placements"}
	}
	return schema.GroupVersionResource{Group: cmaGVK.Group, Version: cmaGVK.Version, Resource: "clustermanagementaddons"}
}

// describeOnHub says what of the step reached the hub: its add-ons' generations and its
// Placements, decided.
func describeOnHub(st step, gens map[string]int64, decided map[string]int) string {
	var parts []string
	for _, o := range st.Objects {
		switch o.GroupVersionKind().GroupKind() {
		case cmaGVK.GroupKind():
			parts = append(parts, fmt.Sprintf("ClusterManagementAddOn %s (generation %d)", o.GetName(), gens[o.GetName()]))
		case placementGK:
			parts = append(parts, fmt.Sprintf("Placement %s, %s decided by OCM's placement controller", ssapply.Name(o), plural(decided[ssapply.Name(o)], "cluster")))
		}
	}
	return strings.Join(parts, "; ")
}

// noteEngine remembers what the engine said about the step's commit, and says when it first said
// that it applied it.
func (r *demoRun) noteEngine(w *stepWatch, es engineState) {
	w.lastEngine = es
	e := w.engine
	if e == nil {
		return
	}
	e.Verdict, e.Last = es.Verdict, es.Line
	if !es.Applied {
		return
	}
	if e.AppliedAfter < 0 {
		e.AppliedAfter, e.Revision = time.Since(w.handed), es.Revision
		r.disp.printf("   %s applied %s %s after %s\n", e.Engine, cmp.Or(es.Revision, short(e.Commit)), seconds(e.AppliedAfter), e.HandOver)
	}
	if es.Status != "" && (len(e.Statuses) == 0 || e.Statuses[len(e.Statuses)-1] != es.Status) {
		e.Statuses = append(e.Statuses, es.Status)
	}
}

// engineAgrees reports whether the engine's verdict on the step's commit says what the demo's
// view says: Succeeded is healthy; Failed is failed, by a health check that ended after the demo
// saw the rollout fail (failedSince): an earlier failure is about an earlier moment, such as the
// PlacementNotFound instant of a commit that adds a Placement, and says nothing of the failure the
// demo saw (the engine retries, and its next check must find it). Other results ask nothing of
// the engine.
func engineAgrees(result Result, es engineState, failedSince time.Time) bool {
	switch result {
	case Succeeded:
		return es.Applied && es.Verdict == verdictHealthy
	case Failed:
		return es.Applied && es.Verdict == verdictFailed && es.VerdictAt.After(failedSince.Truncate(time.Second))
	}
	return true
}

// describe says how the engine ended a step, for the summary.
func (e *EngineResult) describe() string {
	what := "commit " + short(e.Commit)
	if e.Revert {
		what = "the git revert " + short(e.Commit)
	}
	if e.AppliedAfter < 0 {
		return fmt.Sprintf("%s: %s not applied (%s)", e.Engine, what, e.Last)
	}
	s := fmt.Sprintf("%s: %s applied %s after %s", e.Engine, what, seconds(e.AppliedAfter), e.HandOver)
	if e.VerdictAfter >= 0 {
		s += fmt.Sprintf(", %s %s after it", strings.ToLower(string(e.Verdict)), seconds(e.VerdictAfter))
	}
	if failed := e.failedOnTheWay(); failed != "" {
		s += fmt.Sprintf(" (on the way: %s)", failed)
	}
	return s
}

// failedOnTheWay returns the failed status the engine showed for a commit it then called healthy,
// or "".
func (e *EngineResult) failedOnTheWay() string {
	if e.Verdict != verdictHealthy {
		return ""
	}
	for _, st := range e.Statuses {
		if strings.Contains(st, "Failed") || strings.Contains(st, "Degraded") {
			return st
		}
	}
	return ""
}

// uncounted reports whether a placement of the snapshots owns decided clusters (snapshot.owned)
// that its progression does not count yet (it counts none). An engine applies a step's objects in
// one go, and the controller may see a new Placement before OCM's placement controller scheduled
// it (no PlacementDecisions yet: a rollout of no cluster, complete at once); until the controller
// counted the decided clusters, that success is not the step's. (Without an engine the demo waits
// for the Placements' decisions before it applies the ClusterManagementAddOns.)
func uncounted(snaps []snapshot) bool {
	for _, s := range snaps {
		for _, p := range s.View.Placements {
			if p.Progress.Total == 0 && len(s.owned(p.Key())) > 0 {
				return true
			}
		}
	}
	return false
}
