package rolloutplan

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
)

func TestWaitingForDeployer(t *testing.T) {
	configured := cond(addonstatus.ConditionConfigured, "True", addonstatus.ReasonConfigured, t0)
	held := cond(addonstatus.ConditionConfigured, "False", addonstatus.ReasonNotConfigured, t0)
	installing := cond(addonstatus.ConditionProgressing, "True", addonstatus.ReasonInstalling, t0)
	upgrading := cond(addonstatus.ConditionProgressing, "True", addonstatus.ReasonUpgrading, t0)
	failed := cond(addonstatus.ConditionProgressing, "False", addonstatus.ReasonInstallFailed, t0)
	succeeded := cond(addonstatus.ConditionProgressing, "False", addonstatus.ReasonInstallSucceed, t0)
	applied := cond(addonstatus.ConditionManifestApplied, "True", "AddonManifestApplied", t0)
	applyFailed := cond(addonstatus.ConditionManifestApplied, "False", "ManifestWorkApplyFailed", t0)
	refs := []addonv1alpha1.ConfigReference{ref(&a1, nil)}
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }
	cases := []struct {
		name        string
		m           *addonv1alpha1.ManagedClusterAddOn
		grace       time.Duration
		now         metav1.Time
		want        bool
		wantRecheck time.Duration
	}{
		{"just told to install: look again when the wait is over", mca(refs, configured, installing), 0, at(30 * time.Second), false, DefaultDeployerWait - 30*time.Second},
		{"the wait is over: waiting for a deployer", mca(refs, configured, installing), 0, at(DefaultDeployerWait), true, 0},
		{"long after", mca(refs, configured, upgrading), 0, at(time.Hour), true, 0},
		{"a shorter wait (--deployer-wait)", mca(refs, configured, installing), 10 * time.Second, at(10 * time.Second), true, 0},
		{"a deployer reported True", mca(refs, configured, installing, applied), 0, at(time.Hour), false, 0},
		// False is a deployer's failure (DeployerGrace), not a missing deployer.
		{"a deployer reported False", mca(refs, configured, installing, applyFailed), 0, at(time.Hour), false, 0},
		{"held for its turn: nobody should deploy yet", mca(refs, held, installing), 0, at(time.Hour), false, 0},
		{"failed already (progressDeadline)", mca(refs, configured, failed), 0, at(time.Hour), false, 0},
		{"done: nothing to wait for", mca(refs, configured, succeeded), 0, at(time.Hour), false, 0},
		{"not started", mca(nil), 0, at(time.Hour), false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, recheck := WaitingForDeployer(tc.m, tc.grace, tc.now)
			if got != tc.want || recheck != tc.wantRecheck {
				t.Fatalf("WaitingForDeployer = %v, %v; want %v, %v", got, recheck, tc.want, tc.wantRecheck)
			}
		})
	}
}

// The message goes away as soon as a deployer reports, and the wait is the gate's.
func TestProgressDeployerWait(t *testing.T) {
	m := mca([]addonv1alpha1.ConfigReference{ref(&a1, nil)}, cond(addonstatus.ConditionConfigured, "True", addonstatus.ReasonConfigured, t0),
		cond(addonstatus.ConditionProgressing, "True", addonstatus.ReasonInstalling, t0))
	gate := Gate{Checked: true, Soak: DefaultHealthSoak, DeployerWait: 5 * time.Second}
	st, recheck := Progress(m, nil, gate, metav1.NewTime(t0.Add(2*time.Second)))
	if c := meta.FindStatusCondition(st.Conditions, addonstatus.ConditionProgressing); c.Message != addonstatus.MessageInstalling || recheck != 3*time.Second {
		t.Fatalf("before the wait: %q, recheck %v", c.Message, recheck)
	}
	m.Status = st
	st, _ = Progress(m, nil, gate, metav1.NewTime(t0.Add(5*time.Second)))
	c := meta.FindStatusCondition(st.Conditions, addonstatus.ConditionProgressing)
	if !strings.HasSuffix(c.Message, addonstatus.MessageWaitingForDeployer) || !c.LastTransitionTime.Equal(&t0) {
		t.Fatalf("after the wait: %+v", c)
	}
	m.Status = st
	if !addonstatus.WaitingForDeployer(m) {
		t.Fatal("addonstatus.WaitingForDeployer does not recognise the message")
	}
	m.Status.Conditions = append(m.Status.Conditions, cond(addonstatus.ConditionManifestApplied, "True", "AddonManifestApplied", t1))
	st, _ = Progress(m, nil, gate, metav1.NewTime(t0.Add(6*time.Second)))
	if c := meta.FindStatusCondition(st.Conditions, addonstatus.ConditionProgressing); c.Message != addonstatus.MessageInstalling {
		t.Fatalf("after a deployer reported: %q", c.Message)
	}
	m.Status = st
	if addonstatus.WaitingForDeployer(m) {
		t.Fatal("still waiting for a deployer after ManifestApplied")
	}
}
