package configref

import (
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

func ref(gr GroupResource, ns, name string) Ref {
	return Ref{GroupResource: gr, Namespace: ns, Name: name}
}

func TestMerge(t *testing.T) {
	adc, tpl := AddOnDeploymentConfigs, AddOnTemplates
	cm := GroupResource{Resource: "configmaps"}
	cases := []struct {
		name   string
		layers [][]Ref
		want   []Ref
	}{
		{"reference example: placement replaces defaults, MCA replaces ADCs only",
			[][]Ref{{ref(adc, "ns", "a")}, {ref(adc, "ns", "b"), ref(adc, "ns", "c"), ref(tpl, "", "t")}, {ref(adc, "ns", "d")}},
			[]Ref{ref(adc, "ns", "d"), ref(tpl, "", "t")}},
		{"inherits untouched group/resources",
			[][]Ref{{ref(adc, "ns", "a"), ref(tpl, "", "t1")}, {ref(tpl, "", "t2")}},
			[]Ref{ref(adc, "ns", "a"), ref(tpl, "", "t2")}},
		{"dedupes within a layer, keeps order",
			[][]Ref{{ref(adc, "ns", "b"), ref(adc, "ns", "a"), ref(adc, "ns", "b")}},
			[]Ref{ref(adc, "ns", "b"), ref(adc, "ns", "a")}},
		{"sorted by group then resource",
			[][]Ref{{ref(tpl, "", "t"), ref(cm, "ns", "x"), ref(adc, "ns", "a")}},
			[]Ref{ref(cm, "ns", "x"), ref(adc, "ns", "a"), ref(tpl, "", "t")}},
		{"ignores empty and reserved names",
			[][]Ref{{ref(adc, "", ReservedNoDefault), ref(tpl, "", "")}},
			nil},
		{"same name in two namespaces are two configs",
			[][]Ref{{ref(adc, "a", "x"), ref(adc, "b", "x")}},
			[]Ref{ref(adc, "a", "x"), ref(adc, "b", "x")}},
		{"no layers", nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Merge(tc.layers...); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Merge() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestKinds(t *testing.T) {
	ks := NewKinds()
	if k, ok := ks.Lookup(AddonGroup, "AddOnTemplate"); !ok || k.Resource != "addontemplates" || k.Namespaced {
		t.Fatalf("AddOnTemplate = %+v, %v", k, ok)
	}
	crd := map[string]any{
		"metadata": map[string]any{"name": "widgets.example.com"},
		"spec": map[string]any{"group": "example.com", "scope": "Namespaced",
			"names": map[string]any{"kind": "Widget", "plural": "widgets"}},
	}
	if err := ks.AddCRD(crd); err != nil {
		t.Fatal(err)
	}
	if err := ks.AddCRD(crd); err != nil {
		t.Fatalf("same CRD twice: %v", err)
	}
	if k, ok := ks.ByResource(GroupResource{Group: "example.com", Resource: "widgets"}); !ok || k.Kind != "Widget" || !k.Namespaced {
		t.Fatalf("ByResource = %+v, %v", k, ok)
	}
	err := ks.Add(Kind{Group: "example.com", Kind: "Widget", Resource: "widgetz", Namespaced: true}, "functionConfig")
	if err == nil || !strings.Contains(err.Error(), "CustomResourceDefinition widgets.example.com") {
		t.Fatalf("conflict error = %v", err)
	}
	if err := ks.Add(Kind{Group: "x", Kind: "Y", Resource: "Ys"}, "functionConfig"); err == nil {
		t.Fatal("uppercase plural accepted")
	}
	if err := ks.AddCRD(map[string]any{"spec": map[string]any{}}); err == nil {
		t.Fatal("incomplete CRD accepted")
	}
}

const cmaYAML = `apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ClusterManagementAddOn
metadata:
  name: hello
spec:
  supportedConfigs:
  - group: addon.open-cluster-management.io
    resource: addontemplates
    defaultConfig:
      name: tpl # keep me
  - group: addon.open-cluster-management.io
    resource: addondeploymentconfigs
  installStrategy:
    type: Placements
    placements:
    - name: p
      namespace: default
      configs:
      - group: addon.open-cluster-management.io
        resource: addondeploymentconfigs
        namespace: default
        name: adc
`

func TestSitesAndRewrite(t *testing.T) {
	obj := yaml.MustParse(cmaYAML)
	sites, err := Sites(obj)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range sites {
		got = append(got, s.Path+"="+s.Ref.String())
	}
	want := []string{
		"spec.supportedConfigs[0].defaultConfig=addontemplates.addon.open-cluster-management.io tpl",
		"spec.installStrategy.placements[0].configs[0]=addondeploymentconfigs.addon.open-cluster-management.io default/adc",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("sites = %q, want %q", got, want)
	}
	if err := sites[0].SetName("tpl-abc"); err != nil {
		t.Fatal(err)
	}
	out := obj.MustString()
	if !strings.Contains(out, "name: tpl-abc # keep me") {
		t.Fatalf("rewrite lost the name or its comment:\n%s", out)
	}
}

func TestSitesErrors(t *testing.T) {
	cases := map[string]string{
		"no resource": `apiVersion: addon.open-cluster-management.io/v1beta1
kind: ClusterManagementAddOn
metadata: {name: a}
spec:
  defaultConfigs:
  - group: addon.open-cluster-management.io
    name: x`,
		"no name": `apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ManagedClusterAddOn
metadata: {name: a, namespace: c1}
spec:
  configs:
  - group: addon.open-cluster-management.io
    resource: addondeploymentconfigs`,
		"not a list": `apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ManagedClusterAddOn
metadata: {name: a, namespace: c1}
spec:
  configs: {group: x}`,
	}
	for name, doc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Sites(yaml.MustParse(doc))
			if err == nil || !strings.Contains(err.Error(), "spec.") {
				t.Fatalf("error = %v, want one naming the field", err)
			}
		})
	}
	// Core group written explicitly is fine.
	ok := `apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ManagedClusterAddOn
metadata: {name: a, namespace: c1}
spec:
  configs:
  - group: ""
    resource: configmaps
    namespace: c1
    name: cfg`
	sites, err := Sites(yaml.MustParse(ok))
	if err != nil || len(sites) != 1 || sites[0].Ref.Group != "" {
		t.Fatalf("core group ref: %v %v", sites, err)
	}
	// So is no group at all: OCM's API defaults it to "", the core group.
	noGroup := strings.Replace(ok, "  - group: \"\"\n    resource", "  - resource", 1)
	if noGroup == ok {
		t.Fatal("test input not edited")
	}
	sites, err = Sites(yaml.MustParse(noGroup))
	if err != nil || len(sites) != 1 || sites[0].Ref != (Ref{GroupResource: GroupResource{Resource: "configmaps"}, Namespace: "c1", Name: "cfg"}) {
		t.Fatalf("ref without group: %v %v", sites, err)
	}
}
