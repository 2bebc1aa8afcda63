package rolloutview

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/spechash"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

var (
	t0  = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	adc = configref.GroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"}
)

// hashOf is a made-up spec hash whose config-hash name is base-<suffix>.
func hashOf(seed string) string {
	return strings.Repeat(seed, 64/len(seed)+1)[:64]
}

func hashedName(t testing.TB, base, hash string) string {
	t.Helper()
	s, err := spechash.Suffix(hash)
	if err != nil {
		t.Fatal(err)
	}
	return base + "-" + s
}

func specHash(ns, name, hash string) *addonv1alpha1.ConfigSpecHash {
	return &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: ns, Name: name}, SpecHash: hash}
}

func progressing(status metav1.ConditionStatus, reason, msg string, since time.Time) []metav1.Condition {
	return []metav1.Condition{{Type: addonstatus.ConditionProgressing, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(since)}}
}

// world is a CMA with two placements (canary gates prod) and MCAs on four clusters.
func world(t *testing.T) Input {
	t.Helper()
	h1, h2 := hashOf("3bfc2695"), hashOf("fb04dcb6")
	v1, v2 := hashedName(t, "hello-config", h1), hashedName(t, "hello-config", h2)
	ref := func(desired, applied, lkg *addonv1alpha1.ConfigSpecHash) []addonv1alpha1.InstallConfigReference {
		return []addonv1alpha1.InstallConfigReference{{
			ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: adc.Group, Resource: adc.Resource},
			DesiredConfig:       desired, LastAppliedConfig: applied, LastKnownGoodConfig: lkg,
		}}
	}
	placement := func(name string, strategy clusterv1alpha1.RolloutStrategy) addonv1alpha1.PlacementStrategy {
		return addonv1alpha1.PlacementStrategy{
			PlacementRef: addonv1alpha1.PlacementRef{Namespace: "default", Name: name},
			Configs: []addonv1alpha1.AddOnConfig{{
				ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: adc.Group, Resource: adc.Resource},
				ConfigReferent:      addonv1alpha1.ConfigReferent{Namespace: "cfg", Name: v2},
			}},
			RolloutStrategy: strategy,
		}
	}
	cma := &addonv1alpha1.ClusterManagementAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Annotations: map[string]string{canary.Annotation: `{"default/prod": "default/canary"}`,
			addonv1alpha1.AddonLifecycleAnnotationKey: addonv1alpha1.AddonLifecycleSelfManageAnnotationValue}},
		Spec: addonv1alpha1.ClusterManagementAddOnSpec{InstallStrategy: addonv1alpha1.InstallStrategy{
			Type: addonv1alpha1.AddonInstallStrategyPlacements,
			Placements: []addonv1alpha1.PlacementStrategy{
				placement("canary", clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All}),
				placement("prod", clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.Progressive, Progressive: &clusterv1alpha1.RolloutProgressive{
					RolloutConfig: clusterv1alpha1.RolloutConfig{ProgressDeadline: "10m", MaxFailures: intOrStr("1")}}}),
			},
		}},
		Status: addonv1alpha1.ClusterManagementAddOnStatus{InstallProgressions: []addonv1alpha1.InstallProgression{
			{
				PlacementRef:     addonv1alpha1.PlacementRef{Namespace: "default", Name: "canary"},
				ConfigReferences: ref(specHash("cfg", v2, h2), specHash("cfg", v2, h2), specHash("cfg", v2, h2)),
				Conditions:       progressing(metav1.ConditionFalse, addonstatus.ReasonUpgradeSucceed, "1/1 upgrade completed with no errors.", t0),
			},
			{
				PlacementRef:     addonv1alpha1.PlacementRef{Namespace: "default", Name: "prod"},
				ConfigReferences: ref(specHash("cfg", v2, h2), specHash("cfg", v1, h1), specHash("cfg", v2, h2)),
				Conditions:       progressing(metav1.ConditionTrue, addonstatus.ReasonUpgrading, "upgrading... 1/3 clusters done, 1 in progress, 1 failed, 0 timed out", t0.Add(time.Minute)),
			},
		}},
	}
	mca := func(cluster string, applied *addonv1alpha1.ConfigSpecHash, conds ...metav1.Condition) *addonv1alpha1.ManagedClusterAddOn {
		return &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: cluster}, Status: addonv1alpha1.ManagedClusterAddOnStatus{
			ConfigReferences: []addonv1alpha1.ConfigReference{{
				ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: adc.Group, Resource: adc.Resource},
				DesiredConfig:       specHash("cfg", v2, h2), LastAppliedConfig: applied,
			}},
			Conditions: conds}}
	}
	cond := func(typ string, status metav1.ConditionStatus, reason, msg string, since time.Time) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(since)}
	}
	return Input{
		CMA: cma,
		MCAs: []*addonv1alpha1.ManagedClusterAddOn{
			mca("c0", specHash("cfg", v2, h2), cond(addonstatus.ConditionProgressing, metav1.ConditionFalse, addonstatus.ReasonUpgradeSucceed, addonstatus.MessageUpgradeSucceed, t0)),
			mca("c1", specHash("cfg", v2, h2), cond(addonstatus.ConditionProgressing, metav1.ConditionFalse, addonstatus.ReasonUpgradeSucceed, addonstatus.MessageUpgradeSucceed, t0)),
			mca("c2", specHash("cfg", v1, h1), cond(addonstatus.ConditionProgressing, metav1.ConditionFalse, addonstatus.ReasonUpgradeFailed, "upgrade failed: ManifestWork addon-hello-deploy-0 is Applied=False at generation 2 (AppliedManifestWorkFailed: boom)", t0)),
			mca("c3", specHash("cfg", v1, h1), cond(addonstatus.ConditionProgressing, metav1.ConditionTrue, addonstatus.ReasonUpgrading, "upgrading... ManifestWork addon-hello-deploy-0 is not Applied at generation 2 yet", t0)),
			mca("elsewhere", nil, cond(addonstatus.ConditionProgressing, metav1.ConditionFalse, addonstatus.ReasonUpgradeFailed, "not in any placement", t0)),
		},
		Clusters: map[string][]string{"default/canary": {"c0"}, "default/prod": {"c1", "c2", "c3"}},
		BaseName: func(r configref.Ref) (string, bool) {
			if r.Name == v2 {
				return "hello-config", true // the config on the hub carries the annotation
			}
			return "", false // v1 was pruned: derived from its suffix
		},
		Now: t0.Add(5 * time.Minute),
	}
}

func TestBuild(t *testing.T) {
	in := world(t)
	v := Build(in)
	if v.Phase != PhaseProgressing || v.Health.Health != Progressing {
		t.Errorf("phase %s health %+v, want Progressing", v.Phase, v.Health)
	}
	if len(v.Placements) != 2 {
		t.Fatalf("%d placements, want 2", len(v.Placements))
	}
	canary, prod := v.Placements[0], v.Placements[1]
	if want := (Progress{Total: 1, Done: 1, Source: "controller"}); canary.Progress != want {
		t.Errorf("canary progress %+v, want %+v", canary.Progress, want)
	}
	if want := (Progress{Total: 3, Done: 1, InProgress: 1, Failed: 1, Source: "controller"}); prod.Progress != want {
		t.Errorf("prod progress %+v, want %+v", prod.Progress, want)
	}
	if canary.Canary == nil || strings.Join(canary.Canary.CanaryFor, ",") != "default/prod" || !strings.Contains(canary.Canary.State, "canary passed") {
		t.Errorf("canary part %+v", canary.Canary)
	}
	if prod.Canary == nil || prod.Canary.Canary != "default/canary" || !strings.Contains(prod.Canary.State, "passed the desired configs") {
		t.Errorf("prod canary part %+v", prod.Canary)
	}
	c := prod.Configs[0]
	if c.Desired.String() != "hello-config@"+spechash.Short(hashOf("fb04dcb6")) || c.LastApplied.String() != "hello-config@"+spechash.Short(hashOf("3bfc2695")) {
		t.Errorf("versions desired %s last applied %s", c.Desired, c.LastApplied)
	}
	if len(prod.FailedClusters) != 1 || prod.FailedClusters[0].Cluster != "c2" || prod.FailedClusters[0].Reason != addonstatus.ReasonUpgradeFailed {
		t.Errorf("failed clusters %+v, want c2 UpgradeFailed only (elsewhere is in no placement)", prod.FailedClusters)
	}
	if prod.Since == nil || !prod.Since.Time.Equal(t0.Add(time.Minute)) {
		t.Errorf("since %v", prod.Since)
	}

	// Past the progressDeadline, the cluster still upgrading is listed as timed out.
	in.Now = t0.Add(11 * time.Minute)
	prod = Build(in).Placements[1]
	if len(prod.FailedClusters) != 2 || prod.FailedClusters[1].Cluster != "c3" || prod.FailedClusters[1].Reason != "TimedOut" ||
		!strings.Contains(prod.FailedClusters[1].Message, "longer than progressDeadline 10m0s") {
		t.Errorf("failed clusters after the deadline %+v", prod.FailedClusters)
	}
}

// Without counts in the controller's message (a placement waiting for a problem to be fixed) the
// view counts the MCAs of the placement's clusters itself.
func TestBuildCountsClustersWithoutControllerCounts(t *testing.T) {
	in := world(t)
	in.CMA.Status.InstallProgressions[1].Conditions = progressing(metav1.ConditionFalse, addonstatus.ReasonConfigurationNotFound, "placement default/prod waits for its configs: x not found", t0)
	in.MCAs[1].Status.ConfigReferences = []addonv1alpha1.ConfigReference{{
		ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: adc.Group, Resource: adc.Resource},
		DesiredConfig:       specHash("cfg", "x", "h"), LastAppliedConfig: specHash("cfg", "x", "h"),
	}}
	v := Build(in)
	if v.Phase != PhaseFailed {
		t.Errorf("phase %s, want Failed", v.Phase)
	}
	want := Progress{Total: 3, Done: 1, InProgress: 1, Failed: 1, Source: "clusters"}
	if got := v.Placements[1].Progress; got != want {
		t.Errorf("progress %+v, want %+v", got, want)
	}
	delete(in.Clusters, "default/prod")
	if got := Build(in).Placements[1].Progress; got != (Progress{}) {
		t.Errorf("progress with unknown clusters %+v, want none", got)
	}
}

func TestParseCounts(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		want Progress
		ok   bool
	}{
		{"installing... 1/3 clusters done, 2 in progress, 0 failed, 0 timed out", Progress{Total: 3, Done: 1, InProgress: 2, Source: "controller"}, true},
		{"upgrade stopped: more clusters failed than maxFailures allows; 1/3 clusters done, 0 in progress, 1 failed, 1 timed out; rolling out the last known good configs first",
			Progress{Total: 3, Done: 1, Failed: 1, TimedOut: 1, Source: "controller"}, true},
		{"4/4 upgrade completed with no errors.", Progress{Total: 4, Done: 4, Source: "controller"}, true},
		{"3/3 install completed with no errors.", Progress{Total: 3, Done: 3, Source: "controller"}, true},
		{"4/4 rollback completed with no errors.", Progress{Total: 4, Done: 4, Source: "controller"}, true},
		{"rolling back... 3/4 clusters done, 1 in progress, 0 failed, 0 timed out", Progress{Total: 4, Done: 3, InProgress: 1, Source: "controller"}, true},
		{"upgrade stopped: more clusters failed than maxFailures allows; 0/4 clusters done, 0 in progress, 1 failed, 0 timed out; failed: cluster7 (upgrade failed: ManifestWork addon-x-deploy-0 is Applied=False at generation 2 (boom))",
			Progress{Total: 4, Failed: 1, Source: "controller"}, true},
		{"upgrading... 1/4 clusters done, 1 in progress, 0 failed, 0 timed out, 2 cannot be configured; cannot be configured: c3 (x), c4 (y)",
			Progress{Total: 4, Done: 1, InProgress: 1, Unconfigurable: 2, Source: "controller"}, true},
		{"selected clusters 4. configured addons 2/4 progressing..., 0 failed 1 timeout.", Progress{Total: 4, InProgress: 2, TimedOut: 1, Source: "controller"}, true},
		{"selected clusters 4. configured addons 4/4 completed with no errors, 0 failed 0 timeout.", Progress{Total: 4, Done: 4, Source: "controller"}, true},
		{"installing... no cluster selected yet", Progress{}, false},
		{"Placement default/x not found", Progress{}, false},
	} {
		got, ok := parseCounts(tc.msg)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseCounts(%q) = %+v, %v; want %+v, %v", tc.msg, got, ok, tc.want, tc.ok)
		}
	}
}

func TestBar(t *testing.T) {
	for _, tc := range []struct {
		p    Progress
		want string
	}{
		{Progress{}, "[........................]"},
		{Progress{Total: 4, Done: 4}, "[########################]"},
		{Progress{Total: 4, Done: 1, InProgress: 1}, "[######~~~~~~............]"},
		{Progress{Total: 100, Done: 50, Failed: 1, InProgress: 1}, "[############!~..........]"},
		{Progress{Total: 3, Done: 1, Failed: 1, TimedOut: 1}, "[########!!!!!!!!!!!!!!!!]"},
		{Progress{Total: 4, Done: 2, InProgress: 1, Unconfigurable: 1}, "[############!!!!!!~~~~~~]"},
	} {
		if got := Bar(tc.p); got != tc.want {
			t.Errorf("Bar(%+v) = %s, want %s", tc.p, got, tc.want)
		}
		if n := len(Bar(tc.p)); n != barWidth+2 {
			t.Errorf("Bar(%+v) has %d characters", tc.p, n)
		}
	}
}

func TestVersionBaseName(t *testing.T) {
	h := hashOf("fb04dcb6")
	named := hashedName(t, "cfg", h)
	for _, tc := range []struct {
		name, hash string
		lookup     func(configref.Ref) (string, bool)
		want       string
	}{
		{named, h, func(configref.Ref) (string, bool) { return "from-annotation", true }, "from-annotation@fb04dcb6"},
		{named, h, nil, "cfg@fb04dcb6"},
		{"cfg-not-its-hash", h, nil, "cfg-not-its-hash@fb04dcb6"},
		{"plain", "", nil, "plain@(no hash)"},
	} {
		v := version(adc, specHash("ns", tc.name, tc.hash), tc.lookup)
		if got := v.String(); got != tc.want {
			t.Errorf("version(%s, %s) = %s, want %s", tc.name, tc.hash, got, tc.want)
		}
	}
	if version(adc, nil, nil) != nil || (*Version)(nil).String() != "-" {
		t.Error("a missing version must show as -")
	}
}

func TestManualAddon(t *testing.T) {
	v := Build(Input{CMA: &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: "m"}}})
	if v.Phase != PhaseSucceeded || v.InstallStrategy != "Manual" || len(v.Placements) != 0 || !v.Done() {
		t.Errorf("%+v", v)
	}
}

func TestInvalidCanaryAnnotation(t *testing.T) {
	in := world(t)
	in.CMA.Annotations[canary.Annotation] = "not json"
	for _, p := range Build(in).Placements {
		if p.Canary == nil || !strings.Contains(p.Canary.State, "invalid annotation") {
			t.Errorf("%s canary %+v, want the annotation error", p.Key(), p.Canary)
		}
	}
}

// TestRender pins the text output (regenerate with -update after an intended change).
func TestRender(t *testing.T) {
	in := world(t)
	var buf bytes.Buffer
	if err := Render(&buf, Build(in), in.Now); err != nil {
		t.Fatal(err)
	}
	golden(t, "render-canary.golden", buf.Bytes())
	js, err := json.MarshalIndent(Build(in), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "view-canary.json.golden", append(js, '\n'))
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run with -update after an intended change):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func intOrStr(s string) intstr.IntOrString { return intstr.Parse(s) }

// rollbackWorld is a revert of placement default/all to the version its clusters ran before
// (hello-config v1) after the upgrade to v2 failed: c1 is back, c2 is going back but its add-on is
// not healthy yet, c3 never left v1, and c4 cannot be configured (its own config is of a type the
// add-on does not support).
func rollbackWorld(t testing.TB) Input {
	t.Helper()
	h1, h2 := hashOf("3bfc2695"), hashOf("fb04dcb6")
	v1, v2 := hashedName(t, "hello-config", h1), hashedName(t, "hello-config", h2)
	cma := &addonv1alpha1.ClusterManagementAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Annotations: map[string]string{addonv1alpha1.AddonLifecycleAnnotationKey: addonv1alpha1.AddonLifecycleSelfManageAnnotationValue}},
		Spec: addonv1alpha1.ClusterManagementAddOnSpec{InstallStrategy: addonv1alpha1.InstallStrategy{
			Type: addonv1alpha1.AddonInstallStrategyPlacements,
			Placements: []addonv1alpha1.PlacementStrategy{{
				PlacementRef: addonv1alpha1.PlacementRef{Namespace: "default", Name: "all"},
				Configs: []addonv1alpha1.AddOnConfig{{
					ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: adc.Group, Resource: adc.Resource},
					ConfigReferent:      addonv1alpha1.ConfigReferent{Namespace: "cfg", Name: v1},
				}},
				RolloutStrategy: clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.Progressive, Progressive: &clusterv1alpha1.RolloutProgressive{MaxConcurrency: intOrStr("1")}},
			}},
		}},
		Status: addonv1alpha1.ClusterManagementAddOnStatus{InstallProgressions: []addonv1alpha1.InstallProgression{{
			PlacementRef: addonv1alpha1.PlacementRef{Namespace: "default", Name: "all"},
			ConfigReferences: []addonv1alpha1.InstallConfigReference{{
				ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: adc.Group, Resource: adc.Resource},
				DesiredConfig:       specHash("cfg", v1, h1), LastAppliedConfig: specHash("cfg", v2, h2), LastKnownGoodConfig: specHash("cfg", v1, h1),
			}},
			Conditions: progressing(metav1.ConditionTrue, addonstatus.ReasonRollingBack,
				"rolling back... 2/4 clusters done, 1 in progress, 0 failed, 0 timed out, 1 cannot be configured; cannot be configured: c4 (ConfigurationUnsupported: Configuration with gvr example.io/widgets is not supported for this addon)", t0),
		}}},
	}
	cond := func(typ string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(t0)}
	}
	configured := cond(addonstatus.ConditionConfigured, metav1.ConditionTrue, addonstatus.ReasonConfigured, addonstatus.MessageConfigured)
	available := cond(addonstatus.ConditionAvailable, metav1.ConditionTrue, "ProbeAvailable", "hello add-on is available.")
	mca := func(cluster string, applied string, appliedHash string, conds ...metav1.Condition) *addonv1alpha1.ManagedClusterAddOn {
		return &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: cluster}, Status: addonv1alpha1.ManagedClusterAddOnStatus{
			ConfigReferences: []addonv1alpha1.ConfigReference{{
				ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: adc.Group, Resource: adc.Resource},
				DesiredConfig:       specHash("cfg", v1, h1), LastAppliedConfig: specHash("cfg", applied, appliedHash),
			}},
			Conditions: conds,
		}}
	}
	return Input{
		CMA: cma,
		MCAs: []*addonv1alpha1.ManagedClusterAddOn{
			mca("c1", v1, h1, configured, cond(addonstatus.ConditionProgressing, metav1.ConditionFalse, addonstatus.ReasonRollbackSucceeded, addonstatus.MessageRollbackSucceeded), available),
			mca("c2", v2, h2, configured, cond(addonstatus.ConditionProgressing, metav1.ConditionTrue, addonstatus.ReasonRollingBack,
				"rolling back... the add-on's ManifestWorks are applied with the desired configs; waiting for it to be healthy: Available=False (ProbeUnavailable: no ready replica)"),
				cond(addonstatus.ConditionAvailable, metav1.ConditionFalse, "ProbeUnavailable", "no ready replica")),
			mca("c3", v1, h1, configured, cond(addonstatus.ConditionProgressing, metav1.ConditionFalse, addonstatus.ReasonUpgradeSucceed, addonstatus.MessageUpgradeSucceed), available),
			mca("c4", v1, h1, cond(addonstatus.ConditionConfigured, metav1.ConditionFalse, addonstatus.ReasonConfigurationUnsupported,
				"Configuration with gvr example.io/widgets is not supported for this addon"),
				cond(addonstatus.ConditionProgressing, metav1.ConditionFalse, addonstatus.ReasonUpgradeSucceed, addonstatus.MessageUpgradeSucceed), available),
		},
		Clusters: map[string][]string{"default/all": {"c4", "c3", "c2", "c1"}},
		Now:      t0.Add(2 * time.Minute),
	}
}

func TestBuildRollback(t *testing.T) {
	in := rollbackWorld(t)
	v := Build(in)
	p := v.Placements[0]
	if v.Phase != PhaseProgressing || p.Health.Health != Progressing || p.Change != "rollback" || p.Reason != addonstatus.ReasonRollingBack {
		t.Errorf("phase %s, placement health %+v change %q reason %q; want Progressing, rollback, RollingBack", v.Phase, p.Health, p.Change, p.Reason)
	}
	if want := (Progress{Total: 4, Done: 2, InProgress: 1, Unconfigurable: 1, Source: "controller"}); p.Progress != want {
		t.Errorf("progress %+v, want %+v", p.Progress, want)
	}
	var states []string
	for _, c := range p.Clusters {
		states = append(states, c.Cluster+"="+c.State+"/"+c.Reason+"/"+string(c.Health))
	}
	if got, want := strings.Join(states, " "), "c1=done/RollbackSucceeded/Healthy c2=inProgress/RollingBack/Progressing c3=done/UpgradeSucceed/Healthy c4=unconfigurable/ConfigurationUnsupported/Degraded"; got != want {
		t.Errorf("clusters\n got  %s\n want %s", got, want)
	}
	if len(p.FailedClusters) != 1 || p.FailedClusters[0].Cluster != "c4" || p.FailedClusters[0].Reason != addonstatus.ReasonConfigurationUnsupported ||
		!strings.Contains(p.FailedClusters[0].Message, "example.io/widgets") {
		t.Errorf("failed clusters %+v, want c4 ConfigurationUnsupported with its message", p.FailedClusters)
	}

	// c2 cannot go back either: the rollback fails, naming it.
	in.CMA.Status.InstallProgressions[0].Conditions = progressing(metav1.ConditionFalse, addonstatus.ReasonRollbackFailed,
		"rollback failed: 2/4 clusters done, 0 in progress, 1 failed, 0 timed out, 1 cannot be configured; failed: c2 (rollback failed: the add-on has not been healthy for 5m0s: Available=False (ProbeUnavailable: no ready replica))", t0)
	in.MCAs[1].Status.Conditions[1] = metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionFalse, Reason: addonstatus.ReasonRollbackFailed,
		Message: "rollback failed: the add-on has not been healthy for 5m0s: Available=False (ProbeUnavailable: no ready replica)", LastTransitionTime: metav1.NewTime(t0)}
	v = Build(in)
	p = v.Placements[0]
	if v.Phase != PhaseFailed || !strings.Contains(v.Health.Message, "RollbackFailed: rollback failed: ") || !strings.Contains(v.Health.Message, "failed: c2 (rollback failed: the add-on has not been healthy") {
		t.Errorf("phase %s health %+v, want Failed naming c2 and its cause", v.Phase, v.Health)
	}
	if len(p.FailedClusters) != 2 || p.FailedClusters[0].Cluster != "c2" || p.FailedClusters[0].Reason != addonstatus.ReasonRollbackFailed {
		t.Errorf("failed clusters %+v, want c2 RollbackFailed and c4", p.FailedClusters)
	}

	// Every cluster back (c4's config fixed): the rollback succeeded.
	in = rollbackWorld(t)
	in.MCAs = in.MCAs[:3]
	in.Clusters["default/all"] = []string{"c1", "c3"}
	in.MCAs[1].Status.Conditions[1] = metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionFalse, Reason: addonstatus.ReasonRollbackSucceeded,
		Message: addonstatus.MessageRollbackSucceeded, LastTransitionTime: metav1.NewTime(t0)}
	in.CMA.Status.InstallProgressions[0].Conditions = progressing(metav1.ConditionFalse, addonstatus.ReasonRollbackSucceeded, "2/2 rollback completed with no errors.", t0)
	v = Build(in)
	if v.Phase != PhaseSucceeded || v.Placements[0].Progress != (Progress{Total: 2, Done: 2, Source: "controller"}) || v.Placements[0].Change != "rollback" {
		t.Errorf("phase %s placement %+v, want Succeeded with 2/2 done", v.Phase, v.Placements[0])
	}
}

// TestRenderRollback pins the text and JSON output of a rollback (regenerate with -update).
func TestRenderRollback(t *testing.T) {
	in := rollbackWorld(t)
	var buf bytes.Buffer
	if err := Render(&buf, Build(in), in.Now); err != nil {
		t.Fatal(err)
	}
	golden(t, "render-rollback.golden", buf.Bytes())
	js, err := json.MarshalIndent(Build(in), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "view-rollback.json.golden", append(js, '\n'))
}

// Beyond maxClusterLines clusters, those done and healthy are only counted.
func TestRenderManyClusters(t *testing.T) {
	var clusters []Cluster
	for i := range maxClusterLines + 5 {
		clusters = append(clusters, Cluster{Cluster: fmt.Sprintf("c%02d", i), State: StateDone, Reason: addonstatus.ReasonRollbackSucceeded, Health: Healthy})
	}
	clusters[3] = Cluster{Cluster: "c03", State: StateInProgress, Reason: addonstatus.ReasonRollingBack, Message: "rolling back...", Health: Progressing}
	var b strings.Builder
	renderClusters(&b, clusters)
	want := "  clusters:\n    c03  in progress  RollingBack: rolling back...\n    ... and 24 more done\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// RenderSummary is Render without the config objects and the "clusters:" sections: every other
// line, in order, the version ids and the failed clusters included.
func TestRenderSummary(t *testing.T) {
	in := world(t)
	v := Build(in)
	var full, summary bytes.Buffer
	if err := Render(&full, v, in.Now); err != nil {
		t.Fatal(err)
	}
	if err := RenderSummary(&summary, v, in.Now); err != nil {
		t.Fatal(err)
	}
	var want []string
	skipping := false
	for _, l := range strings.Split(full.String(), "\n") {
		switch {
		case l == "  clusters:" || strings.HasPrefix(l, "  addondeploymentconfigs."):
			skipping = true
			continue
		case skipping && strings.HasPrefix(l, "    "):
			continue
		}
		skipping = false
		want = append(want, l)
	}
	if got := summary.String(); got != strings.Join(want, "\n") {
		t.Errorf("RenderSummary:\n%s\nwant Render without its config objects and cluster lines:\n%s", got, strings.Join(want, "\n"))
	}
	for _, s := range []string{"versions: desired ", "failed clusters:\n    c2  UpgradeFailed"} {
		if !strings.Contains(summary.String(), s) {
			t.Errorf("RenderSummary does not say %q:\n%s", s, summary.String())
		}
	}
	if strings.Contains(summary.String(), "desired:  ") || strings.Contains(summary.String(), "  clusters:") {
		t.Errorf("RenderSummary shows config objects or cluster lines:\n%s", summary.String())
	}
}
