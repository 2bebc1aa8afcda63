package main

import (
	"context"

	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/localhub"
)

// historyNamespace is where the demo's controller keeps the version histories
// (controller.Options.HistoryNamespace, --history-namespace).
const historyNamespace = "default"

// readHistory reads add-on addon's version history from the ConfigMap the controller keeps it in.
func readHistory(ctx context.Context, c *localhub.Clients, addon string) (*history.Record, error) {
	return harness.ReadHistory(ctx, c.Kube, c.Addon, historyNamespace, addon)
}
