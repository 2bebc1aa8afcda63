package main

import (
	"strings"
	"testing"
)

const validateConfig = "apiVersion: addonops.io/v1alpha1\nkind: AddOnTemplateFunction\nmetadata: {name: v}\nspec: {mode: validate}\n"

// schemaTemplate is a valid template using one variable, and schemaADC an ADC defining it.
const schemaTemplate = `apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnTemplate
metadata: {name: hello}
spec:
  addonName: hello
  agentSpec:
    workload:
      manifests:
      - apiVersion: v1
        kind: ConfigMap
        metadata: {name: c, namespace: ns}
        data: {level: '{{LEVEL}}'}
`

const schemaADC = `apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnDeploymentConfig
metadata: {name: cfg, namespace: default}
spec:
  customizedVariables: [{name: LEVEL, value: "1"}]
`

// The API server's field errors, for every OCM object of the input, in validate mode.
func TestValidateSchema(t *testing.T) {
	adc := func(spec string) string { return schemaADC + spec }
	cases := []struct {
		name, input string
		want        []string // each in stderr
	}{
		{"install namespace injecting YAML", schemaTemplate + "---\n" + adc("  agentInstallNamespace: \"a\\nkind: Secret\"\n"),
			[]string{`addon-template: AddOnDeploymentConfig default/cfg: spec.agentInstallNamespace: Invalid value: "a\nkind: Secret": spec.agentInstallNamespace in body should match '^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$'`}},
		{"install namespace a path", schemaTemplate + "---\n" + adc("  agentInstallNamespace: ../../x\n"),
			[]string{`spec.agentInstallNamespace: Invalid value: "../../x"`}},
		{"install namespace upper case", schemaTemplate + "---\n" + adc("  agentInstallNamespace: Kube-System\n"),
			[]string{`spec.agentInstallNamespace: Invalid value: "Kube-System"`}},
		{"install namespace of 300 characters", schemaTemplate + "---\n" + adc("  agentInstallNamespace: "+strings.Repeat("n", 300)+"\n"),
			[]string{`spec.agentInstallNamespace: Too long: may not be more than 63 bytes`}},
		{"variable value of 1025 characters", schemaTemplate + "---\n" + strings.Replace(schemaADC, `value: "1"`, "value: "+strings.Repeat("v", 1025), 1),
			[]string{`spec.customizedVariables[0].value: Too long: may not be more than 1024 bytes`}},
		{"name not a DNS subdomain", strings.Replace(schemaTemplate, "name: hello}", "name: Hello World/../x}", 1) + "---\n" + schemaADC,
			[]string{`AddOnTemplate Hello World/../x: metadata.name: Invalid value: "Hello World/../x": a lowercase RFC 1123 subdomain`}},
		{"unknown field", schemaTemplate + "---\n" + adc("  agentInstalNamespace: x\n"),
			[]string{`spec.agentInstalNamespace: Forbidden: unknown field: not in the schema of AddOnDeploymentConfig addon.open-cluster-management.io/v1alpha1`}},
		{"CEL rule", schemaTemplate + `    manifestConfigs:
    - resourceIdentifier: {resource: configmaps, name: c, namespace: ns}
      conditionRules: [{type: CEL, condition: "", celExpressions: ["true"]}]
---
` + schemaADC,
			[]string{`AddOnTemplate hello: spec.agentSpec.manifestConfigs[0].conditionRules[0]: Invalid value: Condition is required for CEL rules`}},
		{"ClusterManagementAddOn", schemaTemplate + "---\n" + schemaADC + `---
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ClusterManagementAddOn
metadata: {name: hello}
spec:
  installStrategy: {type: Sometimes}
`, []string{`ClusterManagementAddOn hello: spec.installStrategy.type: Unsupported value: "Sometimes": supported values: "Manual", "Placements"`}},
		{"Placement", schemaTemplate + "---\n" + schemaADC + `---
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: all, namespace: default}
spec:
  numberOfClusters: "3"
`, []string{`Placement default/all: spec.numberOfClusters: Invalid value: "string": spec.numberOfClusters in body must be of type integer: "string"`}},
		{"ManagedClusterAddOn", schemaTemplate + "---\n" + schemaADC + `---
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ManagedClusterAddOn
metadata: {name: hello, namespace: cluster1}
spec:
  installNamespace: Bad_Namespace
`, []string{`ManagedClusterAddOn cluster1/hello: spec.installNamespace: Invalid value: "Bad_Namespace"`}},
		{"version the CRD does not serve", strings.Replace(schemaTemplate, "v1alpha1", "v1beta1", 1) + "---\n" + schemaADC,
			[]string{`AddOnTemplate hello: addon.open-cluster-management.io/v1beta1 is not served for AddOnTemplate: CRD addontemplates.addon.open-cluster-management.io serves addon.open-cluster-management.io/v1alpha1`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := runFn(t, validateConfig, tc.input)
			if code != 1 || out != "" {
				t.Fatalf("exit %d, stdout %q, stderr %s; want exit 1 and nothing written", code, out, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}

// The hub stores an ADC with agentInstallNamespace left out as open-cluster-management-agent-addon
// (the CRD default) and keeps an explicit "": the first moves the template's objects, the second
// keeps their namespaces (ocm#1209).
func TestPreviewUsesStoredADC(t *testing.T) {
	for _, tc := range []struct{ name, spec, wantNS string }{
		{"left out", "", "open-cluster-management-agent-addon"},
		{"null", "  agentInstallNamespace: null\n", "open-cluster-management-agent-addon"},
		{"empty", "  agentInstallNamespace: \"\"\n", "ns"},
		{"set", "  agentInstallNamespace: addons\n", "addons"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := runFn(t, "", schemaTemplate+"---\n"+schemaADC+tc.spec, "render", "--cluster", "c1")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if !strings.Contains(out, "namespace: "+tc.wantNS+"\n") {
				t.Errorf("want namespace %s:\n%s", tc.wantNS, out)
			}
		})
	}
}

// Preview and render refuse an ADC or a template the hub would reject: an agentInstallNamespace
// like "a\nkind: Secret" never reaches a manifest.
func TestPreviewRefusesInvalidInput(t *testing.T) {
	for _, tc := range []struct{ name, input, want string }{
		{"ADC", schemaTemplate + "---\n" + schemaADC + "  agentInstallNamespace: \"a\\nkind: Secret\"\n", `spec.agentInstallNamespace: Invalid value: "a\nkind: Secret"`},
		{"template", strings.Replace(schemaTemplate, "addonName: hello", "addonName: hello\n  extra: 1", 1) + "---\n" + schemaADC, `spec.extra: Forbidden: unknown field`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, args := range [][]string{nil, {"render", "--cluster", "c1"}} {
				out, stderr, code := runFn(t, previewConfig("  clusters: [c1]\n"), tc.input, args...)
				if code != 1 || out != "" || !strings.Contains(stderr, tc.want) {
					t.Errorf("%v: exit %d, stdout %q, stderr %s; want exit 1, nothing written, %q", args, code, out, stderr, tc.want)
				}
			}
		})
	}
}

// generate checks the template it builds: the functionConfig's registration goes in as written.
func TestGenerateChecksSchema(t *testing.T) {
	fc := "apiVersion: addonops.io/v1alpha1\nkind: AddOnTemplateFunction\nmetadata: {name: g}\nspec:\n  mode: generate\n  addonName: a\n  templateName: a-v1\n" +
		"  registration: [{type: CustomSigner, customSigner: {signerName: Bad/Signer, signingCA: {name: ca}}}]\n"
	out, stderr, code := runFn(t, fc, "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: agent, namespace: ns}\n")
	want := `AddOnTemplate a-v1: spec.registration[0].customSigner.signerName: Invalid value: "Bad/Signer": spec.registration[0].customSigner.signerName in body should match`
	if code != 1 || out != "" || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, stdout %q, stderr %s; want exit 1 and %q", code, out, stderr, want)
	}
}
