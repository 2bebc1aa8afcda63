package controller

// What the ports of OCM v1.2.1's addon-manager integration suite (test/integration/addon/,
// ocm_addon_*_test.go) share: OCM's config specs and spec hashes, the part of OCM's suite that
// is not the addon-manager (its test add-on's deployer, played here by hand), assertions that say
// what differs, and the switch for the known gaps (openGaps).

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
)

// ocmProgression is the Progressing condition OCM expects on the CMA's first install progression.
func ocmProgression(status metav1.ConditionStatus, message string) metav1.Condition {
	reason := addonv1alpha1.ProgressingReasonProgressing
	if status == metav1.ConditionFalse {
		reason = addonv1alpha1.ProgressingReasonCompleted
	}
	return metav1.Condition{Type: addonstatus.ConditionProgressing, Status: status, Reason: reason, Message: message}
}
