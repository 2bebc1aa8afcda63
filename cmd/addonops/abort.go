package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/operations"
)

func (c *cli) abortCommand() *cobra.Command {
	var placement string
	var auto bool
	cmd := c.day2Command("abort ADDON [--placement NS/NAME | --auto=true|false]",
		"Abort a rollout: return to the last known good version (addonops.io/abort, addonops.io/auto-abort)",
		`Aborts the version the add-on ADDON is rolling out now on one install placement (--placement NS/NAME)
or on every placement that has desired configs: the controller returns the clusters that moved to it
to the placement's last known good version, at the placement's pace, and reports the placement
Aborted (Degraded) until its desired configs change (a fix or a revert in Git).

Writes {"NS/NAME": "<version id>"} into the annotation addonops.io/abort on the
ClusterManagementAddOn, where the version id is the one 'history' shows (VERSION) for the
placement's desired configs; a version committed after it is not aborted. Committing the same
annotation in Git does the same.

--auto=true sets the policy annotation addonops.io/auto-abort: "true" instead: the controller then
aborts a rollout by itself when it stops on maxFailures. --auto=false removes it.`,
		&placement, func(cmd *cobra.Command, addon string) error {
			if cmd.Flags().Changed("auto") {
				if placement != "" {
					return usagef("--auto and --placement do not go together: automatic abort is a policy of the whole add-on")
				}
				return c.editAnnotation(cmd.Context(), addon, operations.AutoAbortAnnotation, func(*cma) (operations.Edit, error) {
					if !auto {
						return operations.Edit{Did: "automatic abort off", Noop: "automatic abort was already off; nothing changed"}, nil
					}
					v := strconv.FormatBool(true)
					return operations.Edit{Value: &v, Did: "automatic abort on: a rollout that stops on maxFailures is aborted by the controller",
						Noop: "automatic abort was already on; nothing changed"}, nil
				})
			}
			var k canary.PlacementKey
			if placement != "" {
				var err error
				if k, err = parsePlacement(placement); err != nil {
					return err
				}
			}
			return c.editAnnotation(cmd.Context(), addon, operations.AbortAnnotation, func(obj *cma) (operations.Edit, error) {
				ids := map[canary.PlacementKey]string{}
				var names, skipped []string
				if placement != "" {
					if err := operations.RequireInstallPlacement(obj, k); err != nil {
						return operations.Edit{}, err
					}
					configs, id, err := desiredVersion(obj, k)
					if err != nil {
						return operations.Edit{}, err
					}
					ids[k] = id
					names = append(names, fmt.Sprintf("version %s of placement %s", describeVersion(id, configs), k))
				} else {
					all, err := operations.RequireInstallPlacements(obj)
					if err != nil {
						return operations.Edit{}, err
					}
					for _, p := range all {
						configs, id, err := desiredVersion(obj, p)
						if err != nil {
							skipped = append(skipped, p.String())
							continue
						}
						ids[p] = id
						names = append(names, fmt.Sprintf("version %s of placement %s", describeVersion(id, configs), p))
					}
					if len(ids) == 0 {
						return operations.Edit{}, fmt.Errorf("no install placement of add-on %s (%s) has desired configs yet: there is no version to abort",
							addon, strings.Join(skipped, ", "))
					}
				}
				m, err := parseMapAnnotation(obj, operations.AbortAnnotation)
				if err != nil {
					return operations.Edit{}, err
				}
				changed := false
				for p, id := range ids {
					if m[p] != id {
						m[p], changed = id, true
					}
				}
				noop := "already aborted: " + strings.Join(names, "; ") + "; nothing changed"
				if !changed {
					raw := obj.Annotations[operations.AbortAnnotation]
					return operations.Edit{Value: &raw, Noop: noop}, nil
				}
				did := "aborted " + strings.Join(names, "; ")
				if len(skipped) > 0 {
					did += "; skipped, no desired configs yet: " + strings.Join(skipped, ", ")
				}
				v := operations.FormatMap(m)
				return operations.Edit{Value: &v, Did: did, Noop: noop}, nil
			})
		})
	cmd.Flags().BoolVar(&auto, "auto", false, "set (true) or remove (false) the policy annotation addonops.io/auto-abort instead of aborting now")
	return cmd
}
