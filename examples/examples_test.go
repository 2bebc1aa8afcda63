//go:build integration

// Package examples tests the example packages under examples/: the commands their READMEs show,
// run with freshly built functions and the go.mod's kustomize, must print exactly the committed
// expected files, and what they print must make sense on a hub.
package examples

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"

	"github.com/addonops/addonops/examples/exampletest"
	"github.com/addonops/addonops/internal/configref"
)

func TestMain(m *testing.M) { exampletest.Main(m) }

const readme = "examples/hello-template/README.md"

// The outputs the README commands write.
const (
	baseHub        = "examples/hello-template/expected/hub.yaml"
	baseCluster1   = "examples/hello-template/expected/cluster1.yaml"
	upgradeHub     = "examples/hello-template/upgrade/expected/hub.yaml"
	upgradeCluster = "examples/hello-template/upgrade/expected/cluster1.yaml"
)

func TestREADMECommandsPrintTheCommittedOutput(t *testing.T) {
	exampletest.CheckCommands(t, readme)
}

func TestREADMEBuildsEveryPackage(t *testing.T) {
	var built []string
	for _, r := range exampletest.Run(t, readme) {
		if dir := r.BuildDir(); dir != "" {
			built = append(built, dir)
		}
	}
	for _, dir := range []string{"examples/hello-template", "examples/hello-template/upgrade"} {
		if !slices.Contains(built, dir) {
			t.Errorf("%s does not show the build of %s", readme, dir)
		}
	}
	for _, out := range []string{baseHub, baseCluster1, upgradeHub, upgradeCluster} {
		exampletest.Output(t, readme, out) // fails when no command writes it
	}
	exampletest.CheckExpectedCovered(t, "examples", readme)
}

// helloPackage is what the hub gets from one build of the package.
type helloPackage struct {
	objs     []exampletest.Object
	cma      addonv1alpha1.ClusterManagementAddOn
	template exampletest.Object
	adc      exampletest.Object
}

func loadPackage(t *testing.T, output string) helloPackage {
	t.Helper()
	objs := exampletest.Parse(t, exampletest.Output(t, readme, output))
	exampletest.CheckTyped(t, objs)
	configs := exampletest.CheckHashedConfigs(t, objs)
	refs := exampletest.CheckReferences(t, objs)
	placements := exampletest.CheckPlacements(t, objs)

	p := helloPackage{objs: objs}
	exampletest.One(t, objs, "ClusterManagementAddOn").Typed(t, &p.cma)
	var ok bool
	if p.template, ok = configs["AddOnTemplate/hello-template"]; !ok {
		t.Fatalf("%s: no AddOnTemplate generated from agent/ (base name hello-template)", output)
	}
	if p.adc, ok = configs["AddOnDeploymentConfig/hello-template-config"]; !ok {
		t.Fatalf("%s: no AddOnDeploymentConfig hello-template-config", output)
	}
	if len(configs) != 2 {
		t.Errorf("%s: want the template and the deployment config, got configs %v", output, slices.Collect(maps.Keys(configs)))
	}

	// generate took the plain manifests: they reach clusters only through the template.
	for _, kind := range []string{"Deployment", "ServiceAccount", "ClusterRoleBinding"} {
		if objs := exampletest.OfKind(objs, kind); len(objs) > 0 {
			t.Errorf("%s: the agent's %s is in the hub output; addon-template should have moved it into the template", output, objs[0])
		}
	}

	// The add-on: self-managed, installed by placement, and its defaults are exactly the hashed
	// template and deployment config of this build.
	if p.cma.Name != "hello-template" {
		t.Errorf("ClusterManagementAddOn is %q, want hello-template", p.cma.Name)
	}
	var tmpl addonv1alpha1.AddOnTemplate
	p.template.Typed(t, &tmpl)
	if tmpl.Spec.AddonName != p.cma.Name {
		t.Errorf("template spec.addonName %q is not the add-on %q", tmpl.Spec.AddonName, p.cma.Name)
	}
	if got := p.cma.Annotations[addonv1alpha1.AddonLifecycleAnnotationKey]; got != addonv1alpha1.AddonLifecycleSelfManageAnnotationValue {
		t.Errorf("ClusterManagementAddOn %s annotation is %q, want %q (managed by the addonops controller)", addonv1alpha1.AddonLifecycleAnnotationKey, got, addonv1alpha1.AddonLifecycleSelfManageAnnotationValue)
	}
	if p.cma.Spec.InstallStrategy.Type != addonv1alpha1.AddonInstallStrategyPlacements {
		t.Errorf("installStrategy.type %q, want Placements", p.cma.Spec.InstallStrategy.Type)
	}
	wantRefs := map[configref.GroupResource]string{
		configref.AddOnTemplates:         p.template.Name(),
		configref.AddOnDeploymentConfigs: p.adc.Name(),
	}
	gotRefs := map[configref.GroupResource]string{}
	for _, r := range refs {
		gotRefs[r.Site.Ref.GroupResource] = r.Target.Name()
		if !strings.HasPrefix(r.Site.Path, "spec.supportedConfigs[") {
			t.Errorf("reference at %s: this example sets its configs as the add-on's defaults (supportedConfigs[].defaultConfig)", r.Site.Path)
		}
	}
	if !maps.Equal(gotRefs, wantRefs) {
		t.Errorf("ClusterManagementAddOn references %v, want %v", gotRefs, wantRefs)
	}
	if len(p.cma.Spec.InstallStrategy.Placements) != 1 {
		t.Fatalf("want one install placement, got %+v", p.cma.Spec.InstallStrategy.Placements)
	}
	ps := p.cma.Spec.InstallStrategy.Placements[0]
	if ps.Namespace+"/"+ps.Name != "default/hello-template-placement" || ps.RolloutStrategy.Type != clusterv1alpha1.All {
		t.Errorf("install placement %s/%s rollout %q, want default/hello-template-placement with rollout All", ps.Namespace, ps.Name, ps.RolloutStrategy.Type)
	}
	if len(placements) != 1 {
		t.Errorf("want exactly the add-on's Placement in the output, got %v", slices.Collect(maps.Keys(placements)))
	}

	// The hub permission the registration asks for is a ClusterRole the package ships.
	for _, reg := range tmpl.Spec.Registration {
		if reg.KubeClient == nil {
			continue
		}
		for _, hp := range reg.KubeClient.HubPermissions {
			if hp.CurrentCluster == nil {
				continue
			}
			if _, ok := exampletest.Find(objs, "rbac.authorization.k8s.io", "ClusterRole", "", hp.CurrentCluster.ClusterRoleName); !ok {
				t.Errorf("the registration binds ClusterRole %q, which the package does not ship", hp.CurrentCluster.ClusterRoleName)
			}
		}
	}
	return p
}

func TestHelloTemplatePackage(t *testing.T) {
	p := loadPackage(t, baseHub)
	var adc addonv1alpha1.AddOnDeploymentConfig
	p.adc.Typed(t, &adc)
	if len(adc.Spec.CustomizedVariables) != 1 || adc.Spec.CustomizedVariables[0] != (addonv1alpha1.CustomizedVariable{Name: "LOG_LEVEL", Value: "4"}) {
		t.Errorf("deployment config variables %+v, want LOG_LEVEL=4", adc.Spec.CustomizedVariables)
	}
}

// TestUpgradeIsANewTemplateVersionOnly checks what the README promises about upgrade/: a new
// template name, the add-on pointing at it, and nothing else changed.
func TestUpgradeIsANewTemplateVersionOnly(t *testing.T) {
	base := loadPackage(t, baseHub)
	up := loadPackage(t, upgradeHub)

	if base.template.Name() == up.template.Name() {
		t.Fatalf("the upgrade kept the template name %s: a changed agent must give a new template version", up.template.Name())
	}
	if base.adc.Name() != up.adc.Name() {
		t.Errorf("the deployment config did not change, but its name did: %s -> %s", base.adc.Name(), up.adc.Name())
	}

	// Every other object is byte-identical; the add-on only swaps the template reference.
	baseOther := map[string][]byte{}
	for _, o := range base.objs {
		if o.Kind() != "AddOnTemplate" {
			baseOther[o.String()] = o.YAML
		}
	}
	for _, o := range up.objs {
		switch o.Kind() {
		case "AddOnTemplate":
		case "ClusterManagementAddOn":
			want := bytes.ReplaceAll(baseOther[o.String()], []byte(base.template.Name()), []byte(up.template.Name()))
			if !bytes.Equal(o.YAML, want) {
				t.Errorf("the upgraded ClusterManagementAddOn differs from the base in more than its template reference:\n%s", exampletest.LineDiff(want, o.YAML))
			}
		default:
			if !bytes.Equal(o.YAML, baseOther[o.String()]) {
				t.Errorf("%s differs between the base and the upgrade:\n%s", o, exampletest.LineDiff(baseOther[o.String()], o.YAML))
			}
		}
		delete(baseOther, o.String())
	}
	if len(baseOther) > 0 {
		t.Errorf("objects of the base missing from the upgrade: %v", slices.Collect(maps.Keys(baseOther)))
	}

	// The two templates hold the same agent but for the v2 labels.
	var bt, ut addonv1alpha1.AddOnTemplate
	base.template.Typed(t, &bt)
	up.template.Typed(t, &ut)
	bd, ud := templateDeployment(t, bt), templateDeployment(t, ut)
	for _, labels := range []map[string]string{ud.Labels, ud.Spec.Template.Labels} {
		if labels["addon-template-version"] != "v2" {
			t.Errorf("upgraded agent labels %v lack addon-template-version: v2", labels)
		}
		delete(labels, "addon-template-version")
	}
	if !reflect.DeepEqual(bd, ud) {
		t.Errorf("the upgraded agent differs from the base in more than the v2 labels")
	}
}

// templateDeployment decodes the agent Deployment out of a template.
func templateDeployment(t *testing.T, tmpl addonv1alpha1.AddOnTemplate) *appsv1.Deployment {
	t.Helper()
	for _, m := range tmpl.Spec.AgentSpec.Workload.Manifests {
		objs := exampletest.Parse(t, m.Raw)
		if len(objs) == 1 && objs[0].Kind() == "Deployment" {
			var d appsv1.Deployment
			objs[0].Typed(t, &d)
			return &d
		}
	}
	t.Fatalf("template %s holds no Deployment", tmpl.Name)
	return nil
}

// TestRenderedAgentForCluster1 checks the committed rendering's content: the agent cluster1 runs,
// with its variables from the build's deployment config and OCM's injections.
func TestRenderedAgentForCluster1(t *testing.T) {
	for _, tc := range []struct {
		output, hub string
		wantLabel   string
	}{
		{baseCluster1, baseHub, ""},
		{upgradeCluster, upgradeHub, "v2"},
	} {
		t.Run(tc.output, func(t *testing.T) {
			objs := exampletest.Parse(t, exampletest.Output(t, readme, tc.output))
			exampletest.CheckTyped(t, objs)
			exampletest.CheckRendered(t, objs, "cluster1")
			pkg := loadPackage(t, tc.hub)
			for _, o := range objs {
				if got := o.Annotations()["addonops.io/preview-template"]; got != pkg.template.Name() {
					t.Errorf("%s rendered from template %q, want the build's %s", o, got, pkg.template.Name())
				}
			}
			kinds := []string{}
			for _, o := range objs {
				kinds = append(kinds, o.String())
			}
			want := []string{
				"Deployment open-cluster-management-agent-addon/hello-template-agent",
				"ServiceAccount open-cluster-management-agent-addon/hello-template-agent-sa",
				"ClusterRoleBinding hello-template-agent",
			}
			if !slices.Equal(kinds, want) {
				t.Fatalf("rendered objects %v, want %v", kinds, want)
			}

			var d appsv1.Deployment
			exampletest.One(t, objs, "Deployment").Typed(t, &d)
			if got := d.Labels["addon-template-version"]; got != tc.wantLabel {
				t.Errorf("agent label addon-template-version %q, want %q", got, tc.wantLabel)
			}
			c := d.Spec.Template.Spec.Containers[0]
			for _, arg := range []string{"--cluster-name=cluster1", "--hub-kubeconfig=/managed/hub-kubeconfig/kubeconfig", "--v=4"} {
				if !slices.Contains(c.Args, arg) {
					t.Errorf("agent args %q lack %q", c.Args, arg)
				}
			}
			env := map[string]string{}
			for _, e := range c.Env {
				env[e.Name] = e.Value
			}
			wantEnv := map[string]string{
				"HUB_KUBECONFIG":    "/managed/hub-kubeconfig/kubeconfig",
				"CLUSTER_NAME":      "cluster1",
				"INSTALL_NAMESPACE": "open-cluster-management-agent-addon",
			}
			if !maps.Equal(env, wantEnv) {
				t.Errorf("agent env %v, want %v", env, wantEnv)
			}
			vols := d.Spec.Template.Spec.Volumes
			if len(vols) != 1 || vols[0].Name != "hub-kubeconfig" || vols[0].Secret == nil || vols[0].Secret.SecretName != "hello-template-hub-kubeconfig" {
				t.Errorf("agent volumes %+v, want the hub-kubeconfig Secret hello-template-hub-kubeconfig", vols)
			}
			if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/managed/hub-kubeconfig" {
				t.Errorf("agent mounts %+v, want the hub kubeconfig at /managed/hub-kubeconfig", c.VolumeMounts)
			}
		})
	}
}

// TestREADMENamesTheBuiltConfigs keeps the names the README quotes equal to what the build gives.
func TestREADMENamesTheBuiltConfigs(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(exampletest.Get(t).RepoRoot, readme))
	if err != nil {
		t.Fatal(err)
	}
	base, up := loadPackage(t, baseHub), loadPackage(t, upgradeHub)
	for _, name := range []string{base.template.Name(), base.adc.Name(), up.template.Name()} {
		if !bytes.Contains(doc, []byte(name)) {
			t.Errorf("%s does not mention %s, a name the build gives", readme, name)
		}
	}
}

// TestPackageAppliesToAHub applies the package and then its upgrade to a real API server with
// OCM's CRDs, as Argo CD or `make demo` would: the schemas accept every object and keep every
// field.
func TestPackageAppliesToAHub(t *testing.T) {
	for _, out := range []string{baseHub, upgradeHub} {
		exampletest.ApplyToHub(t, exampletest.Parse(t, exampletest.Output(t, readme, out)))
	}
}
