package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/addonops/addonops/internal/canary"
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
			var k canary.PlacementKey
			if placement != "" {
				var err error
				if k, err = parsePlacement(placement); err != nil {
					return err
				}
			}
			return c.editAnnotation(cmd.Context(), addon, operations.PauseAnnotation, func(obj *cma) (annotationEdit, error) {
				if placement == "" {
					return annotationEdit{did: "resumed every placement", noop: "no placement was paused; nothing changed"}, nil
				}
				p, err := readPause(obj)
				if err != nil {
					return annotationEdit{}, err
				}
				noop := fmt.Sprintf("placement %s was not paused; nothing changed", k)
				switch {
				case !p.present:
					return annotationEdit{noop: noop}, nil
				case p.all:
					if err := requireInstallPlacement(obj, k); err != nil {
						return annotationEdit{}, err
					}
					rest := map[canary.PlacementKey]bool{}
					for _, o := range installPlacements(obj) {
						if o != k {
							rest[o] = true
						}
					}
					did := fmt.Sprintf(`resumed placement %s; every placement was paused ("*"), so the pause now names the other install placements`, k)
					if len(rest) == 0 {
						return annotationEdit{did: fmt.Sprintf(`resumed placement %s, the only install placement (every placement was paused, "*")`, k)}, nil
					}
					v := operations.FormatPause(false, rest)
					return annotationEdit{value: &v, did: did}, nil
				case !p.keys[k]:
					return annotationEdit{value: &p.raw, noop: noop}, nil
				}
				delete(p.keys, k)
				did := fmt.Sprintf("resumed placement %s", k)
				if len(p.keys) == 0 {
					return annotationEdit{did: did + "; no placement is paused any more"}, nil
				}
				v := operations.FormatPause(false, p.keys)
				return annotationEdit{value: &v, did: did}, nil
			})
		})
}
