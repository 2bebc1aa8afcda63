package main

import (
	"github.com/spf13/cobra"

	"github.com/addonops/addonops/internal/operations"
)

func (c *cli) resumeCommand() *cobra.Command {
	var placement string
	return c.day2Command("resume ADDON [--placement NS/NAME]",
		"Resume a paused rollout (addonops.io/pause)",
		`Resumes the rollout of the add-on ADDON on one placement (--placement NS/NAME) or on every one
(without --placement): the controller starts new clusters there again, at the pace of the
placement's rollout strategy.

Removes the placement from the annotation addonops.io/pause on the ClusterManagementAddOn, and the
annotation itself when nothing is left paused. Resuming one placement while every placement is
paused ("*") replaces "*" with the add-on's other install placements (a placement added later is
then not paused). Removing the annotation (or the placement) in Git does the same.
Resuming what is not paused changes nothing.`,
		&placement, func(cmd *cobra.Command, addon string) error {
			k, err := optionalPlacement(placement)
			if err != nil {
				return err
			}
			return c.editAnnotation(cmd.Context(), addon, operations.PauseAnnotation, func(obj *cma) (operations.Edit, error) {
				return operations.Resume(obj, k)
			})
		})
}
