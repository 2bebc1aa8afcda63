package rolloutplan

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
)

func TestInterim(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(5 * time.Second))
	upgrading := func(msg string) metav1.Condition {
		return metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionTrue, Reason: addonstatus.ReasonUpgrading, Message: msg, LastTransitionTime: t0}
	}
	succeeded := metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionFalse, Reason: addonstatus.ReasonUpgradeSucceed, Message: "upgrade completed", LastTransitionTime: t1}
	failed := metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionFalse, Reason: addonstatus.ReasonUpgradeFailed, Message: "upgrade failed: x", LastTransitionTime: t1}
	available := func(s metav1.ConditionStatus, reason string, at metav1.Time) metav1.Condition {
		return metav1.Condition{Type: addonstatus.ConditionAvailable, Status: s, Reason: reason, Message: reason, LastTransitionTime: at}
	}
	soak := func(s metav1.ConditionStatus, reason string, at metav1.Time) metav1.Condition {
		return metav1.Condition{Type: addonstatus.ConditionHealthSoak, Status: s, Reason: reason, LastTransitionTime: at}
	}
	applied := metav1.Condition{Type: addonstatus.ConditionManifestApplied, Status: metav1.ConditionTrue, Reason: "AddonManifestApplied", LastTransitionTime: t0}
	ref := func(desired, last string) addonv1alpha1.ConfigReference {
		r := addonv1alpha1.ConfigReference{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"},
			DesiredConfig: &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "ns", Name: desired}, SpecHash: desired + "-hash"}}
		if last != "" {
			r.LastAppliedConfig = &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "ns", Name: last}, SpecHash: last + "-hash"}
		}
		return r
	}
	st := func(refs []addonv1alpha1.ConfigReference, conds ...metav1.Condition) addonv1alpha1.ManagedClusterAddOnStatus {
		return addonv1alpha1.ManagedClusterAddOnStatus{ConfigReferences: refs, Conditions: conds}
	}
	busyRefs := []addonv1alpha1.ConfigReference{ref("b", "a")}
	doneRefs := []addonv1alpha1.ConfigReference{ref("b", "b")}
	written := st(busyRefs, upgrading("upgrading..."), applied, available(metav1.ConditionTrue, "ProbeAvailable", t0), soak(metav1.ConditionFalse, addonstatus.ReasonWorksNotReady, t0))
	waitingForDeployerMsg := "upgrading... " + addonstatus.MessageWaitingForDeployer

	cases := []struct {
		name          string
		written, next addonv1alpha1.ManagedClusterAddOnStatus
		ownsAvailable bool
		want          bool
	}{
		{"the soak starts: interim", written,
			st(busyRefs, upgrading("upgrading... soaking"), applied, available(metav1.ConditionTrue, "ProbeAvailable", t0), soak(metav1.ConditionTrue, addonstatus.ReasonSoaking, t1)), false, true},
		{"health not known yet for the new generation, as the prober: interim", written,
			st(busyRefs, upgrading("upgrading..."), applied, available(metav1.ConditionUnknown, "WorkNotApplied", t1), soak(metav1.ConditionFalse, addonstatus.ReasonWorksNotReady, t0)), true, true},
		{"the same, Available not ours: settled (it is someone else's to write)", written,
			st(busyRefs, upgrading("upgrading..."), applied, available(metav1.ConditionUnknown, "WorkNotApplied", t1), soak(metav1.ConditionFalse, addonstatus.ReasonWorksNotReady, t0)), false, false},
		{"unhealthy while under way, as the prober: interim (the rollout's deadline settles it)", written,
			st(busyRefs, upgrading("upgrading... waiting for it to be healthy: Available=False"), applied, available(metav1.ConditionFalse, "ProbeUnavailable", t1), soak(metav1.ConditionFalse, addonstatus.ReasonNotHealthy, t1)), true, true},
		{"Unknown turns True, as the prober: interim",
			st(busyRefs, upgrading("upgrading..."), applied, available(metav1.ConditionUnknown, "WorkNotApplied", t0)),
			st(busyRefs, upgrading("upgrading... soaking"), applied, available(metav1.ConditionTrue, "ProbeAvailable", t1), soak(metav1.ConditionTrue, addonstatus.ReasonSoaking, t1)), true, true},
		{"an add-on shown unhealthy recovers, as the prober: settled",
			st(busyRefs, upgrading("upgrading... waiting"), applied, available(metav1.ConditionFalse, "ProbeUnavailable", t0)),
			st(busyRefs, upgrading("upgrading... soaking"), applied, available(metav1.ConditionTrue, "ProbeAvailable", t1), soak(metav1.ConditionTrue, addonstatus.ReasonSoaking, t1)), true, false},
		{"done: settled", written,
			st(doneRefs, succeeded, applied, available(metav1.ConditionTrue, "ProbeAvailable", t0), soak(metav1.ConditionTrue, addonstatus.ReasonSoaked, t1)), true, false},
		{"failed: settled", written,
			st(busyRefs, failed, applied, available(metav1.ConditionFalse, "ProbeUnavailable", t1), soak(metav1.ConditionFalse, addonstatus.ReasonNotHealthy, t1)), true, false},
		{"no deployer reports: settled at once", written,
			st(busyRefs, upgrading(waitingForDeployerMsg), applied, available(metav1.ConditionTrue, "ProbeAvailable", t0), soak(metav1.ConditionFalse, addonstatus.ReasonWorksNotReady, t0)), false, false},
		{"a deployer reports again: settled at once",
			st(busyRefs, upgrading(waitingForDeployerMsg), available(metav1.ConditionTrue, "ProbeAvailable", t0)),
			st(busyRefs, upgrading("upgrading..."), available(metav1.ConditionTrue, "ProbeAvailable", t0)), false, false},
		{"another condition changes: settled", written,
			st(busyRefs, upgrading("upgrading..."), available(metav1.ConditionTrue, "ProbeAvailable", t0), soak(metav1.ConditionFalse, addonstatus.ReasonWorksNotReady, t0)), true, false},
		{"last applied changes: settled", written,
			st(doneRefs, upgrading("upgrading..."), applied, available(metav1.ConditionTrue, "ProbeAvailable", t0), soak(metav1.ConditionFalse, addonstatus.ReasonWorksNotReady, t0)), true, false},
		{"a new attempt (Progressing turned again): settled", written,
			st(busyRefs, func() metav1.Condition { c := upgrading("upgrading..."); c.LastTransitionTime = t1; return c }(), applied,
				available(metav1.ConditionTrue, "ProbeAvailable", t0), soak(metav1.ConditionTrue, addonstatus.ReasonSoaking, t1)), false, false},
		{"not under way: settled, whatever changed",
			st(doneRefs, succeeded, applied, available(metav1.ConditionTrue, "ProbeAvailable", t0)),
			st(doneRefs, succeeded, applied, available(metav1.ConditionFalse, "ProbeUnavailable", t1)), true, false},
		{"condition order means nothing",
			st(busyRefs, applied, upgrading("upgrading...")),
			st(busyRefs, upgrading("upgrading... soaking"), applied, soak(metav1.ConditionTrue, addonstatus.ReasonSoaking, t1)), false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Interim(tc.written, tc.next, tc.ownsAvailable); got != tc.want {
				t.Fatalf("Interim = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAttempt(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC))
	mca := func(at metav1.Time, reason, desired string) *addonv1alpha1.ManagedClusterAddOn {
		return &addonv1alpha1.ManagedClusterAddOn{Status: addonv1alpha1.ManagedClusterAddOnStatus{
			Conditions: []metav1.Condition{{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionTrue, Reason: reason, LastTransitionTime: at}},
			ConfigReferences: []addonv1alpha1.ConfigReference{{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Resource: "addondeploymentconfigs"},
				DesiredConfig: &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Name: desired}, SpecHash: desired}}},
		}}
	}
	base := Attempt(mca(t0, addonstatus.ReasonUpgrading, "b"))
	if base != Attempt(mca(t0, addonstatus.ReasonUpgrading, "b")) {
		t.Fatal("the same MCA is another attempt")
	}
	for name, other := range map[string]*addonv1alpha1.ManagedClusterAddOn{
		"a retry (Progressing turned again)": mca(metav1.NewTime(t0.Add(time.Second)), addonstatus.ReasonUpgrading, "b"),
		"another version":                    mca(t0, addonstatus.ReasonUpgrading, "c"),
		"a rollback":                         mca(t0, addonstatus.ReasonRollingBack, "b"),
	} {
		if Attempt(other) == base {
			t.Errorf("%s: the same attempt", name)
		}
	}
}
