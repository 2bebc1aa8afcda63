//go:build integration

package templatedeploy_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/templatedeploy"
	"github.com/addonops/addonops/internal/testing/localhub"
)

// TestHelloTemplateGolden: the design's hello-template (internal/render/testdata/hello) deployed by
// the controller on a real API server gives exactly the ManifestWork of
// testdata/hello-work.yaml, with the annotation carrying the MCA's desired spec
// hashes, and the work is not written again while nothing changes.
func TestHelloTemplateGolden(t *testing.T) {
	e := newEnv(t, "hello-template", envOptions{})
	if _, err := localhub.EnsureManagedCluster(e.ctx, e.c, "cluster1", nil); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"addon-template.yaml", "addon-deployment-config.yaml"} {
		b, err := os.ReadFile("../render/testdata/hello/" + f)
		if err != nil {
			t.Fatal(err)
		}
		e.apply(string(b))
	}
	e.cleanup("cluster1")
	e.cma("hello-template", "cluster1/hello-config")
	e.mca("cluster1")

	const name = "addon-hello-template-deploy-0"
	took := e.waitFor(time.Minute, "the hello-template work", func() string {
		if e.work("cluster1", name) == nil {
			return "no work yet; MCA Configured " + condition(e.getMCA("cluster1"), "Configured")
		}
		return ""
	})
	t.Logf("work written %v after the MCA was created", took.Round(time.Millisecond))
	w := e.work("cluster1", name)
	got, err := templatedeploy.Describe(w)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/hello-work.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("work on the hub differs from the golden file (-want +got):\n%s", diff)
	}

	// The annotation holds exactly the MCA's desired configs and hashes.
	mca := e.getMCA("cluster1")
	wantHashes := map[string]string{}
	for _, r := range mca.Status.ConfigReferences {
		wantHashes[fmt.Sprintf("%s.%s/%s/%s", r.Resource, r.Group, r.DesiredConfig.Namespace, r.DesiredConfig.Name)] = r.DesiredConfig.SpecHash
	}
	if diff := cmp.Diff(wantHashes, configHashes(w)); diff != "" || len(wantHashes) != 2 {
		t.Errorf("config-spec-hash annotation (-MCA desired +work):\n%s", diff)
	}
	if len(w.OwnerReferences) != 1 || w.OwnerReferences[0].UID != mca.UID {
		t.Errorf("owner %v, want the MCA %s", w.OwnerReferences, mca.UID)
	}
	// As OCM's template manager writes them: the template agent's config types, and the
	// generation of each config the MCA is told to run (both just created).
	wantSupported := []addonv1alpha1.ConfigGroupResource{
		{Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs"},
		{Group: "addon.open-cluster-management.io", Resource: "addontemplates"},
	}
	e.waitFor(10*time.Second, "status.supportedConfigs", func() string {
		return cmp.Diff(wantSupported, e.getMCA("cluster1").Status.SupportedConfigs)
	})
	for _, r := range mca.Status.ConfigReferences {
		if r.LastObservedGeneration != 1 {
			t.Errorf("%s %s/%s: lastObservedGeneration %d, want 1", r.Resource, r.Namespace, r.Name, r.LastObservedGeneration)
		}
	}

	// Nothing changes: no write (resync included, every minute here; informer events from our
	// own status writes happen meanwhile).
	e.holds(3*time.Second, "the work unchanged while nothing changes", func() string {
		if again := e.work("cluster1", name); again.ResourceVersion != w.ResourceVersion {
			return fmt.Sprintf("work rewritten while nothing changed: resourceVersion %s -> %s", w.ResourceVersion, again.ResourceVersion)
		}
		return ""
	})

	// A manifest changed behind the deployer's back is put back. The deployer's cache holds a
	// stand-in of each manifest (its head and the digest of its content): the changed content has
	// another digest. Put back once, the work stays as it is.
	drifted := e.work("cluster1", name)
	changed := 0
	for i, m := range drifted.Spec.Workload.Manifests {
		if strings.Contains(string(m.Raw), `"kind":"Deployment"`) {
			drifted.Spec.Workload.Manifests[i].Raw = []byte(strings.Replace(string(m.Raw), `"replicas":1`, `"replicas":3`, 1))
			changed++
		}
	}
	if changed != 1 {
		t.Fatalf("%d Deployments in the work, want 1", changed)
	}
	if _, err := e.c.Work.WorkV1().ManifestWorks("cluster1").Update(e.ctx, drifted, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitFor(30*time.Second, "the changed manifest put back", func() string {
		got, err := templatedeploy.Describe(e.work("cluster1", name))
		if err != nil {
			return err.Error()
		}
		return cmp.Diff(string(want), string(got))
	})
	restored := e.work("cluster1", name)
	e.holds(3*time.Second, "the work unchanged once put back", func() string {
		if again := e.work("cluster1", name); again.ResourceVersion != restored.ResourceVersion {
			return fmt.Sprintf("work rewritten after it was put back: resourceVersion %s -> %s", restored.ResourceVersion, again.ResourceVersion)
		}
		return ""
	})
}

// bigConfigMaps is a template with ConfigMaps of the given names, each holding size bytes of
// data labelled with version.
func bigTemplate(name string, version string, maps map[string]int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: AddOnTemplate\nmetadata: {name: %s}\nspec:\n  addonName: split\n  agentSpec:\n    workload:\n      manifests:\n", name)
	keys := make([]string, 0, len(maps))
	for k := range maps {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "      - apiVersion: v1\n        kind: ConfigMap\n        metadata: {name: %s, namespace: default}\n        data: {version: %q, payload: %q}\n", k, version, strings.Repeat("x", maps[k]))
	}
	return b.String()
}

// TestSizeSplitAndStableNaming: an add-on above the work size limit (80% of 500 KiB) is split into
// works deterministically; on upgrades manifests stay in the work that holds them, new ones fill the
// work with most room, and a work left empty is deleted. Names never move.
func TestSizeSplitAndStableNaming(t *testing.T) {
	e := newEnv(t, "split", envOptions{})
	if _, err := localhub.EnsureManagedCluster(e.ctx, e.c, "split1", nil); err != nil {
		t.Fatal(err)
	}
	const big = 180 * 1024
	e.apply(bigTemplate("split-v1", "1", map[string]int{"a": big, "b": big, "c": big, "small": 10}))
	e.apply(bigTemplate("split-v2", "2", map[string]int{"a": big, "c": big, "d": big, "small": 20}))
	e.apply(bigTemplate("split-v3", "3", map[string]int{"a": big, "d": big}))
	e.cleanup("split1")
	e.cma("split-v1", "")
	e.mca("split1")

	layout := func() map[string][]string {
		out := map[string][]string{}
		for _, w := range e.works("split1") {
			out[w.Name] = manifestNames(&w)
		}
		return out
	}
	expect := func(what string, want map[string][]string, version string) {
		t.Helper()
		e.waitFor(time.Minute, what, func() string {
			got := layout()
			if diff := cmp.Diff(want, got); diff != "" {
				return fmt.Sprintf("layout (-want +got):\n%s", diff)
			}
			for _, w := range e.works("split1") {
				h := configHashes(&w)
				if len(h) != 1 || !strings.Contains(fmt.Sprint(h), "//split-"+version) {
					return fmt.Sprintf("%s annotation %v, want split-%s", w.Name, h, version)
				}
			}
			return ""
		})
	}
	// Biggest first into work 0 until the next does not fit; a tie keeps template order.
	expect("the first split", map[string][]string{
		"addon-split-deploy-0": {"ConfigMap/a", "ConfigMap/b"},
		"addon-split-deploy-1": {"ConfigMap/c", "ConfigMap/small"},
	}, "v1")
	before := map[string]string{}
	for _, w := range e.works("split1") {
		before[w.Name] = string(w.UID)
	}

	// b goes, d comes: d takes b's room in work 0; c and small stay where they are.
	e.setDefaultTemplate("split-v2")
	expect("the v2 layout", map[string][]string{
		"addon-split-deploy-0": {"ConfigMap/a", "ConfigMap/d"},
		"addon-split-deploy-1": {"ConfigMap/c", "ConfigMap/small"},
	}, "v2")
	for _, w := range e.works("split1") {
		if before[w.Name] != string(w.UID) {
			t.Errorf("%s was recreated instead of updated", w.Name)
		}
		if w.Generation != 2 {
			t.Errorf("%s generation %d, want 2 (one update)", w.Name, w.Generation)
		}
	}

	// c and small go: work 1 is empty and deleted.
	e.setDefaultTemplate("split-v3")
	expect("the v3 layout", map[string][]string{
		"addon-split-deploy-0": {"ConfigMap/a", "ConfigMap/d"},
	}, "v3")

	// Every work stays under the limit.
	for _, w := range e.works("split1") {
		size := 0
		for _, m := range w.Spec.Workload.Manifests {
			size += len(m.Raw)
		}
		if size > 500*1024*8/10 {
			t.Errorf("%s holds %d bytes of manifests", w.Name, size)
		}
	}
}

// TestRenderErrorKeepsWorks: a config change that makes the template fail to render (an undefined
// variable) becomes ManifestApplied=False with the renderer's error; the deployed work is left as
// it is; fixing the config deploys again.
func TestRenderErrorKeepsWorks(t *testing.T) {
	const addon, cluster = "broken", "broken1"
	e := newEnv(t, addon, envOptions{})
	if _, err := localhub.EnsureManagedCluster(e.ctx, e.c, cluster, nil); err != nil {
		t.Fatal(err)
	}
	adc := func(name, vars string) string {
		return fmt.Sprintf("apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: AddOnDeploymentConfig\nmetadata: {name: %s, namespace: %s}\nspec: {agentInstallNamespace: \"\", customizedVariables: %s}\n", name, cluster, vars)
	}
	e.apply(agentTemplate("broken-v1", addon, "{{LEVEL}}", ""))
	e.apply(adc("good", `[{name: LEVEL, value: "3"}]`))
	e.apply(adc("bad", `[{name: OTHER, value: "3"}]`))
	e.apply(adc("fixed", `[{name: LEVEL, value: "4"}]`))
	e.cleanup(cluster)
	e.cma("broken-v1", cluster+"/good")
	e.mca(cluster)
	const name = "addon-broken-deploy-0"
	e.waitFor(time.Minute, "the work", func() string {
		if w := e.work(cluster, name); w == nil || !strings.Contains(string(w.Spec.Workload.Manifests[0].Raw)+string(w.Spec.Workload.Manifests[1].Raw), `"version":"3"`) {
			return "no work with version 3"
		}
		return ""
	})
	before := e.work(cluster, name)

	setADC := func(n string) {
		t.Helper()
		api := e.c.Addon.AddonV1alpha1().ClusterManagementAddOns()
		cur, err := api.Get(e.ctx, addon, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Spec.SupportedConfigs[1].DefaultConfig.Name = n
		if _, err := api.Update(e.ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setADC("bad")
	e.waitCondition(time.Minute, cluster, "ManifestApplied",
		`False/ManifestWorkApplyFailed: failed to render AddOnTemplate broken-v1 for cluster broken1: undefined variable "LEVEL" (used in manifest 0 (ConfigMap default/broken-settings) data.version`)
	// The render error is the change's failure: it counts toward maxFailures, with the cause (no work
	// agent runs here, so the first version never finished installing: it is still an install).
	e.waitCondition(time.Minute, cluster, "Progressing",
		`False/InstallFailed: install failed: the add-on deployer reports ManifestApplied=False (ManifestWorkApplyFailed: failed to render AddOnTemplate broken-v1 for cluster broken1: undefined variable "LEVEL"`)
	e.holds(2*time.Second, "no work write after a render error", func() string {
		if after := e.work(cluster, name); after.ResourceVersion != before.ResourceVersion {
			return fmt.Sprintf("work written after a render error (resourceVersion %s -> %s)", before.ResourceVersion, after.ResourceVersion)
		}
		return ""
	})

	setADC("fixed")
	e.waitFor(time.Minute, "the fixed work", func() string {
		w := e.work(cluster, name)
		if !strings.Contains(string(w.Spec.Workload.Manifests[0].Raw)+string(w.Spec.Workload.Manifests[1].Raw), `"version":"4"`) {
			return "not re-rendered"
		}
		if c := condition(e.getMCA(cluster), "ManifestApplied"); strings.HasPrefix(c, "False") {
			return "condition still " + c
		}
		return ""
	})
}
