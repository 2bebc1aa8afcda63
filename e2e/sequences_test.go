package e2e

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/addonops/addonops/internal/testing/stepcheck"
)

// The suite's verdicts come from these functions over recorded changes; they are tested here on
// made-up sequences, including the ones that must fail.

func snap(cluster, desired, applied, reason string) mcaSnap {
	return mcaSnap{Cluster: cluster, DesiredADC: desired, AppliedADC: applied, Progressing: reason}
}

func TestReasonsOf(t *testing.T) {
	start := map[string]mcaSnap{"c1": snap("c1", "a", "a", "InstallSucceed")}
	events := []mcaSnap{
		snap("c2", "b", "", "Installing"),
		snap("c1", "b", "a", "Upgrading"),
		snap("c1", "b", "a", "Upgrading"),
		snap("c1", "b", "a", ""),
		snap("c1", "b", "b", "UpgradeSucceed"),
	}
	reason := func(m mcaSnap) string { return m.Progressing }
	for _, tc := range []struct {
		cluster string
		want    []string
	}{
		{"c1", []string{"InstallSucceed", "Upgrading", "UpgradeSucceed"}},
		{"c2", []string{"Installing"}},
		{"c3", nil},
	} {
		if got := reasonsOf(start, events, tc.cluster, reason); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.cluster, got, tc.want)
		}
	}
	if got, want := onlyValues([]string{"PlacementNotFound", "Installing", "ConfigurationNotFound", "Installing", "InstallSucceed"}, seedReasons...),
		[]string{"Installing", "InstallSucceed"}; !slices.Equal(got, want) {
		t.Errorf("onlyValues: %v, want %v", got, want)
	}
}

func TestInFlight(t *testing.T) {
	start := map[string]mcaSnap{"c1": snap("c1", "a", "a", ""), "c2": snap("c2", "a", "a", ""), "c3": snap("c3", "a", "a", "")}
	oneAtATime := []mcaSnap{
		snap("c1", "b", "a", ""), snap("c1", "b", "b", ""),
		snap("c2", "b", "a", ""), snap("c2", "b", "b", ""),
		snap("c3", "b", "a", ""), snap("c3", "b", "b", ""),
	}
	allAtOnce := []mcaSnap{
		snap("c1", "b", "a", ""), snap("c2", "b", "a", ""), snap("c3", "b", "a", ""),
		snap("c2", "b", "b", ""), snap("c1", "b", "b", ""), snap("c3", "b", "b", ""),
	}
	overlapping := []mcaSnap{
		snap("c1", "b", "a", ""), snap("c2", "b", "a", ""), snap("c1", "b", "b", ""),
		snap("c3", "b", "a", ""), snap("c2", "b", "b", ""), snap("c3", "b", "b", ""),
	}
	all := []string{"c1", "c2", "c3"}
	for _, tc := range []struct {
		name     string
		events   []mcaSnap
		clusters []string
		want     int
	}{
		{"one at a time", oneAtATime, all, 1},
		{"all at once", allAtOnce, all, 3},
		{"two overlap", overlapping, all, 2},
		{"subset", allAtOnce, []string{"c3"}, 1},
		{"nothing moves", nil, all, 0},
	} {
		if got, _ := inFlight(start, tc.events, tc.clusters, "b"); got != tc.want {
			t.Errorf("%s: %d in flight, want %d", tc.name, got, tc.want)
		}
	}
}

func TestFirstWhen(t *testing.T) {
	start := map[string]mcaSnap{"c1": snap("c1", "a", "a", ""), "c2": snap("c2", "a", "a", ""), "c3": snap("c3", "a", "a", "")}
	gated := []mcaSnap{snap("c1", "b", "a", ""), snap("c1", "b", "b", ""), snap("c3", "b", "a", ""), snap("c3", "b", "b", "")}
	early := []mcaSnap{snap("c1", "b", "a", ""), snap("c3", "b", "a", ""), snap("c1", "b", "b", ""), snap("c3", "b", "b", "")}
	canary, others := []string{"c1"}, []string{"c2", "c3"}
	for _, tc := range []struct {
		name             string
		events           []mcaSnap
		wantDone, wantTo int
	}{
		{"canary first", gated, 1, 2},
		{"others too early", early, 2, 1},
	} {
		done := firstWhen(start, tc.events, allApplied(canary, "b"))
		told := firstWhen(start, tc.events, anyTold(others, "b"))
		if done != tc.wantDone || told != tc.wantTo {
			t.Errorf("%s: canary done at %d, others told at %d; want %d, %d", tc.name, done, told, tc.wantDone, tc.wantTo)
		}
	}
	if got := firstWhen(start, gated, allApplied(others, "b")); got != len(gated) {
		t.Errorf("never: %d, want %d", got, len(gated))
	}
	if got := firstWhen(start, gated, allApplied(others, "a")); got != -1 {
		t.Errorf("at the start: %d, want -1", got)
	}
}

func TestContains(t *testing.T) {
	got := map[string]any{"a": 1, "b": map[string]any{"c": "x", "d": true}, "l": []any{map[string]any{"n": "1", "extra": 2}, "s"}}
	for _, tc := range []struct {
		name string
		want any
		ok   bool
		path string
	}{
		{"subset", map[string]any{"b": map[string]any{"c": "x"}, "l": []any{map[string]any{"n": "1"}, "s"}}, true, ""},
		{"empty map", map[string]any{"b": map[string]any{}}, true, ""},
		{"number types", map[string]any{"a": 1.0}, true, ""},
		{"different value", map[string]any{"b": map[string]any{"c": "y"}}, false, `.b.c ("x", want "y")`},
		{"missing key", map[string]any{"z": "v"}, false, `.z (null, want "v")`},
		{"shorter list", map[string]any{"l": []any{map[string]any{"n": "1"}}}, false, ".l (2 items, want 1)"},
	} {
		path, ok := contains(got, tc.want, "")
		if ok != tc.ok || path != tc.path {
			t.Errorf("%s: (%q, %v), want (%q, %v)", tc.name, path, ok, tc.path, tc.ok)
		}
	}
}

func TestPerCluster(t *testing.T) {
	dep := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "agent"},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"serviceAccountName": "sa"}}}}
	crb := map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": map[string]any{"name": "agent"},
		"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "sa"}, map[string]any{"kind": "User", "name": "u"}}}
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm"}}
	for _, o := range []map[string]any{dep, crb, cm} {
		perCluster(o, "-c1")
	}
	check := func(o map[string]any, want string, fields ...string) {
		t.Helper()
		if got, _, _ := unstructured.NestedString(o, fields...); got != want {
			t.Errorf("%v: %q, want %q", fields, got, want)
		}
	}
	check(dep, "agent-c1", "metadata", "name")
	check(dep, "sa-c1", "spec", "template", "spec", "serviceAccountName")
	check(crb, "agent-c1", "metadata", "name")
	check(cm, "cm", "metadata", "name")
	subjects, _, _ := unstructured.NestedSlice(crb, "subjects")
	if subjects[0].(map[string]any)["name"] != "sa-c1" || subjects[1].(map[string]any)["name"] != "u" {
		t.Errorf("subjects %v: only the ServiceAccount is renamed", subjects)
	}
}

func TestStepCheckInputs(t *testing.T) {
	events := []mcaSnap{snap("c2", "bad", "good", "Upgrading"), snap("c1", "bad", "good", "Upgrading"), snap("c2", "bad", "good", "UpgradeFailed"), snap("c3", "good", "good", "UpgradeSucceed")}
	if got := toldADC(events, "bad"); !slices.Equal(got, []string{"c1", "c2"}) {
		t.Errorf("toldADC = %v, want [c1 c2]", got)
	}
	latest := map[string]mcaSnap{"c1": snap("c1", "bad", "good", "Upgrading"), "c2": snap("c2", "bad", "good", "UpgradeFailed"), "c4": snap("c4", "x", "", "InstallFailed")}
	if got := failedOf(latest); !slices.Equal(got, []string{"c2", "c4"}) {
		t.Errorf("failedOf = %v, want [c2 c4]", got)
	}
}

func TestRollbackCheck(t *testing.T) {
	// c1 never applied the bad version: told good again, it is busy (RollingBack) until healthy,
	// and counts as moving although it last applied good; c2 failed and is not moving.
	mstart := map[string]mcaSnap{"c1": snap("c1", "bad", "good", "UpgradeFailed"), "c2": snap("c2", "good", "good", "UpgradeSucceed"), "c3": snap("c3", "bad", "good", "UpgradeFailed")}
	one := []mcaSnap{
		snap("c1", "good", "good", "UpgradeFailed"), snap("c1", "good", "good", "RollingBack"), snap("c1", "good", "good", "RollbackSucceeded"),
		snap("c3", "good", "good", "RollingBack"), snap("c3", "good", "good", "RollbackSucceeded"),
	}
	two := []mcaSnap{
		snap("c1", "good", "good", "RollingBack"), snap("c3", "good", "good", "RollingBack"),
		snap("c1", "good", "good", "RollbackSucceeded"), snap("c3", "good", "good", "RollbackSucceeded"),
	}
	cstart := map[string]progSnap{"p": {Placement: "p", Reason: "UpgradeFailed"}}
	done := []progSnap{{Placement: "p", Reason: "RollingBack"}, {Placement: "q", Reason: "WaitingForCanary"}, {Placement: "p", Reason: "RollbackSucceeded"}}
	waited := []progSnap{{Placement: "p", Reason: "WaitingForCanary"}, {Placement: "p", Reason: "RollingBack"}, {Placement: "p", Reason: "RollbackSucceeded"}}
	owned := []string{"c1", "c2", "c3"}
	for _, tc := range []struct {
		name    string
		mevents []mcaSnap
		cevents []progSnap
		want    stepcheck.RollbackCheck
		ok      bool
	}{
		{"one at a time", one, done, stepcheck.RollbackCheck{Placement: "p", Version: "good", Since: "s", Reason: "RollbackSucceeded", Clusters: 3, MaxInFlight: 1, Limit: 1}, true},
		{"two at once", two, done, stepcheck.RollbackCheck{Placement: "p", Version: "good", Since: "s", Reason: "RollbackSucceeded", Clusters: 3, MaxInFlight: 2, Limit: 1}, false},
		{"waited for the canary", one, waited, stepcheck.RollbackCheck{Placement: "p", Version: "good", Since: "s", Reason: "RollbackSucceeded", WaitedForCanary: true, Clusters: 3, MaxInFlight: 1, Limit: 1}, false},
		{"not a rollback", one, nil, stepcheck.RollbackCheck{Placement: "p", Version: "good", Since: "s", Reason: "UpgradeFailed", Clusters: 3, MaxInFlight: 1, Limit: 1}, false},
	} {
		got := rollbackCheck("p", "", "good", "s", owned, 1, mstart, tc.mevents, cstart, tc.cevents)
		if got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
		if ok, why := stepcheck.Rollbacks([]stepcheck.RollbackCheck{got}, nil); ok != tc.ok {
			t.Errorf("%s: Rollbacks = %v (%s), want %v", tc.name, ok, why, tc.ok)
		}
	}
}
