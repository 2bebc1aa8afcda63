package rolloutplan

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
)

// DefaultDeployerWait is how long an MCA told to run its configs may go without any
// ManifestApplied condition before its status says that no deployer seems to deploy it
// (WaitingForDeployer): long enough for an add-on manager that is merely slow or restarting (OCM's
// addon-manager writes ManifestApplied within seconds of a new desired config), short enough that
// a person looking at a stuck install learns why the same day.
const DefaultDeployerWait = 2 * time.Minute

// WaitingForDeployer reports whether mca waits for a deployer nobody seems to run: it was told to
// run its configs (Configured=True, a busy Progressing reason) at least grace ago (the Progressing
// condition's lastTransitionTime, which every new desired config resets) and no deployer has
// reported a ManifestApplied condition at all. A ManifestApplied of any status means some deployer
// looks at the MCA (False is a failure, DeployerGrace). When the MCA is on its way but grace has
// not passed yet, recheck is when it will have. grace <= 0 means DefaultDeployerWait.
func WaitingForDeployer(mca *addonv1alpha1.ManagedClusterAddOn, grace time.Duration, now metav1.Time) (waiting bool, recheck time.Duration) {
	if grace <= 0 {
		grace = DefaultDeployerWait
	}
	conds := mca.Status.Conditions
	if meta.FindStatusCondition(conds, addonstatus.ConditionManifestApplied) != nil || !meta.IsStatusConditionTrue(conds, addonstatus.ConditionConfigured) {
		return false, 0
	}
	p := meta.FindStatusCondition(conds, addonstatus.ConditionProgressing)
	if p == nil || p.Status != metav1.ConditionTrue || !addonstatus.IsBusyReason(p.Reason) {
		return false, 0
	}
	if left := p.LastTransitionTime.Add(grace).Sub(now.Time); left > 0 {
		return false, left
	}
	return true, 0
}

// waitingForDeployer is the Progressing condition of an MCA of kind k that WaitingForDeployer.
// Its message does not say how long it has waited: it would change, and cost a status write, with
// every look.
func waitingForDeployer(k addonstatus.Kind) metav1.Condition {
	c := busy(k)
	c.Message = verb(k) + "... " + addonstatus.MessageWaitingForDeployer
	return c
}
