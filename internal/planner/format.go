package planner

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// Formats of a report.
const (
	FormatText     = "text"
	FormatMarkdown = "markdown"
	FormatJSON     = "json"
)

// Write writes the report in format.
func (r *Report) Write(w io.Writer, format string) error {
	switch format {
	case FormatText, "":
		return r.writeText(w)
	case FormatMarkdown:
		return r.writeMarkdown(w)
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	return fmt.Errorf("unknown output format %q: want text, markdown or json", format)
}

func (r *Report) stateLine() string {
	return fmt.Sprintf("Hub state: %s, read %s (%s old)", r.State.Source, r.State.TakenAt, (time.Duration(r.State.AgeSeconds) * time.Second).String())
}

func versionLine(p PlacementPlan) string {
	from, to := orDash(p.FromVersion), orDash(p.ToVersion)
	return from + " -> " + to
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func strategyLine(s Strategy) string {
	parts := []string{s.Type}
	if s.MaxConcurrency > 0 {
		parts = append(parts, fmt.Sprintf("maxConcurrency %d", s.MaxConcurrency))
	}
	if s.MaxFailures != "" {
		parts = append(parts, "maxFailures "+s.MaxFailures)
	}
	if s.MinSuccessTime != "" {
		parts = append(parts, "minSuccessTime "+s.MinSuccessTime)
	}
	if s.ProgressDeadline != "" {
		parts = append(parts, "progressDeadline "+s.ProgressDeadline)
	}
	if len(s.MandatoryGroups) > 0 {
		parts = append(parts, "mandatory groups "+strings.Join(s.MandatoryGroups, ", "))
	}
	parts = append(parts, "health soak "+s.HealthSoak)
	return strings.Join(parts, ", ")
}

func changeLine(p PlacementPlan) string {
	s := p.Change
	if p.RollbackTo != nil {
		s += fmt.Sprintf(" to version %s (%s %s, started %s", p.RollbackTo.Version, p.RollbackTo.Kind, p.RollbackTo.Result, p.RollbackTo.Started)
		if p.RollbackTo.Completed != "" {
			s += ", completed " + p.RollbackTo.Completed
		}
		s += ")"
	}
	return s
}

func canaryLine(c *Canary) string {
	gate := "does not gate this change"
	if c.Gates {
		gate = "gates this change"
	}
	state := orDash(c.State)
	return fmt.Sprintf("%s (%s; now %s)", c.Placement, gate, state)
}

func (r *Report) writeText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintln(&b, r.stateLine())
	for _, wn := range r.Warnings {
		fmt.Fprintln(&b, "WARNING:", wn)
	}
	for _, a := range r.Addons {
		fmt.Fprintf(&b, "\nAdd-on %s: ", a.Addon)
		if a.NotInManifests {
			fmt.Fprint(&b, notInManifests+"; ")
		}
		switch {
		case a.Removal:
			fmt.Fprintln(&b, "removed (--prune: not in the manifests)")
		case !a.Changed:
			fmt.Fprintln(&b, "no change")
			continue
		default:
			fmt.Fprintln(&b, "changes")
		}
		for _, wn := range a.Warnings {
			fmt.Fprintln(&b, "  WARNING:", wn)
		}
		for _, c := range a.Configs {
			fmt.Fprintf(&b, "  config %s (%s)\n", c.Config, configAction(c))
			for _, l := range strings.Split(strings.TrimRight(c.Diff, "\n"), "\n") {
				if l != "" {
					fmt.Fprintln(&b, "    "+l)
				}
			}
		}
		for _, p := range a.Placements {
			fmt.Fprintf(&b, "  placement %s: %s, version %s\n", p.Placement, changeLine(p), versionLine(p))
			if p.Change == ChangeRemoval {
				fmt.Fprintln(&b, "    "+p.OutcomeMessage)
				continue
			}
			if len(p.ToConfigs) > 0 {
				fmt.Fprintf(&b, "    configs: %s\n", strings.Join(p.ToConfigs, ", "))
			}
			fmt.Fprintf(&b, "    strategy: %s\n", strategyLine(p.Strategy))
			if p.Canary != nil {
				fmt.Fprintf(&b, "    canary: %s\n", canaryLine(p.Canary))
			}
			fmt.Fprintf(&b, "    clusters: %d", p.Clusters)
			if len(p.AlreadyOnTarget) > 0 {
				fmt.Fprintf(&b, ", already on the target: %s", listed(p.AlreadyOnTarget))
			}
			fmt.Fprintln(&b)
			for i, bt := range p.Batches {
				fmt.Fprintf(&b, "    batch %d (%s): %s\n", i+1, batchWhen(bt), listed(bt.Clusters))
			}
			for _, m := range p.Manifests {
				fmt.Fprintf(&b, "    manifests of %s: %s\n", listed(m.Clusters), manifestSummary(m))
				for _, l := range strings.Split(strings.TrimRight(m.Diff, "\n"), "\n") {
					if l != "" {
						fmt.Fprintln(&b, "      "+l)
					}
				}
			}
			for _, c := range p.NotConfigured {
				fmt.Fprintf(&b, "    cannot configure %s: %s\n", c.Cluster, c.Reason)
			}
			fmt.Fprintf(&b, "    ends: %s", orDash(p.Outcome))
			if p.OutcomeMessage != "" {
				fmt.Fprintf(&b, " (%s)", p.OutcomeMessage)
			}
			fmt.Fprintln(&b)
			for _, wn := range p.Warnings {
				fmt.Fprintln(&b, "    WARNING:", wn)
			}
		}
		if len(a.Unplaced) > 0 {
			fmt.Fprintf(&b, "  clusters of no placement told the defaults: %s\n", listed(a.Unplaced))
		}
	}
	if len(r.Ignored) > 0 {
		fmt.Fprintf(&b, "\nNot read (not an add-on, placement, cluster or config): %s\n", listed(r.Ignored))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (r *Report) writeMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### addonops plan\n\n%s\n\n", r.stateLine())
	for _, wn := range r.Warnings {
		fmt.Fprintf(&b, "> **Warning:** %s\n\n", mdEscape(wn))
	}
	fmt.Fprintln(&b, "| add-on | placement | change | version | batches | clusters | ends |")
	fmt.Fprintln(&b, "|---|---|---|---|---|---|---|")
	for _, a := range r.Addons {
		if !a.Changed {
			what := "no change"
			if a.NotInManifests {
				what = notInManifests + "; no change"
			}
			fmt.Fprintf(&b, "| %s | | %s | | | | |\n", a.Addon, what)
			continue
		}
		for _, p := range a.Placements {
			fmt.Fprintf(&b, "| %s | %s | %s | `%s` | %d | %d | %s |\n", a.Addon, p.Placement, mdEscape(changeLine(p)), versionLine(p), len(p.Batches), p.Clusters, orDash(p.Outcome))
		}
	}
	fmt.Fprintln(&b)
	for _, a := range r.Addons {
		if !a.Changed {
			continue
		}
		if a.NotInManifests {
			fmt.Fprintf(&b, "> **%s:** %s\n\n", a.Addon, notInManifests)
		}
		for _, wn := range a.Warnings {
			fmt.Fprintf(&b, "> **Warning (%s):** %s\n\n", a.Addon, mdEscape(wn))
		}
		for _, c := range a.Configs {
			fmt.Fprintf(&b, "<details><summary>%s: config %s (%s)</summary>\n\n```diff\n%s```\n\n</details>\n\n", a.Addon, mdEscape(c.Config), mdEscape(configAction(c)), c.Diff)
		}
		for _, p := range a.Placements {
			fmt.Fprintf(&b, "<details><summary>%s %s: %s</summary>\n\n", a.Addon, p.Placement, mdEscape(changeLine(p)))
			if p.Change == ChangeRemoval {
				fmt.Fprintf(&b, "%s\n\n</details>\n\n", mdEscape(p.OutcomeMessage))
				continue
			}
			fmt.Fprintf(&b, "- version: `%s`\n", versionLine(p))
			if len(p.ToConfigs) > 0 {
				fmt.Fprintf(&b, "- configs: %s\n", mdEscape(strings.Join(p.ToConfigs, ", ")))
			}
			fmt.Fprintf(&b, "- strategy: %s\n", strategyLine(p.Strategy))
			if p.Canary != nil {
				fmt.Fprintf(&b, "- canary: %s\n", mdEscape(canaryLine(p.Canary)))
			}
			if len(p.AlreadyOnTarget) > 0 {
				fmt.Fprintf(&b, "- already on the target: %s\n", listed(p.AlreadyOnTarget))
			}
			for i, bt := range p.Batches {
				fmt.Fprintf(&b, "- batch %d (%s): %s\n", i+1, mdEscape(batchWhen(bt)), listed(bt.Clusters))
			}
			for _, c := range p.NotConfigured {
				fmt.Fprintf(&b, "- cannot configure %s: %s\n", c.Cluster, mdEscape(c.Reason))
			}
			fmt.Fprintf(&b, "- ends: %s %s\n", orDash(p.Outcome), mdEscape(p.OutcomeMessage))
			for _, m := range p.Manifests {
				fmt.Fprintf(&b, "\n<details><summary>manifests of %s: %s</summary>\n\n", listed(m.Clusters), mdEscape(manifestSummary(m)))
				if m.Diff != "" {
					fmt.Fprintf(&b, "```diff\n%s```\n", m.Diff)
				}
				fmt.Fprintf(&b, "\n</details>\n")
			}
			for _, wn := range p.Warnings {
				fmt.Fprintf(&b, "- **Warning:** %s\n", mdEscape(wn))
			}
			fmt.Fprintf(&b, "\n</details>\n\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// notInManifests says what happens to an add-on the manifests lack, planned without --prune.
const notInManifests = "not in the manifests, left as is (--prune plans its removal)"

// batchWhen is a batch's step and, when a maintenance window holds it, when it may start.
func batchWhen(b Batch) string {
	if b.NotBefore == "" {
		return fmt.Sprintf("step %d", b.Step)
	}
	return fmt.Sprintf("step %d, not before %s: %s", b.Step, b.NotBefore, b.Window)
}

func manifestSummary(m ManifestDiff) string {
	switch {
	case m.Error != "":
		return "cannot render: " + m.Error
	case m.Diff == "":
		return "unchanged"
	}
	return "changed"
}

func configAction(c ConfigChange) string {
	if c.RenamedFrom != "" {
		return c.Action + " of " + c.RenamedFrom
	}
	return c.Action
}

func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;").Replace(s)
}

// Diff renderings (`addonops plan --diffs`).
const (
	DiffsFull = "full"
	DiffsSize = "size"
)

// WithDiffSizes returns a copy of the report in which each diff (of a config, of a cluster's
// manifests) stands as its size, "(a diff of N lines)": the plan of a change that rewrites many
// manifests, readable at a glance (text and markdown; the JSON schema's diffs are whole). The
// report itself is left as it is.
func (r *Report) WithDiffSizes() *Report {
	size := func(d string) string {
		if d == "" {
			return ""
		}
		return fmt.Sprintf("(a diff of %d lines)\n", strings.Count(d, "\n"))
	}
	c := *r
	c.Addons = make([]AddonPlan, len(r.Addons))
	for i, a := range r.Addons {
		a.Configs = append([]ConfigChange(nil), a.Configs...)
		for j := range a.Configs {
			a.Configs[j].Diff = size(a.Configs[j].Diff)
		}
		a.Placements = append([]PlacementPlan(nil), a.Placements...)
		for j := range a.Placements {
			p := &a.Placements[j]
			p.Manifests = append([]ManifestDiff(nil), p.Manifests...)
			for k := range p.Manifests {
				p.Manifests[k].Diff = size(p.Manifests[k].Diff)
			}
		}
		c.Addons[i] = a
	}
	return &c
}
