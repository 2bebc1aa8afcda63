package crdschema

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// decode reads one YAML object as the API server's JSON decoding gives it (int64/float64).
func decode(t testing.TB, doc string) map[string]any {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatalf("YAML to JSON: %v\n%s", err, doc)
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(j, &obj); err != nil {
		t.Fatalf("decoding: %v", err)
	}
	return obj
}

func lookup(t testing.TB, obj map[string]any) *Kind {
	t.Helper()
	av, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	k, ok := OCM().Lookup(av, kind)
	if !ok {
		t.Fatalf("no schema for %s %s: %v", av, kind, OCM().CheckVersion(av, kind))
	}
	return k
}

// errorStrings validates obj (after Default, as callers do) and returns the errors as the server
// prints them.
func errorStrings(t testing.TB, doc string) []string {
	t.Helper()
	obj := decode(t, doc)
	k := lookup(t, obj)
	k.Default(obj)
	before := deepCopyJSON(obj)
	var out []string
	for _, e := range k.Validate(obj) {
		out = append(out, e.Error())
	}
	if diff := cmp.Diff(before, obj); diff != "" {
		t.Errorf("Validate changed the object (-before +after):\n%s", diff)
	}
	return out
}

const adc = `apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnDeploymentConfig
metadata:
  name: hello-config
  namespace: default
spec:
`

// adcX is a valid ADC to vary in metadata.
const adcX = adc + "  agentInstallNamespace: x\n"

const cma = `apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ClusterManagementAddOn
metadata:
  name: hello
spec: {}
`

const template = `apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnTemplate
metadata:
  name: hello-template
spec:
  addonName: hello
  agentSpec:
    workload:
      manifests:
      - {apiVersion: v1, kind: ServiceAccount, metadata: {name: hello, namespace: default}}
`

const placement = `apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: global
  namespace: default
spec:
`

func TestValidate(t *testing.T) {
	long := strings.Repeat("a", 300)
	cases := []struct {
		name string
		doc  string
		want []string // substrings, one per expected error, in order
	}{
		{"valid ADC", adc + "  agentInstallNamespace: addons\n  customizedVariables: [{name: LOG_LEVEL, value: \"4\"}]\n", nil},
		{"ADC install namespace empty (keep the template's)", adc + "  agentInstallNamespace: \"\"\n", nil},
		{"install namespace with a newline", adc + "  agentInstallNamespace: \"a\\nkind: Secret\"\n",
			[]string{`spec.agentInstallNamespace: Invalid value: "a\nkind: Secret": spec.agentInstallNamespace in body should match '^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$'`}},
		{"install namespace a path", adc + "  agentInstallNamespace: ../../x\n",
			[]string{`spec.agentInstallNamespace: Invalid value: "../../x": spec.agentInstallNamespace in body should match`}},
		{"install namespace upper case", adc + "  agentInstallNamespace: Kube-System\n",
			[]string{`spec.agentInstallNamespace: Invalid value: "Kube-System"`}},
		{"install namespace 300 characters", adc + "  agentInstallNamespace: " + long + "\n",
			[]string{`spec.agentInstallNamespace: Too long: may not be more than 63 bytes`}},
		{"variable value of 1025 characters", adc + "  customizedVariables: [{name: X, value: " + strings.Repeat("v", 1025) + "}]\n",
			[]string{`spec.customizedVariables[0].value: Too long: may not be more than 1024 bytes`}},
		{"variable value of 1024 characters", adc + "  customizedVariables: [{name: X, value: " + strings.Repeat("v", 1024) + "}]\n", nil},
		{"variable twice", adc + "  customizedVariables: [{name: X, value: a}, {name: X, value: b}]\n",
			[]string{`spec.customizedVariables[1]: Duplicate value: {"name":"X"}`}},
		{"variable name not an identifier", adc + "  customizedVariables: [{name: 1X, value: a}]\n",
			[]string{`spec.customizedVariables[0].name: Invalid value: "1X"`}},
		{"name not a DNS subdomain", strings.Replace(adcX, "name: hello-config", "name: Hello World/../x", 1),
			[]string{`metadata.name: Invalid value: "Hello World/../x": a lowercase RFC 1123 subdomain must consist of`}},
		{"namespace not a DNS label", strings.Replace(adcX, "namespace: default", "namespace: a.b", 1),
			[]string{`metadata.namespace: Invalid value: "a.b": must not contain dots`}},
		{"namespace upper case", strings.Replace(adcX, "namespace: default", "namespace: Default", 1),
			[]string{`metadata.namespace: Invalid value: "Default": a lowercase RFC 1123 label must consist of`}},
		{"namespace left out: set later", strings.Replace(adcX, "  namespace: default\n", "", 1), nil},
		{"bad label", strings.Replace(adcX, "namespace: default", "namespace: default\n  labels: {\"a b\": x}", 1),
			[]string{`metadata.labels: Invalid value: "a b": name part must consist of alphanumeric characters`}},
		{"unknown field", adc + "  agentInstalNamespace: x\n",
			[]string{`spec.agentInstalNamespace: Forbidden: unknown field: not in the schema of AddOnDeploymentConfig addon.open-cluster-management.io/v1alpha1`}},
		{"unknown metadata field", strings.Replace(adcX, "namespace: default", "namespace: default\n  labelz: {a: b}", 1),
			[]string{`metadata.labelz: Forbidden: unknown field`}},
		{"unknown top-level field", adc + "  agentInstallNamespace: x\nextra: 1\n", []string{`extra: Forbidden: unknown field`}},
		{"wrong type", adc + "  customizedVariables: {name: X}\n",
			[]string{`spec.customizedVariables.name: Forbidden: unknown field`, // as the server's pruning sees it
				`spec.customizedVariables: Invalid value: "object": spec.customizedVariables in body must be of type array: "object"`}},
		{"spec required", strings.TrimSuffix(adc, "spec:\n"), []string{`spec: Required value`}},
		{"spec null: dropped, then required", adc, []string{`spec: Required value`}},
		{"null is dropped, as by the server", adc + "  customizedVariables: null\n", nil},
		{"status: a create drops it", cma + "status: {installProgressions: 1}\n", nil},
		{"status: pruned first", cma + "status: {x: 1}\n", []string{`status.x: Forbidden: unknown field`}},
		{"status of a kind without it: unknown", strings.Replace(template, "spec:", "status: {}\nspec:", 1), []string{`status: Forbidden: unknown field`}},

		{"valid template", template, nil},
		{"CEL rule: type CEL without condition", template + `    manifestConfigs:
    - resourceIdentifier: {resource: deployments, name: hello, namespace: default}
      conditionRules:
      - {type: CEL, condition: "", celExpressions: ["true"]}
`, []string{`spec.agentSpec.manifestConfigs[0].conditionRules[0]: Invalid value: Condition is required for CEL rules`}},
		{"CEL rule satisfied", template + `    manifestConfigs:
    - resourceIdentifier: {resource: deployments, name: hello, namespace: default}
      conditionRules:
      - {type: CEL, condition: Ready, celExpressions: ["true"]}
`, nil},
		{"CEL rules skipped after a blocking error", template + `    manifestConfigs:
    - resourceIdentifier: {resource: deployments, name: hello, namespace: default}
      conditionRules:
      - {type: CEL, condition: "", celExpressions: ["true"]}
      - {type: Other, condition: x}
`, []string{`spec.agentSpec.manifestConfigs[0].conditionRules[1].type: Unsupported value: "Other": supported values: "WellKnownConditions", "CEL"`,
			`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid`}},
		{"registration type not in the enum", template + "  registration: [{type: Token}]\n",
			[]string{`spec.registration[0].type: Unsupported value: "Token": supported values: "KubeClient", "CustomSigner"`,
				`some validation rules were not checked`}},
		{"template is cluster-scoped: namespace cleared", strings.Replace(template, "name: hello-template", "name: hello-template\n  namespace: Not_Valid", 1), nil},

		{"valid placement", placement + "  numberOfClusters: 3\n  clusterSets: [global]\n", nil},
		{"placement with an invalid field", placement + "  tolerations: [{key: a, effect: Sometimes}]\n",
			[]string{`spec.tolerations[0].effect: Unsupported value: "Sometimes": supported values: "NoSelect", "PreferNoSelect", "NoSelectIfNew"`}},
		{"placement with a string for an integer", placement + "  numberOfClusters: \"3\"\n",
			[]string{`spec.numberOfClusters: Invalid value: "string": spec.numberOfClusters in body must be of type integer: "string"`}},
		{"placement with a bad rollout type", placement + "  decisionStrategy: {groupStrategy: {clustersPerDecisionGroup: 101%}}\n",
			[]string{`spec.decisionStrategy.groupStrategy.clustersPerDecisionGroup: Invalid value: "101%"`}},
		{"placement sort order", placement + "  decisionStrategy: {groupStrategy: {clustersPerDecisionGroup: 1}}\n  sortBy: Name\n",
			[]string{`spec.sortBy: Unsupported value: "Name": supported values: "ClusterName", "Score"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := errorStrings(t, tc.doc)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d errors, want %d:\n%s", len(got), len(tc.want), strings.Join(got, "\n"))
			}
			for i := range got {
				if !strings.Contains(got[i], tc.want[i]) {
					t.Errorf("error %d:\n got %s\nwant it to contain %s", i, got[i], tc.want[i])
				}
			}
			checkValidateMetadata(t, tc.doc)
		})
	}
}

// checkValidateMetadata asserts ValidateMetadata's contract on doc: exactly the errors Validate
// reports at apiVersion, kind and metadata.
func checkValidateMetadata(t *testing.T, doc string) {
	t.Helper()
	obj := decode(t, doc)
	k := lookup(t, obj)
	k.Default(obj)
	var want, got []string
	for _, e := range k.Validate(obj) {
		if f := e.Field; f == "apiVersion" || f == "kind" || f == "metadata" || strings.HasPrefix(f, "metadata.") {
			want = append(want, e.Error())
		}
	}
	for _, e := range k.ValidateMetadata(obj) {
		got = append(got, e.Error())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ValidateMetadata differs from Validate's metadata errors (-Validate +ValidateMetadata):\n%s", diff)
	}
}

func TestDefault(t *testing.T) {
	cases := []struct {
		name, doc string
		path      []string
		want      any
	}{
		{"ADC install namespace left out", adc + "  customizedVariables: []\n", []string{"spec", "agentInstallNamespace"}, "open-cluster-management-agent-addon"},
		{"ADC install namespace null", adc + "  agentInstallNamespace: null\n", []string{"spec", "agentInstallNamespace"}, "open-cluster-management-agent-addon"},
		{"ADC install namespace empty stays empty", adc + "  agentInstallNamespace: \"\"\n", []string{"spec", "agentInstallNamespace"}, ""},
		{"ADC install namespace set", adc + "  agentInstallNamespace: addons\n", []string{"spec", "agentInstallNamespace"}, "addons"},
		{"template feedback scrape type", template + "    manifestConfigs:\n    - resourceIdentifier: {resource: deployments, name: hello, namespace: default}\n      feedbackRules: [{type: WellKnownStatus}]\n",
			[]string{"spec", "agentSpec", "manifestConfigs", "0", "feedbackScrapeType"}, "Poll"},
		{"CMA install strategy", `apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ClusterManagementAddOn
metadata: {name: hello}
spec: {}
`, []string{"spec", "installStrategy", "type"}, "Manual"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := decode(t, tc.doc)
			lookup(t, obj).Default(obj)
			var v any = obj
			for _, p := range tc.path {
				switch x := v.(type) {
				case map[string]any:
					v = x[p]
				case []any:
					i := int(p[0] - '0')
					v = x[i]
				}
			}
			if v != tc.want {
				t.Errorf("%s = %#v, want %#v", strings.Join(tc.path, "."), v, tc.want)
			}
		})
	}
}

// Defaulting an ADC without spec does nothing (there is nothing to default into) and Validate
// reports the missing spec.
func TestDefaultNoSpec(t *testing.T) {
	obj := decode(t, strings.TrimSuffix(adc, "spec:\n"))
	k := lookup(t, obj)
	k.Default(obj)
	if _, ok := obj["spec"]; ok {
		t.Errorf("Default added spec: %v", obj)
	}
}

func TestLookup(t *testing.T) {
	s := OCM()
	wantKinds := []string{
		"AddOnDeploymentConfig.addon.open-cluster-management.io",
		"AddOnTemplate.addon.open-cluster-management.io",
		"ClusterManagementAddOn.addon.open-cluster-management.io",
		"ManagedClusterAddOn.addon.open-cluster-management.io",
		"Placement.cluster.open-cluster-management.io",
		"PlacementDecision.cluster.open-cluster-management.io",
	}
	var got []string
	for _, gk := range s.Kinds() {
		got = append(got, gk.String())
	}
	if diff := cmp.Diff(wantKinds, got); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		apiVersion, kind string
		namespaced       bool
	}{
		{"addon.open-cluster-management.io/v1alpha1", "ClusterManagementAddOn", false},
		{"addon.open-cluster-management.io/v1beta1", "ClusterManagementAddOn", false},
		{"addon.open-cluster-management.io/v1alpha1", "ManagedClusterAddOn", true},
		{"addon.open-cluster-management.io/v1beta1", "ManagedClusterAddOn", true},
		{"addon.open-cluster-management.io/v1alpha1", "AddOnDeploymentConfig", true},
		{"addon.open-cluster-management.io/v1beta1", "AddOnDeploymentConfig", true},
		{"addon.open-cluster-management.io/v1alpha1", "AddOnTemplate", false},
		{"cluster.open-cluster-management.io/v1beta1", "Placement", true},
		{"cluster.open-cluster-management.io/v1beta1", "PlacementDecision", true},
	} {
		k, ok := s.Lookup(tc.apiVersion, tc.kind)
		if !ok {
			t.Errorf("Lookup(%s, %s): not found", tc.apiVersion, tc.kind)
			continue
		}
		if k.Namespaced() != tc.namespaced {
			t.Errorf("%s %s: Namespaced() = %v", tc.apiVersion, tc.kind, k.Namespaced())
		}
		if gvk := k.GroupVersionKind(); gvk.GroupVersion().String() != tc.apiVersion || gvk.Kind != tc.kind {
			t.Errorf("%s %s: GroupVersionKind() = %v", tc.apiVersion, tc.kind, gvk)
		}
		if again, _ := s.Lookup(tc.apiVersion, tc.kind); again != k {
			t.Errorf("%s %s: a second Lookup built the schema again", tc.apiVersion, tc.kind)
		}
	}

	if _, ok := s.Lookup("addon.open-cluster-management.io/v1beta1", "AddOnTemplate"); ok {
		t.Errorf("AddOnTemplate v1beta1 found; the CRD serves v1alpha1 only")
	}
	err := s.CheckVersion("addon.open-cluster-management.io/v1beta1", "AddOnTemplate")
	want := "addon.open-cluster-management.io/v1beta1 is not served for AddOnTemplate: CRD addontemplates.addon.open-cluster-management.io serves addon.open-cluster-management.io/v1alpha1"
	if err == nil || err.Error() != want {
		t.Errorf("CheckVersion = %v, want %s", err, want)
	}
	if err := s.CheckVersion("addon.open-cluster-management.io/v1alpha1", "AddOnTemplate"); err != nil {
		t.Errorf("CheckVersion of a served version: %v", err)
	}
	if err := s.CheckVersion("apps/v1", "Deployment"); err != nil {
		t.Errorf("CheckVersion of a kind the set does not know: %v", err)
	}
	if got := s.Served("addon.open-cluster-management.io", "AddOnDeploymentConfig"); !slices.Equal(got, []string{"v1alpha1", "v1beta1"}) {
		t.Errorf("Served(AddOnDeploymentConfig) = %v", got)
	}
	if got := s.Served("apps", "Deployment"); got != nil {
		t.Errorf("Served(Deployment) = %v", got)
	}
	if _, ok := s.Lookup("v1", "ConfigMap"); ok {
		t.Errorf("ConfigMap found")
	}
}

// A v1beta1 object is checked against the v1beta1 schema, which differs from v1alpha1's.
func TestVersionedSchemas(t *testing.T) {
	// v1beta1 ClusterManagementAddOn has no spec.addOnConfiguration (removed from v1alpha1).
	doc := "apiVersion: addon.open-cluster-management.io/%s\nkind: ClusterManagementAddOn\nmetadata: {name: hello}\nspec:\n  addOnConfiguration: {crdName: x}\n"
	if got := errorStrings(t, strings.Replace(doc, "%s", "v1alpha1", 1)); len(got) != 0 {
		t.Errorf("v1alpha1: %v", got)
	}
	got := errorStrings(t, strings.Replace(doc, "%s", "v1beta1", 1))
	if len(got) != 1 || !strings.Contains(got[0], "spec.addOnConfiguration: Forbidden: unknown field") {
		t.Errorf("v1beta1: %v", got)
	}
}

const customCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: helloconfigs.example.com
spec:
  group: example.com
  names: {kind: HelloConfig, plural: helloconfigs, singular: helloconfig, listKind: HelloConfigList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              replicas: {type: integer, minimum: 1, default: 1}
              mode: {type: string, enum: [fast, slow]}
            x-kubernetes-validations:
            - rule: "self.replicas <= 10"
              message: at most 10 replicas
  - name: v0
    served: false
    storage: false
    schema:
      openAPIV3Schema: {type: object}
`

func TestWithCRD(t *testing.T) {
	s, err := OCM().WithCRD(decode(t, customCRD))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := OCM().Lookup("example.com/v1", "HelloConfig"); ok {
		t.Errorf("WithCRD changed OCM()")
	}
	if _, ok := s.Lookup("addon.open-cluster-management.io/v1alpha1", "AddOnTemplate"); !ok {
		t.Errorf("WithCRD lost the OCM kinds")
	}
	if _, ok := s.Lookup("example.com/v0", "HelloConfig"); ok {
		t.Errorf("a version that is not served was found")
	}
	k, ok := s.Lookup("example.com/v1", "HelloConfig")
	if !ok {
		t.Fatal("HelloConfig v1 not found")
	}
	obj := decode(t, "apiVersion: example.com/v1\nkind: HelloConfig\nmetadata: {name: h}\nspec: {mode: fast}\n")
	k.Default(obj)
	if r := obj["spec"].(map[string]any)["replicas"]; r != int64(1) {
		t.Errorf("replicas defaulted to %#v", r)
	}
	if errs := k.Validate(obj); len(errs) != 0 {
		t.Errorf("valid object: %v", errs)
	}
	obj = decode(t, "apiVersion: example.com/v1\nkind: HelloConfig\nmetadata: {name: h}\nspec: {mode: fast, replicas: 11}\n")
	if errs := k.Validate(obj); len(errs) != 1 || !strings.Contains(errs[0].Error(), "spec: Invalid value: at most 10 replicas") {
		t.Errorf("CEL rule of a custom CRD: %v", errs)
	}

	for _, tc := range []struct{ name, doc, want string }{
		{"not v1", strings.Replace(customCRD, "apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1", 1), "must be apiextensions.k8s.io/v1"},
		{"not structural", strings.Replace(customCRD, "mode: {type: string, enum: [fast, slow]}", "mode: {enum: [fast, slow]}", 1), "not structural"},
		{"bad CEL rule", strings.Replace(customCRD, "self.replicas <= 10", "self.replicas <=", 1), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := OCM().WithCRD(decode(t, tc.doc))
			if tc.want == "" {
				// The server refuses a CRD whose rule does not compile; here it surfaces when an
				// object is validated, as a validation error.
				if err != nil {
					t.Fatalf("WithCRD: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// Every OCM object of the repository's examples passes, as it does on the test hub.
func TestExamplesValidate(t *testing.T) {
	root := filepath.Join("..", "..")
	var files []string
	for _, dir := range []string{"examples", "functions/addon-template/examples", "functions/config-hash/examples", "functions/rollout-strategy/examples"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			// rollout-strategy's inputs use the design's vocabulary, which its output translates.
			if d.IsDir() || !strings.HasSuffix(p, ".yaml") || (strings.Contains(p, "rollout-strategy") && !strings.Contains(p, "/expected/")) {
				return nil
			}
			files = append(files, p)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	checked := map[schema.GroupKind]int{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := r.Read()
			if err != nil {
				break
			}
			obj := map[string]any{}
			if err := yaml.Unmarshal(doc, &obj); err != nil || len(obj) == 0 {
				continue
			}
			obj = decode(t, string(doc))
			av, _ := obj["apiVersion"].(string)
			kind, _ := obj["kind"].(string)
			k, ok := OCM().Lookup(av, kind)
			if !ok {
				if err := OCM().CheckVersion(av, kind); err != nil {
					t.Errorf("%s: %v", f, err)
				}
				continue
			}
			k.Default(obj)
			for _, e := range k.Validate(obj) {
				t.Errorf("%s: %s %v: %s", f, kind, nameOf(obj), e)
			}
			checked[k.GroupVersionKind().GroupKind()]++
		}
	}
	for _, gk := range []string{"AddOnTemplate", "AddOnDeploymentConfig", "ClusterManagementAddOn", "Placement"} {
		found := false
		for k, n := range checked {
			found = found || (k.Kind == gk && n > 0)
		}
		if !found {
			t.Errorf("no %s in the examples: the test checks less than it should (%v)", gk, checked)
		}
	}
}

// The embedded CRDs are the pinned api module's, byte for byte.
func TestEmbeddedCRDsMatchModule(t *testing.T) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "open-cluster-management.io/api")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m open-cluster-management.io/api: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		t.Fatal("open-cluster-management.io/api is not downloaded: run go mod download")
	}
	n := 0
	err = fs.WalkDir(crdFiles, crdRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		embedded, err := crdFiles.ReadFile(p)
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(p, crdRoot+"/")
		pinned, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			t.Errorf("%s is not in %s: run `make crds`", rel, dir)
			return nil
		}
		if !bytes.Equal(embedded, pinned) {
			t.Errorf("internal/crdschema/%s differs from %s: run `make crds`", p, filepath.Join(dir, rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 6 {
		t.Errorf("%d embedded CRDs, want 6: run `make crds`", n)
	}
}

// Kinds are shared by a process's goroutines: building on first use and validating are safe
// concurrently (run with -race).
func TestConcurrentUse(t *testing.T) {
	s, err := loadEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	docs := []string{adcX, template, cma, placement + "  numberOfClusters: 1\n"}
	done := make(chan []string)
	for i := 0; i < 8; i++ {
		go func(obj map[string]any) {
			k, ok := s.Lookup(obj["apiVersion"].(string), obj["kind"].(string))
			if !ok {
				done <- []string{"not found"}
				return
			}
			k.Default(obj)
			var out []string
			for _, e := range k.Validate(obj) {
				out = append(out, e.Error())
			}
			done <- out
		}(decode(t, docs[i%len(docs)]))
	}
	for i := 0; i < 8; i++ {
		if errs := <-done; len(errs) > 0 {
			t.Error(errs)
		}
	}
}
