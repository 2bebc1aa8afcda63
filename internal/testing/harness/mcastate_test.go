package harness

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
)

// state is the state of addon's MCA in cluster, its configs given as "<namespace>/<name>".
func state(addon, cluster, desired, applied, reason string) MCAState {
	s := MCAState{Addon: addon, Cluster: cluster, Progressing: reason}
	s.DesiredADCNamespace, s.DesiredADC, _ = strings.Cut(desired, "/")
	s.AppliedADCNamespace, s.AppliedADC, _ = strings.Cut(applied, "/")
	return s
}

func TestRecordedChanges(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ev := func(ms int, cluster, desired, applied, reason string) MCAStateEvent {
		return MCAStateEvent{At: at(ms), MCAState: state("a", cluster, desired, applied, reason)}
	}
	start := map[string]MCAState{
		"a/c1": state("a", "c1", "ns/old", "ns/old", "UpgradeSucceed"),
		"a/c2": state("a", "c2", "ns/old", "ns/old", "UpgradeSucceed"),
		"a/c3": state("a", "c3", "ns/bad", "ns/new", "UpgradeFailed"),
		"b/c1": state("b", "c1", "ns/new", "ns/x", "Upgrading"),
	}
	events := []MCAStateEvent{
		ev(1, "c1", "ns/new", "ns/old", "RollingBack"),
		ev(2, "c3", "ns/new", "ns/new", "RollingBack"), // never applied the bad version: busy all the same
		ev(3, "c1", "ns/new", "ns/new", "RollbackSucceeded"),
		ev(4, "c2", "ns/new", "ns/old", "RollingBack"),
		ev(5, "c3", "ns/new", "ns/new", "RollbackSucceeded"),
		ev(6, "c2", "ns/new", "ns/new", "RollbackSucceeded"),
	}
	clusters := []string{"c1", "c2", "c3"}
	if n, at := MovingInFlight(start, events, "a", "ns/new", clusters); n != 2 || !slices.Equal(at, []string{"c1", "c3"}) {
		t.Errorf("MovingInFlight = %d %v, want 2 [c1 c3] (add-on b's MCA does not count)", n, at)
	}
	if n, _ := MovingInFlight(start, events, "a", "other/new", clusters); n != 0 {
		t.Errorf("MovingInFlight to a config of another namespace = %d, want 0", n)
	}
	told := FirstTold(events, "a", "ns/new", []string{"c1", "c2"})
	if len(told) != 2 || !told["c1"].Equal(at(1)) || !told["c2"].Equal(at(4)) {
		t.Errorf("FirstTold = %v, want c1 at 1ms and c2 at 4ms (c3 is not asked for)", told)
	}
	latest := LatestOf(start, events, "a")
	if len(latest) != 3 || !latest["c2"].Runs("ns/new") || latest["c2"].Runs("other/new") || latest["c3"].Failed() {
		t.Errorf("LatestOf = %+v", latest)
	}
}

func TestDesiredMoves(t *testing.T) {
	ev := func(addon, cluster, desired string) MCAStateEvent {
		return MCAStateEvent{MCAState: state(addon, cluster, desired, "", "")}
	}
	start := map[string]MCAState{
		"a/c1": state("a", "c1", "ns/v1", "ns/v1", ""),
		"a/c2": state("a", "c2", "ns/v1", "ns/v1", ""),
		"b/c1": state("b", "c1", "ns/v1", "ns/v1", ""),
	}
	events := []MCAStateEvent{
		ev("a", "c1", "ns/v2"),
		ev("a", "c1", "ns/v2"), // a status change that does not move it
		ev("b", "c1", "ns/v2"), // another add-on
		ev("a", "c3", "ns/v1"), // first seen: not a move
		ev("a", "c3", "ns/v2"),
		ev("a", "c1", "ns/v1"), // told back
	}
	got := DesiredMoves(start, events, "a")
	want := map[string][]string{"c1": {"ns/v2", "ns/v1"}, "c3": {"ns/v2"}}
	if len(got) != len(want) {
		t.Fatalf("DesiredMoves = %v, want %v", got, want)
	}
	for c, w := range want {
		if !slices.Equal(got[c], w) {
			t.Errorf("DesiredMoves[%s] = %v, want %v (all: %v)", c, got[c], w, got)
		}
	}
}

func TestStateOf(t *testing.T) {
	m := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "c1"}}
	ref := func(ns, name string) *addonv1alpha1.ConfigSpecHash {
		return &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: ns, Name: name}}
	}
	m.Status.ConfigReferences = []addonv1alpha1.ConfigReference{
		{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addontemplates"},
			DesiredConfig: ref("", "tpl-b"), LastAppliedConfig: ref("", "tpl-a")},
		{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs"},
			DesiredConfig: ref("ns", "adc-b")},
	}
	m.Status.Conditions = []metav1.Condition{
		{Type: addonv1alpha1.ManagedClusterAddOnConditionProgressing, Status: metav1.ConditionTrue, Reason: "Upgrading"},
		{Type: addonv1alpha1.ManagedClusterAddOnConditionConfigured, Status: metav1.ConditionTrue, Reason: "ConfigurationsConfigured"},
		{Type: addonv1alpha1.ManagedClusterAddOnConditionAvailable, Status: metav1.ConditionFalse, Reason: "ProbeUnavailable"},
	}
	want := MCAState{Addon: "hello", Cluster: "c1", DesiredADC: "adc-b", DesiredADCNamespace: "ns", DesiredTpl: "tpl-b", AppliedTpl: "tpl-a",
		Progressing: "Upgrading", Configured: "True", Available: "False/ProbeUnavailable"}
	got := StateOf(m)
	if got != want {
		t.Fatalf("StateOf = %+v, want %+v", got, want)
	}
	if got.Desired() != "ns/adc-b" || got.Applied() != "" || got.Key() != "c1" || (MCAStateEvent{MCAState: got}).Key() != "hello/c1" {
		t.Errorf("Desired %q, Applied %q, Key %q", got.Desired(), got.Applied(), got.Key())
	}
	if s := got.String(); s != "c1: adc -→adc-b tpl tpl-a→tpl-b progressing=Upgrading configured=True available=False/ProbeUnavailable" {
		t.Errorf("String = %q", s)
	}
}
