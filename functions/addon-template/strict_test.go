package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// template is a valid AddOnTemplate named t1 whose agent ConfigMap is named cm.
func template1(cm string) string {
	return "apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: AddOnTemplate\nmetadata: {name: t1}\nspec:\n  addonName: a\n" +
		"  agentSpec:\n    workload:\n      manifests:\n      - {apiVersion: v1, kind: ConfigMap, metadata: {name: " + cm + ", namespace: ns}}\n"
}

// Two different AddOnTemplates both named t1, given as two files: validate passed them, and one
// silently replaced the other on the hub.
func TestValidateRefusesTheSameTemplateTwice(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "fn.yaml"), validateConfig)
	writeFile(t, filepath.Join(dir, "a.yaml"), template1("one"))
	writeFile(t, filepath.Join(dir, "b.yaml"), template1("two"))
	// Each file alone is valid.
	for _, f := range []string{"a.yaml", "b.yaml"} {
		var out, errb bytes.Buffer
		if code := run([]string{"--config", filepath.Join(dir, "fn.yaml"), filepath.Join(dir, f)}, strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("%s alone: exit %d: %s", f, code, errb.String())
		}
	}
	var out, errb bytes.Buffer
	code := run([]string{"--config", filepath.Join(dir, "fn.yaml"), filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")}, strings.NewReader(""), &out, &errb)
	want := "addon-template: AddOnTemplate t1 (addon.open-cluster-management.io) is in the input twice (" + filepath.Join(dir, "a.yaml") + ", document 1; " +
		filepath.Join(dir, "b.yaml") + ", document 1): an object may appear only once"
	if code != 1 || out.Len() != 0 || !strings.HasPrefix(errb.String(), want) {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s\nwant:\n%s", code, out.String(), errb.String(), want)
	}
}

// Flags that take one value refuse a second, and --config refuses a ResourceList, which carries
// its own functionConfig (addon-template then said "no functionConfig" while one was given).
func TestFlagsGivenTwice(t *testing.T) {
	dir := t.TempDir()
	fn, in := filepath.Join(dir, "fn.yaml"), filepath.Join(dir, "in.yaml")
	writeFile(t, fn, validateConfig)
	writeFile(t, in, hello)
	rl := "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- " + strings.ReplaceAll(strings.TrimSuffix(template1("one"), "\n"), "\n", "\n  ") + "\n"
	cases := []struct {
		name  string
		args  []string
		stdin string
		code  int
		want  string
	}{
		{"--image-registries twice", []string{"render", "--cluster", "c1", "--image-registries", `{"registries":[]}`, "--image-registries", "{}", in}, "", 2,
			`invalid value "{}" for flag -image-registries: given twice (first "{\"registries\":[]}"), but it takes one value: give it once`},
		{"--output twice", []string{"render", "--cluster", "c1", "--output", "ManifestWork", "--output", "Manifests", in}, "", 2,
			`invalid value "Manifests" for flag -output: given twice (first "ManifestWork"), but it takes one value: give it once`},
		{"--config twice", []string{"--config", fn, "--config", fn, in}, "", 2, "for flag -config: given twice"},
		{"--config with a ResourceList", []string{"--config", fn}, rl, 1,
			"addon-template: the ResourceList on stdin carries its own functionConfig (kustomize and kpt put it there), so --config would be ignored: drop --config, or give plain YAML instead of a ResourceList\n"},
		// The ResourceList's own functionConfig is what counts, and without one the message says so.
		{"a ResourceList without functionConfig", nil, rl, 1, "addon-template: no functionConfig: give an addonops.io/v1alpha1 AddOnTemplateFunction"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(tc.args, strings.NewReader(tc.stdin), &out, &errb)
			if code != tc.code || !strings.Contains(errb.String(), tc.want) {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit %d and %q", code, errb.String(), tc.code, tc.want)
			}
			if tc.code == 2 && out.Len() != 0 || tc.code == 1 && strings.Contains(out.String(), "kind: AddOnTemplate") {
				t.Fatalf("stdout:\n%s", out.String())
			}
		})
	}
}
