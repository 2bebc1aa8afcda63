package render

import (
	"os"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	"sigs.k8s.io/yaml"
)

// parseTemplate decodes an AddOnTemplate written as YAML (strictly, as the function does).
func parseTemplate(t testing.TB, y string) *addonv1alpha1.AddOnTemplate {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatalf("template YAML: %v", err)
	}
	tpl, err := DecodeAddOnTemplate(j)
	if err != nil {
		t.Fatalf("decoding template: %v", err)
	}
	return tpl
}

// parseADC decodes an AddOnDeploymentConfig written as YAML, applying CRD defaults.
func parseADC(t testing.TB, y string) *addonv1alpha1.AddOnDeploymentConfig {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatalf("ADC YAML: %v", err)
	}
	adc, err := DecodeAddOnDeploymentConfig(j)
	if err != nil {
		t.Fatalf("decoding ADC: %v", err)
	}
	return adc
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// parseObject decodes a YAML object into the form Render returns (int64 numbers).
func parseObject(t testing.TB, y string) map[string]any {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return u.Object
}

// adcYAML builds an ADC from the YAML of its spec (indented by two spaces per level, no leading
// indentation needed).
func adcYAML(spec string) string {
	var b strings.Builder
	b.WriteString("apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: AddOnDeploymentConfig\nmetadata:\n  name: cfg\n  namespace: default\nspec:\n")
	for _, line := range strings.Split(strings.TrimRight(spec, "\n"), "\n") {
		b.WriteString("  " + line + "\n")
	}
	return b.String()
}

// templateYAML builds a template named t1 for add-on addon1 from the YAML of its registration
// list (may be empty: no registration) and of its manifests list items.
func templateYAML(registration string, manifests ...string) string {
	var b strings.Builder
	b.WriteString("apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: AddOnTemplate\nmetadata:\n  name: t1\nspec:\n  addonName: addon1\n  agentSpec:\n    workload:\n      manifests:\n")
	for _, m := range manifests {
		for i, line := range strings.Split(strings.TrimRight(m, "\n"), "\n") {
			prefix := "        "
			if i == 0 {
				prefix = "      - "
			}
			b.WriteString(prefix + line + "\n")
		}
	}
	if registration != "" {
		b.WriteString("  registration:\n")
		for _, line := range strings.Split(strings.TrimRight(registration, "\n"), "\n") {
			b.WriteString("    " + line + "\n")
		}
	}
	return b.String()
}

const kubeClientRegistration = "- type: KubeClient\n"

// deployment is a Deployment manifest with one container (and one init container) for tests.
const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: agent
  namespace: agent-ns
spec:
  selector:
    matchLabels: {app: agent}
  template:
    metadata:
      labels: {app: agent}
    spec:
      initContainers:
      - name: init
        image: quay.io/org/init:v1
      containers:
      - name: main
        image: quay.io/org/agent:v1
`

const daemonSet = `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: node-agent
  namespace: agent-ns
spec:
  selector:
    matchLabels: {app: node-agent}
  template:
    metadata:
      labels: {app: node-agent}
    spec:
      containers:
      - name: main
        image: quay.io/org/node-agent:v1
      - name: sidecar
        image: docker.io/library/busybox:1
`

func mustRender(t testing.TB, tpl *addonv1alpha1.AddOnTemplate, c Cluster) *Result {
	t.Helper()
	res, err := Render(tpl, c)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	return res
}

func findObject(t testing.TB, res *Result, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range res.Objects {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s in the result", kind, name)
	return nil
}

func typedDeployment(t testing.TB, u *unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d); err != nil {
		t.Fatal(err)
	}
	return d
}

func typedDaemonSet(t testing.TB, u *unstructured.Unstructured) *appsv1.DaemonSet {
	t.Helper()
	d := &appsv1.DaemonSet{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d); err != nil {
		t.Fatal(err)
	}
	return d
}
