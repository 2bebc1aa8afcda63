package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

func TestParseConfig(t *testing.T) {
	typed := func(spec string) string {
		return "apiVersion: addonops.io/v1alpha1\nkind: AddOnTemplateFunction\nmetadata:\n  name: f\nspec:\n" + spec
	}
	configMap := func(data string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: f\ndata:\n" + data
	}
	cases := []struct {
		name    string
		fc      string
		want    Config
		wantErr string
	}{
		{name: "validate", fc: typed("  mode: validate\n"), want: Config{Mode: ModeValidate}},
		{name: "mode is case-insensitive", fc: typed("  mode: Preview\n  clusters: [c1]\n"),
			want: Config{Mode: ModePreview, Clusters: []ClusterConfig{{Name: "c1"}}, Output: OutputManifests}},
		{name: "generate defaults the template name", fc: typed("  mode: generate\n  addonName: hello\n"),
			want: Config{Mode: ModeGenerate, AddonName: "hello", TemplateName: "hello"}},
		{name: "preview with cluster objects and references in both forms", fc: typed(`  mode: preview
  output: manifestwork
  deploymentConfigs: [default/a, {namespace: x, name: b}, c]
  clusters:
  - c1
  - name: c2
    imageRegistries: {registries: [{mirror: m.io, source: s.io}]}
  - name: c3
    imageRegistries: '{"registries":[{"mirror":"n.io","source":""}]}'
    deploymentConfigs: [x/b]
`), want: Config{Mode: ModePreview, Output: OutputManifestWork,
			DeploymentConfigs: []ObjectRef{{"default", "a"}, {"x", "b"}, {"", "c"}},
			Clusters: []ClusterConfig{{Name: "c1"},
				{Name: "c2", ImageRegistries: `{"registries":[{"mirror":"m.io","source":"s.io"}]}`},
				{Name: "c3", ImageRegistries: `{"registries":[{"mirror":"n.io","source":""}]}`, DeploymentConfigs: []ObjectRef{{"x", "b"}}}}}},
		{name: "ConfigMap with comma-separated lists (kpt fn eval -- key=value)", fc: configMap("  mode: preview\n  clusters: c1, c2\n  deploymentConfigs: ns/a\n"),
			want: Config{Mode: ModePreview, Output: OutputManifests, Clusters: []ClusterConfig{{Name: "c1"}, {Name: "c2"}}, DeploymentConfigs: []ObjectRef{{"ns", "a"}}}},
		{name: "ConfigMap with YAML values", fc: configMap("  mode: generate\n  addonName: a\n  registration: '[{type: KubeClient}]'\n"),
			want: Config{Mode: ModeGenerate, AddonName: "a", TemplateName: "a", Registration: []addonv1alpha1.RegistrationSpec{{Type: addonv1alpha1.RegistrationTypeKubeClient}}}},

		{name: "no spec", fc: "apiVersion: addonops.io/v1alpha1\nkind: AddOnTemplateFunction\nmetadata:\n  name: f\n", wantErr: "has no spec"},
		{name: "wrong kind", fc: "apiVersion: addonops.io/v1alpha1\nkind: AddonTemplateFunction\nmetadata:\n  name: f\nspec: {mode: validate}\n",
			wantErr: `functionConfig must be addonops.io/v1alpha1 AddOnTemplateFunction or v1 ConfigMap, got "addonops.io/v1alpha1" "AddonTemplateFunction"`},
		{name: "unknown top-level field", fc: typed("  mode: validate\ndata: {}\n"), wantErr: `unknown field "data"`},
		{name: "unknown spec field", fc: typed("  mode: validate\n  modes: x\n"), wantErr: `unknown field "spec.modes"`},
		{name: "unknown cluster field", fc: typed("  mode: preview\n  clusters: [{name: c, registries: x}]\n"), wantErr: `unknown field "registries"`},
		{name: "unknown registration field", fc: typed("  mode: generate\n  addonName: a\n  registration: [{type: KubeClient, kubeclient: {}}]\n"), wantErr: `unknown field "spec.registration[0].kubeclient"`},
		{name: "unknown ConfigMap key", fc: configMap("  mode: validate\n  verbose: 'true'\n"), wantErr: `unknown field "spec.verbose"`},
		{name: "no mode", fc: typed("  addonName: a\n"), wantErr: "spec.mode is not set"},
		{name: "bad mode", fc: typed("  mode: render\n"), wantErr: `spec.mode "render" is not one of generate, validate, preview`},
		{name: "fields of another mode", fc: typed("  mode: preview\n  clusters: [c]\n  selector: {labels: a=b}\n"), wantErr: "spec.selector is only used in generate mode"},
		{name: "generate without addonName", fc: typed("  mode: generate\n"), wantErr: "spec.addonName is required in generate mode"},
		{name: "bad selector", fc: typed("  mode: generate\n  addonName: a\n  selector: {labels: 'a in b'}\n"), wantErr: "spec.selector.labels"},
		{name: "preview without clusters", fc: typed("  mode: preview\n"), wantErr: "spec.clusters is required in preview mode"},
		{name: "duplicate cluster", fc: typed("  mode: preview\n  clusters: [a, a]\n"), wantErr: `lists "a" twice`},
		{name: "cluster name not a DNS-1123 label", fc: typed("  mode: preview\n  clusters: [cluster1, Cluster_2]\n"),
			wantErr: `functionConfig spec.clusters[1]: "Cluster_2" is not a valid ManagedCluster name (a DNS-1123 label): a lowercase RFC 1123 label must consist of`},
		{name: "cluster name too long", fc: typed("  mode: preview\n  clusters: [{name: " + strings.Repeat("a", 64) + "}]\n"),
			wantErr: `functionConfig spec.clusters[0]: "aaaa`},
		{name: "cluster name in a ConfigMap list", fc: configMap("  mode: preview\n  clusters: c1, c.2\n"),
			wantErr: `functionConfig spec.clusters[1]: "c.2" is not a valid ManagedCluster name`},
		{name: "bad output", fc: typed("  mode: preview\n  clusters: [a]\n  output: yaml\n"), wantErr: `spec.output "yaml" is not Manifests or ManifestWork`},
		{name: "bad imageRegistries", fc: typed("  mode: preview\n  clusters: [{name: a, imageRegistries: {mirrors: []}}]\n"), wantErr: "imageRegistries of cluster \"a\" must be {registries:"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			node, err := yaml.Parse(tc.fc)
			if err != nil {
				t.Fatal(err)
			}
			s, err := parseConfig(node)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, s.Config); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if _, err := parseConfig(nil); err == nil || !strings.Contains(err.Error(), "no functionConfig") {
		t.Errorf("nil functionConfig: %v", err)
	}
}

func TestSelector(t *testing.T) {
	node, _ := yaml.Parse("apiVersion: addonops.io/v1alpha1\nkind: AddOnTemplateFunction\nmetadata: {name: f}\nspec:\n  mode: generate\n  addonName: a\n  selector: {labels: 'tier in (agent,node)', annotations: '!skip'}\n")
	s, err := parseConfig(node)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		obj  string
		want bool
	}{
		{"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, labels: {tier: agent}}", true},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, labels: {tier: hub}}", false},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, labels: {tier: node}, annotations: {skip: x}}", false},
		{"apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: AddOnDeploymentConfig\nmetadata: {name: a, labels: {tier: agent}}", false},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, labels: {tier: agent}, annotations: {config.kubernetes.io/local-config: 'true'}}", false},
		{"apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: {name: a, labels: {tier: agent}}", false},
	} {
		n, err := yaml.Parse(tc.obj)
		if err != nil {
			t.Fatal(err)
		}
		got, err := agentManifest(n, s)
		if err != nil {
			t.Fatal(err)
		}
		if (got != pickNo) != tc.want {
			t.Errorf("%s: selected %v, want %v", tc.obj, got, tc.want)
		}
	}
}
