package harness

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"

	"github.com/addonops/addonops/internal/history"
)

// ReadHistory reads add-on addon's version history from the ConfigMap the controller keeps it in
// (history.ConfigMapName in namespace, the controller's --history-namespace) and checks the
// ConfigMap is the controller's record of that add-on: labelled and annotated with it
// (history.AddonLabel, history.AddonAnnotation) and owned by its ClusterManagementAddOn alone, by UID
// (history.CheckOwner, as the controller and `addonops history` require). The error satisfies
// apierrors.IsNotFound while the ConfigMap (or the ClusterManagementAddOn) does not exist.
func ReadHistory(ctx context.Context, kube kubernetes.Interface, addons addonclient.Interface, namespace, addon string) (*history.Record, error) {
	name := history.ConfigMapName(addon)
	cma, err := addons.AddonV1alpha1().ClusterManagementAddOns().Get(ctx, addon, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the version history of %s: its ClusterManagementAddOn: %w", addon, err)
	}
	cm, err := kube.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the version history of %s (ConfigMap %s/%s): %w", addon, namespace, name, err)
	}
	if got := cm.Labels[history.AddonLabel]; got != history.AddonLabelValue(addon) {
		return nil, fmt.Errorf("ConfigMap %s/%s: label %s=%q, want %q", namespace, name, history.AddonLabel, got, history.AddonLabelValue(addon))
	}
	if got := cm.Annotations[history.AddonAnnotation]; got != addon {
		return nil, fmt.Errorf("ConfigMap %s/%s: annotation %s=%q, want %q", namespace, name, history.AddonAnnotation, got, addon)
	}
	if len(cm.OwnerReferences) != 1 {
		return nil, fmt.Errorf("ConfigMap %s/%s: ownerReferences %v, want the add-on's ClusterManagementAddOn alone", namespace, name, cm.OwnerReferences)
	}
	if err := history.CheckOwner(cm.OwnerReferences, addon, cma.UID); err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s is not the version history of %s: %w", namespace, name, addon, err)
	}
	data, ok := cm.Data[history.DataKey]
	if !ok {
		return nil, fmt.Errorf("ConfigMap %s/%s, the version history of %s, has no key %s", namespace, name, addon, history.DataKey)
	}
	rec, err := history.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s, the version history of %s, key %s: %w", namespace, name, addon, history.DataKey, err)
	}
	return rec, nil
}
