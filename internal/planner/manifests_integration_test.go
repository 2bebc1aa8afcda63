//go:build integration

package planner_test

import (
	"context"
	"strings"
	"testing"

	"github.com/pmezard/go-difflib/difflib"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/controller"
	"github.com/addonops/addonops/internal/planner"
	"github.com/addonops/addonops/internal/render"
	"github.com/addonops/addonops/internal/rolloutplan"
	"github.com/addonops/addonops/internal/templatedeploy"
	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/rolloutsim"
	"github.com/addonops/addonops/internal/testing/simagent"
)

// TestPlanManifestDiffsEqualTheWorks plans an upgrade of a template add-on deployed by the
// controller itself (--deploy-templates; a simulated work agent applies its works) on clusters
// with per-cluster variables and, on one cluster, an image-registries annotation, applies it, and
// requires each cluster's planned manifest diff to equal the diff of its ManifestWork's manifests
// before and after the rollout.
func TestPlanManifestDiffsEqualTheWorks(t *testing.T) {
	hub := localhub.ForTest(t)
	addon := "plan-template"
	s := rolloutsim.NewWith(t, hub, addon, rolloutsim.Options{NoDeployer: true, Controller: controller.Options{
		HistoryNamespace: historyNamespace, DeployTemplates: &templatedeploy.Options{Workers: 1}}})
	agent, err := simagent.New(hub.Config, simagent.Options{Addons: []string{addon}, WorkAgentOnly: true, Workers: 2,
		Outcome: func(string, string, map[string]string) simagent.Outcome { return simagent.Succeed }})
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Start(s.Ctx); err != nil {
		t.Fatal(err)
	}
	clusters := []string{"plan-t1", "plan-t2", "plan-t3"}
	s.Clusters(clusters...)
	mcs := hub.Clients.Cluster.ClusterV1().ManagedClusters()
	mc, err := mcs.Get(s.Ctx, "plan-t2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mc.Annotations = map[string]string{render.ImageRegistriesAnnotation: `{"registries":[{"mirror":"mirror.example/hello","source":"quay.io/hello"}]}`}
	if _, err := mcs.Update(s.Ctx, mc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Placement("main", clusters...)

	tpl := &addonv1alpha1.AddOnTemplate{ObjectMeta: metav1.ObjectMeta{Name: addon + "-tpl"}, Spec: addonv1alpha1.AddOnTemplateSpec{AddonName: addon,
		AgentSpec: workManifests(t, `{apiVersion: apps/v1, kind: Deployment, metadata: {name: agent, namespace: hello-agent}, spec: {selector: {matchLabels: {app: agent}}, template: {metadata: {labels: {app: agent}}, spec: {containers: [{name: agent, image: "quay.io/hello/agent:{{version}}", args: ["--cluster={{CLUSTER_NAME}}"]}]}}}}`)}}
	templates := hub.Clients.Addon.AddonV1alpha1().AddOnTemplates()
	if _, err := templates.Create(s.Ctx, tpl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = templates.Delete(context.Background(), tpl.Name, metav1.DeleteOptions{}) })
	cma := &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: addon, Annotations: map[string]string{
		addonv1alpha1.AddonLifecycleAnnotationKey: addonv1alpha1.AddonLifecycleSelfManageAnnotationValue, rolloutplan.HealthSoakAnnotation: "0s"}},
		Spec: addonv1alpha1.ClusterManagementAddOnSpec{
			SupportedConfigs: []addonv1alpha1.ConfigMeta{
				{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addontemplates"}, DefaultConfig: &addonv1alpha1.ConfigReferent{Name: tpl.Name}},
				{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"}},
			},
			InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyPlacements}}}
	if _, err := hub.Clients.Addon.AddonV1alpha1().ClusterManagementAddOns().Create(s.Ctx, cma, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	v1 := s.Config("cfg", "1.0")
	s.CMA(rolloutsim.Install{Placement: "main", Config: v1, Strategy: allAtOnce})
	waitReason(s, "main", addonstatus.ReasonInstallSucceed)
	before := workManifestsOf(t, s, clusters)

	v2 := s.Config("cfg", "2.0")
	snap := snapshot(t, s)
	up := rolloutsim.Install{Placement: "main", Config: v2, Strategy: allAtOnce}
	p := placementPlan(t, planOf(t, s, snap, cmaManifest(t, s, nil, up)), s.Addon+"/main")
	if p.Change != planner.ChangeUpgrade || len(p.Manifests) != 2 {
		t.Fatalf("plan: %+v", p)
	}
	s.CMA(up)
	waitReason(s, "main", p.Outcome)
	after := workManifestsOf(t, s, clusters)

	planned := map[string]string{}
	for _, m := range p.Manifests {
		for _, c := range m.Clusters {
			planned[c] = m.Diff
		}
	}
	for _, c := range clusters {
		got, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: difflib.SplitLines(before[c]), B: difflib.SplitLines(after[c]), FromFile: "runs", ToFile: "target"})
		if err != nil {
			t.Fatal(err)
		}
		if got == "" || got != planned[c] {
			t.Errorf("cluster %s: its works changed by\n%s\nthe plan said\n%s", c, got, planned[c])
		}
	}
}

func workManifests(t *testing.T, docs ...string) workv1.ManifestWorkSpec {
	t.Helper()
	var spec workv1.ManifestWorkSpec
	for _, d := range docs {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(d), &obj); err != nil {
			t.Fatal(err)
		}
		b, err := (&unstructured.Unstructured{Object: obj}).MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		spec.Workload.Manifests = append(spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: b}})
	}
	return spec
}

// workManifestsOf reads each cluster's deploy work's manifests as YAML documents, as the plan
// writes a rendering.
func workManifestsOf(t *testing.T, s *rolloutsim.Scenario, clusters []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, c := range clusters {
		ws, err := s.Hub.Clients.Work.WorkV1().ManifestWorks(c).List(s.Ctx, metav1.ListOptions{LabelSelector: addonv1alpha1.AddonLabelKey + "=" + s.Addon})
		if err != nil || len(ws.Items) != 1 {
			t.Fatalf("the works of %s on %s: %v, %d", s.Addon, c, err, len(ws.Items))
		}
		var b strings.Builder
		for i, m := range ws.Items[0].Spec.Workload.Manifests {
			var obj map[string]any
			if err := yaml.Unmarshal(m.Raw, &obj); err != nil {
				t.Fatal(err)
			}
			y, err := yaml.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			if i > 0 {
				b.WriteString("---\n")
			}
			b.Write(y)
		}
		out[c] = b.String()
	}
	return out
}
