package main

import (
	"bytes"
	"strings"
	"testing"
)

// runFn runs the function in-process on plain YAML with the given functionConfig.
func runFn(t *testing.T, fnconfig, input string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, dir+"/fn.yaml", fnconfig)
	writeFile(t, dir+"/in.yaml", input)
	var out, errb bytes.Buffer
	if args == nil {
		args = []string{"--config", dir + "/fn.yaml", dir + "/in.yaml"}
	} else {
		args = append(args, dir+"/in.yaml")
	}
	code = run(args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

const generateConfig = `apiVersion: addonops.io/v1alpha1
kind: AddOnTemplateFunction
metadata: {name: g}
spec: {mode: generate, addonName: a, templateName: a-v1}
`

func TestGenerateReplacesItsEarlierTemplate(t *testing.T) {
	input := `apiVersion: v1
kind: ConfigMap
metadata: {name: first, namespace: ns}
---
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnTemplate
metadata: {name: a-v1}
spec:
  addonName: a
  agentSpec: {workload: {manifests: [{apiVersion: v1, kind: ConfigMap, metadata: {name: stale, namespace: ns}}]}}
---
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnTemplate
metadata: {name: other}
spec: {addonName: b, agentSpec: {workload: {manifests: []}}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: second, namespace: ns}
`
	out, stderr, code := runFn(t, generateConfig, input)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Count(out, "kind: AddOnTemplate") != 2 || strings.Contains(out, "stale") {
		t.Fatalf("the earlier a-v1 was not replaced:\n%s", out)
	}
	// The new template takes the place of the first manifest; the other template stays.
	iNew, iOther := strings.Index(out, "name: a-v1"), strings.Index(out, "name: other")
	if iNew < 0 || iOther < 0 || iNew > iOther {
		t.Errorf("order:\n%s", out)
	}
	for _, name := range []string{"name: first", "name: second"} {
		if !strings.Contains(out, name) {
			t.Errorf("%s missing from the template:\n%s", name, out)
		}
	}
}

// TestGenerateStripsOrchestratorAnnotations feeds a ResourceList as kustomize does: the build
// annotations must not end up inside the template's manifests.
func TestGenerateStripsOrchestratorAnnotations(t *testing.T) {
	rl := `apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: settings
    namespace: ns
    annotations:
      config.kubernetes.io/index: '0'
      internal.config.kubernetes.io/index: '0'
      internal.config.kubernetes.io/previousNames: 'settings'
      kustomize.config.k8s.io/id: |
        kind: ConfigMap
        name: settings
      team: blue
- apiVersion: v1
  kind: ServiceAccount
  metadata:
    name: agent
    namespace: ns
    annotations:
      config.kubernetes.io/index: '1'
      kustomize.config.k8s.io/id: |
        kind: ServiceAccount
functionConfig:
  apiVersion: addonops.io/v1alpha1
  kind: AddOnTemplateFunction
  metadata: {name: g}
  spec: {mode: generate, addonName: a}
`
	var out, errb bytes.Buffer
	if code := run(nil, strings.NewReader(rl), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	manifests := out.String()[strings.Index(out.String(), "manifests:"):]
	for _, leaked := range []string{"previousNames", "kustomize.config.k8s.io/id", "config.kubernetes.io/index"} {
		if strings.Contains(manifests, leaked) {
			t.Errorf("%s leaked into the template:\n%s", leaked, out.String())
		}
	}
	if !strings.Contains(manifests, "team: blue") {
		t.Errorf("the object's own annotation was dropped:\n%s", out.String())
	}
	if strings.Contains(manifests, "annotations: {}") || strings.Count(manifests, "annotations:") != 1 {
		t.Errorf("an emptied annotations map was left behind:\n%s", out.String())
	}
}

const hello = `apiVersion: addon.open-cluster-management.io/v1alpha1
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
---
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnDeploymentConfig
metadata: {name: cfg, namespace: a}
spec:
  customizedVariables: [{name: LEVEL, value: "1"}]
---
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnDeploymentConfig
metadata: {name: cfg, namespace: b}
spec:
  customizedVariables: [{name: LEVEL, value: "2"}]
`

func previewConfig(spec string) string {
	return "apiVersion: addonops.io/v1alpha1\nkind: AddOnTemplateFunction\nmetadata: {name: p}\nspec:\n  mode: preview\n" + spec
}

func TestPreviewChoosesConfigs(t *testing.T) {
	cases := []struct {
		name, spec, wantErr string
	}{
		{name: "per-cluster config wins over the default", spec: "  deploymentConfigs: [a/cfg]\n  clusters: [c1, {name: c2, deploymentConfigs: [b/cfg]}]\n"},
		{name: "ambiguous name", spec: "  deploymentConfigs: [cfg]\n  clusters: [c1]\n", wantErr: `AddOnDeploymentConfig name "cfg" (for cluster c1) is in several namespaces; write namespace/name`},
		{name: "missing config", spec: "  deploymentConfigs: [a/nope]\n  clusters: [c1]\n", wantErr: "AddOnDeploymentConfig a/nope (for cluster c1) is not in the input"},
		{name: "missing template", spec: "  deploymentConfigs: [a/cfg]\n  templates: [nope]\n  clusters: [c1]\n", wantErr: `spec.templates names AddOnTemplate "nope", which is not in the input`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := runFn(t, previewConfig(tc.spec), hello)
			if tc.wantErr != "" {
				if code == 0 || !strings.Contains(stderr, tc.wantErr) || out != "" {
					t.Fatalf("exit %d, stdout %q, stderr %s; want failure with %q", code, out, stderr, tc.wantErr)
				}
				return
			}
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			for _, cluster := range []struct{ name, level string }{{"c1", "1"}, {"c2", "2"}} {
				doc := previewDoc(t, out, cluster.name)
				if !strings.Contains(doc, "level: \""+cluster.level+"\"") {
					t.Errorf("cluster %s got:\n%s", cluster.name, doc)
				}
			}
		})
	}
}

func previewDoc(t *testing.T, out, cluster string) string {
	t.Helper()
	for _, doc := range strings.Split(out, "\n---\n") {
		if strings.Contains(doc, "addonops.io/preview-cluster: '"+cluster+"'") {
			return doc
		}
	}
	t.Fatalf("no preview for %s in:\n%s", cluster, out)
	return ""
}

func TestPreviewReplacesEarlierPreviews(t *testing.T) {
	out, stderr, code := runFn(t, previewConfig("  deploymentConfigs: [a/cfg]\n  clusters: [c1]\n"), hello)
	if code != 0 {
		t.Fatal(stderr)
	}
	again, stderr, code := runFn(t, previewConfig("  deploymentConfigs: [b/cfg]\n  clusters: [c1]\n"), out)
	if code != 0 {
		t.Fatal(stderr)
	}
	if strings.Count(again, "addonops.io/preview-cluster") != 1 || !strings.Contains(previewDoc(t, again, "c1"), `level: "2"`) {
		t.Errorf("the earlier preview was not replaced:\n%s", again)
	}
}

func TestRenderCommandUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"render", "x.yaml"}, strings.NewReader(""), &out, &errb); code != 2 || !strings.Contains(errb.String(), "--cluster is required") {
		t.Errorf("no --cluster: exit %d, %s", code, errb.String())
	}
	errb.Reset()
	if code := run([]string{"render", "--cluster", "c1"}, strings.NewReader(""), &out, &errb); code != 2 || !strings.Contains(errb.String(), "give the FILEs") {
		t.Errorf("no FILE: exit %d, %s", code, errb.String())
	}
	if out.Len() != 0 {
		t.Errorf("usage errors wrote %q", out.String())
	}
	// Cluster names are checked as ManagedCluster names, here as in the functionConfig.
	stdout, stderr, code := runFn(t, "", hello, "render", "--cluster", "c1", "--cluster", "my_cluster")
	if code != 1 || stdout != "" || !strings.Contains(stderr, `spec.clusters[1]: "my_cluster" is not a valid ManagedCluster name (a DNS-1123 label)`) {
		t.Errorf("bad cluster name: exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}
	// Only the preview objects are printed, not the input.
	stdout, stderr, code = runFn(t, "", hello, "render", "--cluster", "c9", "--deployment-config", "b/cfg")
	if code != 0 {
		t.Fatal(stderr)
	}
	if strings.Contains(stdout, "AddOnTemplate") || strings.Contains(stdout, "AddOnDeploymentConfig") || !strings.Contains(stdout, `level: "2"`) {
		t.Errorf("render printed:\n%s", stdout)
	}
}

func TestValidateChangesNothing(t *testing.T) {
	out, stderr, code := runFn(t, "apiVersion: addonops.io/v1alpha1\nkind: AddOnTemplateFunction\nmetadata: {name: v}\nspec: {mode: validate}\n", hello)
	if code != 0 {
		t.Fatal(stderr)
	}
	if out != hello {
		t.Errorf("validate changed the input:\n%s", out)
	}
}

// renamedTemplate is generate's a-v1 as config-hash leaves it: renamed, with its base name.
const renamedTemplate = `apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnTemplate
metadata:
  name: a-v1-5d8c7b9f4k
  annotations: {addonops.io/base-name: a-v1}
spec:
  addonName: a
  agentSpec: {workload: {manifests: [{apiVersion: v1, kind: ConfigMap, metadata: {name: stale, namespace: ns}}]}}
`

// TestGenerateRecognisesRenamedTemplate: generate's own output renamed by config-hash is an
// earlier generation: kept as it is without manifests, replaced with them, and two of them with
// new manifests are an error rather than a guess.
func TestGenerateRecognisesRenamedTemplate(t *testing.T) {
	out, stderr, code := runFn(t, generateConfig, renamedTemplate)
	if code != 0 || out != renamedTemplate {
		t.Fatalf("exit %d, stderr %s; want the renamed template unchanged, got:\n%s", code, stderr, out)
	}
	fresh := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fresh, namespace: ns}\n"
	out, stderr, code = runFn(t, generateConfig, renamedTemplate+"---\n"+fresh)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Count(out, "kind: AddOnTemplate") != 1 || strings.Contains(out, "stale") || !strings.Contains(out, "name: a-v1\n") || !strings.Contains(out, "name: fresh") {
		t.Errorf("the renamed template was not replaced by a-v1:\n%s", out)
	}
	twice := renamedTemplate + "---\n" + strings.Replace(renamedTemplate, "a-v1-5d8c7b9f4k", "a-v1-older", 1) + "---\n" + fresh
	out, stderr, code = runFn(t, generateConfig, twice)
	if code == 0 || out != "" || !strings.Contains(stderr, "the input holds 2 earlier generations of AddOnTemplate a-v1 (AddOnTemplate a-v1-5d8c7b9f4k, AddOnTemplate a-v1-older)") {
		t.Errorf("exit %d, stdout %q, stderr %s", code, out, stderr)
	}
}

func TestGenerateTemplateManifestAnnotation(t *testing.T) {
	input := `apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: ns, annotations: {addonops.io/template-manifest: "yes"}}
`
	out, stderr, code := runFn(t, generateConfig, input)
	if code == 0 || out != "" || !strings.Contains(stderr, `ConfigMap ns/c: annotation addonops.io/template-manifest must be "true" or "false", got "yes"`) {
		t.Errorf("exit %d, stdout %q, stderr %s", code, out, stderr)
	}
	// "true" takes even an OCM object, and the annotation does not reach the cluster.
	forced := `apiVersion: cluster.open-cluster-management.io/v1alpha1
kind: AddOnPlacementScore
metadata: {name: score, namespace: ns, annotations: {addonops.io/template-manifest: "true"}}
`
	out, stderr, code = runFn(t, generateConfig, forced)
	if code != 0 || !strings.Contains(out, "kind: AddOnPlacementScore") || strings.Contains(out, "template-manifest") {
		t.Errorf("exit %d, stderr %s, out:\n%s", code, stderr, out)
	}
}
