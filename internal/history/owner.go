package history

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// ownerGroup and ownerKind are what the history ConfigMap's ownerReference names: the add-on's
// ClusterManagementAddOn (addon.open-cluster-management.io).
const (
	ownerGroup = "addon.open-cluster-management.io"
	ownerKind  = "ClusterManagementAddOn"
)

// CheckOwner says whether a history ConfigMap (its ownerReferences) is the record of the add-on's
// ClusterManagementAddOn named addon with UID uid: it must name that CMA with that UID, as the
// controller's own ConfigMap does (it sets the reference when it creates it, so the ConfigMap goes
// with the CMA). Whoever may create a ConfigMap could otherwise forge an add-on's history, or hide
// it behind another, and a ConfigMap left by a deleted add-on of the same name would pass for the
// new one's. nil when it is; else an error that says why not.
func CheckOwner(refs []metav1.OwnerReference, addon string, uid types.UID) error {
	var others []string
	for _, r := range refs {
		gv, err := schema.ParseGroupVersion(r.APIVersion)
		if err != nil || gv.Group != ownerGroup || r.Kind != ownerKind || r.Name != addon {
			continue
		}
		if r.UID == uid {
			return nil
		}
		others = append(others, string(r.UID))
	}
	if len(others) > 0 {
		return fmt.Errorf("its ownerReference names ClusterManagementAddOn %s with UID %v, not the add-on's %s (a record of a deleted add-on of the same name, or not the controller's)",
			addon, others, uid)
	}
	return fmt.Errorf("it has no ownerReference to ClusterManagementAddOn %s (UID %s), which the controller sets on the record it writes", addon, uid)
}
