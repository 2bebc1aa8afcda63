package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
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

The controller keeps the history in a ConfigMap labelled addonops.io/history-of=ADDON in its own
namespace; it is looked for in every namespace, or only in --namespace.`,
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
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "the namespace of the history ConfigMap (the controller's); default: every namespace")
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

// readHistory finds the add-on's history ConfigMap by its label (in namespace, or in every
// namespace), makes sure it is this add-on's by its annotation, and decodes it. It also returns
// "namespace/name" of the ConfigMap.
func (h *hub) readHistory(ctx context.Context, addon, namespace string) (*history.Record, string, error) {
	sel := labels.SelectorFromSet(labels.Set{history.AddonLabel: history.AddonLabelValue(addon)}).String()
	list, err := h.kube.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	where := "in any namespace"
	if namespace != "" {
		where = "in namespace " + namespace
	}
	if err != nil {
		if apierrors.IsForbidden(err) && namespace == "" {
			return nil, "", fmt.Errorf("listing ConfigMaps labelled %s in every namespace on the hub %s: %w; "+
				"name the controller's namespace with --namespace", sel, h.host, err)
		}
		return nil, "", fmt.Errorf("listing ConfigMaps labelled %s %s on the hub %s: %w", sel, where, h.host, err)
	}
	var found []corev1.ConfigMap
	for _, cm := range list.Items {
		// The label value of a long name is a hash; the annotation holds the full name.
		if a, ok := cm.Annotations[history.AddonAnnotation]; ok && a == addon || !ok && cm.Name == history.ConfigMapName(addon) {
			found = append(found, cm)
		}
	}
	switch len(found) {
	case 0:
		if _, err := h.getCMA(ctx, addon); err != nil {
			return nil, "", err
		}
		return nil, "", fmt.Errorf("no version history of add-on %s %s (a ConfigMap labelled %s): the controller has not recorded "+
			"this add-on yet (it does once a placement has desired configs), or it does not manage it (it manages the add-ons "+
			"annotated addon.open-cluster-management.io/lifecycle: self, or all with --addons=all)", addon, where, sel)
	case 1:
	default:
		var names []string
		for _, cm := range found {
			names = append(names, cm.Namespace+"/"+cm.Name)
		}
		return nil, "", fmt.Errorf("add-on %s has %d version histories: ConfigMaps %s (more than one controller?); pick one with --namespace",
			addon, len(found), strings.Join(names, ", "))
	}
	cm := found[0]
	name := cm.Namespace + "/" + cm.Name
	data, ok := cm.Data[history.DataKey]
	if !ok {
		return nil, name, fmt.Errorf("ConfigMap %s, the version history of add-on %s, has no key %s", name, addon, history.DataKey)
	}
	rec, err := history.Decode(data)
	if err != nil {
		return nil, name, fmt.Errorf("ConfigMap %s, the version history of add-on %s, key %s: %w", name, addon, history.DataKey, err)
	}
	return rec, name, nil
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
