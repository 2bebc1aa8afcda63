package render

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
)

// TestHelloTemplateSeed renders the design's hello-template
// (docs/design/addon-template.md#the-hello-template-example) with an ADC setting LOG_LEVEL=4 for
// cluster1 and compares the agent Deployment with the hand-written expectation.
func TestHelloTemplateSeed(t *testing.T) {
	tpl := parseTemplate(t, readFile(t, "testdata/hello/addon-template.yaml"))
	adc := parseADC(t, readFile(t, "testdata/hello/addon-deployment-config.yaml"))
	res := mustRender(t, tpl, Cluster{Name: "cluster1", DeploymentConfigs: []*addonv1alpha1.AddOnDeploymentConfig{adc}})

	if len(res.Objects) != 3 {
		t.Fatalf("got %d objects, want the template's 3", len(res.Objects))
	}
	want := parseObject(t, readFile(t, "testdata/hello/expected-deployment.yaml"))
	if diff := cmp.Diff(want, res.Objects[0].Object); diff != "" {
		t.Errorf("Deployment differs from the seed's (-want +got):\n%s", diff)
	}
	// The other manifests keep their order; namespaced ones are in the install namespace and the
	// ClusterRoleBinding's subjects get it too.
	if sa := res.Objects[1]; sa.GetKind() != "ServiceAccount" || sa.GetNamespace() != DefaultAgentInstallNamespace {
		t.Errorf("object 1 = %s %s/%s", sa.GetKind(), sa.GetNamespace(), sa.GetName())
	}
	crb := res.Objects[2]
	if crb.GetKind() != "ClusterRoleBinding" || crb.GetNamespace() != "" {
		t.Errorf("object 2 = %s %s/%s", crb.GetKind(), crb.GetNamespace(), crb.GetName())
	}
	if len(res.Warnings) != 0 {
		t.Errorf("unexpected warnings: %v", res.Warnings)
	}
}

func TestRenderDoesNotShareState(t *testing.T) {
	tpl := parseTemplate(t, readFile(t, "testdata/hello/addon-template.yaml"))
	adc := parseADC(t, readFile(t, "testdata/hello/addon-deployment-config.yaml"))
	r, err := Compile(tpl)
	if err != nil {
		t.Fatal(err)
	}
	a, err := r.Render(Cluster{Name: "cluster1", DeploymentConfigs: []*addonv1alpha1.AddOnDeploymentConfig{adc}})
	if err != nil {
		t.Fatal(err)
	}
	// Mutating one result must not leak into the next rendering.
	a.Objects[1].SetNamespace("mutated")
	a.Objects[2].Object["subjects"].([]any)[0].(map[string]any)["name"] = "mutated"
	b, err := r.Render(Cluster{Name: "cluster2", DeploymentConfigs: []*addonv1alpha1.AddOnDeploymentConfig{adc}})
	if err != nil {
		t.Fatal(err)
	}
	if b.Objects[1].GetNamespace() != DefaultAgentInstallNamespace {
		t.Errorf("ServiceAccount namespace leaked: %s", b.Objects[1].GetNamespace())
	}
	if got := b.Objects[2].Object["subjects"].([]any)[0].(map[string]any)["name"]; got != "hello-template-agent-sa" {
		t.Errorf("subject name leaked: %v", got)
	}
	args := typedDeployment(t, b.Objects[0]).Spec.Template.Spec.Containers[0].Args
	if args[2] != "--cluster-name=cluster2" {
		t.Errorf("args[2] = %q", args[2])
	}
}

func TestAgentInstallNamespace(t *testing.T) {
	ds := strings.Replace(daemonSet, "namespace: agent-ns", "namespace: ds-ns", 1)
	noNS := strings.Replace(deployment, "  namespace: agent-ns\n", "", 1)
	cases := []struct {
		name      string
		manifests []string
		adcNS     string
		want      string
	}{
		{"first deployment", []string{ds, deployment}, "", "agent-ns"},
		{"daemonset when no deployment", []string{ds}, "", "ds-ns"},
		{"default when no workload", []string{"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: x}"}, "", DefaultAgentInstallNamespace},
		// OCM stops at the first Deployment even when it has no namespace: a DaemonSet after it
		// is never looked at, one before it is used.
		{"deployment without namespace stops the search", []string{noNS, ds}, "", DefaultAgentInstallNamespace},
		{"daemonset before a deployment without namespace", []string{ds, noNS}, "", "ds-ns"},
		{"ADC overrides", []string{deployment}, "custom", "custom"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tpl := parseTemplate(t, templateYAML("", tc.manifests...))
			var adc *addonv1alpha1.AddOnDeploymentConfig
			if tc.adcNS != "" {
				adc = parseADC(t, adcYAML("agentInstallNamespace: "+tc.adcNS))
			}
			if got := AgentInstallNamespace(tpl, adc); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDecodeRejectsUnknownFields(t *testing.T) {
	_, err := DecodeAddOnTemplate([]byte(`{"apiVersion":"addon.open-cluster-management.io/v1alpha1","kind":"AddOnTemplate","metadata":{"name":"x"},"spec":{"addonName":"a","agentSpec":{},"registraton":[]}}`))
	if err == nil || !strings.Contains(err.Error(), `unknown field "spec.registraton"`) {
		t.Errorf("template: got %v", err)
	}
	_, err = DecodeAddOnDeploymentConfig([]byte(`{"apiVersion":"addon.open-cluster-management.io/v1alpha1","kind":"AddOnDeploymentConfig","metadata":{"name":"x"},"spec":{"customizedVariables":[{"name":"A","valeu":"1"}]}}`))
	if err == nil || !strings.Contains(err.Error(), `unknown field "spec.customizedVariables[0].valeu"`) {
		t.Errorf("ADC: got %v", err)
	}
}

func TestDecodeADCDefaultsAgentInstallNamespace(t *testing.T) {
	cases := []struct {
		spec string
		want string
	}{
		{`{}`, DefaultAgentInstallNamespace},
		{`{"agentInstallNamespace":""}`, ""},
		{`{"agentInstallNamespace":"ns1"}`, "ns1"},
	}
	for _, tc := range cases {
		adc, err := DecodeAddOnDeploymentConfig([]byte(`{"apiVersion":"addon.open-cluster-management.io/v1alpha1","kind":"AddOnDeploymentConfig","metadata":{"name":"x"},"spec":` + tc.spec + `}`))
		if err != nil {
			t.Fatal(err)
		}
		if adc.Spec.AgentInstallNamespace != tc.want {
			t.Errorf("spec %s: agentInstallNamespace %q, want %q", tc.spec, adc.Spec.AgentInstallNamespace, tc.want)
		}
	}
}

func TestErrorsAreLocated(t *testing.T) {
	tpl := parseTemplate(t, templateYAML("", deployment, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: ns1}\ndata:\n  k: '{{OOPS'"))
	_, err := Compile(tpl)
	var re *Error
	if !errors.As(err, &re) {
		t.Fatalf("got %v, want *Error", err)
	}
	if re.Manifest != 1 || re.Object != "ConfigMap ns1/c" || re.Field != "data.k" {
		t.Errorf("located at %+v", re)
	}
}

// TestRenderConcurrently: one compiled template serves many goroutines (run with -race).
func TestRenderConcurrently(t *testing.T) {
	tpl := parseTemplate(t, readFile(t, "testdata/hello/addon-template.yaml"))
	adc := parseADC(t, readFile(t, "testdata/hello/addon-deployment-config.yaml"))
	r, err := Compile(tpl)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func() {
			for i := 0; i < 20; i++ {
				name := fmt.Sprintf("cluster-%d-%d", g, i)
				res, err := r.Render(Cluster{Name: name, DeploymentConfigs: []*addonv1alpha1.AddOnDeploymentConfig{adc}})
				if err == nil {
					// Not typedDeployment: t.Fatal must not be called from another goroutine.
					containers, _, _ := unstructured.NestedSlice(res.Objects[0].Object, "spec", "template", "spec", "containers")
					if args := containers[0].(map[string]any)["args"].([]any); args[2] != "--cluster-name="+name {
						err = fmt.Errorf("%s got another cluster's arguments: %v", name, args[2])
					}
				}
				if err != nil {
					errs <- err
					return
				}
				res.Objects[1].SetNamespace("scribbled")
			}
			errs <- nil
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestRenderedTwice: two manifests that render to one object (written twice, moved into one
// install namespace, named alike by a variable, or clashing with the injected proxy CA ConfigMap)
// are an error naming both; objects that differ in group, kind, namespace or name are not.
func TestRenderedTwice(t *testing.T) {
	cm := func(ns, name string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata: {a: b}\n", name, ns)
	}
	cases := []struct {
		name      string
		manifests []string
		adc       string
		wantErr   string
	}{
		{name: "distinct", manifests: []string{cm("ns", "a"), cm("ns", "b"), cm("other", "a"),
			"apiVersion: v1\nkind: Secret\nmetadata: {name: a, namespace: ns}\n",
			"apiVersion: example.com/v1\nkind: ConfigMap\nmetadata: {name: a, namespace: ns}\n"}},
		{name: "written twice", manifests: []string{cm("ns", "a"), cm("ns", "b"), cm("ns", "a")},
			wantErr: "manifest 2 (ConfigMap ns/a): renders to ConfigMap ns/a, as manifest 0 (ConfigMap ns/a) does: a cluster holds an object only once"},
		{name: "other version of the same group", manifests: []string{
			"apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: a}\n", "apiVersion: example.com/v2\nkind: Widget\nmetadata: {name: a}\n"},
			wantErr: "manifest 1 (Widget a): renders to Widget a, as manifest 0 (Widget a) does"},
		{name: "moved into one install namespace", manifests: []string{cm("ns1", "a"), cm("ns2", "a")}, adc: "agentInstallNamespace: agents\n",
			wantErr: `manifest 1 (ConfigMap ns2/a): renders to ConfigMap agents/a, as manifest 0 (ConfigMap ns1/a) does: a cluster holds an object only once (OCM would deploy one of them); the AddOnDeploymentConfig's agentInstallNamespace "agents" moves every namespaced object into it`},
		{name: "named alike by a variable", manifests: []string{cm("ns", "a-cluster1"), cm("ns", "a-{{CLUSTER_NAME}}")},
			wantErr: "manifest 1 (ConfigMap ns/a-{{CLUSTER_NAME}}): renders to ConfigMap ns/a-cluster1, as manifest 0 (ConfigMap ns/a-cluster1) does"},
		{name: "clash with the proxy CA ConfigMap", manifests: []string{cm(DefaultAgentInstallNamespace, "addon1-proxy-ca")},
			adc:     "proxyConfig: {httpsProxy: 'https://proxy:3128', caBundle: Y2E=}\n",
			wantErr: "the proxy CA ConfigMap OCM injects renders to ConfigMap open-cluster-management-agent-addon/addon1-proxy-ca, as manifest 0 (ConfigMap open-cluster-management-agent-addon/addon1-proxy-ca) does"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Cluster{Name: "cluster1"}
			if tc.adc != "" {
				c.DeploymentConfigs = []*addonv1alpha1.AddOnDeploymentConfig{parseADC(t, adcYAML(tc.adc))}
			}
			res, err := Render(parseTemplate(t, templateYAML("", tc.manifests...)), c)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Objects) != len(tc.manifests) {
					t.Errorf("got %d objects, want %d", len(res.Objects), len(tc.manifests))
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
			if res != nil {
				t.Errorf("a failed rendering returned objects")
			}
		})
	}
}
