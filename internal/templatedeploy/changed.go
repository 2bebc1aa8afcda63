package templatedeploy

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/hubcache"
)

// MCAChanged tells whether an MCA update matters to the deployer: what Decide reads of the MCA
// (identity, generation, deletion, finalizers, labels, annotations, the Configured condition and
// the desired configs) or what the deployer writes in its status (ManifestApplied,
// HookManifestComplete, put back when someone else changed them). The rest of the status is the
// rollout's, progress', health's and registration's: every one of their writes rendered the
// template again for nothing, five or six times per cluster and rollout. A resync (same
// resourceVersion) always matters.
func MCAChanged(old, cur *addonv1alpha1.ManagedClusterAddOn) bool {
	if old.ResourceVersion == cur.ResourceVersion {
		return true
	}
	if old.UID != cur.UID || old.Generation != cur.Generation ||
		(old.DeletionTimestamp == nil) != (cur.DeletionTimestamp == nil) ||
		!slices.Equal(old.Finalizers, cur.Finalizers) ||
		!maps.Equal(old.Labels, cur.Labels) || !maps.Equal(old.Annotations, cur.Annotations) {
		return true
	}
	for _, t := range []string{addonv1alpha1.ManagedClusterAddOnConditionConfigured, addonv1alpha1.ManagedClusterAddOnManifestApplied, ConditionHookManifestComplete} {
		if !equality.Semantic.DeepEqual(meta.FindStatusCondition(old.Status.Conditions, t), meta.FindStatusCondition(cur.Status.Conditions, t)) {
			return true
		}
	}
	return !hubcache.SameDesiredConfigs(old.Status.ConfigReferences, cur.Status.ConfigReferences)
}
