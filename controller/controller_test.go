package controller

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/configref"
)

func mcaAt(rv string) *addonv1alpha1.ManagedClusterAddOn {
	return &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "c", ResourceVersion: rv}}
}

func TestFresh(t *testing.T) {
	f := newFresh[*addonv1alpha1.ManagedClusterAddOn]()
	if got := f.get("c/a", mcaAt("5")); got.ResourceVersion != "5" {
		t.Fatalf("nothing written: got rv %s", got.ResourceVersion)
	}
	f.wrote("c/a", mcaAt("10"))
	if got := f.get("c/a", mcaAt("5")); got.ResourceVersion != "10" {
		t.Fatalf("stale cache must be shadowed by our write: got rv %s", got.ResourceVersion)
	}
	if got := f.get("c/a", mcaAt("12")); got.ResourceVersion != "12" {
		t.Fatalf("a newer cache wins: got rv %s", got.ResourceVersion)
	}
	// Once the cache caught up, the written object is forgotten.
	if got := f.get("c/a", mcaAt("5")); got.ResourceVersion != "5" {
		t.Fatalf("entry not dropped after the cache caught up: got rv %s", got.ResourceVersion)
	}
	f.wrote("c/a", mcaAt("20"))
	f.forget("c/a")
	if got := f.get("c/a", mcaAt("5")); got.ResourceVersion != "5" {
		t.Fatalf("forgotten entry still used: rv %s", got.ResourceVersion)
	}
}

func TestNewerOrSame(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		{"10", "9", true}, {"10", "10", true}, {"9", "10", false}, {"x", "x", true}, {"x", "y", false}, {"10", "y", false},
	}
	for _, tc := range cases {
		if got := newerOrSame(tc.a, tc.b); got != tc.want {
			t.Errorf("newerOrSame(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestManaged(t *testing.T) {
	cma := func(ann map[string]string) *addonv1alpha1.ClusterManagementAddOn {
		return &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: "x", Annotations: ann}}
	}
	key := addonv1alpha1.AddonLifecycleAnnotationKey
	cases := []struct {
		name  string
		mode  string
		ann   map[string]string
		want  bool
		scope map[string]bool
	}{
		{"self: annotated self", AddonsSelf, map[string]string{key: "self"}, true, nil},
		{`self: annotated "" (addon-framework v1.3.0 rewrites self to "")`, AddonsSelf, map[string]string{key: ""}, true, nil},
		{"self: annotated addon-manager", AddonsSelf, map[string]string{key: "addon-manager"}, false, nil},
		{"self: not annotated (OCM's)", AddonsSelf, nil, false, nil},
		{"all: not annotated", AddonsAll, nil, true, nil},
		{"all: addon-manager", AddonsAll, map[string]string{key: "addon-manager"}, true, nil},
		{"scoped out", AddonsAll, nil, false, map[string]bool{"other": true}},
	}
	for _, tc := range cases {
		c := &Controller{opts: Options{Addons: tc.mode}, only: tc.scope}
		if got := c.managed(cma(tc.ann)); got != tc.want {
			t.Errorf("%s: managed = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestOptionsComplete(t *testing.T) {
	o := Options{}
	if err := o.Complete(); err != nil || o.Addons != AddonsSelf || o.Workers <= 0 || o.Coalesce <= 0 || o.WriteParallelism <= 0 {
		t.Fatalf("defaults: %+v, %v", o, err)
	}
	bad := Options{Addons: "some"}
	if err := bad.Complete(); err == nil {
		t.Fatal("--addons=some accepted")
	}
}

func TestReferencedResources(t *testing.T) {
	adc := addonv1alpha1.ConfigGroupResource{Group: configref.AddonGroup, Resource: "addondeploymentconfigs"}
	cm := addonv1alpha1.ConfigGroupResource{Resource: "configmaps"}
	tmpl := addonv1alpha1.ConfigGroupResource{Group: configref.AddonGroup, Resource: "addontemplates"}
	c := &addonv1alpha1.ClusterManagementAddOn{Spec: addonv1alpha1.ClusterManagementAddOnSpec{
		SupportedConfigs: []addonv1alpha1.ConfigMeta{
			{ConfigGroupResource: adc, DefaultConfig: &addonv1alpha1.ConfigReferent{Name: "d"}},
			{ConfigGroupResource: tmpl}, // supported, no default: nothing to watch
		},
		InstallStrategy: addonv1alpha1.InstallStrategy{Placements: []addonv1alpha1.PlacementStrategy{{Configs: []addonv1alpha1.AddOnConfig{{ConfigGroupResource: adc}}}}},
	}}
	m := &addonv1alpha1.ManagedClusterAddOn{Spec: addonv1alpha1.ManagedClusterAddOnSpec{Configs: []addonv1alpha1.AddOnConfig{{ConfigGroupResource: cm}}}}
	got := referencedResources(c, []*addonv1alpha1.ManagedClusterAddOn{m})
	want := []configref.GroupResource{{Group: configref.AddonGroup, Resource: "addondeploymentconfigs"}, {Resource: "configmaps"}}
	if !slices.Equal(got, want) {
		t.Fatalf("referencedResources = %v, want %v", got, want)
	}
}
