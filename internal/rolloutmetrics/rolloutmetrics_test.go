package rolloutmetrics

import (
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func prog(name string, status metav1.ConditionStatus, reason string, since time.Time) addonv1alpha1.InstallProgression {
	ip := addonv1alpha1.InstallProgression{PlacementRef: addonv1alpha1.PlacementRef{Namespace: "ns", Name: name}}
	if reason != "" {
		ip.Conditions = []metav1.Condition{{Type: "Progressing", Status: status, Reason: reason, LastTransitionTime: metav1.NewTime(since)}}
	}
	return ip
}

func TestTransitions(t *testing.T) {
	now := t0.Add(90 * time.Second)
	T, F := metav1.ConditionTrue, metav1.ConditionFalse
	for _, tc := range []struct {
		name     string
		old, new []addonv1alpha1.InstallProgression
		want     []Transition
	}{
		{name: "upgrade succeeded",
			old:  []addonv1alpha1.InstallProgression{prog("p", T, addonstatus.ReasonUpgrading, t0)},
			new:  []addonv1alpha1.InstallProgression{prog("p", F, addonstatus.ReasonUpgradeSucceed, now)},
			want: []Transition{{Placement: "ns/p", Result: addonstatus.ReasonUpgradeSucceed, Duration: 90 * time.Second}}},
		{name: "install failed",
			old:  []addonv1alpha1.InstallProgression{prog("p", T, addonstatus.ReasonInstalling, t0)},
			new:  []addonv1alpha1.InstallProgression{prog("p", F, addonstatus.ReasonInstallFailed, now)},
			want: []Transition{{Placement: "ns/p", Result: addonstatus.ReasonInstallFailed, Duration: 90 * time.Second, Failed: true}}},
		{name: "rollback succeeded",
			old:  []addonv1alpha1.InstallProgression{prog("p", T, addonstatus.ReasonRollingBack, t0)},
			new:  []addonv1alpha1.InstallProgression{prog("p", F, addonstatus.ReasonRollbackSucceeded, now)},
			want: []Transition{{Placement: "ns/p", Result: addonstatus.ReasonRollbackSucceeded, Duration: 90 * time.Second, Rollback: true}}},
		{name: "rollback failed",
			old:  []addonv1alpha1.InstallProgression{prog("p", T, addonstatus.ReasonRollingBack, t0)},
			new:  []addonv1alpha1.InstallProgression{prog("p", F, addonstatus.ReasonRollbackFailed, now)},
			want: []Transition{{Placement: "ns/p", Result: addonstatus.ReasonRollbackFailed, Duration: 90 * time.Second, Failed: true, Rollback: true}}},
		{name: "upgrade succeeded after its last batch's verification",
			old:  []addonv1alpha1.InstallProgression{prog("p", T, addonstatus.ReasonVerifying, t0)},
			new:  []addonv1alpha1.InstallProgression{prog("p", F, addonstatus.ReasonUpgradeSucceed, now)},
			want: []Transition{{Placement: "ns/p", Result: addonstatus.ReasonUpgradeSucceed, Duration: 90 * time.Second}}},
		{name: "still busy",
			old: []addonv1alpha1.InstallProgression{prog("p", T, addonstatus.ReasonUpgrading, t0)},
			new: []addonv1alpha1.InstallProgression{prog("p", T, addonstatus.ReasonUpgrading, t0)}},
		{name: "final to final (resync, message change)",
			old: []addonv1alpha1.InstallProgression{prog("p", F, addonstatus.ReasonUpgradeSucceed, t0)},
			new: []addonv1alpha1.InstallProgression{prog("p", F, addonstatus.ReasonUpgradeSucceed, t0)}},
		{name: "waiting is not busy",
			old: []addonv1alpha1.InstallProgression{prog("p", T, addonstatus.ReasonWaitingForCanary, t0)},
			new: []addonv1alpha1.InstallProgression{prog("p", F, addonstatus.ReasonUpgradeSucceed, now)}},
		{name: "new placement already final",
			new: []addonv1alpha1.InstallProgression{prog("p", F, addonstatus.ReasonInstallSucceed, now)}},
		{name: "placements matched by name",
			old:  []addonv1alpha1.InstallProgression{prog("a", T, addonstatus.ReasonUpgrading, t0), prog("b", T, addonstatus.ReasonInstalling, t0.Add(30*time.Second))},
			new:  []addonv1alpha1.InstallProgression{prog("b", F, addonstatus.ReasonInstallSucceed, now), prog("a", T, addonstatus.ReasonUpgrading, t0)},
			want: []Transition{{Placement: "ns/b", Result: addonstatus.ReasonInstallSucceed, Duration: 60 * time.Second}}},
		{name: "clock skew gives zero, not negative",
			old:  []addonv1alpha1.InstallProgression{prog("p", T, addonstatus.ReasonUpgrading, now.Add(time.Minute))},
			new:  []addonv1alpha1.InstallProgression{prog("p", F, addonstatus.ReasonUpgradeFailed, now)},
			want: []Transition{{Placement: "ns/p", Result: addonstatus.ReasonUpgradeFailed, Failed: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Transitions(tc.old, tc.new, now)); diff != "" {
				t.Errorf("Transitions (-want +got):\n%s", diff)
			}
		})
	}
}

// The reasons shared with mcastatus must stay spelled alike, or the metrics would see nothing.
func TestObserveProgressions(t *testing.T) {
	old := []addonv1alpha1.InstallProgression{prog("p", metav1.ConditionTrue, addonstatus.ReasonRollingBack, t0)}
	new := []addonv1alpha1.InstallProgression{prog("p", metav1.ConditionFalse, addonstatus.ReasonRollbackFailed, t0)}
	ObserveProgressions("observe-test", old, new, t0.Add(20*time.Second))
	got := gather(t, prometheus.Gatherers{registryOf(rolloutDuration, rolloutFailures, rollbacks)})
	for _, want := range []string{
		`addonops_rollout_failures_total{addon="observe-test",placement="ns/p"} 1`,
		`addonops_rollbacks_total{addon="observe-test",placement="ns/p"} 1`,
		`addonops_rollout_duration_seconds_count{addon="observe-test",placement="ns/p",result="RollbackFailed"} 1`,
		`addonops_rollout_duration_seconds_sum{addon="observe-test",placement="ns/p",result="RollbackFailed"} 20`,
	} {
		if !got[want] {
			t.Errorf("missing sample %s in\n%v", want, got)
		}
	}
}

func TestCollector(t *testing.T) {
	snap := Snapshot{
		Clusters:    []ClusterCount{{Addon: "a", Placement: "ns/p", State: "Upgrading", Count: 3}},
		Placements:  []PlacementGauges{{Addon: "a", Placement: "ns/p", MaxConcurrency: 2, PastDeadline: 1}},
		ConfigKinds: []ConfigKind{{Group: "example.io", Resource: "widgets", Forbidden: true}, {Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs"}},
	}
	c := NewCollector(func() Snapshot { return snap })
	reg := registryOf(c)
	got := gather(t, reg)
	for _, want := range []string{
		`addonops_rollout_clusters{addon="a",placement="ns/p",state="Upgrading"} 3`,
		`addonops_rollout_max_concurrency{addon="a",placement="ns/p"} 2`,
		`addonops_rollout_clusters_past_deadline{addon="a",placement="ns/p"} 1`,
		`addonops_config_kind_forbidden{group="example.io",resource="widgets"} 1`,
		`addonops_config_kind_forbidden{group="addon.open-cluster-management.io",resource="addondeploymentconfigs"} 0`,
	} {
		if !got[want] {
			t.Errorf("missing sample %s in\n%v", want, got)
		}
	}
	if len(got) != 5 {
		t.Errorf("%d samples, want 5: %v", len(got), got)
	}
	// Computed at every scrape: a change shows at once and a vanished state disappears.
	snap = Snapshot{Clusters: []ClusterCount{{Addon: "a", Placement: "ns/p", State: "UpgradeSucceed", Count: 3}}}
	got = gather(t, reg)
	if !got[`addonops_rollout_clusters{addon="a",placement="ns/p",state="UpgradeSucceed"} 3`] || len(got) != 1 {
		t.Errorf("got %v", got)
	}
}

func TestPastDeadline(t *testing.T) {
	now := t0.Add(10 * time.Minute)
	mca := func(status metav1.ConditionStatus, reason string, since time.Time) *addonv1alpha1.ManagedClusterAddOn {
		return &addonv1alpha1.ManagedClusterAddOn{Status: addonv1alpha1.ManagedClusterAddOnStatus{Conditions: []metav1.Condition{
			{Type: "Progressing", Status: status, Reason: reason, LastTransitionTime: metav1.NewTime(since)}}}}
	}
	T, F := metav1.ConditionTrue, metav1.ConditionFalse
	for _, tc := range []struct {
		name     string
		mca      *addonv1alpha1.ManagedClusterAddOn
		deadline time.Duration
		want     bool
	}{
		{"upgrading past the deadline", mca(T, addonstatus.ReasonUpgrading, t0), 5 * time.Minute, true},
		{"installing past the deadline", mca(T, addonstatus.ReasonInstalling, t0), 5 * time.Minute, true},
		{"rolling back past the deadline", mca(T, addonstatus.ReasonRollingBack, t0), 5 * time.Minute, true},
		{"upgrading within the deadline", mca(T, addonstatus.ReasonUpgrading, t0), 15 * time.Minute, false},
		{"exactly at the deadline", mca(T, addonstatus.ReasonUpgrading, t0), 10 * time.Minute, false},
		{"no deadline", mca(T, addonstatus.ReasonUpgrading, t0), 0, false},
		{"failed long ago is not in flight", mca(F, addonstatus.ReasonUpgradeFailed, t0), time.Minute, false},
		{"succeeded long ago", mca(F, addonstatus.ReasonUpgradeSucceed, t0), time.Minute, false},
		{"waiting is not in flight", mca(T, addonstatus.ReasonWaitingForCanary, t0), time.Minute, false},
		{"no MCA", nil, time.Minute, false},
	} {
		if got := PastDeadline(tc.mca, tc.deadline, now); got != tc.want {
			t.Errorf("%s: PastDeadline = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestStateOf(t *testing.T) {
	if got := StateOf(nil); got != StateNotInstalled {
		t.Errorf("no MCA: %q", got)
	}
	m := &addonv1alpha1.ManagedClusterAddOn{}
	if got := StateOf(m); got != StateUnknown {
		t.Errorf("no condition: %q", got)
	}
	m.Status.Conditions = []metav1.Condition{{Type: "Progressing", Status: metav1.ConditionTrue, Reason: "Upgrading"}}
	if got := StateOf(m); got != "Upgrading" {
		t.Errorf("upgrading: %q", got)
	}
}

func registryOf(cs ...prometheus.Collector) *prometheus.Registry {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(cs...)
	return reg
}

// gather renders every sample as `name{labels} value`.
func gather(t *testing.T, g prometheus.Gatherer) map[string]bool {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := ""
			for i, l := range m.GetLabel() {
				if i > 0 {
					labels += ","
				}
				labels += l.GetName() + "=\"" + l.GetValue() + "\""
			}
			switch {
			case m.GetCounter() != nil:
				out[mf.GetName()+"{"+labels+"} "+fmtFloat(m.GetCounter().GetValue())] = true
			case m.GetGauge() != nil:
				out[mf.GetName()+"{"+labels+"} "+fmtFloat(m.GetGauge().GetValue())] = true
			case m.GetHistogram() != nil:
				out[mf.GetName()+"_count{"+labels+"} "+fmtFloat(float64(m.GetHistogram().GetSampleCount()))] = true
				out[mf.GetName()+"_sum{"+labels+"} "+fmtFloat(m.GetHistogram().GetSampleSum())] = true
			}
		}
	}
	return out
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
