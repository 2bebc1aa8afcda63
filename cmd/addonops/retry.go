package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/operations"
)

func (c *cli) retryCommand() *cobra.Command {
	var placement string
	return c.day2Command("retry ADDON [--placement NS/NAME]",
		"Restart a rollout stopped on maxFailures (addonops.io/retry)",
		`Asks the controller to restart the rollout of the add-on ADDON that stopped on maxFailures, on one
install placement (--placement NS/NAME) or on every one: the same version rolls out again, its
failed clusters go again at the placement's pace, and failures from before the retry no longer
count. A placement whose rollout has not stopped ignores the request.

Writes {"NS/NAME": "<token>"} into the annotation addonops.io/retry on the ClusterManagementAddOn,
with a new token (the current time, RFC 3339 with nanoseconds) each time: the controller acts on
each token once. Committing a new token in Git does the same.`,
		&placement, func(cmd *cobra.Command, addon string) error {
			var k canary.PlacementKey
			if placement != "" {
				var err error
				if k, err = parsePlacement(placement); err != nil {
					return err
				}
			}
			return c.editAnnotation(cmd.Context(), addon, operations.RetryAnnotation, func(obj *cma) (operations.Edit, error) {
				targets := []canary.PlacementKey{k}
				if placement == "" {
					var err error
					if targets, err = operations.RequireInstallPlacements(obj); err != nil {
						return operations.Edit{}, err
					}
				} else if err := operations.RequireInstallPlacement(obj, k); err != nil {
					return operations.Edit{}, err
				}
				m, err := parseMapAnnotation(obj, operations.RetryAnnotation)
				if err != nil {
					return operations.Edit{}, err
				}
				token := time.Now().UTC().Format(time.RFC3339Nano)
				for _, t := range targets {
					m[t] = token
				}
				v := operations.FormatMap(m)
				return operations.Edit{Value: &v, Did: fmt.Sprintf("asked to retry the rollout of %s (token %s)", placementsPhrase(targets), token)}, nil
			})
		})
}

// placementsPhrase names placements in a sentence.
func placementsPhrase(keys []canary.PlacementKey) string {
	if len(keys) == 1 {
		return "placement " + keys[0].String()
	}
	return "placements " + operations.JoinKeys(keys)
}
