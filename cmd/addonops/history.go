package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/history"
)

func (c *cli) historyCommand() *cobra.Command {
	var placement, namespace, output string
	cmd := &cobra.Command{
		Use:     "history ADDON [--placement NS/NAME] [-n NAMESPACE] [-o json|yaml]",
		GroupID: groupRollout,
		Short:   "Show the config versions each placement of an add-on rolled out",
		Long: `Shows the version history of the add-on ADDON: per install placement, the config versions it rolled
out, oldest first (REVISION 1..n), each with its version id (VERSION, what promote and abort name),
its configs, what rolling it out was (KIND: Install, Upgrade, Rollback), when it started, completed
(first ran on every cluster) and ended, and how (RESULT: InProgress, Succeeded, Failed, RolledBack,
Aborted, Superseded) with the controller's MESSAGE.

The controller keeps the history in the ConfigMap addonops-history-ADDON in its own namespace (its
--history-namespace), owned by the add-on's ClusterManagementAddOn. Only that namespace is read:
addonops-system, as deployed, or --namespace. A ConfigMap there that the ClusterManagementAddOn
does not own (by its UID) is refused, as the controller refuses it.`,
		Args:              addonArg,
		ValidArgsFunction: c.completeAddons,
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "" && output != "json" && output != "yaml" {
				return usagef("--output %q: want json or yaml (or nothing, for a table)", output)
			}
			wantPlacement := ""
			if placement != "" {
				k, err := parsePlacement(placement)
				if err != nil {
					return err
				}
				wantPlacement = k.String()
			}
			h, err := c.hub()
			if err != nil {
				return err
			}
			rec, where, err := h.readHistory(cmd.Context(), args[0], namespace)
			if err != nil {
				return err
			}
			if rec.Newer != "" {
				fmt.Fprintf(c.stderr, "warning: the version history in ConfigMap %s was written by a newer addonops (field %s is unknown to this one): "+
					"shown without what this version of addonops does not know; use the addonops that matches the controller\n", where, rec.Newer)
			}
			if wantPlacement != "" {
				p := rec.Placement(wantPlacement)
				if p == nil {
					var have []string
					for _, p := range rec.Placements {
						have = append(have, p.Placement)
					}
					return fmt.Errorf("the version history of add-on %s (ConfigMap %s) has no placement %s; it has %s",
						args[0], where, wantPlacement, orNone(strings.Join(have, ", ")))
				}
				rec.Placements = []history.Placement{*p}
			}
			return printHistory(c.stdout, rec, output)
		},
	}
	cmd.Flags().StringVar(&placement, "placement", "", "only this install placement, as NAMESPACE/NAME")
	cmd.Flags().StringVarP(&namespace, "namespace", "n", defaultHistoryNamespace, "the controller's namespace, where it keeps the history ConfigMap (its --history-namespace)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json or yaml (default: a table per placement)")
	_ = cmd.RegisterFlagCompletionFunc("placement", c.completePlacements)
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]cobra.Completion{"json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// defaultHistoryNamespace is where the controller keeps the version histories as deployed: its own
// namespace (config/manager), which is its --history-namespace unless set.
const defaultHistoryNamespace = "addonops-system"

// readHistory reads the add-on's history ConfigMap in the controller's namespace, makes sure it is
// this add-on's (its ownerReference names the add-on's ClusterManagementAddOn with its UID, as the
// controller writes it: history.CheckOwner), and decodes it. It also returns "namespace/name" of
// the ConfigMap. Only that namespace is read: a ConfigMap elsewhere, whoever wrote it, is not the
// controller's record, and one there that the CMA does not own is refused as the controller
// refuses it.
func (h *hub) readHistory(ctx context.Context, addon, namespace string) (*history.Record, string, error) {
	owner, err := h.getCMA(ctx, addon)
	if err != nil {
		return nil, "", err
	}
	name := history.ConfigMapName(addon)
	where := namespace + "/" + name
	cm, err := h.kube.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, "", fmt.Errorf("no version history of add-on %s in namespace %s (ConfigMap %s): the controller has not recorded "+
			"this add-on yet (it does once a placement has desired configs), it does not manage it (it manages the add-ons "+
			"annotated addon.open-cluster-management.io/lifecycle: self, or all with --addons=all), or it keeps the histories in "+
			"another namespace: name it with --namespace (the controller's --history-namespace, by default its own)", addon, namespace, name)
	case err != nil:
		return nil, "", fmt.Errorf("reading ConfigMap %s on the hub %s: %w", where, h.host, err)
	}
	if err := history.CheckOwner(cm.OwnerReferences, addon, owner.UID); err != nil {
		return nil, where, fmt.Errorf("ConfigMap %s is not the version history of add-on %s: %w; the controller ignores it too "+
			"(event VersionHistoryInvalid on the ClusterManagementAddOn) and records nothing while it is there: delete it, and "+
			"the controller starts a new record", where, addon, err)
	}
	data, ok := cm.Data[history.DataKey]
	if !ok {
		return nil, where, fmt.Errorf("ConfigMap %s, the version history of add-on %s, has no key %s", where, addon, history.DataKey)
	}
	rec, err := history.Decode(data)
	if err != nil {
		return nil, where, fmt.Errorf("ConfigMap %s, the version history of add-on %s, key %s: %w", where, addon, history.DataKey, err)
	}
	return rec, where, nil
}

// printHistory writes the record: -o json or yaml as stored, else a table per placement.
func printHistory(w io.Writer, rec *history.Record, format string) error {
	switch format {
	case "json":
		b, err := json.MarshalIndent(rec, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case "yaml":
		b, err := yaml.Marshal(rec)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	if len(rec.Placements) == 0 {
		_, err := fmt.Fprintf(w, "ADD-ON %s: no placement has rolled out a version yet\n", rec.Addon)
		return err
	}
	return history.WriteTable(w, rec, nil)
}
