package hubcache

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/configref"
)

// Only restricts the selection further (tests sharing a hub), whatever the annotation says.
func TestSelectedOnly(t *testing.T) {
	c := &Cache{opts: Options{Addons: AddonsAll}, only: map[string]bool{"mine": true}}
	for name, want := range map[string]bool{"mine": true, "other": false} {
		if got := c.Selected(&addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: name}}); got != want {
			t.Errorf("Selected(%s) = %v, want %v", name, got, want)
		}
	}
}

func TestSelects(t *testing.T) {
	cma := func(ann map[string]string) *addonv1alpha1.ClusterManagementAddOn {
		return &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Annotations: ann}}
	}
	const key = addonv1alpha1.AddonLifecycleAnnotationKey
	cases := []struct {
		addons string
		ann    map[string]string
		want   bool
	}{
		{AddonsSelf, nil, false},
		{AddonsSelf, map[string]string{key: "self"}, true},
		{AddonsSelf, map[string]string{key: ""}, true},
		{AddonsSelf, map[string]string{key: "addon-manager"}, false},
		{AddonsAll, nil, true},
		{AddonsAll, map[string]string{key: "addon-manager"}, true},
	}
	for _, tc := range cases {
		if got := Selects(tc.addons, cma(tc.ann)); got != tc.want {
			t.Errorf("Selects(%s, %v) = %v, want %v", tc.addons, tc.ann, got, tc.want)
		}
	}
}

func TestDesired(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
	tpl := Config{Ref: configref.Ref{GroupResource: configref.AddOnTemplates, Name: "t"}, DesiredHash: "h1", Object: obj, Hash: "h1"}
	adc := Config{Ref: configref.Ref{GroupResource: configref.AddOnDeploymentConfigs, Namespace: "n", Name: "a"}, DesiredHash: "h2", Object: obj, Hash: "h2"}
	cases := []struct {
		name    string
		d       Desired
		current bool
		problem string
	}{
		{"current", Desired{Template: &tpl, DeploymentConfigs: []Config{adc}}, true, ""},
		{"no template", Desired{DeploymentConfigs: []Config{adc}}, false, "no AddOnTemplate"},
		{"template edited", Desired{Template: &Config{Ref: tpl.Ref, DesiredHash: "h1", Object: obj, Hash: "h9"}}, false,
			"addontemplates.addon.open-cluster-management.io t has changed (spec hash h9) and this cluster's rollout turn for it has not come (desired spec hash h1)"},
		{"ADC missing", Desired{Template: &tpl, DeploymentConfigs: []Config{{Ref: adc.Ref, DesiredHash: "h2"}}}, false,
			"addondeploymentconfigs.addon.open-cluster-management.io n/a not found"},
		{"no desired hash", Desired{Template: &Config{Ref: tpl.Ref, Object: obj, Hash: "h1"}}, false, "has no desired spec hash yet"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.d.Current(); got != tc.current {
				t.Errorf("Current() = %v", got)
			}
			if p := tc.d.Problem(); !strings.Contains(p, tc.problem) || (tc.problem == "") != (p == "") {
				t.Errorf("Problem() = %q, want %q", p, tc.problem)
			}
		})
	}
}
