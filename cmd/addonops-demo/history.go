package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/addonops/addonops/internal/history"
)

// historyNamespace is where the demo's controller keeps the version histories
// (controller.Options.HistoryNamespace, --history-namespace).
const historyNamespace = "default"

// readHistory reads add-on addon's version history from the ConfigMap the controller keeps it in.
func readHistory(ctx context.Context, kube kubernetes.Interface, addon string) (*history.Record, error) {
	name := history.ConfigMapName(addon)
	cm, err := kube.CoreV1().ConfigMaps(historyNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the version history of %s (ConfigMap %s/%s): %w", addon, historyNamespace, name, err)
	}
	rec, err := history.Decode(cm.Data[history.DataKey])
	if err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s: %w", historyNamespace, name, err)
	}
	return rec, nil
}

// printHistory writes a version history as `addonops history ADDON` prints it: per placement, its
// versions oldest first. label names the configs' versions for people (AGENT_VERSION).
func printHistory(w io.Writer, rec *history.Record, label func(history.Config) string) {
	for i, p := range rec.Placements {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "PLACEMENT %s\n", p.Placement)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "REVISION\tVERSION\tCONFIGS\tKIND\tSTARTED\tCOMPLETED\tENDED\tRESULT\tMESSAGE")
		for n, v := range p.Versions {
			result := string(v.Result)
			if v.Retries > 0 {
				result += " (retried " + strconv.Itoa(v.Retries) + "x)"
			}
			var names []string
			for _, c := range history.Sorted(v.Configs) {
				name := c.Name
				if l := label(c); l != "" {
					name += " (" + l + ")"
				}
				names = append(names, name)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n+1, v.ID, dash(strings.Join(names, ", ")), dash(v.Kind),
				timeOf(&v.Started), timeOf(v.Completed), timeOf(v.Ended), result, strings.Join(strings.Fields(v.Message), " "))
		}
		tw.Flush()
	}
}

func timeOf(t *metav1.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
