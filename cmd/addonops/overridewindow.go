package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/addonops/addonops/internal/maintwindow"
	"github.com/addonops/addonops/internal/operations"
)

func (c *cli) overrideWindowCommand() *cobra.Command {
	var placement string
	return c.day2Command("override-window ADDON --placement NS/NAME",
		"Let a placement's desired version through closed maintenance windows (addonops.io/window-override)",
		`Lets the version the install placement NS/NAME of the add-on ADDON is rolling out now (its desired
configs, as the controller reports them in status.installProgressions) start batches while the
placement's maintenance windows (annotation addonops.io/maintenance-windows) are closed. The
controller records an event naming who set it, once, and rolls the version out at the placement's
own pace. A version committed after it waits for the windows again.

Writes {"NS/NAME": "<version id>"} into the annotation addonops.io/window-override on the
ClusterManagementAddOn, where the version id is the one 'history' and 'status' show. Committing the
same annotation in Git does the same. Refused when the placement is not an install placement, the
add-on has no maintenance windows or they do not parse, or the placement has no desired configs yet.`,
		&placement, func(cmd *cobra.Command, addon string) error {
			if placement == "" {
				return usagef("--placement NS/NAME is required: the placement whose desired version passes its closed windows")
			}
			k, err := parsePlacement(placement)
			if err != nil {
				return err
			}
			return c.editAnnotation(cmd.Context(), addon, operations.WindowOverrideAnnotation, func(obj *cma) (operations.Edit, error) {
				if err := operations.RequireInstallPlacement(obj, k); err != nil {
					return operations.Edit{}, err
				}
				windows, err := maintwindow.Parse(obj.Annotations)
				if err != nil {
					return operations.Edit{}, fmt.Errorf("add-on %s: %v; fix it first (the controller starts no batch while it does not parse)", addon, err)
				}
				if len(windows.For(k, false)) == 0 {
					return operations.Edit{}, fmt.Errorf("placement %s of add-on %s has no maintenance windows (annotation %s): there is no window to pass",
						k, addon, maintwindow.Annotation)
				}
				configs, id, err := desiredVersion(obj, k)
				if err != nil {
					return operations.Edit{}, err
				}
				m, err := parseMapAnnotation(obj, operations.WindowOverrideAnnotation)
				if err != nil {
					return operations.Edit{}, err
				}
				noop := fmt.Sprintf("version %s of placement %s already passes its maintenance windows; nothing changed", describeVersion(id, configs), k)
				if m[k] == id {
					raw := obj.Annotations[operations.WindowOverrideAnnotation]
					return operations.Edit{Value: &raw, Noop: noop}, nil
				}
				m[k] = id
				v := operations.FormatMap(m)
				return operations.Edit{Value: &v, Noop: noop,
					Did: fmt.Sprintf("version %s of placement %s may start batches while its maintenance windows are closed", describeVersion(id, configs), k)}, nil
			})
		})
}
