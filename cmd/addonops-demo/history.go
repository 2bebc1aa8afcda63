package main

import (
	"context"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/addonops/addonops/internal/history"
)

// historyNamespace is where the demo's controller keeps the version histories
// (controller.Options.HistoryNamespace, --history-namespace).
const historyNamespace = "default"

// readHistory reads add-on addon's version history from the ConfigMap the controller keeps it in.
func readHistory(ctx context.Context, kube kubernetes.Interface, addon string) (*history.Record, error) {
	name := history.ConfigMapName(addon)
	cm, err := kube.CoreV1().ConfigMaps(historyNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the version history of %s (ConfigMap %s/%s): %w", addon, historyNamespace, name, err)
	}
	rec, err := history.Decode(cm.Data[history.DataKey])
	if err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s: %w", historyNamespace, name, err)
	}
	return rec, nil
}

// printHistory writes a version history as `addonops history ADDON` prints it, the configs named
// with their versions for people (label: AGENT_VERSION).
func printHistory(w io.Writer, rec *history.Record, label func(history.Config) string) {
	_ = history.WriteTable(w, rec, func(c history.Config) string {
		if l := label(c); l != "" {
			return c.Name + " (" + l + ")"
		}
		return c.Name
	})
}
