package history

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WriteTable writes a record as `addonops history` prints it: per placement a table of its
// versions, oldest first, like `helm history`. name names a config in the CONFIGS column (nil:
// its object name); the demo adds the agent version.
func WriteTable(w io.Writer, rec *Record, name func(Config) string) error {
	if name == nil {
		name = func(c Config) string { return c.Name }
	}
	for i, p := range rec.Placements {
		if i > 0 {
			if _, err := fmt.Fprintln(w); err != nil {
				return err
			}
		}
		if _, err := fmt.Fprintf(w, "PLACEMENT %s\n", p.Placement); err != nil {
			return err
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "REVISION\tVERSION\tCONFIGS\tKIND\tSTARTED\tCOMPLETED\tENDED\tRESULT\tMESSAGE")
		for n, v := range p.Versions {
			result := string(v.Result)
			if v.Retries > 0 {
				result += " (retried " + strconv.Itoa(v.Retries) + "x)"
			}
			if v.WindowWaits > 0 {
				result += " (waited for a window " + strconv.Itoa(v.WindowWaits) + "x)"
			}
			if v.WindowOverridden {
				result += " (window overridden)"
			}
			if s := verificationSummary(v.Verifications); s != "" {
				result += " (" + s + ")"
			}
			if s := continuousSummary(v.Continuous); s != "" {
				result += " (" + s + ")"
			}
			names := make([]string, 0, len(v.Configs))
			for _, c := range Sorted(v.Configs) {
				names = append(names, name(c))
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n+1, v.ID, orDash(strings.Join(names, ", ")), orDash(v.Kind),
				timeOf(&v.Started), timeOf(v.Completed), timeOf(v.Ended), result, strings.Join(strings.Fields(v.Message), " "))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

func timeOf(t *metav1.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// verificationSummary counts a version's verification runs by phase: "verified 2 batches: 1
// Successful, 1 Failed"; "" without any. The runs themselves are in `addonops history -o yaml`.
func verificationSummary(vs []Verification) string {
	if len(vs) == 0 {
		return ""
	}
	counts := map[string]int{}
	var order []string
	for _, v := range vs {
		phase := v.Phase
		if v.Promoted {
			phase += " (promoted)"
		}
		if counts[phase] == 0 {
			order = append(order, phase)
		}
		counts[phase]++
	}
	parts := make([]string, len(order))
	for i, p := range order {
		parts[i] = fmt.Sprintf("%d %s", counts[p], p)
	}
	return fmt.Sprintf("verified %d batches: %s", len(vs), strings.Join(parts, ", "))
}
