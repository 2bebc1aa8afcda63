package configref

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// The names OCM's conversion uses, as the api module go.mod pins spells them.
func TestConversionNames(t *testing.T) {
	if InstallNamespaceAnnotation != addonv1beta1.InstallNamespaceAnnotation {
		t.Errorf("InstallNamespaceAnnotation = %q, the api module says %q", InstallNamespaceAnnotation, addonv1beta1.InstallNamespaceAnnotation)
	}
	if ReservedNoDefault != addonv1beta1.ReservedNoDefaultConfigName {
		t.Errorf("ReservedNoDefault = %q, the api module says %q", ReservedNoDefault, addonv1beta1.ReservedNoDefaultConfigName)
	}
	if V1beta1 != addonv1beta1.GroupVersion.String() {
		t.Errorf("V1beta1 = %q, the api module says %q", V1beta1, addonv1beta1.GroupVersion)
	}
}

func TestVersionProblems(t *testing.T) {
	cases := []struct {
		name string
		doc  string
		// want are the paths, and for each a part of its message.
		want map[string]string
	}{
		{"v1beta1 CMA in v1beta1 shape", `apiVersion: addon.open-cluster-management.io/v1beta1
kind: ClusterManagementAddOn
metadata: {name: a}
spec:
  defaultConfigs:
  - {group: addon.open-cluster-management.io, resource: addondeploymentconfigs, namespace: d, name: x}
  installStrategy: {type: Manual}`, nil},
		{"v1beta1 CMA with supportedConfigs", `apiVersion: addon.open-cluster-management.io/v1beta1
kind: ClusterManagementAddOn
metadata: {name: a}
spec:
  supportedConfigs:
  - group: addon.open-cluster-management.io
    resource: addondeploymentconfigs
    defaultConfig: {namespace: default, name: hello}
  - group: addon.open-cluster-management.io
    resource: addontemplates`,
			map[string]string{"spec.supportedConfigs": "(here: spec.defaultConfigs: [{group: addon.open-cluster-management.io, resource: addondeploymentconfigs, namespace: default, name: hello}, " +
				"{group: addon.open-cluster-management.io, resource: addontemplates, name: __reserved_no_default__}])"}},
		{"v1beta1 CMA with many supportedConfigs", `apiVersion: addon.open-cluster-management.io/v1beta1
kind: ClusterManagementAddOn
metadata: {name: a}
spec:
  supportedConfigs:
  - {group: "", resource: configmaps, defaultConfig: {namespace: "a:b", name: c1}}
  - {group: "", resource: secrets}
  - {group: x, resource: y}
  - {group: x, resource: z}
  - {group: x, resource: w}`,
			map[string]string{"spec.supportedConfigs": `[{group: "", resource: configmaps, namespace: "a:b", name: c1}, {group: "", resource: secrets, name: __reserved_no_default__}, {group: x, resource: y, name: __reserved_no_default__}, and 2 more]`}},
		{"v1beta1 CMA with supportedConfigs not a list", `apiVersion: addon.open-cluster-management.io/v1beta1
kind: ClusterManagementAddOn
metadata: {name: a}
spec:
  supportedConfigs: {group: x}`,
			map[string]string{"spec.supportedConfigs": "beside its group and resource; an entry"}},
		{"v1beta1 CMA with addOnConfiguration and supportedConfigs", `apiVersion: addon.open-cluster-management.io/v1beta1
kind: ClusterManagementAddOn
metadata: {name: a}
spec:
  addOnConfiguration: {crdName: widgets.example.com}
  supportedConfigs: []`,
			map[string]string{"spec.supportedConfigs": "Or keep apiVersion addon.open-cluster-management.io/v1alpha1", "spec.addOnConfiguration": "removed in v1beta1"}},
		{"v1beta1 CMA with null supportedConfigs", `apiVersion: addon.open-cluster-management.io/v1beta1
kind: ClusterManagementAddOn
metadata: {name: a}
spec:
  supportedConfigs: null`, nil},
		{"v1alpha1 CMA with defaultConfigs", `apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ClusterManagementAddOn
metadata: {name: a}
spec:
  defaultConfigs:
  - {group: addon.open-cluster-management.io, resource: addondeploymentconfigs, namespace: d, name: x}`,
			map[string]string{"spec.defaultConfigs": "Set apiVersion: addon.open-cluster-management.io/v1beta1"}},
		{"v1alpha1 CMA in v1alpha1 shape", `apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ClusterManagementAddOn
metadata: {name: a}
spec:
  addOnConfiguration: {crdName: widgets.example.com}
  supportedConfigs: [{group: x, resource: y}]`, nil},
		{"v1beta1 MCA with installNamespace", `apiVersion: addon.open-cluster-management.io/v1beta1
kind: ManagedClusterAddOn
metadata: {name: a, namespace: c1}
spec:
  installNamespace: agents`,
			map[string]string{"spec.installNamespace": "annotation addon.open-cluster-management.io/v1alpha1-install-namespace"}},
		{"v1alpha1 MCA with installNamespace", `apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ManagedClusterAddOn
metadata: {name: a, namespace: c1}
spec:
  installNamespace: agents`, nil},
		{"another version is the schema check's", `apiVersion: addon.open-cluster-management.io/v2
kind: ClusterManagementAddOn
metadata: {name: a}
spec:
  supportedConfigs: []
  defaultConfigs: []`, nil},
		{"another kind", `apiVersion: addon.open-cluster-management.io/v1beta1
kind: AddOnDeploymentConfig
metadata: {name: a, namespace: b}
spec:
  supportedConfigs: []`, nil},
		{"spec not a mapping", `apiVersion: addon.open-cluster-management.io/v1beta1
kind: ClusterManagementAddOn
metadata: {name: a}
spec: []`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := VersionProblems(yaml.MustParse(tc.doc))
			paths := map[string]string{}
			for _, p := range got {
				paths[p.Path] = p.Message
			}
			if len(paths) != len(tc.want) {
				t.Fatalf("VersionProblems = %+v, want paths %v", got, tc.want)
			}
			for path, part := range tc.want {
				if msg, ok := paths[path]; !ok || !strings.Contains(msg, part) {
					t.Errorf("%s: message %q, want it to contain %q", path, msg, part)
				}
				if !strings.Contains(paths[path], "docs/v1beta1.md") {
					t.Errorf("%s: message %q does not point at docs/v1beta1.md", path, paths[path])
				}
			}
			// Sites refuses what VersionProblems reports, and only that.
			_, err := Sites(yaml.MustParse(tc.doc))
			var ve *VersionError
			if len(tc.want) > 0 {
				if !errors.As(err, &ve) || !reflect.DeepEqual(ve.Problems, got) {
					t.Errorf("Sites error = %v, want the VersionError of %+v", err, got)
				}
			} else if errors.As(err, &ve) {
				t.Errorf("Sites error = %v, want no VersionError", err)
			}
		})
	}
}

func TestVersionProblemCovers(t *testing.T) {
	p := VersionProblem{Path: "spec.supportedConfigs"}
	for path, want := range map[string]bool{
		"spec.supportedConfigs":                true,
		"spec.supportedConfigs[0].group":       true,
		"spec.supportedConfigs.x":              true,
		"spec.supportedConfigsX":               false,
		"spec":                                 false,
		"spec.installStrategy.placements[0].x": false,
	} {
		if got := p.Covers(path); got != want {
			t.Errorf("Covers(%q) = %t, want %t", path, got, want)
		}
	}
}

func TestDropCovered(t *testing.T) {
	probs := []VersionProblem{{Path: "spec.supportedConfigs"}, {Path: "spec.addOnConfiguration"}}
	errs := field.ErrorList{
		field.Forbidden(field.NewPath("spec", "supportedConfigs"), "unknown field"),
		field.Required(field.NewPath("spec", "installStrategy", "type"), ""),
		field.Forbidden(field.NewPath("spec", "addOnConfiguration", "crdName"), "unknown field"),
	}
	got := DropCovered(errs, probs)
	if len(got) != 1 || got[0].Field != "spec.installStrategy.type" {
		t.Fatalf("DropCovered = %v, want only the install strategy's error", got)
	}
	if got := DropCovered(errs, nil); len(got) != 3 {
		t.Fatalf("DropCovered without problems = %v", got)
	}
}

// The v1beta1 shape's references are found and rewritten like v1alpha1's.
func TestSitesV1beta1(t *testing.T) {
	obj := yaml.MustParse(`apiVersion: addon.open-cluster-management.io/v1beta1
kind: ClusterManagementAddOn
metadata: {name: hello}
spec:
  defaultConfigs:
  - group: addon.open-cluster-management.io
    resource: addontemplates
    name: __reserved_no_default__
  - group: addon.open-cluster-management.io
    resource: addondeploymentconfigs
    namespace: default
    name: adc # keep me
  installStrategy:
    type: Placements
    placements:
    - name: p
      namespace: default
      configs:
      - group: addon.open-cluster-management.io
        resource: addondeploymentconfigs
        namespace: default
        name: canary
`)
	sites, err := Sites(obj)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range sites {
		got = append(got, s.Path+"="+s.Ref.String())
	}
	want := []string{
		"spec.defaultConfigs[1]=addondeploymentconfigs.addon.open-cluster-management.io default/adc",
		"spec.installStrategy.placements[0].configs[0]=addondeploymentconfigs.addon.open-cluster-management.io default/canary",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("sites = %q, want %q", got, want)
	}
	if err := sites[0].SetName("adc-abc"); err != nil {
		t.Fatal(err)
	}
	if out := obj.MustString(); !strings.Contains(out, "    name: adc-abc # keep me\n") {
		t.Fatalf("rewrite lost the name or its comment:\n%s", out)
	}
}
