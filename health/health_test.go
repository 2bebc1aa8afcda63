package health

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/rolloutview"
	"github.com/addonops/addonops/internal/testing/localhub"
)

var update = flag.Bool("update", false, "rewrite generated files (argocd-cm.yaml) and the captured testdata from a controller run")

func TestMain(m *testing.M) { os.Exit(localhub.RunTests(m)) }

const (
	customizations = "argocd/resource_customizations"
	fluxExample    = "flux/addonops-hub.yaml"
	argoCM         = "argocd/argocd-cm.yaml"
)

// argoTests is Argo CD's health_test.yaml format (util/lua/health_test.go).
type argoTests struct {
	Tests []struct {
		HealthStatus ArgoStatus `json:"healthStatus"`
		InputPath    string     `json:"inputPath"`
	} `json:"tests"`
}

type healthCase struct {
	dir, kindDir string // resource_customizations/<group>/<Kind>, "<group>/<Kind>"
	script       string
	input        string // path
	want         ArgoStatus
}

// healthCases walks the customizations the way Argo CD's test does: every health.lua with its
// health_test.yaml. It also fails on testdata files no test names, so nothing goes unchecked.
func healthCases(t *testing.T) []healthCase {
	t.Helper()
	var cases []healthCase
	err := filepath.WalkDir(customizations, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "health.lua" {
			return err
		}
		dir := filepath.Dir(path)
		kindDir, _ := filepath.Rel(customizations, dir)
		script, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		raw, err := os.ReadFile(filepath.Join(dir, "health_test.yaml"))
		if err != nil {
			return fmt.Errorf("every health.lua needs a health_test.yaml: %w", err)
		}
		var tests argoTests
		if err := yaml.UnmarshalStrict(raw, &tests); err != nil {
			return fmt.Errorf("%s/health_test.yaml: %w", dir, err)
		}
		named := map[string]bool{}
		for _, tc := range tests.Tests {
			named[filepath.Clean(tc.InputPath)] = true
			cases = append(cases, healthCase{dir: dir, kindDir: kindDir, script: string(script), input: filepath.Join(dir, tc.InputPath), want: tc.HealthStatus})
		}
		files, _ := filepath.Glob(filepath.Join(dir, "testdata", "*.yaml"))
		for _, f := range files {
			rel, _ := filepath.Rel(dir, f)
			if !named[rel] {
				t.Errorf("%s: %s is not in health_test.yaml; add it with its expected health", dir, rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatal("no health.lua found under " + customizations)
	}
	return cases
}

// readObject reads a YAML object as the API server would hand it to Argo CD or Flux
// (JSON-decoded unstructured: integers are int64).
func readObject(t *testing.T, path string) *unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return u
}

func caseName(c healthCase) string {
	rel, _ := filepath.Rel(customizations, c.input)
	return filepath.ToSlash(rel)
}

// TestArgoHealthScripts runs every script on its testdata as Argo CD does: as an argocd-cm custom
// script (no string/math libraries) and as a built-in script (all libraries); both must give
// exactly the expected status and message.
func TestArgoHealthScripts(t *testing.T) {
	for _, c := range healthCases(t) {
		t.Run(caseName(c), func(t *testing.T) {
			obj := readObject(t, c.input)
			for _, openLibs := range []bool{false, true} {
				got, err := RunArgoScript(c.script, obj.Object, openLibs)
				if err != nil {
					t.Fatalf("openLibs=%v: %v", openLibs, err)
				}
				if got != c.want {
					t.Errorf("openLibs=%v:\n got  %+v\n want %+v", openLibs, got, c.want)
				}
			}
		})
	}
}

// fluxFor maps an Argo CD verdict to the kstatus status the Flux expressions must give. Flux has
// no Suspended: a paused rollout is not Ready and not failed, so Flux keeps waiting (InProgress).
var fluxFor = map[string]string{"Healthy": "Current", "Progressing": "InProgress", "Suspended": "InProgress", "Degraded": "Failed"}

// TestFluxHealthCheckExprs evaluates the Flux example's healthCheckExprs with Flux's own evaluator
// on every testdata object and checks that Flux agrees with Argo CD (see fluxAgrees).
func TestFluxHealthCheckExprs(t *testing.T) {
	checks, err := LoadFluxChecks(fluxExample)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range healthCases(t) {
		t.Run(caseName(c), func(t *testing.T) {
			obj := readObject(t, c.input)
			if err := fluxAgrees(checks, obj, c.want.Status); err != nil {
				t.Errorf("%v (Argo CD: %s %q)", err, c.want.Status, c.want.Message)
			}
		})
	}
}

// fluxAgrees checks the Flux verdict on obj against the Argo CD status argo: Current where Argo CD
// says Healthy, Failed where Degraded, InProgress where Progressing or Suspended. An object without
// any status yet cannot be evaluated (CEL cannot test for a missing top-level variable): Flux
// reports Unknown and keeps waiting, which is accepted only where Argo CD says Progressing.
func fluxAgrees(checks *FluxChecks, obj *unstructured.Unstructured, argo string) error {
	got, evalErr, ok := checks.Status(obj)
	if !ok {
		return fmt.Errorf("%s has no healthCheckExprs entry for %s", fluxExample, obj.GroupVersionKind().GroupKind())
	}
	want := fluxFor[argo]
	if got == "Unknown" {
		if _, hasStatus := obj.Object["status"]; !hasStatus && want == "InProgress" {
			return nil
		}
		return fmt.Errorf("flux status Unknown (evaluation error: %v), want %s", evalErr, want)
	}
	if got != want {
		return fmt.Errorf("flux status %s, want %s", got, want)
	}
	return nil
}

// TestStatusCommandAgrees checks that the status command's verdicts (internal/rolloutview, the
// rules `addonops status --watch` stops on) give the same status and message as the scripts.
func TestStatusCommandAgrees(t *testing.T) {
	for _, c := range healthCases(t) {
		t.Run(caseName(c), func(t *testing.T) {
			got, err := goVerdict(readObject(t, c.input))
			if err != nil {
				t.Fatal(err)
			}
			if string(got.Health) != c.want.Status || got.Message != c.want.Message {
				t.Errorf("rolloutview: %s %q\n want %s %q", got.Health, got.Message, c.want.Status, c.want.Message)
			}
		})
	}
}

// goVerdict decodes obj into the typed API the status command reads (v1alpha1 for add-ons:
// v1beta1 objects are converted as the API server would) and judges it.
func goVerdict(obj *unstructured.Unstructured) (rolloutview.Verdict, error) {
	gvk := obj.GroupVersionKind()
	from := func(into any) error { return runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, into) }
	switch {
	case gvk == addonv1alpha1.SchemeGroupVersion.WithKind("ClusterManagementAddOn"):
		var cma addonv1alpha1.ClusterManagementAddOn
		if err := from(&cma); err != nil {
			return rolloutview.Verdict{}, err
		}
		return rolloutview.AddonHealth(&cma), nil
	case gvk == addonv1beta1.SchemeGroupVersion.WithKind("ClusterManagementAddOn"):
		var in addonv1beta1.ClusterManagementAddOn
		var cma addonv1alpha1.ClusterManagementAddOn
		if err := from(&in); err != nil {
			return rolloutview.Verdict{}, err
		}
		if err := addonv1beta1.Convert_v1beta1_ClusterManagementAddOn_To_v1alpha1_ClusterManagementAddOn(&in, &cma, nil); err != nil {
			return rolloutview.Verdict{}, err
		}
		return rolloutview.AddonHealth(&cma), nil
	case gvk == addonv1alpha1.SchemeGroupVersion.WithKind("ManagedClusterAddOn"):
		var mca addonv1alpha1.ManagedClusterAddOn
		if err := from(&mca); err != nil {
			return rolloutview.Verdict{}, err
		}
		return rolloutview.ClusterHealth(&mca), nil
	case gvk == workv1.SchemeGroupVersion.WithKind("ManifestWork"):
		var w workv1.ManifestWork
		if err := from(&w); err != nil {
			return rolloutview.Verdict{}, err
		}
		return rolloutview.WorkHealth(&w), nil
	}
	return rolloutview.Verdict{}, fmt.Errorf("no status-command verdict for %s", gvk)
}

// TestEveryKindIsCovered pins the kinds the issue asks for, so a script cannot silently go missing.
func TestEveryKindIsCovered(t *testing.T) {
	want := []string{
		"addon.open-cluster-management.io/ClusterManagementAddOn",
		"addon.open-cluster-management.io/ManagedClusterAddOn",
		"work.open-cluster-management.io/ManifestWork",
	}
	var got []string
	for _, c := range healthCases(t) {
		if !slices.Contains(got, filepath.ToSlash(c.kindDir)) {
			got = append(got, filepath.ToSlash(c.kindDir))
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("health scripts for %v, want %v", got, want)
	}
	checks, err := LoadFluxChecks(fluxExample)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range want {
		group, kind, _ := strings.Cut(k, "/")
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(group + "/v1")
		u.SetKind(kind)
		if _, _, ok := checks.Status(u); !ok {
			t.Errorf("%s has no healthCheckExprs entry for %s", fluxExample, k)
		}
	}
}

// TestArgoCMSnippet checks that the argocd-cm snippet carries exactly the scripts of
// resource_customizations (regenerate with -update) and the kustomize build options the KRM
// functions need.
func TestArgoCMSnippet(t *testing.T) {
	want, err := renderArgoCM()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(argoCM, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(argoCM)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("%s is out of date with the health.lua scripts; run go test ./health -run TestArgoCMSnippet -update", argoCM)
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(got, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data["kustomize.buildOptions"] != "--enable-alpha-plugins --enable-exec" {
		t.Errorf("kustomize.buildOptions = %q", cm.Data["kustomize.buildOptions"])
	}
	for _, c := range healthCases(t) {
		group, kind, _ := strings.Cut(filepath.ToSlash(c.kindDir), "/")
		key := "resource.customizations.health." + group + "_" + kind
		if cm.Data[key] != c.script {
			t.Errorf("argocd-cm %s differs from %s/health.lua", key, c.dir)
		}
	}
}

// renderArgoCM builds argocd/argocd-cm.yaml from the scripts.
func renderArgoCM() ([]byte, error) {
	var b strings.Builder
	b.WriteString(`# Generated from resource_customizations/*/*/health.lua by ` + "`go test ./health -run TestArgoCMSnippet -update`" + `;
# edit the scripts, not this file. Merge it into Argo CD's argocd-cm (see ../README.md):
#   kubectl -n argocd patch configmap argocd-cm --type merge --patch-file health/argocd/argocd-cm.yaml
# The scripts need no resource.customizations.useOpenLibs: they use only what custom scripts get.
apiVersion: v1
kind: ConfigMap
metadata:
  name: argocd-cm
  namespace: argocd
  labels:
    app.kubernetes.io/name: argocd-cm
    app.kubernetes.io/part-of: argocd
data:
  # Run exec KRM functions (config-hash, addon-template) in kustomize builds; the binaries must be on
  # the repo-server's PATH (see the init container in repo-server-patch.yaml).
  kustomize.buildOptions: --enable-alpha-plugins --enable-exec
`)
	var dirs []string
	err := filepath.WalkDir(customizations, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "health.lua" {
			dirs = append(dirs, filepath.Dir(path))
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(dirs)
	for _, dir := range dirs {
		rel, _ := filepath.Rel(customizations, dir)
		group, kind, _ := strings.Cut(filepath.ToSlash(rel), "/")
		script, err := os.ReadFile(filepath.Join(dir, "health.lua"))
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "  resource.customizations.health.%s_%s: |\n", group, kind)
		for _, line := range strings.SplitAfter(string(script), "\n") {
			if line == "" {
				continue
			}
			if line == "\n" {
				b.WriteString(line)
				continue
			}
			b.WriteString("    " + line)
		}
	}
	return []byte(b.String()), nil
}

// TestRecipes checks the install recipes: every YAML document under argocd/ and flux/ is an object
// with apiVersion, kind and name (but the CI workflow flux/render-workflow.yaml, a GitHub Actions
// file that TestRenderWorkflow runs), the CMP configuration inside cmp-plugin.yaml parses, and the
// repo-server patches merge into an Argo CD repo-server Deployment with real kustomize (the init
// container and mounts of repo-server-patch.yaml, the sidecar of cmp-plugin.yaml).
func TestRecipes(t *testing.T) {
	files, _ := filepath.Glob("argocd/*.yaml")
	flux, _ := filepath.Glob("flux/*.yaml")
	for _, f := range append(files, flux...) {
		if strings.HasSuffix(f, "-workflow.yaml") {
			continue
		}
		for i, doc := range documents(t, f) {
			var o struct {
				APIVersion, Kind string
				Metadata         struct{ Name string }
				Data             map[string]string
			}
			if err := yaml.Unmarshal(doc, &o); err != nil {
				t.Fatalf("%s document %d: %v", f, i, err)
			}
			if o.APIVersion == "" || o.Kind == "" || o.Metadata.Name == "" {
				t.Errorf("%s document %d: apiVersion %q kind %q name %q", f, i, o.APIVersion, o.Kind, o.Metadata.Name)
			}
			if plugin, ok := o.Data["plugin.yaml"]; ok {
				var p struct {
					APIVersion, Kind string
					Metadata         struct{ Name string }
					Spec             struct {
						Version  string
						Discover struct{ Find struct{ Command []string } }
						Generate struct{ Command []string }
					}
				}
				if err := yaml.UnmarshalStrict([]byte(plugin), &p); err != nil || p.Kind != "ConfigManagementPlugin" ||
					strings.Join(p.Spec.Generate.Command, " ") != "kustomize build --enable-alpha-plugins --enable-exec ." ||
					len(p.Spec.Discover.Find.Command) == 0 {
					t.Errorf("%s: plugin.yaml %+v, %v", f, p, err)
				}
			}
		}
	}

	fs := filesys.MakeFsInMemory()
	write := func(name, content string) {
		if err := fs.WriteFile(name, []byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	write("/argocd/repo-server.yaml", `apiVersion: apps/v1
kind: Deployment
metadata: {name: argocd-repo-server, namespace: argocd}
spec:
  selector: {matchLabels: {app.kubernetes.io/name: argocd-repo-server}}
  template:
    metadata: {labels: {app.kubernetes.io/name: argocd-repo-server}}
    spec:
      containers:
      - name: argocd-repo-server
        image: quay.io/argoproj/argocd:v3.1.0
        volumeMounts: [{name: var-files, mountPath: /var/run/argocd}, {name: plugins, mountPath: /home/argocd/cmp-server/plugins}]
      volumes: [{name: var-files, emptyDir: {}}, {name: plugins, emptyDir: {}}]
`)
	for _, f := range []string{"repo-server-patch.yaml", "cmp-plugin.yaml"} {
		raw, err := os.ReadFile(filepath.Join("argocd", f))
		if err != nil {
			t.Fatal(err)
		}
		write("/argocd/"+f, string(raw))
	}
	write("/argocd/kustomization.yaml", `resources: [repo-server.yaml]
patches: [{path: repo-server-patch.yaml}]
`)
	got := build(t, fs)
	spec := got["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	containers := fmt.Sprint(spec["containers"])
	if !strings.Contains(fmt.Sprint(spec["initContainers"]), "addonops-tools") ||
		!strings.Contains(containers, "/usr/local/bin/config-hash") || !strings.Contains(containers, "/var/run/argocd") {
		t.Errorf("repo-server-patch.yaml did not merge as intended: %v", spec)
	}
	// cmp-plugin.yaml holds the ConfigMap and the patch; kustomize takes the Deployment document as the patch.
	var cmpPatch string
	for _, doc := range documents(t, "argocd/cmp-plugin.yaml") {
		if strings.Contains(string(doc), "kind: Deployment") {
			cmpPatch = string(doc)
		}
	}
	write("/argocd/cmp-patch.yaml", cmpPatch)
	write("/argocd/kustomization.yaml", `resources: [repo-server.yaml]
patches: [{path: cmp-patch.yaml}]
`)
	got = build(t, fs)
	containers = fmt.Sprint(got["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"])
	if !strings.Contains(containers, "argocd-cmp-server") || !strings.Contains(containers, "argocd-repo-server") {
		t.Errorf("cmp-plugin.yaml's sidecar did not merge as intended: %s", containers)
	}
}

func documents(t *testing.T, path string) [][]byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		if strings.TrimSpace(doc) != "" {
			out = append(out, []byte(doc))
		}
	}
	return out
}

// build runs kustomize on /argocd and returns the one Deployment it produces.
func build(t *testing.T, fs filesys.FileSystem) map[string]any {
	t.Helper()
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, "/argocd")
	if err != nil {
		t.Fatalf("kustomize build: %v", err)
	}
	for _, r := range res.Resources() {
		if r.GetKind() == "Deployment" {
			m, err := r.Map()
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
	t.Fatal("kustomize build produced no Deployment")
	return nil
}
