package main

import (
	"github.com/spf13/cobra"

	"github.com/addonops/addonops/internal/canary"
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
			var k canary.PlacementKey
			if placement != "" {
				var err error
				if k, err = parsePlacement(placement); err != nil {
					return err
				}
			}
			return c.editAnnotation(cmd.Context(), addon, operations.PauseAnnotation, func(obj *cma) (operations.Edit, error) {
				all := operations.AllPlacements
				if placement == "" {
					// A pause annotation that does not parse already pauses everything: replace it.
					return operations.Edit{Value: &all, Did: `paused every placement ("*")`,
						Noop: `every placement was already paused ("*"); nothing changed`}, nil
				}
				if err := requireInstallPlacement(obj, k); err != nil {
					return operations.Edit{}, err
				}
				raw, present := obj.Annotations[operations.PauseAnnotation]
				return operations.PausePlacement(obj.Name, raw, present, k)
			})
		})
}
