package main

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/testing/localhub"
)

// historyNamespace is where the demo's controller keeps the version histories
// (controller.Options.HistoryNamespace, --history-namespace).
const historyNamespace = "default"

// readHistory reads add-on addon's version history from the ConfigMap the controller keeps it in,
// if the add-on's ClusterManagementAddOn owns it (history.CheckOwner, as the controller and
// `addonops history` require).
func readHistory(ctx context.Context, c *localhub.Clients, addon string) (*history.Record, error) {
	name := history.ConfigMapName(addon)
	cma, err := c.Addon.AddonV1alpha1().ClusterManagementAddOns().Get(ctx, addon, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the version history of %s: its ClusterManagementAddOn: %w", addon, err)
	}
	cm, err := c.Kube.CoreV1().ConfigMaps(historyNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the version history of %s (ConfigMap %s/%s): %w", addon, historyNamespace, name, err)
	}
	if err := history.CheckOwner(cm.OwnerReferences, addon, cma.UID); err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s is not the version history of %s: %w", historyNamespace, name, addon, err)
	}
	rec, err := history.Decode(cm.Data[history.DataKey])
	if err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s: %w", historyNamespace, name, err)
	}
	return rec, nil
}
