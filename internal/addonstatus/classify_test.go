package addonstatus

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
)

// TestClassOf pins the one classification of install progression conditions (see ClassOf): what
// time will fix is Progressing, what a person must act on is Degraded, a pause is Suspended.
func TestClassOf(t *testing.T) {
	T, F := metav1.ConditionTrue, metav1.ConditionFalse
	for _, tc := range []struct {
		status metav1.ConditionStatus
		reason string
		want   string
	}{
		{T, ReasonInstalling, ClassProgressing},
		{T, ReasonUpgrading, ClassProgressing},
		{T, ReasonRollingBack, ClassProgressing},
		{T, ReasonAborting, ClassProgressing},
		{T, ReasonWaitingForCanary, ClassProgressing},
		{T, ReasonWaitingForWindow, ClassProgressing},
		{metav1.ConditionUnknown, ReasonUpgrading, ClassProgressing},
		{F, ReasonInstallSucceed, ClassHealthy},
		{F, ReasonUpgradeSucceed, ClassHealthy},
		{F, ReasonRollbackSucceeded, ClassHealthy},
		{F, addonv1alpha1.ProgressingReasonCompleted, ClassHealthy},
		{F, ReasonPaused, ClassSuspended},
		{F, ReasonManual, ClassProgressing},
		{F, ReasonInstallFailed, ClassDegraded},
		{F, ReasonUpgradeFailed, ClassDegraded},
		{F, ReasonRollbackFailed, ClassDegraded},
		{F, ReasonAborted, ClassDegraded},
		{F, ReasonClustersNotConfigurable, ClassDegraded},
		{F, ReasonWaitingForCanary, ClassDegraded},
		{F, ReasonPlacementNotFound, ClassDegraded},
		{F, ReasonPlacementDecisionInvalid, ClassDegraded},
		{F, ReasonConfigurationNotFound, ClassDegraded},
		{F, ReasonConfigurationForbidden, ClassDegraded},
		{F, ReasonInvalidRolloutStrategy, ClassDegraded},
		{F, ReasonInvalidCanaryPlacements, ClassDegraded},
		{F, ReasonInvalidMaintenanceWindows, ClassDegraded},
		{F, "SomethingNew", ClassDegraded},
	} {
		if got := ClassOf(tc.status, tc.reason); got != tc.want {
			t.Errorf("ClassOf(%s, %s) = %s, want %s", tc.status, tc.reason, got, tc.want)
		}
	}
}

// TestSelfManaged: the controller's --addons=self rule, which `addonops status` shows as MANAGED-BY.
func TestSelfManaged(t *testing.T) {
	for _, tc := range []struct {
		ann  map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{addonv1alpha1.AddonLifecycleAnnotationKey: addonv1alpha1.AddonLifecycleSelfManageAnnotationValue}, true},
		{map[string]string{addonv1alpha1.AddonLifecycleAnnotationKey: "anything"}, true},
		{map[string]string{addonv1alpha1.AddonLifecycleAnnotationKey: addonv1alpha1.AddonLifecycleAddonManagerAnnotationValue}, false},
	} {
		cma := &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Annotations: tc.ann}}
		if got := SelfManaged(cma); got != tc.want {
			t.Errorf("SelfManaged(%v) = %v, want %v", tc.ann, got, tc.want)
		}
	}
}
