package render

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Fuzz targets. `go test` runs them on their seed corpus; `go test -fuzz=FuzzX ./internal/render/`
// explores further.

var fuzzValues = []string{
	"", "plain", `"`, `\`, `\"`, "\n", "\r\n", `", "evil": "x`, `"}}{{`, "{{", "}}", "{{V}}", "{{CLUSTER_NAME}}",
	"\x00", "\u2028\u2029", "✓ ünïcödé 日本", "\xff\xfe", "a\xc3", "<script>&amp;", "$(HOME)", "${V}", "`id`",
	strings.Repeat("x", 1024),
}

// FuzzValueRoundTrip: whatever a variable's value holds, it appears in the output exactly as given,
// in a string value, inside a larger string, in a map key and in a container argument, and it
// survives the JSON encoding ManifestWorks use. Only values that are not UTF-8 (which no
// Kubernetes object can carry) are refused, with an error.
func FuzzValueRoundTrip(f *testing.F) {
	for _, v := range fuzzValues {
		f.Add(v)
	}
	r, err := Compile(templateFromJSON(
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"n"},"data":{"whole":"{{V}}","inner":"<{{V}}|{{V}}>","{{V}}":"as-key"}}`,
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","namespace":"n"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i","args":["--v={{V}}"]}]}}}}`,
	))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, v string) {
		res, err := r.Render(withVars("V", v))
		if !utf8.ValidString(v) {
			if err == nil || !strings.Contains(err.Error(), "not valid UTF-8") {
				t.Fatalf("invalid UTF-8 value %q: got %v, want a UTF-8 error", v, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("value %q: %v", v, err)
		}
		if len(res.Objects) != 2 {
			t.Fatalf("value %q: %d objects", v, len(res.Objects))
		}
		check := func(stage string, cm map[string]any, args []string) {
			data, _ := cm["data"].(map[string]any)
			want := map[string]any{"whole": v, "inner": "<" + v + "|" + v + ">"}
			if v != "whole" && v != "inner" {
				want[v] = "as-key"
			}
			if len(data) != len(want) {
				t.Fatalf("%s: value %q: data has %d keys, want %d: %v", stage, v, len(data), len(want), data)
			}
			for k, w := range want {
				if data[k] != w {
					t.Fatalf("%s: value %q: data[%q] = %q, want %q", stage, v, k, data[k], w)
				}
			}
			if len(cm) != 4 {
				t.Fatalf("%s: value %q changed the object's structure: %v", stage, v, cm)
			}
			if len(args) != 1 || args[0] != "--v="+v {
				t.Fatalf("%s: value %q: args %q", stage, v, args)
			}
		}
		args := func(obj map[string]any) []string {
			d := &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, d); err != nil {
				t.Fatal(err)
			}
			return d.Spec.Template.Spec.Containers[0].Args
		}
		check("rendered", res.Objects[0].Object, args(res.Objects[1].Object))

		// Through JSON, as in a ManifestWork.
		var back [2]map[string]any
		for i, o := range res.Objects {
			b, err := o.MarshalJSON()
			if err != nil {
				t.Fatalf("value %q: encoding: %v", v, err)
			}
			if err := json.Unmarshal(b, &back[i]); err != nil {
				t.Fatalf("value %q: output is not valid JSON: %v\n%s", v, err, b)
			}
		}
		check("after JSON", back[0], args(back[1]))
	})
}

// FuzzSubstitution: any string holding any tags, with any value, never panics, and renders exactly
// as fasttemplate's tag rules (re-implemented plainly below) say, or fails when they find an
// unterminated or undefined tag, where OCM would panic or insert "".
func FuzzSubstitution(f *testing.F) {
	for _, s := range []string{"", "a", "{{V}}", "{{V", "V}}", "{{}}", "{{{V}}}", "{{V}}{{W}}", "{{ V }}", "x{{V}}y{{V}}z", "}}{{V}}{{", "{{\"}}", "{{V}}\x00", "{{U}}"} {
		for _, v := range []string{"", "val", `"\`, "{{V}}"} {
			f.Add(s, v)
		}
	}
	f.Fuzz(func(t *testing.T, s, v string) {
		if !utf8.ValidString(s) || !utf8.ValidString(v) {
			return // a template is JSON and cannot hold such strings; values are covered above
		}
		vars := map[string]string{"V": v, "W": "w", VarClusterName: "cluster1"}
		want, ok := referenceExpand(s, vars)
		raw, err := json.Marshal(map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"},
			"data": map[string]any{"v": s}, "keys": map[string]any{s: "k"},
		})
		if err != nil {
			t.Fatal(err)
		}
		r, err := Compile(templateFromJSON(string(raw)))
		var res *Result
		if err == nil {
			res, err = r.Render(withVars("V", v, "W", "w"))
		}
		if !ok {
			if err == nil {
				t.Fatalf("%q with V=%q rendered, but it has an unterminated or undefined tag", s, v)
			}
			return
		}
		if err != nil {
			t.Fatalf("%q with V=%q: %v", s, v, err)
		}
		obj := res.Objects[0].Object
		if got := obj["data"].(map[string]any)["v"]; got != want {
			t.Fatalf("%q with V=%q rendered %q, want %q", s, v, got, want)
		}
		if keys := obj["keys"].(map[string]any); len(keys) != 1 || keys[want] != "k" {
			t.Fatalf("key %q with V=%q rendered %v, want key %q", s, v, keys, want)
		}
	})
}

// referenceExpand applies fasttemplate's tag rules: a tag runs from "{{" to the next "}}".
func referenceExpand(s string, vars map[string]string) (string, bool) {
	var out strings.Builder
	for {
		i := strings.Index(s, "{{")
		if i < 0 {
			out.WriteString(s)
			return out.String(), true
		}
		out.WriteString(s[:i])
		s = s[i+2:]
		j := strings.Index(s, "}}")
		if j < 0 {
			return "", false
		}
		val, defined := vars[s[:j]]
		if !defined {
			return "", false
		}
		out.WriteString(val)
		s = s[j+2:]
	}
}

// FuzzManifest: any bytes as a manifest, rendered with registration, an ADC setting every
// decorator, and image mirrors, never panic.
func FuzzManifest(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","namespace":"n"},"spec":{"template":{"spec":{"containers":[{"name":"c","image":"quay.io/a/b:1","env":[{"name":"CLUSTER_NAME"}]}]}}}}`))
	f.Add([]byte(`{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"{{V}}"},"spec":{"template":{"spec":{"volumes":[{"name":"hub-kubeconfig"}],"containers":[]}}}}`))
	f.Add([]byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":"{{V}}"}}`))
	f.Add([]byte(`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"r","namespace":"x"},"subjects":"not a list"}`))
	f.Add([]byte(`{"apiVersion":"v1","kind":"Namespace","metadata":[]}`))
	f.Add([]byte(`{"kind":"List","items":[{"{{V}}":1}]}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`null`))
	f.Add([]byte(``))
	adc := withVars("V", `v"`).DeploymentConfigs[0]
	adc.Spec.AgentInstallNamespace = "ns1"
	adc.Spec.ProxyConfig.HTTPProxy = "http://p"
	adc.Spec.ProxyConfig.CABundle = []byte("PEM")
	adc.Spec.NodePlacement = nil
	adc.Spec.ResourceRequirements = nil
	c := Cluster{Name: "cluster1", ImageRegistries: `{"registries":[{"source":"quay.io","mirror":"m.io"}]}`}
	c.DeploymentConfigs = append(c.DeploymentConfigs, adc)
	registration := parseTemplate(f, templateYAML(kubeClientRegistration+"- type: CustomSigner\n  customSigner: {signerName: example.com/s, signingCA: {name: ca}}\n", deployment)).Spec.Registration
	f.Fuzz(func(t *testing.T, raw []byte) {
		tpl := templateFromJSON(string(raw))
		tpl.Spec.Registration = registration
		r, err := Compile(tpl)
		if err != nil {
			return
		}
		res, err := r.Render(c)
		if err == nil && len(res.Objects) == 0 {
			t.Fatalf("no objects and no error for %q", raw)
		}
	})
}
