package render

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"
)

// templateFromJSON builds a template whose manifests are the given raw JSON documents, exactly
// as an API server would hold them.
func templateFromJSON(raws ...string) *addonv1alpha1.AddOnTemplate {
	t := &addonv1alpha1.AddOnTemplate{}
	t.Name = "t1"
	t.Spec.AddonName = "addon1"
	for _, r := range raws {
		m := workv1.Manifest{}
		m.Raw = []byte(r)
		t.Spec.AgentSpec.Workload.Manifests = append(t.Spec.AgentSpec.Workload.Manifests, m)
	}
	return t
}

func withVars(kv ...string) Cluster {
	adc := &addonv1alpha1.AddOnDeploymentConfig{}
	adc.Name, adc.Namespace = "cfg", "default"
	for i := 0; i < len(kv); i += 2 {
		adc.Spec.CustomizedVariables = append(adc.Spec.CustomizedVariables, addonv1alpha1.CustomizedVariable{Name: kv[i], Value: kv[i+1]})
	}
	return Cluster{Name: "cluster1", DeploymentConfigs: []*addonv1alpha1.AddOnDeploymentConfig{adc}}
}

// TestSubstitutionEscapes: values land in the object exactly, whatever they hold. With OCM's raw
// text substitution each of these breaks the manifest or changes its structure.
func TestSubstitutionEscapes(t *testing.T) {
	for _, v := range []string{
		`plain`,
		`with "quotes"`,
		`back\slash \n not a newline`,
		"real\nnewline\tand tab",
		`", "injected": "field`,
		`"}}, {"kind": "Secret`,
		`{{CLUSTER_NAME}}`, // a value is never substituted again
		"unicode ✓ \u2028 \x00 nul",
		``,
	} {
		tpl := templateFromJSON(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"n"},"data":{"v":"<{{V}}>","{{V}}":"key"}}`)
		res, err := Render(tpl, withVars("V", v))
		if err != nil {
			t.Errorf("value %q: %v", v, err)
			continue
		}
		obj := res.Objects[0].Object
		want := map[string]any{"v": "<" + v + ">", v: "key"}
		if diff := cmp.Diff(want, obj["data"]); diff != "" {
			t.Errorf("value %q (-want +got):\n%s", v, diff)
		}
		if len(obj) != 4 {
			t.Errorf("value %q changed the object's top-level fields: %v", v, obj)
		}
		// And it survives the JSON encoding a ManifestWork uses.
		b, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		var back map[string]any
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, back["data"]); diff != "" {
			t.Errorf("value %q after JSON (-want +got):\n%s", v, diff)
		}
	}
}

func TestSubstitutionSyntax(t *testing.T) {
	cases := []struct {
		name, in string
		vars     []string
		want     string
	}{
		{"several tags", "{{A}}-{{B}}:{{A}}", []string{"A", "1", "B", "2"}, "1-2:1"},
		{"no tag", "just text { } }}", nil, "just text { } }}"},
		{"three braces open: the tag starts at the first two", "{{{A}}", []string{"{A", "x"}, "x"},
		{"three braces close", "{{A}}}", []string{"A", "x"}, "x}"},
		{"adjacent", "{{A}}{{A}}", []string{"A", "ab"}, "abab"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw, _ := json.Marshal(tc.in)
			tpl := templateFromJSON(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"v":` + string(raw) + `}}`)
			res, err := Render(tpl, withVars(tc.vars...))
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Objects[0].Object["data"].(map[string]any)["v"]; got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestUndefinedVariables(t *testing.T) {
	tpl := templateFromJSON(
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"n"},"data":{"x":"{{ZETA}}","y":"{{ALPHA}}"}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"},"data":{"z":"{{ALPHA}}","k":"{{ HUB_KUBECONFIG }}","i":"{{INSTALL_NAMESPACE}}"}}`,
	)
	_, err := Render(tpl, withVars("DEFINED", "1"))
	if err == nil {
		t.Fatal("undefined variables rendered without error")
	}
	msg := err.Error()
	for _, want := range []string{
		`undefined variables " HUB_KUBECONFIG " (used in manifest 1 (ConfigMap b) data.k)`,
		`"ALPHA" (used in manifest 0 (ConfigMap n/a) data.y, manifest 1 (ConfigMap b) data.z)`,
		`"INSTALL_NAMESPACE" (used in manifest 1 (ConfigMap b) data.i)`,
		`"ZETA" (used in manifest 0 (ConfigMap n/a) data.x)`,
		`for cluster cluster1`,
		`" HUB_KUBECONFIG " is not a variable name`,
		`INSTALL_NAMESPACE is only defined when the AddOnDeploymentConfig sets spec.agentInstallNamespace`,
		`define the variables in spec.customizedVariables`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q\ndoes not contain %q", msg, want)
		}
	}
	// HUB_KUBECONFIG without registration gets its own hint.
	tpl = templateFromJSON(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"x":"{{HUB_KUBECONFIG}}"}}`)
	_, err = Render(tpl, Cluster{Name: "c"})
	if err == nil || !strings.Contains(err.Error(), "HUB_KUBECONFIG is only defined when the template has spec.registration") {
		t.Errorf("got %v", err)
	}
}

func TestCompileErrors(t *testing.T) {
	cases := []struct {
		name, raw, want string
	}{
		{"unterminated tag", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"x":"{{A"}}`, `manifest 0 (ConfigMap c) field data.x: "{{A" opens a variable`},
		{"unterminated tag in a key", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"{{A":"x"}}`, `map key "{{A" opens a variable`},
		// OCM's raw text scan would pair these across two strings and destroy the JSON in between.
		{"tag spanning two strings", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"a":"{{A","b":"}}"}}`, `"{{A" opens a variable`},
		{"no kind", `{"apiVersion":"v1","metadata":{"name":"c"}}`, `manifest 0: not a Kubernetes object`},
		{"not JSON", `{"apiVersion":`, `manifest 0: not a Kubernetes object`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(templateFromJSON(tc.raw))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
	_, err := Compile(&addonv1alpha1.AddOnTemplate{})
	if err == nil || !strings.Contains(err.Error(), "has no spec.addonName") {
		t.Errorf("no addonName: got %v", err)
	}
}

func TestKeyCollision(t *testing.T) {
	tpl := templateFromJSON(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"{{A}}":"1","b":"2"}}`)
	_, err := Render(tpl, withVars("A", "b"))
	var re *Error
	if !errors.As(err, &re) || !strings.Contains(err.Error(), `the map at data has the key "b" twice`) || re.Manifest != 0 {
		t.Errorf("got %v", err)
	}
}

func TestInvalidUTF8Value(t *testing.T) {
	tpl := templateFromJSON(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"x":"{{A}}"}}`)
	_, err := Render(tpl, withVars("A", "bad \xff byte"))
	if err == nil || !strings.Contains(err.Error(), "the value of variable A is not valid UTF-8") {
		t.Errorf("got %v", err)
	}
	// An unused variable's value does not matter.
	if _, err := Render(tpl, withVars("A", "ok", "B", "\xff")); err != nil {
		t.Errorf("unused invalid value: %v", err)
	}
}

func TestVariablesListsUses(t *testing.T) {
	r, err := Compile(templateFromJSON(
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","labels":{"{{K}}":"v"}},"data":{"a.b":"{{X}}{{Y}}"},"list":["{{Z}}"]}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d"}}`,
	))
	if err != nil {
		t.Fatal(err)
	}
	want := map[int][]VariableUse{0: {
		{Name: "X", Field: `data["a.b"]`}, {Name: "Y", Field: `data["a.b"]`},
		{Name: "Z", Field: "list[0]"},
		{Name: "K", Field: "metadata.labels.{{K}}"},
	}}
	if diff := cmp.Diff(want, r.Variables()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
