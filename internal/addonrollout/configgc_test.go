package addonrollout

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/history"
)

var (
	adc = configref.GroupResource{Group: configref.AddonGroup, Resource: "addondeploymentconfigs"}
	t0  = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
)

// version i of base "cfg" is cfg-v<i>, created i hours after t0.
func version(i int) Object {
	return Object{Ref: configref.Ref{GroupResource: adc, Namespace: "default", Name: fmt.Sprintf("cfg-v%d", i)},
		BaseName: "cfg", ContentHash: fmt.Sprintf("h%d", i), Created: t0.Add(time.Duration(i) * time.Hour)}
}

func refs(names ...string) map[configref.Ref]bool {
	out := map[configref.Ref]bool{}
	for _, n := range names {
		out[configref.Ref{GroupResource: adc, Namespace: "default", Name: n}] = true
	}
	return out
}

func TestDecide(t *testing.T) {
	now := t0.Add(48 * time.Hour)
	unannotated := version(0)
	unannotated.BaseName, unannotated.ContentHash = "", ""
	otherNS := version(1)
	otherNS.Namespace = "other" // same base name in another namespace: another family
	cases := []struct {
		name    string
		in      Input
		deleted string
	}{
		{"superseded versions go", Input{Objects: []Object{version(1), version(2), version(3)}, Referenced: refs("cfg-v3")}, "cfg-v1 cfg-v2"},
		{"keep N newest unused", Input{Objects: []Object{version(1), version(2), version(3), version(4)}, Referenced: refs("cfg-v4"), Keep: 2}, "cfg-v1"},
		{"a version a waiting cluster still uses survives", Input{Objects: []Object{version(1), version(2), version(3)}, Referenced: refs("cfg-v3", "cfg-v1")}, "cfg-v2"},
		{"newer than the newest referenced: not superseded", Input{Objects: []Object{version(1), version(2), version(3)}, Referenced: refs("cfg-v2")}, "cfg-v1"},
		{"nothing referenced: nothing superseded", Input{Objects: []Object{version(1), version(2)}, Referenced: refs()}, ""},
		{"rollout under way keeps the whole family", Input{Objects: []Object{version(1), version(2), version(3)}, Referenced: refs("cfg-v3"), Rolling: refs("cfg-v3")}, ""},
		{"younger than the minimum age", Input{Objects: []Object{version(1), version(46), version(47)}, Referenced: refs("cfg-v47"), MinAge: 3 * time.Hour}, "cfg-v1"},
		{"objects without config-hash's annotations are never touched", Input{Objects: []Object{unannotated, version(2), version(3)}, Referenced: refs("cfg-v3")}, "cfg-v2"},
		{"families are per namespace", Input{Objects: []Object{otherNS, version(2), version(3)}, Referenced: refs("cfg-v3")}, "cfg-v2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Now = now
			var got []string
			for _, d := range Decide(tc.in) {
				got = append(got, d.Name)
				if !strings.Contains(d.Reason, "superseded by cfg-v") {
					t.Errorf("reason %q", d.Reason)
				}
			}
			if strings.Join(got, " ") != tc.deleted {
				t.Fatalf("deleted %v, want %q", got, tc.deleted)
			}
		})
	}
}

func TestReferences(t *testing.T) {
	gr := addonv1alpha1.ConfigGroupResource{Group: adc.Group, Resource: adc.Resource}
	h := func(name string) *addonv1alpha1.ConfigSpecHash {
		return &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "default", Name: name}, SpecHash: "x"}
	}
	cma := &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: "hello"}}
	cma.Spec.SupportedConfigs = []addonv1alpha1.ConfigMeta{{ConfigGroupResource: gr, DefaultConfig: &addonv1alpha1.ConfigReferent{Namespace: "default", Name: "default"}}}
	cma.Spec.InstallStrategy.Placements = []addonv1alpha1.PlacementStrategy{{Configs: []addonv1alpha1.AddOnConfig{{ConfigGroupResource: gr, ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "default", Name: "spec"}}}}}
	cma.Status.InstallProgressions = []addonv1alpha1.InstallProgression{{ConfigReferences: []addonv1alpha1.InstallConfigReference{{
		ConfigGroupResource: gr, DesiredConfig: h("desired"), LastAppliedConfig: h("applied"), LastKnownGoodConfig: h("lkg")}}}}
	mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "c1"}}
	mca.Spec.Configs = []addonv1alpha1.AddOnConfig{{ConfigGroupResource: gr, ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "default", Name: "own"}}}
	mca.Status.ConfigReferences = []addonv1alpha1.ConfigReference{{ConfigGroupResource: gr, DesiredConfig: h("mca-desired"), LastAppliedConfig: h("mca-applied")}}
	idle := &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: "idle"}}
	idle.Spec.InstallStrategy.Placements = []addonv1alpha1.PlacementStrategy{{Configs: []addonv1alpha1.AddOnConfig{{ConfigGroupResource: gr, ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "default", Name: "idle"}}}}}

	// The history lists a completed version (a rollback target) and one that never completed.
	hc := func(name string) []history.Config {
		return []history.Config{{Group: adc.Group, Resource: adc.Resource, Namespace: "default", Name: name, SpecHash: "x"}}
	}
	done := metav1.Now()
	hist := &history.Record{Addon: "hello", Placements: []history.Placement{{Placement: "default/p", Versions: []history.Version{
		{Configs: hc("history-completed"), Completed: &done, Result: history.Superseded},
		{Configs: hc("history-failed"), Result: history.Failed},
	}}}}
	referenced, rolling := References([]*addonv1alpha1.ClusterManagementAddOn{cma, idle}, []*addonv1alpha1.ManagedClusterAddOn{mca}, []*history.Record{hist})
	if referenced[configref.Ref{GroupResource: adc, Namespace: "default", Name: "history-failed"}] {
		t.Errorf("a version that never completed is kept for the history")
	}
	for _, n := range []string{"default", "spec", "desired", "applied", "lkg", "own", "mca-desired", "mca-applied", "idle", "history-completed"} {
		if !referenced[configref.Ref{GroupResource: adc, Namespace: "default", Name: n}] {
			t.Errorf("%s not referenced", n)
		}
	}
	if len(rolling) != 0 {
		t.Fatalf("nothing rolls out, got %v", rolling)
	}
	mca.Status.Conditions = []metav1.Condition{{Type: "Progressing", Status: metav1.ConditionTrue, Reason: "Upgrading"}}
	_, rolling = References([]*addonv1alpha1.ClusterManagementAddOn{cma, idle}, []*addonv1alpha1.ManagedClusterAddOn{mca}, nil)
	if !rolling[configref.Ref{GroupResource: adc, Namespace: "default", Name: "lkg"}] || rolling[configref.Ref{GroupResource: adc, Namespace: "default", Name: "idle"}] {
		t.Fatalf("rolling = %v, want every config of hello and none of idle", rolling)
	}
}
