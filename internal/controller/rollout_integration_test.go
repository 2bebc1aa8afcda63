//go:build integration

package controller

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/rolloutplan"
	"github.com/addonops/addonops/internal/spechash"
	"github.com/addonops/addonops/internal/testing/simagent"
)

// Seed story 1: fresh install under All.
func TestFreshInstall(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{agentDelay: 200 * time.Millisecond})
	e.ensureClusters("c1", "c2", "c3", "c4")
	e.adc("cfg-a", "v1")
	e.placement("aws", [][]string{{"c1", "c2", "c3", "c4"}})
	e.cma(nil, install{placement: "aws", config: "cfg-a", strategy: allStrategy})
	e.startController(Options{})

	e.waitStates(30*time.Second, map[string]string{
		"c1": "cfg-a/cfg-a/True/InstallSucceed", "c2": "cfg-a/cfg-a/True/InstallSucceed",
		"c3": "cfg-a/cfg-a/True/InstallSucceed", "c4": "cfg-a/cfg-a/True/InstallSucceed",
	})
	e.waitProgression(10*time.Second, "aws", addonstatus.ReasonInstallSucceed, "4/4 install completed with no errors.")
	if got := e.rec.reasonsSeen("aws"); !slices.Contains(got, addonstatus.ReasonInstalling) {
		t.Fatalf("progression reasons %v: never reported Installing", got)
	}

	// The MCAs are ours: labelled, owned by the CMA, spec untouched.
	for _, c := range e.clusters("c1", "c2", "c3", "c4") {
		m := e.rec.mca(c)
		if m.Labels[rolloutplan.CreatedByLabel] != rolloutplan.CreatedByValue {
			t.Errorf("%s: not labelled %s", c, rolloutplan.CreatedByLabel)
		}
		if len(m.OwnerReferences) != 1 || m.OwnerReferences[0].Kind != "ClusterManagementAddOn" || m.OwnerReferences[0].Name != e.name {
			t.Errorf("%s: owner references %+v", c, m.OwnerReferences)
		}
		if len(m.Spec.Configs) != 0 {
			t.Errorf("%s: spec.configs set: %+v", c, m.Spec.Configs)
		}
		// Installing, then InstallSucceed: nothing else, nothing skipped.
		var reasons []string
		for _, ev := range e.rec.events() {
			if ev.Cluster != c {
				continue
			}
			if p := meta.FindStatusCondition(ev.MCA.Status.Conditions, addonstatus.ConditionProgressing); p != nil && (len(reasons) == 0 || reasons[len(reasons)-1] != p.Reason) {
				reasons = append(reasons, p.Reason)
			}
		}
		if !slices.Equal(reasons, []string{addonstatus.ReasonInstalling, addonstatus.ReasonInstallSucceed}) {
			t.Errorf("%s: Progressing reasons %v", c, reasons)
		}
	}

	// The spec hash is OCM's, of the object as the API server returns it (dynamic client).
	u, err := e.c.Dynamic.Resource(addonv1alpha1.SchemeGroupVersion.WithResource("addondeploymentconfigs")).Namespace(e.name).Get(e.ctx, "cfg-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := spechash.Of(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	m := e.rec.mca(e.cluster("c1"))
	if got := m.Status.ConfigReferences[0].DesiredConfig.SpecHash; got != want {
		t.Fatalf("desired spec hash %s, want %s", got, want)
	}
	w, err := e.c.Work.WorkV1().ManifestWorks(e.cluster("c1")).Get(e.ctx, "addon-"+e.name+"-deploy-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ann map[string]string
	if err := json.Unmarshal([]byte(w.Annotations[workv1.ManifestConfigSpecHashAnnotationKey]), &ann); err != nil {
		t.Fatal(err)
	}
	if got := ann["addondeploymentconfigs.addon.open-cluster-management.io/"+e.name+"/cfg-a"]; got != want {
		t.Fatalf("work annotation %v, want hash %s", ann, want)
	}
	cma, err := e.c.Addon.AddonV1alpha1().ClusterManagementAddOns().Get(e.ctx, e.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ref := cma.Status.InstallProgressions[0].ConfigReferences[0]
	for _, h := range []*addonv1alpha1.ConfigSpecHash{ref.DesiredConfig, ref.LastAppliedConfig, ref.LastKnownGoodConfig} {
		if h == nil || h.Name != "cfg-a" || h.SpecHash != want {
			t.Fatalf("install progression config reference %+v, want cfg-a at %s everywhere", ref, want)
		}
	}

	// Two writes per MCA for the whole install (configured+installing, then applied), and none
	// once done.
	for _, c := range e.clusters("c1", "c2", "c3", "c4") {
		if n := e.rec.writes(c, 0); n > 2 {
			t.Errorf("%s: %d status writes for the install, want at most 2:%s", c, n, e.rec.eventsOf(c))
		}
	}
	e.quiet(2 * time.Second)
}

// Seed story 2: rolling upgrade, 25% at a time, config renamed as kustomize does.
func TestRollingUpgrade25Percent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{agentDelay: 300 * time.Millisecond})
	names := []string{"c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8"}
	e.ensureClusters(names...)
	e.adc("cfg-a", "v1")
	e.adc("cfg-b", "v2")
	e.placement("aws", [][]string{names})
	e.cma(nil, install{placement: "aws", config: "cfg-a", strategy: progressive(intstr.FromString("25%"), clusterv1alpha1.RolloutConfig{})})
	e.startController(Options{})
	done := map[string]string{}
	for _, n := range names {
		done[n] = "cfg-a/cfg-a/True/InstallSucceed"
	}
	e.waitStates(60*time.Second, done)
	e.waitProgression(10*time.Second, "aws", addonstatus.ReasonInstallSucceed, "8/8 install completed")
	if n := e.rec.maxInFlight("cfg-a"); n > 2 {
		t.Fatalf("install: %d clusters in flight at once, maxConcurrency is 2 (25%% of 8)", n)
	}

	start := e.rec.count()
	e.setConfig("aws", "cfg-b")
	e.waitProgression(10*time.Second, "aws", addonstatus.ReasonUpgrading, "upgrading...")
	for _, n := range names {
		done[n] = "cfg-b/cfg-b/True/UpgradeSucceed"
	}
	e.waitStates(60*time.Second, done)
	e.waitProgression(10*time.Second, "aws", addonstatus.ReasonUpgradeSucceed, "8/8 upgrade completed with no errors.")

	if n := e.rec.maxInFlight("cfg-b"); n != 2 {
		t.Fatalf("upgrade: at most %d clusters in flight, want exactly 2 (25%% of 8)", n)
	}
	// Batches in name order: c1,c2 before c3,c4 before ...
	var firsts []int
	for _, n := range names {
		_, i := e.rec.firstDesired(e.cluster(n), "cfg-b")
		firsts = append(firsts, i)
	}
	for b := 1; b < 4; b++ {
		_, doneIdx := e.rec.firstApplied(e.cluster(names[2*b-1]), "cfg-b")
		_, doneIdx2 := e.rec.firstApplied(e.cluster(names[2*b-2]), "cfg-b")
		if firsts[2*b] < min(doneIdx, doneIdx2) {
			t.Fatalf("batch %d started before batch %d had a finished cluster: events %v", b+1, b, firsts)
		}
	}
	for _, n := range names {
		c := e.cluster(n)
		if h := e.rec.history(c); !slices.Equal(h, []string{"cfg-a", "cfg-b"}) {
			t.Errorf("%s: desired configs %v, want [cfg-a cfg-b]", c, h)
		}
		// Waiting clusters: Configured=False (1), their batch (1), applied (1).
		if w := e.rec.writes(c, start); w > 3 {
			t.Errorf("%s: %d status writes for the upgrade, want at most 3:%s", c, w, e.rec.eventsOf(c))
		}
	}
	// Clusters of later batches waited with Configured=False and their previous config.
	sawWaiting := false
	for _, ev := range e.rec.events()[start:] {
		if ev.Cluster == e.cluster("c8") && state(ev.MCA) == "cfg-a/cfg-a/False/InstallSucceed" {
			sawWaiting = true
		}
	}
	if !sawWaiting {
		t.Fatal("c8 never waited with Configured=False at cfg-a")
	}
	e.quiet(2 * time.Second)
}

// An in-place edit of a config (same name, new content) is a new version: a new hash rolls out.
// The config is a ConfigMap: any group/resource is hashed.
func TestInPlaceConfigEditOfAnyResource(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	e.ensureClusters("c1", "c2")
	e.placement("p", [][]string{{"c1", "c2"}})
	cm := func(v string) {
		api := e.c.Kube.CoreV1().ConfigMaps(e.name)
		obj, err := api.Get(e.ctx, "settings", metav1.GetOptions{})
		if err != nil {
			obj = nil
		}
		if obj == nil {
			_, err = api.Create(e.ctx, newConfigMap(e.name, "settings", v), metav1.CreateOptions{})
		} else {
			obj.Data = map[string]string{"version": v}
			_, err = api.Update(e.ctx, obj, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	cm("v1")
	e.cma(nil)
	e.updateCMA(func(cma *addonv1alpha1.ClusterManagementAddOn) {
		cma.Spec.SupportedConfigs = []addonv1alpha1.ConfigMeta{{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Resource: "configmaps"}}}
		cma.Spec.InstallStrategy.Placements = []addonv1alpha1.PlacementStrategy{{
			PlacementRef: addonv1alpha1.PlacementRef{Namespace: e.name, Name: "p"},
			Configs: []addonv1alpha1.AddOnConfig{{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Resource: "configmaps"},
				ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: e.name, Name: "settings"}}},
			RolloutStrategy: progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{}),
		}}
	})
	e.startController(Options{})
	e.waitProgression(30*time.Second, "p", addonstatus.ReasonInstallSucceed, "2/2")
	h1 := e.rec.mca(e.cluster("c1")).Status.ConfigReferences[0].DesiredConfig.SpecHash
	cm("v2")
	e.waitProgression(30*time.Second, "p", addonstatus.ReasonUpgradeSucceed, "2/2")
	h2 := e.rec.mca(e.cluster("c1")).Status.ConfigReferences[0].DesiredConfig.SpecHash
	if h1 == h2 || h1 == "" || h2 == "" {
		t.Fatalf("spec hash %q then %q: the edit must change it", h1, h2)
	}
	obj, err := e.c.Kube.CoreV1().ConfigMaps(e.name).Get(e.ctx, "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := mustHash(t, map[string]any{"data": map[string]any{"version": "v2"}}); h2 != want || obj.Data["version"] != "v2" {
		t.Fatalf("hash %s, want %s", h2, want)
	}
	if n := e.rec.maxInFlight("settings"); n > 2 {
		t.Fatalf("%d in flight", n)
	}
}

func mustHash(t *testing.T, obj map[string]any) string {
	t.Helper()
	h, err := spechash.Of(obj)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

var _ = simagent.Succeed
