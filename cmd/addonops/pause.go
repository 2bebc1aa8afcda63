package main

import (
	"github.com/spf13/cobra"

	"github.com/addonops/addonops/internal/operations"
)

func (c *cli) pauseCommand() *cobra.Command {
	var placement string
	return c.day2Command("pause ADDON [--placement NS/NAME]",
		"Pause a rollout: start no new clusters (addonops.io/pause)",
		`Pauses the rollout of the add-on ADDON on one install placement (--placement NS/NAME) or on every
one (without --placement): the controller starts no new clusters there, clusters already in flight
finish, and the placement reports reason Paused until it is resumed.

Writes the annotation addonops.io/pause on the ClusterManagementAddOn: "*" for every placement, or
a comma-separated list of NS/NAME. Committing the same annotation in Git does the same.
Pausing what is already paused changes nothing.`,
		&placement, func(cmd *cobra.Command, addon string) error {
			k, err := optionalPlacement(placement)
			if err != nil {
				return err
			}
			return c.editAnnotation(cmd.Context(), addon, operations.PauseAnnotation, func(obj *cma) (operations.Edit, error) {
				return operations.Pause(obj, k)
			})
		})
}
