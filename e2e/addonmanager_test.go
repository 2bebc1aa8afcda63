package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
)

// The addonops controller in its default mode: OCM's own addon-manager renders the AddOnTemplate
// into ManifestWorks, registers the agents and writes health; the controller (controller.New and
// Run only, no --deploy-templates) paces the rollout through desired configs and Configured.

// templateInFlight is how many of clusters were upgrading to tpl at once, at most, over the step
// (state at start, then after each event), and one moment with that many: told to run tpl and not
// yet UpgradeSucceed with it (the controller counts a cluster done only once it is healthy).
func templateInFlight(start map[string]mcaSnap, events []mcaSnap, clusters []string, tpl string) (int, []string) {
	state := map[string]mcaSnap{}
	for k, v := range start {
		state[k] = v
	}
	busy := func() []string {
		var out []string
		for _, c := range clusters {
			if s := state[c]; s.DesiredTpl == tpl && !(s.AppliedTpl == tpl && s.Progressing == upgradeSucceed) {
				out = append(out, c)
			}
		}
		return out
	}
	most := busy()
	for _, e := range events {
		state[e.Cluster] = e
		if b := busy(); len(b) > len(most) {
			most = b
		}
	}
	return len(most), most
}

// condSnap is one condition of one of the add-on's MCAs, with its message: what the test reads to
// tell a failure's cause.
type condSnap struct{ Cluster, Type, Status, Reason, Message string }

func (c condSnap) Key() string { return c.Cluster + "/" + c.Type }

func (c condSnap) String() string {
	return fmt.Sprintf("%s: %s=%s %s: %s", c.Cluster, c.Type, c.Status, c.Reason, c.Message)
}

// workConflict is how OCM's add-on deployer words a ManifestWork update that lost a race with
// another writer of the work (addon-framework agentdeploy, ManifestWorkApplyFailed); it retries.
const workConflict = "Operation cannot be fulfilled on manifestworks.work.open-cluster-management.io"

// failuresOf returns the *Failed Progressing reasons in events.
func failuresOf(events []condSnap) []condSnap {
	var out []condSnap
	for _, e := range events {
		if e.Type == addonv1alpha1.ManagedClusterAddOnConditionProgressing && strings.HasSuffix(e.Reason, "Failed") {
			out = append(out, e)
		}
	}
	return out
}

func TestToldWithoutWaiting(t *testing.T) {
	cls := []string{"c1", "c2"}
	start := map[string]mcaSnap{
		"c1": {Cluster: "c1", DesiredTpl: "a", AppliedTpl: "a", Progressing: installSucceed, Configured: "True"},
		"c2": {Cluster: "c2", DesiredTpl: "a", AppliedTpl: "a", Progressing: installSucceed, Configured: "True"},
	}
	told := func(c string) mcaSnap {
		return mcaSnap{Cluster: c, DesiredTpl: "b", AppliedTpl: "a", Progressing: upgrading, Configured: "True"}
	}
	waiting := func(c string) mcaSnap {
		return mcaSnap{Cluster: c, DesiredTpl: "a", AppliedTpl: "a", Progressing: installSucceed, Configured: "False"}
	}
	for _, tc := range []struct {
		name   string
		events []mcaSnap
		want   []string
	}{
		{"the second waited", []mcaSnap{told("c1"), waiting("c2"), told("c2")}, nil},
		{"the second never waited", []mcaSnap{told("c1"), told("c2")}, []string{"c2"}},
		{"waited before the first was told", []mcaSnap{waiting("c2"), told("c1"), told("c2")}, nil},
	} {
		if got := toldWithoutWaiting(start, tc.events, cls, "b"); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func tplSnap(cluster, desired, applied, reason string) mcaSnap {
	return mcaSnap{Cluster: cluster, DesiredTpl: desired, AppliedTpl: applied, Progressing: reason}
}

func TestTemplateInFlight(t *testing.T) {
	cls := []string{"c1", "c2", "c3"}
	start := map[string]mcaSnap{}
	for _, c := range cls {
		start[c] = tplSnap(c, "a", "a", installSucceed)
	}
	for _, tc := range []struct {
		name   string
		events []mcaSnap
		want   int
	}{
		{"one at a time", []mcaSnap{
			tplSnap("c1", "b", "a", upgrading), tplSnap("c1", "b", "b", upgradeSucceed),
			tplSnap("c2", "b", "a", upgrading), tplSnap("c2", "b", "b", upgradeSucceed),
			tplSnap("c3", "b", "a", upgrading), tplSnap("c3", "b", "b", upgradeSucceed),
		}, 1},
		// Applied but not yet healthy is still in flight: the next one must not start.
		{"next told before the previous succeeded", []mcaSnap{
			tplSnap("c1", "b", "a", upgrading), tplSnap("c1", "b", "b", upgrading),
			tplSnap("c2", "b", "a", upgrading), tplSnap("c1", "b", "b", upgradeSucceed),
		}, 2},
		{"all at once", []mcaSnap{
			tplSnap("c1", "b", "a", upgrading), tplSnap("c2", "b", "a", upgrading), tplSnap("c3", "b", "a", upgrading),
		}, 3},
		{"nothing happened", nil, 0},
	} {
		if got, when := templateInFlight(start, tc.events, cls, "b"); got != tc.want {
			t.Errorf("%s: %d in flight (%v), want %d", tc.name, got, when, tc.want)
		}
	}
}

func TestFailuresOf(t *testing.T) {
	events := []condSnap{
		{"c1", "Progressing", "True", "Upgrading", "upgrading..."},
		{"c2", "ManifestApplied", "False", "ManifestWorkApplyFailed", workConflict},
		{"c3", "Progressing", "False", "UpgradeFailed", "upgrade failed: work addon-hello-template-deploy-0 reports Applied=False"},
		{"c3", "Progressing", "False", "InstallFailed", "install failed"},
	}
	if got := failuresOf(events); len(got) != 2 || got[0].Cluster != "c3" || got[1].Cluster != "c3" {
		t.Errorf("failures = %v, want c3's two: a deployer's ManifestApplied=False is not one", got)
	}
}

// toldWithoutWaiting returns the clusters, other than the first one told to run tpl, that were told
// without having been Configured=False with their old template during the step: how OCM's
// deployer is kept from moving a waiting cluster (reference: Configured gates template add-ons).
func toldWithoutWaiting(start map[string]mcaSnap, events []mcaSnap, clusters []string, tpl string) []string {
	waited := map[string]bool{}
	told := map[string]bool{}
	note := func(s mcaSnap) {
		if s.DesiredTpl != tpl && s.Configured == "False" {
			waited[s.Cluster] = true
		}
	}
	for _, s := range start {
		note(s)
	}
	var first string
	var out []string
	for _, e := range events {
		note(e)
		if e.DesiredTpl != tpl || told[e.Cluster] || !slices.Contains(clusters, e.Cluster) {
			continue
		}
		told[e.Cluster] = true
		if first == "" {
			first = e.Cluster
			continue
		}
		if !waited[e.Cluster] {
			out = append(out, e.Cluster)
		}
	}
	return out
}
