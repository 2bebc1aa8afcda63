package render

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
)

// configMap is a manifest whose data.v is "{{<name>}}" for each name, to read values back.
func configMap(names ...string) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: values\n  namespace: agent-ns\ndata:\n")
	for _, n := range names {
		b.WriteString("  " + n + ": '{{" + n + "}}'\n")
	}
	return b.String()
}

func data(t testing.TB, u *unstructured.Unstructured) map[string]string {
	t.Helper()
	out, _, err := unstructured.NestedStringMap(u.Object, "data")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestValuePrecedence checks OCM's layers: defaults < customizedVariables < built-ins.
func TestValuePrecedence(t *testing.T) {
	cases := []struct {
		name         string
		registration string
		vars         []string
		adcs         []string
		want         map[string]string
		wantEnv      []string // name=value of the injected env, in order
		wantWarning  string
	}{
		{
			name: "HUB_KUBECONFIG default", registration: kubeClientRegistration, vars: []string{"HUB_KUBECONFIG"},
			want:    map[string]string{"HUB_KUBECONFIG": DefaultHubKubeconfig},
			wantEnv: []string{"HUB_KUBECONFIG=" + DefaultHubKubeconfig, "CLUSTER_NAME=cluster1"},
		},
		{
			name: "customizedVariables override HUB_KUBECONFIG, also in env", registration: kubeClientRegistration, vars: []string{"HUB_KUBECONFIG"},
			adcs:    []string{noNS + "\ncustomizedVariables: [{name: HUB_KUBECONFIG, value: /other}]"},
			want:    map[string]string{"HUB_KUBECONFIG": "/other"},
			wantEnv: []string{"HUB_KUBECONFIG=/other", "CLUSTER_NAME=cluster1"},
		},
		{
			name: "CLUSTER_NAME cannot be overridden", vars: []string{"CLUSTER_NAME"},
			adcs:    []string{noNS + "\ncustomizedVariables: [{name: CLUSTER_NAME, value: spoofed}]"},
			want:    map[string]string{"CLUSTER_NAME": "cluster1"},
			wantEnv: []string{"CLUSTER_NAME=cluster1"},
		},
		{
			name: "INSTALL_NAMESPACE built-in beats a customized one", vars: []string{"INSTALL_NAMESPACE"},
			adcs:    []string{"agentInstallNamespace: ns1\ncustomizedVariables: [{name: INSTALL_NAMESPACE, value: mine}]"},
			want:    map[string]string{"INSTALL_NAMESPACE": "ns1"},
			wantEnv: []string{"CLUSTER_NAME=cluster1", "INSTALL_NAMESPACE=ns1"},
		},
		{
			// Without agentInstallNamespace the built-in is absent, so a customized value is used
			// (and, not being a preset, it is not injected as env), as in OCM.
			name: "INSTALL_NAMESPACE customized when the ADC sets no namespace", vars: []string{"INSTALL_NAMESPACE"},
			adcs:    []string{noNS + "\ncustomizedVariables: [{name: INSTALL_NAMESPACE, value: mine}]"},
			want:    map[string]string{"INSTALL_NAMESPACE": "mine"},
			wantEnv: []string{"CLUSTER_NAME=cluster1"},
		},
		{
			name: "the last duplicate customized variable wins", vars: []string{"A"},
			adcs: []string{noNS + "\ncustomizedVariables: [{name: A, value: first}, {name: A, value: second}]"},
			want: map[string]string{"A": "second"}, wantEnv: []string{"CLUSTER_NAME=cluster1"},
		},
		{
			name: "only the first ADC is used", vars: []string{"A"},
			adcs:        []string{noNS + "\ncustomizedVariables: [{name: A, value: first}]", noNS + "\ncustomizedVariables: [{name: A, value: second}]"},
			want:        map[string]string{"A": "first"},
			wantEnv:     []string{"CLUSTER_NAME=cluster1"},
			wantWarning: "only the first AddOnDeploymentConfig (AddOnDeploymentConfig default/cfg) is used",
		},
		{
			name: "empty value is a defined value", vars: []string{"A"},
			adcs: []string{noNS + "\ncustomizedVariables: [{name: A, value: ''}]"},
			want: map[string]string{"A": ""}, wantEnv: []string{"CLUSTER_NAME=cluster1"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tpl := parseTemplate(t, templateYAML(tc.registration, configMap(tc.vars...), deployment))
			res := mustRender(t, tpl, Cluster{Name: "cluster1", DeploymentConfigs: adcs(t, tc.adcs...)})
			got := data(t, res.Objects[0])
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
			var gotEnv []string
			for _, e := range typedDeployment(t, res.Objects[1]).Spec.Template.Spec.Containers[0].Env {
				gotEnv = append(gotEnv, e.Name+"="+e.Value)
			}
			if strings.Join(gotEnv, " ") != strings.Join(tc.wantEnv, " ") {
				t.Errorf("env %v, want %v", gotEnv, tc.wantEnv)
			}
			warnings := strings.Join(res.Warnings, "\n")
			if tc.wantWarning == "" && warnings != "" {
				t.Errorf("unexpected warnings %q", warnings)
			}
			if !strings.Contains(warnings, tc.wantWarning) {
				t.Errorf("warnings %q, want %q", warnings, tc.wantWarning)
			}
		})
	}
}

func TestReservedVariableName(t *testing.T) {
	tpl := parseTemplate(t, templateYAML("", deployment))
	_, err := Render(tpl, Cluster{Name: "c", DeploymentConfigs: adcs(t, "customizedVariables: [{name: __PROXY, value: x}]")})
	if err == nil || !strings.Contains(err.Error(), `"__PROXY" is reserved by OCM`) {
		t.Errorf("got %v", err)
	}
}

func TestNilADCIsNoADC(t *testing.T) {
	tpl := parseTemplate(t, templateYAML("", configMap("CLUSTER_NAME")))
	res := mustRender(t, tpl, Cluster{Name: "c", DeploymentConfigs: []*addonv1alpha1.AddOnDeploymentConfig{nil}})
	if got := data(t, res.Objects[0])["CLUSTER_NAME"]; got != "c" {
		t.Errorf("CLUSTER_NAME = %q", got)
	}
}
