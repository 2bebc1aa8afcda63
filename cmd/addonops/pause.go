package main

import (
	"fmt"

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
			return c.editAnnotation(cmd.Context(), addon, operations.PauseAnnotation, func(obj *cma) (annotationEdit, error) {
				all := operations.AllPlacements
				if placement == "" {
					// A pause annotation that does not parse already pauses everything: replace it.
					return annotationEdit{value: &all, did: `paused every placement ("*")`,
						noop: `every placement was already paused ("*"); nothing changed`}, nil
				}
				if err := requireInstallPlacement(obj, k); err != nil {
					return annotationEdit{}, err
				}
				p, err := readPause(obj)
				if err != nil {
					return annotationEdit{}, err
				}
				noop := fmt.Sprintf("placement %s was already paused; nothing changed", k)
				if p.all {
					return annotationEdit{value: &p.raw, noop: fmt.Sprintf(`placement %s was already paused (every placement is, "*"); nothing changed`, k)}, nil
				}
				if p.keys[k] {
					return annotationEdit{value: &p.raw, noop: noop}, nil
				}
				p.keys[k] = true
				v := operations.FormatPause(false, p.keys)
				return annotationEdit{value: &v, did: fmt.Sprintf("paused placement %s", k), noop: noop}, nil
			})
		})
}

// pauseState is the add-on's pause annotation, read.
type pauseState struct {
	present, all bool
	keys         map[canary.PlacementKey]bool
	raw          string
}

// readPause reads the pause annotation, refusing one that does not parse (the controller pauses
// every placement then; a command naming one placement cannot know what was meant).
func readPause(obj *cma) (pauseState, error) {
	p := pauseState{keys: map[canary.PlacementKey]bool{}}
	p.raw, p.present = obj.Annotations[operations.PauseAnnotation]
	if !p.present {
		return p, nil
	}
	all, keys, err := operations.ParsePause(p.raw)
	if err != nil {
		return p, fmt.Errorf("annotation %s of ClusterManagementAddOn %s does not parse (%v), so the controller pauses every placement; "+
			"fix it, or pause or resume every placement (without --placement), and run the command again", operations.PauseAnnotation, obj.Name, err)
	}
	p.all = all
	for _, k := range keys {
		p.keys[k] = true
	}
	return p, nil
}
