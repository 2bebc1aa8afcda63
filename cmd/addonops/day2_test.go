//go:build integration

package main

// The day-2 commands and history against the package's real API server (localhub.ForTest, started
// by TestMain in status_test.go). No controller runs: each test writes the CMA, its status and the
// history ConfigMap as the controller would, runs the command in-process, and reads back exactly
// what it wrote with internal/operations.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/operations"
	"github.com/addonops/addonops/internal/testing/localhub"
)

// addonops runs the command line in-process against the package's hub.
func addonops(t *testing.T, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	args = append(args, "--kubeconfig", localhub.ForTest(t).Kubeconfig)
	code := run(append([]string{"addonops"}, args...), &out, &errOut)
	return result{code, out.String(), errOut.String()}
}

func key(s string) canary.PlacementKey {
	k, err := canary.ParsePlacementKey(s)
	if err != nil {
		panic(err)
	}
	return k
}

// fixture is a CMA as the controller would leave it.
type fixture struct {
	placements  []string
	annotations map[string]string
	// desired: placement → its desired configs, written to status.installProgressions (nil configs:
	// a progression without desired configs).
	desired map[string][]history.Config
}

// createCMA creates the add-on (deleted when the test ends) and writes its status.
func createCMA(t *testing.T, name string, f fixture) {
	t.Helper()
	hub := localhub.ForTest(t)
	cmas := hub.Clients.Addon.AddonV1alpha1().ClusterManagementAddOns()
	obj := &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: f.annotations}}
	obj.Spec.InstallStrategy.Type = addonv1alpha1.AddonInstallStrategyPlacements
	for _, p := range f.placements {
		k := key(p)
		obj.Spec.InstallStrategy.Placements = append(obj.Spec.InstallStrategy.Placements, addonv1alpha1.PlacementStrategy{
			PlacementRef: addonv1alpha1.PlacementRef{Namespace: k.Namespace, Name: k.Name}})
	}
	created, err := cmas.Create(t.Context(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cmas.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting ClusterManagementAddOn %s: %v", name, err)
		}
	})
	if len(f.desired) == 0 {
		return
	}
	for _, p := range slices.Sorted(maps.Keys(f.desired)) {
		k := key(p)
		ip := addonv1alpha1.InstallProgression{PlacementRef: addonv1alpha1.PlacementRef{Namespace: k.Namespace, Name: k.Name}}
		for _, c := range f.desired[p] {
			ip.ConfigReferences = append(ip.ConfigReferences, addonv1alpha1.InstallConfigReference{
				ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: c.Group, Resource: c.Resource},
				DesiredConfig: &addonv1alpha1.ConfigSpecHash{
					ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: c.Namespace, Name: c.Name}, SpecHash: c.SpecHash},
			})
		}
		created.Status.InstallProgressions = append(created.Status.InstallProgressions, ip)
	}
	if _, err := cmas.UpdateStatus(t.Context(), created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func getCMA(t *testing.T, name string) *addonv1alpha1.ClusterManagementAddOn {
	t.Helper()
	obj, err := localhub.ForTest(t).Clients.Addon.AddonV1alpha1().ClusterManagementAddOns().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// annotation returns the CMA's annotation key ("<absent>" when it has none) and its resourceVersion.
func annotation(t *testing.T, addon, k string) (string, string) {
	t.Helper()
	obj := getCMA(t, addon)
	v, ok := obj.Annotations[k]
	if !ok {
		v = "<absent>"
	}
	return v, obj.ResourceVersion
}

// step runs a command that must succeed and leave annotation k at want, saying sayWhat on stdout.
// It returns the CMA's resourceVersion afterwards.
func step(t *testing.T, addon, k, want, say string, args ...string) string {
	t.Helper()
	r := addonops(t, args...)
	if r.code != exitOK {
		t.Fatalf("%v: exit %d\nstdout:\n%s\nstderr:\n%s", args, r.code, r.stdout, r.stderr)
	}
	got, rv := annotation(t, addon, k)
	if got != want {
		t.Errorf("%v: annotation %s = %q, want %q", args, k, got, want)
	}
	if !strings.Contains(r.stdout, say) {
		t.Errorf("%v: stdout lacks %q:\n%s", args, say, r.stdout)
	}
	shown := "  " + k + ": " + want + "\n"
	if want == "<absent>" {
		shown = "  " + k + ": (not set)\n"
	}
	if !strings.Contains(r.stdout, shown) {
		t.Errorf("%v: stdout does not show the resulting annotation %q:\n%s", args, shown, r.stdout)
	}
	return rv
}

// refused runs a command that must fail with exit 3 and say want on stderr, changing nothing.
func refused(t *testing.T, addon, want string, args ...string) {
	t.Helper()
	before := getCMA(t, addon)
	r := addonops(t, args...)
	if r.code != exitError || !strings.Contains(r.stderr, want) {
		t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", args, r.code, r.stderr, exitError, want)
	}
	if after := getCMA(t, addon); after.ResourceVersion != before.ResourceVersion {
		t.Errorf("%v: the refused command changed the CMA (resourceVersion %s → %s)", args, before.ResourceVersion, after.ResourceVersion)
	}
}

func TestPause(t *testing.T) {
	const addon = "day2-pause"
	createCMA(t, addon, fixture{placements: []string{"default/canary", "default/prod"}})
	k := operations.PauseAnnotation

	rv := step(t, addon, k, "default/prod", "day2-pause: paused placement default/prod", "pause", addon, "--placement", "default/prod")
	r := operations.Parse(getCMA(t, addon).Annotations)
	if !r.IsPaused(key("default/prod")) || r.IsPaused(key("default/canary")) || len(r.Problems) > 0 {
		t.Errorf("parsed back: %+v", r)
	}
	// Idempotent: nothing is written the second time.
	if again := step(t, addon, k, "default/prod", "placement default/prod was already paused; nothing changed", "pause", addon, "--placement", "default/prod"); again != rv {
		t.Errorf("pausing again wrote the CMA (resourceVersion %s → %s)", rv, again)
	}
	step(t, addon, k, "default/canary,default/prod", "paused placement default/canary", "pause", addon, "--placement", "default/canary")
	rv = step(t, addon, k, "*", `paused every placement ("*")`, "pause", addon)
	if !operations.Parse(getCMA(t, addon).Annotations).PauseAll {
		t.Errorf("pause without --placement does not pause all")
	}
	if again := step(t, addon, k, "*", "every placement was already paused", "pause", addon); again != rv {
		t.Errorf("pausing all again wrote the CMA")
	}
	step(t, addon, k, "*", `placement default/prod was already paused (every placement is, "*")`, "pause", addon, "--placement", "default/prod")

	// The write is a merge patch by field manager addonops-cli.
	managers := map[string]metav1.ManagedFieldsOperationType{}
	for _, mf := range getCMA(t, addon).ManagedFields {
		managers[mf.Manager] = mf.Operation
	}
	if managers[fieldManager] != metav1.ManagedFieldsOperationUpdate {
		t.Errorf("managedFields: %v, want %s with operation Update", managers, fieldManager)
	}

	refused(t, addon, "placement default/nope is not an install placement of add-on day2-pause; its install placements are default/canary, default/prod",
		"pause", addon, "--placement", "default/nope")
	refused(t, addon, `--placement: "prod" is not <namespace>/<placement>`, "pause", addon, "--placement", "prod")
	refused(t, addon, "want the add-on's name", "pause")
	refused(t, addon, "want exactly one add-on name, got 2 arguments", "pause", addon, "other")
	if r := addonops(t, "pause", "day2-nope"); r.code != exitError || !strings.Contains(r.stderr, `add-on "day2-nope" not found: there is no ClusterManagementAddOn day2-nope on the hub`) {
		t.Errorf("unknown add-on: exit %d, stderr %s", r.code, r.stderr)
	}
}

func TestResume(t *testing.T) {
	const addon = "day2-resume"
	createCMA(t, addon, fixture{placements: []string{"default/a", "default/b", "default/c"}, annotations: map[string]string{operations.PauseAnnotation: "*"}})
	k := operations.PauseAnnotation

	// One placement under "*": the pause names the other install placements.
	step(t, addon, k, "default/a,default/c", "resumed placement default/b; every placement was paused", "resume", addon, "--placement", "default/b")
	r := operations.Parse(getCMA(t, addon).Annotations)
	if r.PauseAll || !r.IsPaused(key("default/a")) || r.IsPaused(key("default/b")) || !r.IsPaused(key("default/c")) {
		t.Errorf("parsed back: %+v", r)
	}
	rv := step(t, addon, k, "default/a,default/c", "placement default/b was not paused; nothing changed", "resume", addon, "--placement", "default/b")
	if _, again := annotation(t, addon, k); again != rv {
		t.Errorf("resuming again wrote the CMA")
	}
	step(t, addon, k, "default/c", "resumed placement default/a", "resume", addon, "--placement", "default/a")
	step(t, addon, k, "<absent>", "resumed placement default/c; no placement is paused any more", "resume", addon, "--placement", "default/c")
	step(t, addon, k, "<absent>", "placement default/c was not paused; nothing changed", "resume", addon, "--placement", "default/c")
	step(t, addon, k, "<absent>", "no placement was paused; nothing changed", "resume", addon)

	step(t, addon, k, "default/a", "paused placement default/a", "pause", addon, "--placement", "default/a")
	step(t, addon, k, "<absent>", "resumed every placement", "resume", addon)

	step(t, addon, k, "*", "paused every placement", "pause", addon)
	refused(t, addon, "placement default/x is not an install placement", "resume", addon, "--placement", "default/x")

	// A pause annotation that does not parse pauses everything; naming one placement is refused,
	// resuming everything removes it.
	createCMA(t, "day2-resume-bad", fixture{placements: []string{"default/a"}, annotations: map[string]string{k: "prod"}})
	refused(t, "day2-resume-bad", "annotation addonops.io/pause of ClusterManagementAddOn day2-resume-bad does not parse", "resume", "day2-resume-bad", "--placement", "default/a")
	refused(t, "day2-resume-bad", "does not parse", "pause", "day2-resume-bad", "--placement", "default/a")
	step(t, "day2-resume-bad", k, "<absent>", "resumed every placement", "resume", "day2-resume-bad")
}

var (
	templateV2 = history.Config{Group: "addon.open-cluster-management.io", Resource: "addontemplates", Name: "hello-template-5d2f1c", SpecHash: "1111aaaa2222bbbb"}
	adcV2      = history.Config{Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs", Namespace: "default", Name: "hello-config-9e8d7c", SpecHash: "3333cccc4444dddd"}
	templateV1 = history.Config{Group: "addon.open-cluster-management.io", Resource: "addontemplates", Name: "hello-template-0a0b0c", SpecHash: "5555eeee6666ffff"}
)

func TestPromote(t *testing.T) {
	const addon = "day2-promote"
	createCMA(t, addon, fixture{
		placements: []string{"default/canary", "default/prod", "default/staging", "default/fresh"},
		annotations: map[string]string{
			canary.Annotation:            `{"default/prod": "default/canary", "default/staging": "default/canary", "default/fresh": "default/canary"}`,
			operations.PromoteAnnotation: `{"default/old": "0123456789"}`,
		},
		desired: map[string][]history.Config{
			"default/canary":  {templateV2, adcV2},
			"default/prod":    {adcV2, templateV2},
			"default/staging": nil,
		},
	})
	k := operations.PromoteAnnotation
	id := history.VersionID([]history.Config{templateV2, adcV2})
	want := fmt.Sprintf(`{"default/old":"0123456789","default/prod":"%s"}`, id)

	rv := step(t, addon, k, want, fmt.Sprintf("promoted version %s (hello-config-9e8d7c, hello-template-5d2f1c) of placement default/prod past its canary default/canary", id),
		"promote", addon, "--placement", "default/prod")
	m, err := operations.ParseMap(getCMA(t, addon).Annotations[k])
	if err != nil || m[key("default/prod")] != id || m[key("default/old")] != "0123456789" || len(m) != 2 {
		t.Errorf("parsed back: %v, %v; want default/prod → %s and default/old kept", m, err, id)
	}
	if again := step(t, addon, k, want, "was already promoted past its canary default/canary; nothing changed", "promote", addon, "--placement", "default/prod"); again != rv {
		t.Errorf("promoting again wrote the CMA")
	}

	refused(t, addon, "--placement NS/NAME is required", "promote", addon)
	refused(t, addon, "placement default/canary of add-on day2-promote has no canary (annotation addonops.io/canary-placements does not gate it)",
		"promote", addon, "--placement", "default/canary")
	refused(t, addon, "placement default/nope is not an install placement", "promote", addon, "--placement", "default/nope")
	refused(t, addon, "placement default/staging of add-on day2-promote has no desired configs yet", "promote", addon, "--placement", "default/staging")
	refused(t, addon, "placement default/fresh of add-on day2-promote has no install progression yet", "promote", addon, "--placement", "default/fresh")
	refused(t, addon, `add-on "day2-nope" not found`, "promote", "day2-nope", "--placement", "default/prod")

	createCMA(t, "day2-promote-bad", fixture{placements: []string{"default/prod"},
		annotations: map[string]string{canary.Annotation: `{"default/prod": "default/canary"}`, k: "prod=abc"},
		desired:     map[string][]history.Config{"default/prod": {templateV1}}})
	refused(t, "day2-promote-bad", "annotation addonops.io/promote of ClusterManagementAddOn day2-promote-bad does not parse", "promote", "day2-promote-bad", "--placement", "default/prod")
	createCMA(t, "day2-promote-badcanary", fixture{placements: []string{"default/prod"},
		annotations: map[string]string{canary.Annotation: `["default/prod"]`},
		desired:     map[string][]history.Config{"default/prod": {templateV1}}})
	refused(t, "day2-promote-badcanary", "annotation addonops.io/canary-placements", "promote", "day2-promote-badcanary", "--placement", "default/prod")
}

func TestRetry(t *testing.T) {
	const addon = "day2-retry"
	createCMA(t, addon, fixture{placements: []string{"default/canary", "default/prod"}})
	k := operations.RetryAnnotation
	token := func() map[canary.PlacementKey]string {
		t.Helper()
		m, err := operations.ParseMap(getCMA(t, addon).Annotations[k])
		if err != nil {
			t.Fatalf("annotation %s: %v", k, err)
		}
		for p, tok := range m {
			if _, err := time.Parse(time.RFC3339Nano, tok); err != nil {
				t.Errorf("token of %s: %v", p, err)
			}
		}
		return m
	}

	r := addonops(t, "retry", addon, "--placement", "default/prod")
	first := token()
	if r.code != exitOK || len(first) != 1 || first[key("default/prod")] == "" || !strings.Contains(r.stdout, "asked to retry the rollout of placement default/prod (token ") {
		t.Fatalf("retry: exit %d, tokens %v\n%s%s", r.code, first, r.stdout, r.stderr)
	}
	// Each retry is a new request: a new token, once.
	r = addonops(t, "retry", addon, "--placement", "default/prod")
	second := token()
	if r.code != exitOK || second[key("default/prod")] == first[key("default/prod")] {
		t.Errorf("second retry: exit %d, token %v after %v", r.code, second, first)
	}
	r = addonops(t, "retry", addon)
	all := token()
	if r.code != exitOK || len(all) != 2 || all[key("default/canary")] != all[key("default/prod")] || all[key("default/prod")] == second[key("default/prod")] ||
		!strings.Contains(r.stdout, "placements default/canary, default/prod") {
		t.Errorf("retry of every placement: exit %d, tokens %v\n%s", r.code, all, r.stdout)
	}
	if raw := getCMA(t, addon).Annotations[k]; raw != operations.FormatMap(all) || !strings.Contains(r.stdout, "  "+k+": "+raw+"\n") {
		t.Errorf("annotation %q is not in FormatMap's form, or not shown:\n%s", raw, r.stdout)
	}
	refused(t, addon, "placement default/nope is not an install placement", "retry", addon, "--placement", "default/nope")
	createCMA(t, "day2-retry-manual", fixture{})
	refused(t, "day2-retry-manual", "add-on day2-retry-manual has no install placements", "retry", "day2-retry-manual")
}

func TestAbort(t *testing.T) {
	const addon = "day2-abort"
	createCMA(t, addon, fixture{
		placements: []string{"default/canary", "default/prod", "default/new"},
		desired: map[string][]history.Config{
			"default/canary": {templateV2, adcV2},
			"default/prod":   {templateV1},
		},
	})
	k := operations.AbortAnnotation
	idV2 := history.VersionID([]history.Config{adcV2, templateV2})
	idV1 := history.VersionID([]history.Config{templateV1})

	step(t, addon, k, fmt.Sprintf(`{"default/prod":"%s"}`, idV1), fmt.Sprintf("aborted version %s (hello-template-0a0b0c) of placement default/prod", idV1),
		"abort", addon, "--placement", "default/prod")
	want := fmt.Sprintf(`{"default/canary":"%s","default/prod":"%s"}`, idV2, idV1)
	rv := step(t, addon, k, want, "skipped, no desired configs yet: default/new", "abort", addon)
	m, err := operations.ParseMap(getCMA(t, addon).Annotations[k])
	if err != nil || m[key("default/canary")] != idV2 || m[key("default/prod")] != idV1 || len(m) != 2 {
		t.Errorf("parsed back: %v, %v", m, err)
	}
	if again := step(t, addon, k, want, "already aborted: ", "abort", addon); again != rv {
		t.Errorf("aborting again wrote the CMA")
	}
	refused(t, addon, "placement default/new of add-on day2-abort has no install progression yet", "abort", addon, "--placement", "default/new")
	refused(t, addon, "placement default/x is not an install placement", "abort", addon, "--placement", "default/x")

	// The automatic abort policy.
	a := operations.AutoAbortAnnotation
	rv = step(t, addon, a, "true", "automatic abort on", "abort", addon, "--auto=true")
	if !operations.Parse(getCMA(t, addon).Annotations).AutoAbort {
		t.Errorf("auto-abort does not parse back as on")
	}
	if again := step(t, addon, a, "true", "automatic abort was already on; nothing changed", "abort", addon, "--auto"); again != rv {
		t.Errorf("--auto again wrote the CMA")
	}
	step(t, addon, a, "<absent>", "automatic abort off", "abort", addon, "--auto=false")
	step(t, addon, a, "<absent>", "automatic abort was already off", "abort", addon, "--auto=false")
	refused(t, addon, "--auto and --placement do not go together", "abort", addon, "--auto", "--placement", "default/prod")
	refused(t, addon, `invalid argument "maybe" for "--auto" flag`, "abort", addon, "--auto=maybe")

	createCMA(t, "day2-abort-none", fixture{placements: []string{"default/a"}})
	refused(t, "day2-abort-none", "no install placement of add-on day2-abort-none (default/a) has desired configs yet", "abort", "day2-abort-none")
}

// TestGitOpsManagedCMA: a CMA that Argo CD or Flux applies server-side keeps the CLI's annotation
// across a sync that does not set it, and the CLI warns when Git sets the annotation it writes.
func TestGitOpsManagedCMA(t *testing.T) {
	const addon = "day2-gitops"
	cmas := localhub.ForTest(t).Clients.Addon.AddonV1alpha1().ClusterManagementAddOns()
	apply := func(annotations string) {
		t.Helper()
		manifest := fmt.Sprintf(`{"apiVersion": "addon.open-cluster-management.io/v1alpha1", "kind": "ClusterManagementAddOn",
			"metadata": {"name": %q, "annotations": %s},
			"spec": {"installStrategy": {"type": "Placements", "placements": [{"namespace": "default", "name": "prod"}]}}}`, addon, annotations)
		if _, err := cmas.Patch(t.Context(), addon, types.ApplyPatchType, []byte(manifest), metav1.PatchOptions{FieldManager: "argocd-controller", Force: new(true)}); err != nil {
			t.Fatal(err)
		}
	}
	apply(`{"team": "platform"}`)
	t.Cleanup(func() { _ = cmas.Delete(context.Background(), addon, metav1.DeleteOptions{}) })

	r := addonops(t, "pause", addon, "--placement", "default/prod")
	if r.code != exitOK || r.stderr != "" {
		t.Fatalf("pause: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	apply(`{"team": "platform"}`) // the next sync
	obj := getCMA(t, addon)
	if obj.Annotations[operations.PauseAnnotation] != "default/prod" || obj.Annotations["team"] != "platform" {
		t.Errorf("after a sync: annotations %v, want the pause kept and Git's own", obj.Annotations)
	}

	// Git sets the pause too: the CLI says Git will put it back.
	apply(fmt.Sprintf(`{"team": "platform", %q: "default/prod"}`, operations.PauseAnnotation))
	r = addonops(t, "resume", addon)
	if r.code != exitOK || !strings.Contains(r.stderr, "warning: annotation addonops.io/pause of ClusterManagementAddOn day2-gitops is also applied by argocd-controller (from Git)") {
		t.Errorf("resume of a Git-set pause: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	apply(fmt.Sprintf(`{"team": "platform", %q: "default/prod"}`, operations.PauseAnnotation))
	if v := getCMA(t, addon).Annotations[operations.PauseAnnotation]; v != "default/prod" {
		t.Errorf("after a sync that sets it, pause = %q; Git's value should win", v)
	}
}

// historyFixture is a record as the controller writes it.
func historyFixture(addon string) *history.Record {
	at := func(s string) metav1.Time {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			panic(err)
		}
		return metav1.NewTime(tm)
	}
	ptr := func(s string) *metav1.Time { tm := at(s); return &tm }
	v1, v2 := []history.Config{templateV1}, []history.Config{templateV2, adcV2}
	return &history.Record{Addon: addon, Placements: []history.Placement{
		{Placement: "default/canary", Versions: []history.Version{
			{ID: history.VersionID(v1), Configs: v1, Kind: "Install", Started: at("2026-03-01T10:00:00Z"), Completed: ptr("2026-03-01T10:02:00Z"),
				Ended: ptr("2026-03-02T09:00:00Z"), Result: history.Superseded},
			{ID: history.VersionID(v2), Configs: history.Sorted(v2), Kind: "Upgrade", Started: at("2026-03-02T09:00:00Z"), Ended: ptr("2026-03-02T09:05:00Z"),
				Result: history.Failed, Message: "failed: c7 (upgrade failed: ManifestWork addon-x-deploy-0\nis Applied=False)", Retries: 1},
		}},
		{Placement: "default/prod", Versions: []history.Version{
			{ID: history.VersionID(v1), Configs: v1, Kind: "Install", Started: at("2026-03-01T10:03:00Z"), Completed: ptr("2026-03-01T10:09:00Z"), Result: history.Succeeded},
		}},
	}}
}

// writeHistory creates the add-on's history ConfigMap in namespace ns, as the controller would:
// owned by the add-on's ClusterManagementAddOn.
func writeHistory(t *testing.T, ns, addon, data string) {
	t.Helper()
	cma, err := localhub.ForTest(t).Clients.Addon.AddonV1alpha1().ClusterManagementAddOns().Get(t.Context(), addon, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	writeHistoryOwnedBy(t, ns, addon, data, metav1.OwnerReference{APIVersion: addonv1alpha1.GroupVersion.String(), Kind: "ClusterManagementAddOn",
		Name: addon, UID: cma.UID})
}

// writeHistoryOwnedBy creates a ConfigMap that looks like the add-on's history in namespace ns,
// with these owners.
func writeHistoryOwnedBy(t *testing.T, ns, addon, data string, owners ...metav1.OwnerReference) {
	t.Helper()
	hub := localhub.ForTest(t)
	if err := localhub.EnsureNamespace(t.Context(), hub.Clients.Kube, ns); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: history.ConfigMapName(addon), Namespace: ns,
			Labels:          map[string]string{history.AddonLabel: history.AddonLabelValue(addon)},
			Annotations:     map[string]string{history.AddonAnnotation: addon},
			OwnerReferences: owners},
		Data: map[string]string{history.DataKey: data},
	}
	cms := hub.Clients.Kube.CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cms.Delete(context.Background(), cm.Name, metav1.DeleteOptions{}) })
}

func TestHistory(t *testing.T) {
	const addon = "day2-history"
	createCMA(t, addon, fixture{placements: []string{"default/canary", "default/prod"}})
	rec := historyFixture(addon)
	data, err := rec.Encode()
	if err != nil {
		t.Fatal(err)
	}
	writeHistory(t, "addonops-system", addon, data)
	idV1, idV2 := history.VersionID([]history.Config{templateV1}), history.VersionID([]history.Config{templateV2, adcV2})

	r := addonops(t, "history", addon)
	if r.code != exitOK {
		t.Fatalf("history: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	want := fmt.Sprintf(`PLACEMENT default/canary
REVISION  VERSION     CONFIGS                                     KIND     STARTED               COMPLETED             ENDED                 RESULT               MESSAGE
1         %[1]s  hello-template-0a0b0c                       Install  2026-03-01T10:00:00Z  2026-03-01T10:02:00Z  2026-03-02T09:00:00Z  Superseded
2         %[2]s  hello-config-9e8d7c, hello-template-5d2f1c  Upgrade  2026-03-02T09:00:00Z  -                     2026-03-02T09:05:00Z  Failed (retried 1x)  failed: c7 (upgrade failed: ManifestWork addon-x-deploy-0 is Applied=False)

PLACEMENT default/prod
REVISION  VERSION     CONFIGS                KIND     STARTED               COMPLETED             ENDED  RESULT     MESSAGE
1         %[1]s  hello-template-0a0b0c  Install  2026-03-01T10:03:00Z  2026-03-01T10:09:00Z  -      Succeeded
`, idV1, idV2)
	if got := trimLines(r.stdout); got != trimLines(want) {
		t.Errorf("history table:\n%s\nwant:\n%s", got, want)
	}

	r = addonops(t, "history", addon, "--placement", "default/prod", "-n", "addonops-system")
	if r.code != exitOK || strings.Contains(r.stdout, "default/canary") || !strings.Contains(r.stdout, "PLACEMENT default/prod\n") {
		t.Errorf("--placement default/prod: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, format := range []string{"json", "yaml"} {
		r := addonops(t, "history", addon, "-o", format)
		var got history.Record
		if format == "json" {
			err = json.Unmarshal([]byte(r.stdout), &got)
		} else {
			err = yaml.UnmarshalStrict([]byte(r.stdout), &got)
		}
		if r.code != exitOK || err != nil {
			t.Fatalf("-o %s: exit %d, %v\n%s%s", format, r.code, err, r.stdout, r.stderr)
		}
		gotData, _ := got.Encode()
		if gotData != data {
			t.Errorf("-o %s: decodes to\n%s\nwant\n%s", format, gotData, data)
		}
	}
	r = addonops(t, "history", addon, "--placement", "default/canary", "-o", "json")
	if r.code != exitOK || strings.Contains(r.stdout, "default/prod") || !strings.Contains(r.stdout, `"placement": "default/canary"`) {
		t.Errorf("--placement with -o json: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"history", addon, "--placement", "default/other"}, "has no placement default/other; it has default/canary, default/prod"},
		{[]string{"history", addon, "-o", "xml"}, `--output "xml": want json or yaml`},
		{[]string{"history", addon, "-n", "elsewhere"}, "no version history of add-on day2-history in namespace elsewhere (ConfigMap addonops-history-day2-history): the controller has not recorded this add-on yet"},
		{[]string{"history", "day2-nope"}, `add-on "day2-nope" not found`},
	} {
		if r := addonops(t, tc.args...); r.code != exitError || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", tc.args, r.code, r.stderr, tc.want)
		}
	}

	// A second record elsewhere (another controller, or anyone who may create a ConfigMap there):
	// only the controller's namespace is read, --namespace names another.
	writeHistory(t, "day2-other-controller", addon, `{"addon": "day2-history", "placements": []}`)
	if r := addonops(t, "history", addon, "--placement", "default/prod"); r.code != exitOK || !strings.Contains(r.stdout, "Succeeded") {
		t.Errorf("with a second record elsewhere: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := addonops(t, "history", addon, "-n", "day2-other-controller"); r.code != exitOK || r.stdout != "ADD-ON day2-history: no placement has rolled out a version yet\n" {
		t.Errorf("-n day2-other-controller: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// An add-on the controller has not recorded.
	createCMA(t, "day2-history-none", fixture{placements: []string{"default/prod"}})
	if r := addonops(t, "history", "day2-history-none"); r.code != exitError ||
		!strings.Contains(r.stderr, "no version history of add-on day2-history-none in namespace addonops-system (ConfigMap addonops-history-day2-history-none)") ||
		!strings.Contains(r.stderr, "it does not manage it") || !strings.Contains(r.stderr, "name it with --namespace") {
		t.Errorf("no record: exit %d, stderr %s", r.code, r.stderr)
	}
	// A record that does not decode.
	createCMA(t, "day2-history-bad", fixture{placements: []string{"default/prod"}})
	writeHistory(t, "addonops-system", "day2-history-bad", `{"addon": "day2-history-bad", "placements": [{"placement": 7}]}`)
	if r := addonops(t, "history", "day2-history-bad"); r.code != exitError ||
		!strings.Contains(r.stderr, "ConfigMap addonops-system/addonops-history-day2-history-bad, the version history of add-on day2-history-bad, key history.json: the version history is not valid JSON") {
		t.Errorf("bad record: exit %d, stderr %s", r.code, r.stderr)
	}
}

// trimLines drops the padding tabwriter leaves at the end of a row.
func trimLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// TestHistoryLongName: an add-on name too long for a ConfigMap name's prefix is found by the
// hashed name the controller gives it.
func TestHistoryLongName(t *testing.T) {
	addon := "day2-" + strings.Repeat("long", 16)
	createCMA(t, addon, fixture{placements: []string{"default/prod"}})
	rec := historyFixture(addon)
	data, _ := rec.Encode()
	writeHistory(t, "addonops-system", addon, data)
	r := addonops(t, "history", addon, "--placement", "default/prod")
	if r.code != exitOK || !strings.Contains(r.stdout, "Succeeded") {
		t.Errorf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestCommandLine: help, version and shell completion exit 0; the kubectl connection flags come
// from $KUBECONFIG and --context; completion lists the hub's add-ons and placements.
func TestCommandLine(t *testing.T) {
	plain := func(args ...string) result {
		var out, errOut bytes.Buffer
		code := run(append([]string{"addonops"}, args...), &out, &errOut)
		return result{code, out.String(), errOut.String()}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--help"}, "addonops pause ADDON [--placement NS/NAME]"},
		{[]string{"help"}, "addonops status ADDON [flags]"},
		{[]string{"pause", "--help"}, "Writes the annotation addonops.io/pause"},
		{[]string{"help", "status"}, "-w, --watch"},
		{[]string{"history", "-h"}, "--namespace"},
		{[]string{"--version"}, "addonops "},
		{[]string{"version"}, "addonops "},
		{[]string{"completion", "bash"}, "__start_addonops"},
		{[]string{"completion", "zsh"}, "#compdef addonops"},
	} {
		if r := plain(tc.args...); r.code != exitOK || !strings.Contains(r.stdout, tc.want) {
			t.Errorf("%v: exit %d, stdout lacks %q:\n%s%s", tc.args, r.code, tc.want, r.stdout, r.stderr)
		}
	}
	// Every verb's --help: exit 0, on stdout, nothing else, and no klog flag.
	for _, verb := range []string{"", "status", "history", "pause", "resume", "promote", "override-window", "retry", "abort", "version", "completion"} {
		args := append(strings.Fields(verb), "--help")
		r := plain(args...)
		if r.code != exitOK || !strings.Contains(r.stdout, "Usage:") || r.stderr != "" {
			t.Errorf("%v: exit %d\nstdout:\n%s\nstderr:\n%s", args, r.code, r.stdout, r.stderr)
		}
		for _, klog := range []string{"--v ", "vmodule", "logtostderr", "log_dir", "skip_headers"} {
			if strings.Contains(r.stdout, klog) {
				t.Errorf("%v shows klog's %s:\n%s", args, klog, r.stdout)
			}
		}
	}
	if r := plain("status", "--help"); !strings.Contains(r.stdout, "Usage: addonops status [ADDON] [flags]") {
		t.Errorf("status --help: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := plain(); r.code != exitError || !strings.Contains(r.stderr, "Day-2 operations") {
		t.Errorf("no command: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	createCMA(t, "day2-complete", fixture{placements: []string{"default/canary", "default/prod"}})
	hub := localhub.ForTest(t)
	if r := plain("__complete", "pause", "--kubeconfig", hub.Kubeconfig, "day2-compl"); r.code != exitOK || !strings.HasPrefix(r.stdout, "day2-complete\n") {
		t.Errorf("completing the add-on: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := plain("__complete", "promote", "--kubeconfig", hub.Kubeconfig, "day2-complete", "--placement", "default/p"); r.code != exitOK || !strings.HasPrefix(r.stdout, "default/prod\n") {
		t.Errorf("completing --placement: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// $KUBECONFIG and --context, as kubectl reads them.
	cfg, err := clientcmd.LoadFromFile(hub.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cur := cfg.Contexts[cfg.CurrentContext]
	cfg.Clusters["nowhere"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	cfg.Contexts["hub"] = cur
	cfg.Contexts["nowhere"] = &clientcmdapi.Context{Cluster: "nowhere", AuthInfo: cur.AuthInfo}
	cfg.CurrentContext = "nowhere"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", path)
	if r := plain("pause", "day2-complete", "--request-timeout", "5s"); r.code != exitError || !strings.Contains(r.stderr, "127.0.0.1:1") {
		t.Errorf("current context nowhere: exit %d, stderr %s", r.code, r.stderr)
	}
	if r := plain("--context", "hub", "pause", "day2-complete"); r.code != exitOK || !strings.Contains(r.stdout, "paused every placement") {
		t.Errorf("--context hub: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := plain("--context", "hub", "status", "day2-complete"); r.code != exitOK || !strings.Contains(r.stdout, "ADD-ON day2-complete") {
		t.Errorf("--context before status: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// The history a tenant cannot fake or hide: only the controller's namespace is read, and there only
// a ConfigMap the add-on's ClusterManagementAddOn owns by its UID. (Before: a ConfigMap with the
// history label in any namespace was shown, and a second one hid the real one behind an error.)
func TestHistoryForgedOrHidden(t *testing.T) {
	const addon = "day2-history-forged"
	createCMA(t, addon, fixture{placements: []string{"default/prod"}})
	cma, err := localhub.ForTest(t).Clients.Addon.AddonV1alpha1().ClusterManagementAddOns().Get(t.Context(), addon, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owner := metav1.OwnerReference{APIVersion: addonv1alpha1.GroupVersion.String(), Kind: "ClusterManagementAddOn", Name: addon, UID: cma.UID}
	forged := &history.Record{Addon: addon, Placements: []history.Placement{{Placement: "default/prod", Versions: []history.Version{
		{ID: "f0f0f0f0f0", Configs: []history.Config{templateV1}, Kind: "Install", Result: history.Succeeded, Message: "forged by a tenant"}}}}}
	forgedData, err := forged.Encode()
	if err != nil {
		t.Fatal(err)
	}

	// In a tenant's namespace, even with the CMA's UID (anyone who may read the CMA sees it): not
	// read at all; the error names where the controller keeps it.
	writeHistoryOwnedBy(t, "day2-tenant", addon, forgedData, owner)
	r := addonops(t, "history", addon)
	if r.code != exitError || strings.Contains(r.stdout, "f0f0f0f0f0") ||
		!strings.Contains(r.stderr, "no version history of add-on day2-history-forged in namespace addonops-system (ConfigMap addonops-history-day2-history-forged)") {
		t.Errorf("a forged record in a tenant's namespace: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// Next to the real one: the real one is shown.
	real := historyFixture(addon)
	realData, err := real.Encode()
	if err != nil {
		t.Fatal(err)
	}
	writeHistory(t, "addonops-system", addon, realData)
	if r := addonops(t, "history", addon, "--placement", "default/prod"); r.code != exitOK || strings.Contains(r.stdout, "f0f0f0f0f0") || !strings.Contains(r.stdout, "Succeeded") {
		t.Errorf("the real record next to a forged one: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// In the controller's namespace without the CMA's UID: refused, saying why.
	for _, tc := range []struct {
		name   string
		owners []metav1.OwnerReference
		want   string
	}{
		{"no owner", nil, "it has no ownerReference to ClusterManagementAddOn day2-history-forged"},
		{"another UID", []metav1.OwnerReference{{APIVersion: owner.APIVersion, Kind: owner.Kind, Name: addon, UID: "0d1e7ed0-0000-0000-0000-000000000000"}},
			"its ownerReference names ClusterManagementAddOn day2-history-forged with UID [0d1e7ed0-0000-0000-0000-000000000000], not the add-on's " + string(cma.UID)},
	} {
		ns := "day2-controller-" + strings.ToLower(strings.ReplaceAll(tc.name, " ", "-"))
		writeHistoryOwnedBy(t, ns, addon, forgedData, tc.owners...)
		r := addonops(t, "history", addon, "-n", ns)
		if r.code != exitError || strings.Contains(r.stdout, "f0f0f0f0f0") ||
			!strings.Contains(r.stderr, "ConfigMap "+ns+"/addonops-history-day2-history-forged is not the version history of add-on day2-history-forged: "+tc.want) ||
			!strings.Contains(r.stderr, "the controller ignores it too") {
			t.Errorf("%s: exit %d\n%s%s", tc.name, r.code, r.stdout, r.stderr)
		}
	}
}

// A record a newer controller wrote (a field this addonops does not know) is shown, with a warning
// naming the field.
func TestHistoryWrittenByANewerController(t *testing.T) {
	const addon = "day2-history-newer"
	createCMA(t, addon, fixture{placements: []string{"default/prod"}})
	data, err := historyFixture(addon).Encode()
	if err != nil {
		t.Fatal(err)
	}
	writeHistory(t, "addonops-system", addon, strings.Replace(data, "{", `{"fromTheFuture":true,`, 1))
	r := addonops(t, "history", addon)
	if r.code != exitOK || !strings.Contains(r.stdout, "Succeeded") ||
		!strings.Contains(r.stderr, `warning: the version history in ConfigMap addonops-system/addonops-history-day2-history-newer was written by a newer addonops (field "fromTheFuture" is unknown to this one)`) {
		t.Errorf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
