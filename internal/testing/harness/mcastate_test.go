package harness

import (
	"slices"
	"testing"
	"time"
)

func TestRecordedChanges(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ev := func(ms int, cluster, desired, applied, reason string) MCAStateEvent {
		return MCAStateEvent{At: at(ms), MCAState: MCAState{Addon: "a", Cluster: cluster, Desired: desired, Applied: applied, Reason: reason}}
	}
	start := map[string]MCAState{
		"a/c1": {Addon: "a", Cluster: "c1", Desired: "ns/old", Applied: "ns/old", Reason: "UpgradeSucceed"},
		"a/c2": {Addon: "a", Cluster: "c2", Desired: "ns/old", Applied: "ns/old", Reason: "UpgradeSucceed"},
		"a/c3": {Addon: "a", Cluster: "c3", Desired: "ns/bad", Applied: "ns/new", Reason: "UpgradeFailed"},
		"b/c1": {Addon: "b", Cluster: "c1", Desired: "ns/new", Applied: "ns/x", Reason: "Upgrading"},
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
	told := FirstTold(events, "a", "ns/new", []string{"c1", "c2"})
	if len(told) != 2 || !told["c1"].Equal(at(1)) || !told["c2"].Equal(at(4)) {
		t.Errorf("FirstTold = %v, want c1 at 1ms and c2 at 4ms (c3 is not asked for)", told)
	}
	latest := LatestOf(start, events, "a")
	if len(latest) != 3 || !latest["c2"].Runs("ns/new") || latest["c3"].Failed() {
		t.Errorf("LatestOf = %+v", latest)
	}
}
