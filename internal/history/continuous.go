package history

import (
	"fmt"
	"strings"
)

// continuousSummary counts a version's continuous verification runs by phase, merged entries
// (CompactVerifications) counted run by run: "continuously verified 6 runs: 5 Successful, 1
// Failed"; "" without any.
func continuousSummary(vs []Verification) string {
	if len(vs) == 0 {
		return ""
	}
	counts := map[string]int{}
	var order []string
	total := 0
	for _, v := range vs {
		phase := v.Phase
		if v.Promoted {
			phase += " (promoted)"
		}
		if v.Retried {
			phase += " (retried)"
		}
		if counts[phase] == 0 {
			order = append(order, phase)
		}
		n := 1
		if v.FirstBatch != 0 {
			n = v.Batch - v.FirstBatch + 1
		}
		counts[phase] += n
		total += n
	}
	parts := make([]string, len(order))
	for i, p := range order {
		parts[i] = fmt.Sprintf("%d %s", counts[p], p)
	}
	return fmt.Sprintf("continuously verified %d runs: %s", total, strings.Join(parts, ", "))
}
