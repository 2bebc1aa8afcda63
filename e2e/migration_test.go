//go:build integration

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	watchtools "k8s.io/client-go/tools/watch"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/health"
	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/rolloutplan"
)

// The migration recipe of docs/guides/migrating-from-addon-manager.md ("Moving an add-on to
// addonops, and back"), run against OCM v1.2.1's addon-manager: the hub of
// TestAddonManagerDefaultMode (OCM's placement controller, addon-manager and a work agent per
// cluster, the addonops controller in its default mode).

// The guide's commands, run verbatim (migrationCommands checks that the guide shows each one on a
// line of its own). jpReason and jpStatus select the Progressing condition of the add-on's install
// progression.
const (
	jpReason        = `{.status.installProgressions[?(@.name=="hello-template-placement")].conditions[?(@.type=="Progressing")].reason}`
	jpStatus        = `{.status.installProgressions[?(@.name=="hello-template-placement")].conditions[?(@.type=="Progressing")].status}`
	jpDesired       = `{.status.installProgressions[?(@.name=="hello-template-placement")].configReferences[?(@.resource=="addontemplates")].desiredConfig.name}`
	cmdToAddonops   = `kubectl annotate clustermanagementaddon hello-template addon.open-cluster-management.io/lifecycle=self --overwrite`
	cmdWaitAddonops = `kubectl wait clustermanagementaddon/hello-template --timeout=5m --for=jsonpath='` + jpReason + `'=UpgradeSucceed`
	cmdToOCM        = `kubectl annotate clustermanagementaddon hello-template addon.open-cluster-management.io/lifecycle=addon-manager --overwrite`
	cmdWaitOCM      = `kubectl wait clustermanagementaddon/hello-template --timeout=5m --for=jsonpath='` + jpReason + `'=Completed`
	cmdWaitStopped  = `kubectl wait clustermanagementaddon/hello-template --timeout=5m --for=jsonpath='` + jpStatus + `'=False`
	cmdGetReason    = `kubectl get clustermanagementaddon/hello-template -o jsonpath='` + jpReason + `'`
	// cmdWaitDesired is the guide's wait for a new config among the desired ones, with the
	// placeholder the guide writes for the template's name.
	cmdWaitDesired = `--for=jsonpath='` + jpDesired + `'=<new template name>`
)

// OCM's and addonops' words for the add-on's state in this test.
const (
	ocmCompleted        = addonv1alpha1.ProgressingReasonCompleted
	ocmProgressing      = addonv1alpha1.ProgressingReasonProgressing
	ocmCMACompleted     = "3/3 completed with no errors, 0 failed 0 timeout."
	ocmMCACompleted     = "completed with no errors."
	addonopsCMAUpgraded = "3/3 upgrade completed with no errors."
)

// TestMigration installs examples/hello-template with OCM's addon-manager managing it (no
// lifecycle annotation), moves it to addonops and back with the guide's kubectl commands (docs/guides/migrating-from-addon-manager.md), then
// again the way the README says to do it in Git (the annotation in the applied YAML, server-side
// applied as Argo CD and Flux do). Throughout, every cluster keeps its agent: no ManagedClusterAddOn,
// ManifestWork or agent Deployment is deleted or recreated, no work or Deployment changes its spec,
// every work stays Applied and Available, every agent ready and every MCA Available. The status is
// OCM's vocabulary before, addonops' after, OCM's again after moving back, and the Argo CD and Flux
// health checks give the add-on and every MCA the right health at every state the hub went through.
func TestMigration(t *testing.T) {
	started := time.Now()
	readme := migrationCommands(t)
	s := newAddonManagerSuite(t)
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	mcas := s.recordMCAs(ctx, t, helloAddon)
	cma := s.recordCMA(ctx, t, helloAddon)
	verdicts := s.recordHealth(ctx, t)
	stopReady := s.keepDeploymentsReady(t)
	defer stopReady()

	// OCM's addon-manager installs the add-on.
	objs, _ := s.build(t, "e2e/testdata/hello-template/ocm-managed")
	tpl := only(t, objs, "AddOnTemplate").GetName()
	s.apply(t, objs)
	if v, ok := only(t, objs, "ClusterManagementAddOn").GetAnnotations()[addonv1alpha1.AddonLifecycleAnnotationKey]; ok {
		t.Fatalf("the OCM-managed overlay annotates the add-on lifecycle=%q", v)
	}
	s.waitVocabulary(t, mcas, cma, "OCM's addon-manager installed it", ocmCompleted)
	s.checkStatus(t, "installed by OCM", ocmCompleted, ocmCMACompleted, ocmMCACompleted)
	s.checkHealthy(t, "installed by OCM")
	readme.run(t, s, cmdGetReason, ocmCompleted)
	readme.run(t, s, cmdWaitStopped, "")
	t.Logf("installed by OCM's addon-manager after %s", time.Since(started).Round(100*time.Millisecond))
	guard := s.guardAgents(ctx, t)

	// Round 1: the guide's kubectl commands.
	mark, cmark := mcas.Mark(), cma.Mark()
	readme.run(t, s, cmdToAddonops, "")
	readme.run(t, s, cmdWaitAddonops, "")
	s.waitVocabulary(t, mcas, cma, "addonops took the add-on over", addonstatus.ReasonUpgradeSucceed)
	s.waitLifecycle(t, "OCM rewrites self", "")
	s.checkStatus(t, "moved to addonops", addonstatus.ReasonUpgradeSucceed, addonopsCMAUpgraded, addonstatus.MessageUpgradeSucceed)
	s.checkHealthy(t, "moved to addonops")
	readme.run(t, s, cmdGetReason, addonstatus.ReasonUpgradeSucceed)
	checkReasonSequence(t, "moving to addonops", mcas, cma, mark, cmark, ocmCompleted, addonstatus.ReasonUpgradeSucceed)
	s.checkMCAsNotTaken(t)

	mark, cmark = mcas.Mark(), cma.Mark()
	readme.run(t, s, cmdToOCM, "")
	readme.run(t, s, cmdWaitOCM, "")
	s.waitVocabulary(t, mcas, cma, "OCM's addon-manager took the add-on back", ocmCompleted)
	s.checkStatus(t, "moved back to OCM", ocmCompleted, ocmCMACompleted, ocmMCACompleted)
	s.checkHealthy(t, "moved back to OCM")
	checkReasonSequence(t, "moving back to OCM", mcas, cma, mark, cmark, addonstatus.ReasonUpgradeSucceed, ocmCompleted)

	// Round 2: in Git. The example as it ships says lifecycle: self.
	mark, cmark = mcas.Mark(), cma.Mark()
	gitSelf, _ := s.build(t, "e2e/testdata/hello-template/base")
	if got := only(t, gitSelf, "AddOnTemplate").GetName(); got != tpl {
		t.Fatalf("the overlays disagree on the template: %s and %s", tpl, got)
	}
	s.apply(t, gitSelf)
	s.waitVocabulary(t, mcas, cma, "addonops took the add-on over (Git: lifecycle self)", addonstatus.ReasonUpgradeSucceed)
	// OCM rewrites self to "": a drift a GitOps tool keeps putting back (hence "" in Git).
	s.waitLifecycle(t, "OCM rewrites the self Git applied", "")
	// Deleting the line in Git does not hand the add-on back: OCM owns the rewritten field, and a
	// server-side apply removes only fields its manager owns.
	s.apply(t, objs)
	s.waitLifecycle(t, "Git without the annotation leaves OCM's \"\"", "")
	s.checkStatus(t, "moved to addonops in Git", addonstatus.ReasonUpgradeSucceed, addonopsCMAUpgraded, addonstatus.MessageUpgradeSucceed)
	s.checkHealthy(t, "moved to addonops in Git")
	checkReasonSequence(t, "moving to addonops in Git", mcas, cma, mark, cmark, ocmCompleted, addonstatus.ReasonUpgradeSucceed)

	mark, cmark = mcas.Mark(), cma.Mark()
	gitBack, _ := s.build(t, "e2e/testdata/hello-template/to-addon-manager")
	s.apply(t, gitBack)
	s.waitLifecycle(t, "Git says addon-manager", addonv1alpha1.AddonLifecycleAddonManagerAnnotationValue)
	s.waitVocabulary(t, mcas, cma, "OCM's addon-manager took the add-on back (Git: lifecycle addon-manager)", ocmCompleted)
	s.checkStatus(t, "moved back to OCM in Git", ocmCompleted, ocmCMACompleted, ocmMCACompleted)
	s.checkHealthy(t, "moved back to OCM in Git")
	checkReasonSequence(t, "moving back to OCM in Git", mcas, cma, mark, cmark, addonstatus.ReasonUpgradeSucceed, ocmCompleted)

	if err := guard.stop(); err != nil {
		t.Error(err)
	}
	verdicts.check(t)
	t.Logf("wall time: %s (suite start, OCM install, two round trips)", time.Since(started).Round(100*time.Millisecond))
}

// migrationGuide is the page whose migration commands this test runs (its blocks are marked
// covered by this file).
const migrationGuide = "docs/guides/migrating-from-addon-manager.md"

// readmeCommands are the guide's migration commands, checked to be there.
type readmeCommands struct{ kubectl string }

// migrationCommands fails the test unless the guide (migrationGuide) shows every command this
// test runs on a line of its own (so the recipe cannot drift from what is tested), and finds kubectl.
func migrationCommands(t *testing.T) readmeCommands {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(tools.Root, migrationGuide))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for _, c := range []string{cmdToAddonops, cmdWaitAddonops, cmdToOCM, cmdWaitOCM, cmdWaitStopped, cmdGetReason} {
		if !slices.Contains(lines, c) {
			t.Errorf("%s has no line %q", migrationGuide, c)
		}
	}
	if !strings.Contains(string(b), cmdWaitDesired) {
		t.Errorf("%s does not show %q", migrationGuide, cmdWaitDesired)
	}
	if t.Failed() {
		t.FailNow()
	}
	// The repository's kubectl (make kubectl, which make test runs), built from the Kubernetes
	// module, never one the machine happens to have.
	r := readmeCommands{kubectl: filepath.Join(tools.Root, "bin", "kubectl")}
	if _, err := os.Stat(r.kubectl); err != nil {
		t.Fatalf("the guide's kubectl lines need %s: run `make kubectl` (make test does): %v", r.kubectl, err)
	}
	return r
}

// run runs one README command against the hub with the repository's kubectl (KUBECONFIG set to
// the hub's), and checks its output is want when want is not empty.
func (r readmeCommands) run(t *testing.T, s *suite, line, want string) {
	t.Helper()
	args, err := shellWords(line)
	if err != nil || len(args) < 2 || args[0] != "kubectl" {
		t.Fatalf("%q: not a kubectl command (%v)", line, err)
	}
	ctx, cancel := context.WithTimeout(s.ctx, timeout)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, r.kubectl, args[1:]...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.hub.Kubeconfig)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s%s", line, err, stdout.String(), stderr.String())
	}
	out := stdout.String()
	t.Logf("$ %s  [%s]\n%s", line, time.Since(start).Round(10*time.Millisecond), out)
	if want != "" && strings.TrimSpace(out) != want {
		t.Fatalf("%s printed %q, want %q", line, out, want)
	}
}

// waitVocabulary waits until the add-on's install progression and every MCA say reason.
func (s *suite) waitVocabulary(t *testing.T, mcas *recorder[mcaSnap], cma *recorder[progSnap], what, reason string) {
	t.Helper()
	waitRecorded(t, s, cma, what+": install progression "+reason, func(m map[string]progSnap) string {
		if p := m[helloPlacement]; p.Reason != reason {
			return p.String()
		}
		return ""
	})
	waitRecorded(t, s, mcas, what+": every MCA "+reason+" and Available", func(m map[string]mcaSnap) string {
		for _, c := range amClusters {
			if got := m[c]; got.Progressing != reason || got.Available != "True/ProbeAvailable" {
				return got.String()
			}
		}
		return ""
	})
}

// checkStatus checks the Progressing condition of the install progression (reason, cmaMessage)
// and of every MCA (reason, mcaMessage), all False, every config applied.
func (s *suite) checkStatus(t *testing.T, phase, reason, cmaMessage, mcaMessage string) {
	t.Helper()
	cma, err := s.c.Addon.AddonV1alpha1().ClusterManagementAddOns().Get(s.ctx, helloAddon, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cma.Status.InstallProgressions) != 1 {
		t.Fatalf("%s: install progressions %+v, want one", phase, cma.Status.InstallProgressions)
	}
	ip := cma.Status.InstallProgressions[0]
	c := meta.FindStatusCondition(ip.Conditions, addonv1alpha1.ManagedClusterAddOnConditionProgressing)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != reason || c.Message != cmaMessage {
		t.Errorf("%s: install progression Progressing %+v, want False %s %q", phase, c, reason, cmaMessage)
	}
	for _, r := range ip.ConfigReferences {
		if r.DesiredConfig == nil || r.LastAppliedConfig == nil || *r.DesiredConfig != *r.LastAppliedConfig {
			t.Errorf("%s: install progression config %s: desired %v, last applied %v", phase, r.Resource, r.DesiredConfig, r.LastAppliedConfig)
		}
	}
	for _, cl := range amClusters {
		m, err := s.c.Addon.AddonV1alpha1().ManagedClusterAddOns(cl).Get(s.ctx, helloAddon, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c := meta.FindStatusCondition(m.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionProgressing)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != reason || c.Message != mcaMessage {
			t.Errorf("%s: %s Progressing %+v, want False %s %q", phase, cl, c, reason, mcaMessage)
		}
		if len(m.Status.ConfigReferences) != 2 {
			t.Errorf("%s: %s configs %+v, want the template and the deployment config", phase, cl, m.Status.ConfigReferences)
		}
		for _, r := range m.Status.ConfigReferences {
			if r.DesiredConfig == nil || r.LastAppliedConfig == nil || *r.DesiredConfig != *r.LastAppliedConfig {
				t.Errorf("%s: %s config %s: desired %v, last applied %v", phase, cl, r.Resource, r.DesiredConfig, r.LastAppliedConfig)
			}
		}
	}
}

// waitLifecycle waits until the add-on's lifecycle annotation is value.
func (s *suite) waitLifecycle(t *testing.T, what, value string) {
	t.Helper()
	s.eventually(t, what, func() string {
		cma, err := s.c.Addon.AddonV1alpha1().ClusterManagementAddOns().Get(s.ctx, helloAddon, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if v, ok := cma.Annotations[addonv1alpha1.AddonLifecycleAnnotationKey]; !ok || v != value {
			return fmt.Sprintf("annotation %s=%q (set: %v), want %q", addonv1alpha1.AddonLifecycleAnnotationKey, v, ok, value)
		}
		return ""
	})
}

// checkMCAsNotTaken checks that addonops, managing the add-on now, left OCM's MCAs as OCM made
// them: not labelled as its own (it never deletes them) and owned by the CMA as OCM set it.
func (s *suite) checkMCAsNotTaken(t *testing.T) {
	t.Helper()
	for _, cl := range amClusters {
		m, err := s.c.Addon.AddonV1alpha1().ManagedClusterAddOns(cl).Get(s.ctx, helloAddon, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := m.Labels[rolloutplan.CreatedByLabel]; ok {
			t.Errorf("%s: OCM's MCA got addonops' label %s", cl, rolloutplan.CreatedByLabel)
		}
		if len(m.OwnerReferences) != 1 || m.OwnerReferences[0].Kind != "ClusterManagementAddOn" || m.OwnerReferences[0].Name != helloAddon {
			t.Errorf("%s: owners %+v, want OCM's controller reference to the ClusterManagementAddOn alone", cl, m.OwnerReferences)
		}
	}
}

// checkReasonSequence checks the reasons the install progression and each MCA went through since
// the marks: exactly from, then to (no flapping between the two managers, no step in between).
func checkReasonSequence(t *testing.T, phase string, mcas *recorder[mcaSnap], cma *recorder[progSnap], mark, cmark int, from, to string) {
	t.Helper()
	want := []string{from, to}
	start, events := cma.Since(cmark)
	if got := reasonsOf(start, events, helloPlacement, func(p progSnap) string { return p.Reason }); !slices.Equal(got, want) {
		t.Errorf("%s: install progression reasons %v, want %v", phase, got, want)
	}
	mstart, mevents := mcas.Since(mark)
	for _, c := range amClusters {
		if got := reasonsOf(mstart, mevents, c, func(m mcaSnap) string { return m.Progressing }); !slices.Equal(got, want) {
			t.Errorf("%s: %s Progressing reasons %v, want %v", phase, c, got, want)
		}
	}
}

// --- Health checks on the live objects ---

// healthChecks are the Argo CD scripts and Flux expressions of health/, loaded from the tree.
type healthChecks struct {
	cma, mca string
	flux     *health.FluxChecks
}

func loadHealthChecks(t *testing.T) healthChecks {
	t.Helper()
	dir := filepath.Join(tools.Root, "health", "argocd", "resource_customizations", "addon.open-cluster-management.io")
	var h healthChecks
	for _, f := range []struct {
		dst  *string
		kind string
	}{{&h.cma, "ClusterManagementAddOn"}, {&h.mca, "ManagedClusterAddOn"}} {
		b, err := os.ReadFile(filepath.Join(dir, f.kind, "health.lua"))
		if err != nil {
			t.Fatal(err)
		}
		*f.dst = string(b)
	}
	var err error
	if h.flux, err = health.LoadFluxChecks(filepath.Join(tools.Root, "health", "flux", "addonops-hub.yaml")); err != nil {
		t.Fatal(err)
	}
	return h
}

// verdict is what Argo CD and Flux say about one state of an object.
type verdict struct {
	Object, Reason, ProgressingStatus string // the object and its Progressing condition
	Argo, ArgoMessage, Flux           string
}

// judge runs the Argo CD script (as an argocd-cm custom script and as a built-in one: they must
// agree) and the Flux expressions on obj.
func (h healthChecks) judge(obj *unstructured.Unstructured) (verdict, error) {
	script := h.cma
	v := verdict{Object: obj.GetKind() + " " + obj.GetNamespace() + "/" + obj.GetName()}
	if obj.GetKind() == "ManagedClusterAddOn" {
		script = h.mca
		conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		v.Reason, v.ProgressingStatus = progressingOf(conds)
	} else {
		ips, _, _ := unstructured.NestedSlice(obj.Object, "status", "installProgressions")
		if len(ips) == 1 {
			conds, _, _ := unstructured.NestedSlice(ips[0].(map[string]any), "conditions")
			v.Reason, v.ProgressingStatus = progressingOf(conds)
		}
	}
	for _, openLibs := range []bool{false, true} {
		got, err := health.RunArgoScript(script, obj.Object, openLibs)
		if err != nil {
			return v, err
		}
		if !openLibs {
			v.Argo, v.ArgoMessage = got.Status, got.Message
		} else if got.Status != v.Argo || got.Message != v.ArgoMessage {
			return v, fmt.Errorf("the script says %s %q as a custom script and %s %q with all libraries", v.Argo, v.ArgoMessage, got.Status, got.Message)
		}
	}
	flux, evalErr, ok := h.flux.Status(obj)
	if !ok {
		return v, fmt.Errorf("no Flux expression for %s", obj.GroupVersionKind())
	}
	if evalErr != nil && flux != "Unknown" {
		return v, evalErr
	}
	v.Flux = flux
	return v, nil
}

func progressingOf(conds []any) (reason, status string) {
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == addonv1alpha1.ManagedClusterAddOnConditionProgressing {
			return fmt.Sprint(m["reason"]), fmt.Sprint(m["status"])
		}
	}
	return "", ""
}

// checkHealthy checks that Argo CD and Flux call the add-on and every MCA healthy now.
func (s *suite) checkHealthy(t *testing.T, phase string) {
	t.Helper()
	h := loadHealthChecks(t)
	objs := []*unstructured.Unstructured{}
	u, err := s.c.Dynamic.Resource(addonv1alpha1.SchemeGroupVersion.WithResource("clustermanagementaddons")).Get(s.ctx, helloAddon, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	objs = append(objs, u)
	for _, c := range amClusters {
		u, err := s.c.Dynamic.Resource(addonv1alpha1.SchemeGroupVersion.WithResource("managedclusteraddons")).Namespace(c).Get(s.ctx, helloAddon, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, u)
	}
	for _, o := range objs {
		v, err := h.judge(o)
		if err != nil {
			t.Fatalf("%s: %s: %v", phase, v.Object, err)
		}
		if v.Argo != "Healthy" || v.Flux != "Current" {
			t.Errorf("%s: %s (%s=%s): Argo CD %s %q, Flux %s; want Healthy, Current", phase, v.Object, v.Reason, v.ProgressingStatus, v.Argo, v.ArgoMessage, v.Flux)
		}
		if o.GetKind() == "ManagedClusterAddOn" && !strings.HasPrefix(v.ArgoMessage, v.Reason+": ") {
			t.Errorf("%s: %s: Argo CD message %q does not give the reason %s", phase, v.Object, v.ArgoMessage, v.Reason)
		}
	}
}

// healthRecorder judges every state of the add-on's CMA and MCAs the API server reports.
type healthRecorder struct {
	mu       sync.Mutex
	verdicts []verdict
	errs     []error
}

// recordHealth watches the add-on's CMA and MCAs and judges every state they pass through.
func (s *suite) recordHealth(ctx context.Context, t *testing.T) *healthRecorder {
	t.Helper()
	h := loadHealthChecks(t)
	r := &healthRecorder{}
	for _, res := range []string{"clustermanagementaddons", "managedclusteraddons"} {
		api := s.c.Dynamic.Resource(addonv1alpha1.SchemeGroupVersion.WithResource(res))
		sel := fields.OneTermEqualSelector("metadata.name", helloAddon).String()
		list, err := api.List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			t.Fatal(err)
		}
		w, err := watchtools.NewRetryWatcherWithContext(ctx, list.GetResourceVersion(), watcherFunc(func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return api.Watch(ctx, o)
		}))
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			defer w.Stop()
			for ev := range w.ResultChan() {
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok || ev.Type == watch.Deleted {
					continue
				}
				v, err := h.judge(u)
				r.mu.Lock()
				r.verdicts = append(r.verdicts, v)
				if err != nil {
					r.errs = append(r.errs, fmt.Errorf("%s: %w", v.Object, err))
				}
				r.mu.Unlock()
			}
		}()
	}
	return r
}

// check checks every verdict against the Progressing condition it judged: never Degraded (nothing
// failed here); OCM's Progressing, addonops' busy reasons and OCM's WaitingForManifestApplied are
// Progressing; a CMA with a success reason (OCM's Completed, addonops' *Succeed) is Healthy; Flux
// agrees with Argo CD. It fails when the recorder saw none of OCM's Progressing states or none of
// addonops' (the check would have been vacuous).
func (r *healthRecorder) check(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, err := range r.errs {
		t.Error(err)
	}
	fluxFor := map[string]string{"Healthy": "Current", "Progressing": "InProgress", "Degraded": "Failed"}
	seen := map[string]int{}
	for _, v := range r.verdicts {
		seen[v.Object[:strings.Index(v.Object, " ")]+"/"+v.Reason+"/"+v.Argo]++
		want := ""
		switch {
		case v.ProgressingStatus == "True" || v.Reason == "WaitingForManifestApplied":
			want = "Progressing"
		case strings.HasPrefix(v.Object, "ClusterManagementAddOn") && addonstatus.SuccessReasons.Has(v.Reason):
			want = "Healthy"
		}
		if v.Argo == "Degraded" || want != "" && v.Argo != want {
			t.Errorf("%s with Progressing=%s %s: Argo CD %s %q, want %s", v.Object, v.ProgressingStatus, v.Reason, v.Argo, v.ArgoMessage, or(want, "not Degraded"))
		}
		if f := fluxFor[v.Argo]; v.Flux != f && !(v.Flux == "Unknown" && v.Reason == "") {
			t.Errorf("%s with Progressing=%s %s: Flux %s, Argo CD %s", v.Object, v.ProgressingStatus, v.Reason, v.Flux, v.Argo)
		}
	}
	t.Logf("health verdicts (kind/reason/Argo CD: states): %v", seen)
	for _, k := range []string{
		"ClusterManagementAddOn/" + ocmProgressing + "/Progressing",
		"ClusterManagementAddOn/" + ocmCompleted + "/Healthy",
		"ClusterManagementAddOn/" + addonstatus.ReasonUpgradeSucceed + "/Healthy",
		"ManagedClusterAddOn/" + ocmCompleted + "/Healthy",
		"ManagedClusterAddOn/" + addonstatus.ReasonUpgradeSucceed + "/Healthy",
	} {
		if seen[k] == 0 {
			t.Errorf("no state %s was judged", k)
		}
	}
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// --- The agents ---

// agentGuard watches everything a cluster's agent hangs on, from the moment it starts: the
// add-on's ManagedClusterAddOns, its ManifestWorks and the agent Deployments the work agents
// applied. Any deletion (or deletionTimestamp), any new spec of a work or a Deployment (a
// re-rendered agent), a work not Applied and Available at its generation, a Deployment not ready at
// its generation or an MCA not Available is a violation.
type agentGuard struct {
	cancel     context.CancelFunc
	wg         sync.WaitGroup
	mu         sync.Mutex
	violations []string
	events     map[string]int
	initial    map[string]types.UID // "<kind> <ns>/<name>" -> UID at the start
	s          *suite
	stopOnce   sync.Once
	stopErr    error
}

func (s *suite) guardAgents(ctx context.Context, t *testing.T) *agentGuard {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	g := &agentGuard{cancel: cancel, events: map[string]int{}, initial: map[string]types.UID{}, s: s}
	gens := map[string]int64{}
	// MCAs.
	mcaAPI := s.c.Addon.AddonV1alpha1().ManagedClusterAddOns(metav1.NamespaceAll)
	mcaSel := fields.OneTermEqualSelector("metadata.name", helloAddon).String()
	mcaList, err := mcaAPI.List(ctx, metav1.ListOptions{FieldSelector: mcaSel})
	if err != nil {
		t.Fatal(err)
	}
	for i := range mcaList.Items {
		m := &mcaList.Items[i]
		g.initial["ManagedClusterAddOn "+m.Namespace+"/"+m.Name] = m.UID
		g.checkMCA(watch.Added, m)
	}
	// Works.
	workAPI := s.c.Work.WorkV1().ManifestWorks(metav1.NamespaceAll)
	workSel := labels.SelectorFromSet(labels.Set{addonv1alpha1.AddonLabelKey: helloAddon}).String()
	workList, err := workAPI.List(ctx, metav1.ListOptions{LabelSelector: workSel})
	if err != nil {
		t.Fatal(err)
	}
	for i := range workList.Items {
		w := &workList.Items[i]
		key := "ManifestWork " + w.Namespace + "/" + w.Name
		g.initial[key], gens[key] = w.UID, w.Generation
		g.checkWork(watch.Added, w, gens[key])
	}
	// Agent Deployments.
	depAPI := s.c.Kube.AppsV1().Deployments(installNamespace)
	depList, err := depAPI.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range depList.Items {
		d := &depList.Items[i]
		key := "Deployment " + d.Namespace + "/" + d.Name
		g.initial[key], gens[key] = d.UID, d.Generation
		g.checkDeployment(watch.Added, d, gens[key])
	}
	for _, c := range amClusters {
		for _, key := range []string{"ManagedClusterAddOn " + c + "/" + helloAddon, "ManifestWork " + c + "/" + helloWorkName, "Deployment " + installNamespace + "/" + helloAgentName(c)} {
			if _, ok := g.initial[key]; !ok {
				t.Fatalf("no %s to guard (have %v)", key, g.initial)
			}
		}
	}
	if len(g.violations) > 0 {
		t.Fatalf("the agents were not all up before the migration: %v", g.violations)
	}
	watchAll := func(kind, rv string, w func(context.Context, metav1.ListOptions) (watch.Interface, error), handle func(watch.EventType, runtime.Object)) {
		rw, err := watchtools.NewRetryWatcherWithContext(ctx, rv, watcherFunc(w))
		if err != nil {
			t.Fatal(err)
		}
		g.wg.Go(func() {
			defer rw.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case ev, ok := <-rw.ResultChan():
					if !ok {
						if ctx.Err() == nil {
							g.violate("the watch of %ss ended", kind)
						}
						return
					}
					if ev.Type == watch.Error {
						g.violate("the watch of %ss reported %v", kind, ev.Object)
						return
					}
					g.mu.Lock()
					g.events[kind]++
					g.mu.Unlock()
					handle(ev.Type, ev.Object)
				}
			}
		})
	}
	watchAll("ManagedClusterAddOn", mcaList.ResourceVersion, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.FieldSelector = mcaSel
		return mcaAPI.Watch(ctx, o)
	}, func(ev watch.EventType, o runtime.Object) {
		if m, ok := o.(*addonv1alpha1.ManagedClusterAddOn); ok {
			g.checkMCA(ev, m)
		}
	})
	watchAll("ManifestWork", workList.ResourceVersion, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.LabelSelector = workSel
		return workAPI.Watch(ctx, o)
	}, func(ev watch.EventType, o runtime.Object) {
		if w, ok := o.(*workv1.ManifestWork); ok {
			g.checkWork(ev, w, gens["ManifestWork "+w.Namespace+"/"+w.Name])
		}
	})
	watchAll("Deployment", depList.ResourceVersion, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return depAPI.Watch(ctx, o)
	}, func(ev watch.EventType, o runtime.Object) {
		if d, ok := o.(*appsv1.Deployment); ok {
			g.checkDeployment(ev, d, gens["Deployment "+d.Namespace+"/"+d.Name])
		}
	})
	t.Logf("guarding %d objects the agents hang on (MCAs, ManifestWorks, agent Deployments)", len(g.initial))
	// Also when the test stops early: what the guard saw tells why.
	t.Cleanup(func() {
		if err := g.stop(); err != nil && !t.Failed() {
			t.Error(err)
		} else if err != nil {
			t.Log(err)
		}
	})
	return g
}

func (g *agentGuard) violate(format string, args ...any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.violations = append(g.violations, fmt.Sprintf(format, args...))
}

func (g *agentGuard) checkMCA(ev watch.EventType, m *addonv1alpha1.ManagedClusterAddOn) {
	key := "ManagedClusterAddOn " + m.Namespace + "/" + m.Name
	switch {
	case ev == watch.Deleted || m.DeletionTimestamp != nil:
		g.violate("%s deleted", key)
	case !meta.IsStatusConditionTrue(m.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionAvailable):
		g.violate("%s not Available: %+v", key, meta.FindStatusCondition(m.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionAvailable))
	}
}

func (g *agentGuard) checkWork(ev watch.EventType, w *workv1.ManifestWork, gen int64) {
	key := "ManifestWork " + w.Namespace + "/" + w.Name
	switch {
	case ev == watch.Deleted || w.DeletionTimestamp != nil:
		g.violate("%s deleted", key)
	case gen != 0 && w.Generation != gen:
		g.violate("%s rewritten: generation %d, was %d", key, w.Generation, gen)
	default:
		for _, typ := range []string{workv1.WorkApplied, workv1.WorkAvailable} {
			c := meta.FindStatusCondition(w.Status.Conditions, typ)
			if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != w.Generation {
				g.violate("%s not %s at generation %d: %+v", key, typ, w.Generation, c)
			}
		}
	}
}

func (g *agentGuard) checkDeployment(ev watch.EventType, d *appsv1.Deployment, gen int64) {
	key := "Deployment " + d.Namespace + "/" + d.Name
	switch {
	case ev == watch.Deleted || d.DeletionTimestamp != nil:
		g.violate("%s deleted", key)
	case gen != 0 && d.Generation != gen:
		g.violate("%s changed: generation %d, was %d", key, d.Generation, gen)
	case d.Status.ObservedGeneration != d.Generation || d.Status.ReadyReplicas < 1:
		g.violate("%s not ready: generation %d, observed %d, %d ready", key, d.Generation, d.Status.ObservedGeneration, d.Status.ReadyReplicas)
	}
}

// stop ends the watches and returns the violations, or an error when an object was replaced
// (another UID now) although no event said so, or when no MCA event was seen at all (the status
// changed twice per round: a guard that saw nothing was not watching). Only the first call looks.
func (g *agentGuard) stop() error {
	g.stopOnce.Do(func() { g.stopErr = g.look() })
	return g.stopErr
}

func (g *agentGuard) look() error {
	g.cancel()
	g.wg.Wait()
	s := g.s
	for key, uid := range g.initial {
		kind, nsName, _ := strings.Cut(key, " ")
		ns, name, _ := strings.Cut(nsName, "/")
		var obj metav1.Object
		var err error
		switch kind {
		case "ManagedClusterAddOn":
			obj, err = s.c.Addon.AddonV1alpha1().ManagedClusterAddOns(ns).Get(s.ctx, name, metav1.GetOptions{})
		case "ManifestWork":
			obj, err = s.c.Work.WorkV1().ManifestWorks(ns).Get(s.ctx, name, metav1.GetOptions{})
		case "Deployment":
			obj, err = s.c.Kube.AppsV1().Deployments(ns).Get(s.ctx, name, metav1.GetOptions{})
		}
		switch {
		case err != nil:
			g.violate("%s at the end: %v", key, err)
		case obj.GetUID() != uid:
			g.violate("%s was replaced: UID %s, was %s", key, obj.GetUID(), uid)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var errs []error
	for _, v := range g.violations {
		errs = append(errs, errors.New(v))
	}
	if g.events["ManagedClusterAddOn"] == 0 {
		errs = append(errs, fmt.Errorf("the guard saw no ManagedClusterAddOn event: it was not watching"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("a cluster lost its agent during the migration (events seen: %v):\n%w", g.events, errors.Join(errs...))
	}
	return nil
}
