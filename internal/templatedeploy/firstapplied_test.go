package templatedeploy

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
)

func TestFirstApplied(t *testing.T) {
	cond := func(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: "m"}
	}
	progressing := func(status metav1.ConditionStatus, reason string) metav1.Condition {
		return cond(addonstatus.ConditionProgressing, status, reason)
	}
	appliedTrue := cond(ConditionManifestApplied, metav1.ConditionTrue, ReasonApplied)
	appliedFalse := cond(ConditionManifestApplied, metav1.ConditionFalse, ReasonAppliedFailed)
	installing := progressing(metav1.ConditionTrue, addonstatus.Install.BusyReason())
	st := func(conds ...metav1.Condition) addonv1alpha1.ManagedClusterAddOnStatus {
		return addonv1alpha1.ManagedClusterAddOnStatus{Conditions: conds}
	}
	cases := []struct {
		name      string
		cur, next addonv1alpha1.ManagedClusterAddOnStatus
		want      bool
	}{
		{"first True while installing", st(installing), st(installing, appliedTrue), true},
		{"first True while upgrading", st(progressing(metav1.ConditionTrue, addonstatus.Upgrade.BusyReason())),
			st(progressing(metav1.ConditionTrue, addonstatus.Upgrade.BusyReason()), appliedTrue), true},
		{"first True once done", st(progressing(metav1.ConditionFalse, addonstatus.Install.DoneReason())),
			st(progressing(metav1.ConditionFalse, addonstatus.Install.DoneReason()), appliedTrue), false},
		{"first True after a failure", st(progressing(metav1.ConditionFalse, addonstatus.Install.FailedReason())),
			st(progressing(metav1.ConditionFalse, addonstatus.Install.FailedReason()), appliedTrue), false},
		{"first True without Progressing", st(), st(appliedTrue), false},
		{"first False", st(installing), st(installing, appliedFalse), false},
		{"True after False", st(installing, appliedFalse), st(installing, appliedTrue), false},
		{"True with another change", st(installing), st(installing, appliedTrue, cond(ConditionHookManifestComplete, metav1.ConditionTrue, "r")), false},
		{"True and a changed field", st(installing), addonv1alpha1.ManagedClusterAddOnStatus{Conditions: []metav1.Condition{installing, appliedTrue}, Namespace: "x"}, false},
		{"nothing changes", st(installing, appliedTrue), st(installing, appliedTrue), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := FirstApplied(tc.cur, tc.next)
			if ok != tc.want {
				t.Fatalf("FirstApplied = %v, want %v", ok, tc.want)
			}
			if ok && (got.Type != ConditionManifestApplied || got.Status != metav1.ConditionTrue) {
				t.Errorf("returned %+v, want the ManifestApplied=True condition", got)
			}
		})
	}
}
