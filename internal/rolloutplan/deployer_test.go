package rolloutplan

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
)

// A rollout nobody deploys says so: after the deployer wait, the placement's message names the
// clusters without ManifestApplied and asks for an add-on manager, the decision reports them for
// the event, and both go away once a deployer reports.
func TestDeployerWait(t *testing.T) {
	w := newWorld(t)
	w.config("a")
	p := w.placement("aws", "a", all(), []string{"c1", "c2"})
	plan := w.step()
	w.expectStates("c1=a//T c2=a//T")
	if plan.RecheckAfter != DefaultDeployerWait {
		t.Fatalf("recheck after %v, want the deployer wait %v", plan.RecheckAfter, DefaultDeployerWait)
	}
	w.advance(time.Minute)
	if plan = w.step(); len(plan.DeployerWaits) != 0 || strings.Contains(ProgressingOf(w.progression(p)).Message, "deployer") {
		t.Fatalf("within the wait: %v, %q", plan.DeployerWaits, ProgressingOf(w.progression(p)).Message)
	}
	w.advance(time.Minute)
	plan = w.step()
	if !slices.Equal(plan.DeployerWaits, []string{"c1", "c2"}) {
		t.Fatalf("DeployerWaits = %v, want c1 c2", plan.DeployerWaits)
	}
	w.expectProgression(p, addonstatus.ReasonInstalling, "0/2 clusters done, 2 in progress, 0 failed, 0 timed out; 2 waiting for the add-on's deployer (no ManifestApplied): c1, c2; is an add-on manager deploying this add-on?", "a", "", "")
	// The progress tracker says it on the MCA.
	w.recheck("c1")
	if c := meta.FindStatusCondition(w.mcas["c1"].Status.Conditions, addonstatus.ConditionProgressing); c.Message != "installing... "+addonstatus.MessageWaitingForDeployer {
		t.Fatalf("c1 Progressing: %q", c.Message)
	}
	// A deployer shows up on c1.
	w.agent("c1", succeed)
	plan = w.step()
	if !slices.Equal(plan.DeployerWaits, []string{"c2"}) {
		t.Fatalf("DeployerWaits = %v, want c2", plan.DeployerWaits)
	}
	w.expectProgression(p, addonstatus.ReasonInstalling, "1/2 clusters done, 1 in progress, 0 failed, 0 timed out; 1 waiting for the add-on's deployer (no ManifestApplied): c2;", "a", "", "")
	w.agent("c2", succeed)
	plan = w.step()
	if len(plan.DeployerWaits) != 0 {
		t.Fatalf("DeployerWaits = %v after every deployer reported", plan.DeployerWaits)
	}
	w.expectProgression(p, addonstatus.ReasonInstallSucceed, "2/2 install completed with no errors.", "a", "a", "a")

	// MCAs no placement owns (Manual) are reported too; a shorter wait is the controller's option.
	w.cma.Spec.InstallStrategy.Type = StrategyManual
	w.cma.Spec.SupportedConfigs[0].DefaultConfig = &addonv1alpha1.ConfigReferent{Namespace: "default", Name: "a"}
	m := w.mca("c3")
	m.Labels = nil
	w.step()
	w.advance(10 * time.Second)
	in := w.input()
	in.DeployerWait = 10 * time.Second
	if plan := Decide(in); !slices.Equal(plan.DeployerWaits, []string{"c3"}) {
		t.Fatalf("Manual: DeployerWaits = %v, want c3", plan.DeployerWaits)
	}
}

func TestDeployerWaitEvent(t *testing.T) {
	many := []string{"c1", "c2", "c3", "c4", "c5", "c6", "c7"}
	cases := []struct {
		name     string
		waiting  []string
		told     bool
		wantEmit bool
		wantTold bool
		wantMsg  string
	}{
		{"nobody waits", nil, false, false, false, ""},
		{"an episode ends: told again next time", nil, true, false, false, ""},
		{"an episode begins", []string{"c1", "c2"}, false, true, true,
			"2 cluster(s) told to run their configs more than 2m0s ago have no ManifestApplied from any deployer: c1, c2; " + addonstatus.MessageWaitingForDeployer},
		{"once per episode, however it grows", many, true, false, true, ""},
		{"long lists are cut", many, false, true, true, "c1, c2, c3, c4, c5 and 2 more;"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev, emit, told := DeployerWaitEvent(tc.waiting, tc.told, 0)
			if emit != tc.wantEmit || told != tc.wantTold || !strings.Contains(ev.Message, tc.wantMsg) {
				t.Fatalf("DeployerWaitEvent = %+v %v %v, want emit %v told %v message containing %q", ev, emit, told, tc.wantEmit, tc.wantTold, tc.wantMsg)
			}
			if emit && (!ev.Warning || ev.Reason != addonstatus.ReasonWaitingForDeployer) {
				t.Fatalf("event %+v, want a Warning %s", ev, addonstatus.ReasonWaitingForDeployer)
			}
		})
	}
	if ev, _, _ := DeployerWaitEvent([]string{"c1"}, false, 30*time.Second); !strings.Contains(ev.Message, "more than 30s ago") {
		t.Fatalf("event with the controller's wait: %q", ev.Message)
	}
}
