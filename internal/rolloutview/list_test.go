package rolloutview

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/history"
)

// TestRenderClusters pins the per-cluster view (--clusters, -o wide) of the canary world and of
// the rollback (regenerate with -update).
func TestRenderClusters(t *testing.T) {
	for _, tc := range []struct {
		golden string
		in     Input
	}{
		{"render-canary-clusters.golden", world(t)},
		{"render-rollback-clusters.golden", rollbackWorld(t)},
	} {
		var buf bytes.Buffer
		if err := RenderClusters(&buf, Build(tc.in), tc.in.Now); err != nil {
			t.Fatal(err)
		}
		golden(t, tc.golden, buf.Bytes())
	}
}

// TestClusterDetails: each cluster's configs by object name with version ids (the ids `addonops
// history` shows), since when it is in its state and when it last completed a change.
func TestClusterDetails(t *testing.T) {
	in := rollbackWorld(t)
	v := Build(in)
	p := v.Placements[0]
	ref := in.CMA.Status.InstallProgressions[0].ConfigReferences[0]
	id := func(h *addonv1alpha1.ConfigSpecHash) string {
		return history.VersionID([]history.Config{{Group: ref.Group, Resource: ref.Resource, Namespace: h.Namespace, Name: h.Name, SpecHash: h.SpecHash}})
	}
	v1, v2 := id(ref.DesiredConfig), id(ref.LastAppliedConfig)
	if p.DesiredVersion != v1 || p.LastAppliedVersion != v2 || p.LastKnownGoodVersion != v1 || len(v1) != 10 || v1 == v2 {
		t.Errorf("placement versions desired %s, last applied %s, last known good %s; want %s, %s, %s", p.DesiredVersion, p.LastAppliedVersion, p.LastKnownGoodVersion, v1, v2, v1)
	}
	byName := map[string]Cluster{}
	for _, c := range p.Clusters {
		byName[c.Cluster] = c
	}
	c1, c2 := byName["c1"], byName["c2"]
	if c1.DesiredVersion != v1 || c1.RunningVersion != v1 || c2.DesiredVersion != v1 || c2.RunningVersion != v2 {
		t.Errorf("c1 %s/%s, c2 %s/%s; want %s/%s and %s/%s", c1.DesiredVersion, c1.RunningVersion, c2.DesiredVersion, c2.RunningVersion, v1, v1, v1, v2)
	}
	if got := c2.Desired[0].String(); got != "addondeploymentconfigs.addon.open-cluster-management.io cfg/"+ref.DesiredConfig.Name {
		t.Errorf("c2 desired %s", got)
	}
	if c1.Completed == nil || !c1.Completed.Time.Equal(t0) || c2.Completed != nil || c2.Since == nil || !c2.Since.Time.Equal(t0) {
		t.Errorf("c1 completed %v; c2 completed %v since %v; want c1 completed at t0, c2 in progress since t0", c1.Completed, c2.Completed, c2.Since)
	}
}

// TestPausedIsSuspended: a paused placement is Suspended (not Degraded: a resume continues it),
// the rollout too unless another placement is Progressing or Degraded, and --watch keeps waiting.
func TestPausedIsSuspended(t *testing.T) {
	in := world(t)
	paused := progressing(metav1.ConditionFalse, addonstatus.ReasonPaused, "paused by addonops.io/pause: 1/3 clusters done, 0 in progress, 1 failed, 0 timed out", t0)
	in.CMA.Status.InstallProgressions[1].Conditions = paused
	v := Build(in)
	if v.Phase != PhaseSuspended || v.Health.Health != Suspended || v.Done() || v.Placements[1].Health.Health != Suspended ||
		v.Health.Message != "default/prod: Paused: "+paused[0].Message {
		t.Errorf("paused: phase %s, health %+v, done %v, prod %+v", v.Phase, v.Health, v.Done(), v.Placements[1].Health)
	}
	in.CMA.Status.InstallProgressions[0].Conditions = progressing(metav1.ConditionTrue, addonstatus.ReasonUpgrading, "upgrading... 0/1 clusters done, 1 in progress, 0 failed, 0 timed out", t0)
	if v := Build(in); v.Phase != PhaseProgressing || v.Health.Health != Progressing {
		t.Errorf("paused and upgrading: phase %s health %s, want Progressing", v.Phase, v.Health.Health)
	}
	in.CMA.Status.InstallProgressions[0].Conditions = progressing(metav1.ConditionFalse, addonstatus.ReasonAborted, "aborted", t0)
	if v := Build(in); v.Phase != PhaseFailed || v.Health.Health != Degraded || !v.Done() {
		t.Errorf("paused and aborted: phase %s health %s, want Failed/Degraded", v.Phase, v.Health.Health)
	}
	in.CMA.Status.InstallProgressions[0].Conditions = progressing(metav1.ConditionTrue, addonstatus.ReasonAborting, "aborting...", t0)
	if v := Build(in); v.Placements[0].Health.Health != Progressing {
		t.Errorf("aborting: %+v, want Progressing", v.Placements[0].Health)
	}
}

// A gated placement whose canary cannot pass without help says so: Degraded, canary blocked.
func TestBlockedCanary(t *testing.T) {
	in := world(t)
	in.CMA.Status.InstallProgressions[1].Conditions = progressing(metav1.ConditionFalse, addonstatus.ReasonWaitingForCanary,
		"canary placement default/canary selects no cluster, so no version can pass it: check its predicates and cluster sets", t0)
	v := Build(in)
	p := v.Placements[1]
	if v.Phase != PhaseFailed || p.Health.Health != Degraded || p.Canary == nil || !strings.HasPrefix(p.Canary.State, "blocked: the desired configs cannot pass canary default/canary") {
		t.Errorf("phase %s, prod %+v, canary %+v", v.Phase, p.Health, p.Canary)
	}
	in.CMA.Status.InstallProgressions[1].Conditions[0].Status = metav1.ConditionTrue
	if p := Build(in).Placements[1]; p.Health.Health != Progressing || !strings.HasPrefix(p.Canary.State, "waiting for canary default/canary") {
		t.Errorf("waiting: %+v, canary %+v", p.Health, p.Canary)
	}
}

// unmanagedWorld is an add-on rolled out by OCM's addon-manager (no lifecycle annotation), its
// status written by OCM.
func unmanagedWorld() Input {
	cma := &addonv1alpha1.ClusterManagementAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: "ocm-managed"},
		Spec: addonv1alpha1.ClusterManagementAddOnSpec{InstallStrategy: addonv1alpha1.InstallStrategy{
			Type:       addonv1alpha1.AddonInstallStrategyPlacements,
			Placements: []addonv1alpha1.PlacementStrategy{{PlacementRef: addonv1alpha1.PlacementRef{Namespace: "default", Name: "all"}}},
		}},
		Status: addonv1alpha1.ClusterManagementAddOnStatus{InstallProgressions: []addonv1alpha1.InstallProgression{{
			PlacementRef: addonv1alpha1.PlacementRef{Namespace: "default", Name: "all"},
			Conditions:   progressing(metav1.ConditionFalse, addonv1alpha1.ProgressingReasonCompleted, "selected clusters 2. configured addons 2/2 completed with no errors, 0 failed 0 timeout.", t0),
		}}},
	}
	return Input{CMA: cma, Clusters: map[string][]string{"default/all": {"c1", "c2"}}, Now: t0.Add(time.Hour)}
}

// TestList pins the list of every add-on (text, wide and JSON): one managed by addonops mid
// rollout, one by OCM's addon-manager, one Manual with its MCAs.
func TestList(t *testing.T) {
	manual := Input{
		CMA: &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: "manual",
			Annotations: map[string]string{addonv1alpha1.AddonLifecycleAnnotationKey: addonv1alpha1.AddonLifecycleSelfManageAnnotationValue}}},
		MCAs: []*addonv1alpha1.ManagedClusterAddOn{
			{ObjectMeta: metav1.ObjectMeta{Name: "manual", Namespace: "c1"}, Status: addonv1alpha1.ManagedClusterAddOnStatus{Conditions: progressing(metav1.ConditionFalse, addonstatus.ReasonInstallSucceed, "", t0)}},
			{ObjectMeta: metav1.ObjectMeta{Name: "manual", Namespace: "c2"}, Status: addonv1alpha1.ManagedClusterAddOnStatus{Conditions: progressing(metav1.ConditionTrue, addonstatus.ReasonInstalling, "", t0)}},
		},
		Now: t0,
	}
	hello := world(t)
	var l List
	for _, in := range []Input{hello, manual, unmanagedWorld()} {
		l.Addons = append(l.Addons, Summarize(Build(in), in))
	}
	want := []string{"hello addonops 2 2/4 Progressing", "manual addonops 0 1/2 Healthy", "ocm-managed addon-manager 1 2/2 Healthy"}
	for i, a := range l.Addons {
		if got := strings.Join([]string{a.Addon, a.ManagedBy, itoa(a.Placements), count(a.Clusters), string(a.Health.Health)}, " "); got != want[i] {
			t.Errorf("add-on %d: %s, want %s", i, got, want[i])
		}
	}
	if l.Addons[2].Note == "" || l.Addons[0].Note != "" {
		t.Errorf("notes: %q, %q; want one for the unmanaged add-on only", l.Addons[0].Note, l.Addons[2].Note)
	}
	for _, wide := range []bool{false, true} {
		var buf bytes.Buffer
		if err := RenderList(&buf, l, wide); err != nil {
			t.Fatal(err)
		}
		golden(t, map[bool]string{false: "render-list.golden", true: "render-list-wide.golden"}[wide], buf.Bytes())
	}
	js, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "list.json.golden", append(js, '\n'))
}

// TestRenderUnmanaged: the full view of an add-on addonops does not manage says so and how to
// change it.
func TestRenderUnmanaged(t *testing.T) {
	in := unmanagedWorld()
	var buf bytes.Buffer
	if err := Render(&buf, Build(in), in.Now); err != nil {
		t.Fatal(err)
	}
	golden(t, "render-unmanaged.golden", buf.Bytes())
}

func itoa(n int) string { return strconv.Itoa(n) }

func count(c *ClusterCount) string {
	if c == nil {
		return "-"
	}
	return itoa(c.Done) + "/" + itoa(c.Total)
}

// fleet is the rollback world at fleet scale: n clusters in one placement, every one with its MCA.
func fleet(t testing.TB, n int) Input {
	in := rollbackWorld(t)
	tmpl := in.MCAs[1] // rolling back, not healthy yet
	in.MCAs, in.Clusters["default/all"] = nil, nil
	for i := range n {
		m := tmpl.DeepCopy()
		m.Namespace = fmt.Sprintf("cluster%05d", i)
		in.MCAs = append(in.MCAs, m)
		in.Clusters["default/all"] = append(in.Clusters["default/all"], m.Namespace)
	}
	return in
}

// The per-cluster view lists every cluster of a 5,000-cluster fleet, one line each, from the one
// list of MCAs (no lookup per cluster).
func TestRenderClustersAtFleetScale(t *testing.T) {
	in := fleet(t, 5000)
	lookups := 0
	in.BaseName = func(configref.Ref) (string, bool) { lookups++; return "", false }
	var buf bytes.Buffer
	if err := RenderClusters(&buf, Build(in), in.Now); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), " default/all "); n != 5000 {
		t.Errorf("%d cluster lines, want 5000", n)
	}
	if lookups > 3 {
		t.Errorf("%d config lookups for 5000 clusters, want one per config version of the progression", lookups)
	}
}

func BenchmarkBuildAndRenderClusters5000(b *testing.B) {
	in := fleet(b, 5000)
	for b.Loop() {
		var buf bytes.Buffer
		if err := RenderClusters(&buf, Build(in), in.Now); err != nil {
			b.Fatal(err)
		}
	}
}
