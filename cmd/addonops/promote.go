package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/operations"
)

func (c *cli) promoteCommand() *cobra.Command {
	var placement string
	return c.day2Command("promote ADDON --placement NS/NAME",
		"Pass the canary gate for a placement's desired version (addonops.io/promote)",
		`Promotes the version the gated install placement NS/NAME of the add-on ADDON is rolling out now (its
desired configs, as the controller reports them in status.installProgressions): the controller lets
that version pass the placement's canary gate without waiting for the canary placement, records it
in the placement's status and in an event, and rolls it out at the placement's own pace. A version
committed after it is gated again.

Writes {"NS/NAME": "<version id>"} into the annotation addonops.io/promote on the
ClusterManagementAddOn, where the version id is the one 'history' shows (VERSION). Committing the
same annotation in Git does the same. Refused when the placement is not an install placement, has
no canary (annotation addonops.io/canary-placements) or has no desired configs yet.`,
		&placement, func(cmd *cobra.Command, addon string) error {
			if placement == "" {
				return usagef("--placement NS/NAME is required: the gated placement whose desired version passes its canary")
			}
			k, err := parsePlacement(placement)
			if err != nil {
				return err
			}
			return c.editAnnotation(cmd.Context(), addon, operations.PromoteAnnotation, func(obj *cma) (operations.Edit, error) {
				if err := operations.RequireInstallPlacement(obj, k); err != nil {
					return operations.Edit{}, err
				}
				canaries, err := canary.Parse(obj.Annotations)
				if err != nil {
					return operations.Edit{}, fmt.Errorf("add-on %s: %v; fix it before promoting", addon, err)
				}
				gate, gated := canaries[k]
				if !gated {
					return operations.Edit{}, fmt.Errorf("placement %s of add-on %s has no canary (annotation %s does not gate it): there is no gate to pass",
						k, addon, canary.Annotation)
				}
				configs, id, err := desiredVersion(obj, k)
				if err != nil {
					return operations.Edit{}, err
				}
				m, err := parseMapAnnotation(obj, operations.PromoteAnnotation)
				if err != nil {
					return operations.Edit{}, err
				}
				noop := fmt.Sprintf("version %s of placement %s was already promoted past its canary %s; nothing changed", describeVersion(id, configs), k, gate)
				if m[k] == id {
					raw := obj.Annotations[operations.PromoteAnnotation]
					return operations.Edit{Value: &raw, Noop: noop}, nil
				}
				m[k] = id
				v := operations.FormatMap(m)
				return operations.Edit{Value: &v, Noop: noop,
					Did: fmt.Sprintf("promoted version %s of placement %s past its canary %s", describeVersion(id, configs), k, gate)}, nil
			})
		})
}
