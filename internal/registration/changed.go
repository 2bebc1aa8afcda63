package registration

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/hubcache"
	"github.com/addonops/addonops/internal/rolloutplan"
)

// MCAChanged tells whether an MCA update matters to registration: what it reads of the MCA
// (identity, deletion, the desired configs, the agent's kube client driver) or what it writes in
// its status (registrations, namespace, RegistrationApplied, supportedConfigs and the health
// declaration), put back or declared again when someone else changed them. The rest of the
// status is the rollout's, progress', the deployer's and health's: each of their writes made
// registration compute the registrations and bindings again for nothing. A resync (same
// resourceVersion) always matters.
func MCAChanged(old, cur *addonv1alpha1.ManagedClusterAddOn) bool {
	if old.ResourceVersion == cur.ResourceVersion {
		return true
	}
	if old.UID != cur.UID || (old.DeletionTimestamp == nil) != (cur.DeletionTimestamp == nil) {
		return true
	}
	o, n := &old.Status, &cur.Status
	if o.KubeClientDriver != n.KubeClientDriver || o.Namespace != n.Namespace || o.HealthCheck != n.HealthCheck ||
		!equality.Semantic.DeepEqual(o.Registrations, n.Registrations) ||
		!equality.Semantic.DeepEqual(o.SupportedConfigs, n.SupportedConfigs) {
		return true
	}
	if !equality.Semantic.DeepEqual(meta.FindStatusCondition(o.Conditions, addonv1alpha1.ManagedClusterAddOnRegistrationApplied),
		meta.FindStatusCondition(n.Conditions, addonv1alpha1.ManagedClusterAddOnRegistrationApplied)) {
		return true
	}
	// The health declaration: only whether there is an Available condition at all.
	if (meta.FindStatusCondition(o.Conditions, rolloutplan.ConditionAvailable) == nil) != (meta.FindStatusCondition(n.Conditions, rolloutplan.ConditionAvailable) == nil) {
		return true
	}
	return !hubcache.SameDesiredConfigs(o.ConfigReferences, n.ConfigReferences)
}
