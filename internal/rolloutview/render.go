package rolloutview

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/addonops/addonops/internal/addonstatus"
)

// barWidth is the number of cells of a progress bar.
const barWidth = 24

// maxClusterLines bounds the per-cluster lines of a placement: beyond it, clusters that are done
// are summed up in one line.
const maxClusterLines = 20

// Bar draws a progress bar: '#' done, '~' in progress, '!' failed, timed out or unconfigurable,
// '.' the rest.
func Bar(p Progress) string {
	if p.Total <= 0 {
		return "[" + strings.Repeat(".", barWidth) + "]"
	}
	cells := func(n int) int { return n * barWidth / p.Total }
	done := cells(p.Done)
	bad := cells(p.Failed + p.TimedOut + p.Unconfigurable)
	busy := cells(p.InProgress)
	// Never draw a non-zero count as nothing.
	if p.Failed+p.TimedOut+p.Unconfigurable > 0 && bad == 0 {
		bad = 1
	}
	if p.InProgress > 0 && busy == 0 {
		busy = 1
	}
	if done+bad+busy > barWidth {
		done = max(barWidth-bad-busy, 0)
	}
	rest := barWidth - done - bad - busy
	return "[" + strings.Repeat("#", done) + strings.Repeat("!", bad) + strings.Repeat("~", busy) + strings.Repeat(".", max(rest, 0)) + "]"
}

// Render writes the view for people. now dates the "since" ages.
func Render(w io.Writer, v View, now time.Time) error { return render(w, v, now, true) }

// RenderSummary writes the view as Render does without the config objects of each slot and the
// per-cluster lines (the version ids and the failed clusters stay): a dozen lines for a placement
// at any fleet size, so a live view redrawn in place fits a screen (addonops-demo's progress).
func RenderSummary(w io.Writer, v View, now time.Time) error { return render(w, v, now, false) }

// render writes the view; full adds the config objects and the per-cluster lines.
func render(w io.Writer, v View, now time.Time, full bool) error {
	var b strings.Builder
	header(&b, v)
	if v.Health.Message != "" && len(v.Placements) == 0 {
		fmt.Fprintf(&b, "  %s\n", v.Health.Message)
	}
	for _, p := range v.Placements {
		fmt.Fprintf(&b, "\nPLACEMENT %s   %s", p.Key(), p.Health.Health)
		if p.Reason != "" {
			fmt.Fprintf(&b, " (%s", p.Reason)
			if p.Since != nil && !p.Since.IsZero() {
				fmt.Fprintf(&b, " for %s", age(now.Sub(p.Since.Time)))
			}
			b.WriteString(")")
		}
		b.WriteString("\n")
		pr := p.Progress
		if pr.Source != "" {
			fmt.Fprintf(&b, "  %s %d/%d done, %d in progress, %d failed, %d timed out",
				Bar(pr), pr.Done, pr.Total, pr.InProgress, pr.Failed, pr.TimedOut)
			if pr.Unconfigurable > 0 {
				fmt.Fprintf(&b, ", %d cannot be configured", pr.Unconfigurable)
			}
			b.WriteString("\n")
		}
		if p.Health.Health != Healthy || p.Message == "" {
			fmt.Fprintf(&b, "  %s\n", strings.TrimPrefix(p.Health.Message, p.Key()+": "))
		} else {
			fmt.Fprintf(&b, "  %s\n", p.Message)
		}
		if p.Change == "rollback" {
			fmt.Fprintf(&b, "  rollback to %s: %s\n", desiredVersions(p), map[Health]string{
				Healthy: "succeeded, every cluster runs it again", Progressing: "in progress", Degraded: "failed", Suspended: "paused"}[p.Health.Health])
		}
		if c := p.Canary; c != nil {
			if c.Canary != "" {
				fmt.Fprintf(&b, "  canary: %s\n", c.State)
			}
			if len(c.CanaryFor) > 0 {
				fmt.Fprintf(&b, "  canary for %s", strings.Join(c.CanaryFor, ", "))
				if c.Canary == "" {
					fmt.Fprintf(&b, ": %s", c.State)
				}
				b.WriteString("\n")
			}
			if c.Canary == "" && len(c.CanaryFor) == 0 {
				fmt.Fprintf(&b, "  canary: %s\n", c.State)
			}
		}
		if w := p.Window; w != nil {
			switch {
			case w.State == WindowClosed && p.Reason == addonstatus.ReasonWaitingForWindow:
				fmt.Fprintf(&b, "  waiting for a maintenance window: %s (in %s); %s\n", w.OpensNote, age(w.Opens.Sub(now)), w.Why)
			case w.State == WindowClosed:
				fmt.Fprintf(&b, "  maintenance window: closed: %s; %s (in %s)\n", w.Why, w.OpensNote, age(w.Opens.Sub(now)))
			case w.State == WindowInvalid:
				fmt.Fprintf(&b, "  maintenance window: invalid, no batch starts: %s\n", w.Why)
			default:
				b.WriteString("  maintenance window: open\n")
			}
		}
		if p.DesiredVersion != "" || p.LastAppliedVersion != "" || p.LastKnownGoodVersion != "" {
			fmt.Fprintf(&b, "  versions: desired %s, last applied %s, last known good %s\n",
				orDash(p.DesiredVersion), orDash(p.LastAppliedVersion), orDash(p.LastKnownGoodVersion))
		}
		if full {
			for _, c := range p.Configs {
				fmt.Fprintf(&b, "  %s\n", c.Resource)
				fmt.Fprintf(&b, "    desired:         %s\n", objectName(c.Desired))
				fmt.Fprintf(&b, "    last applied:    %s\n", objectName(c.LastApplied))
				fmt.Fprintf(&b, "    last known good: %s\n", objectName(c.LastKnownGood))
			}
			renderClusters(&b, p.Clusters)
		}
		if len(p.FailedClusters) > 0 {
			b.WriteString("  failed clusters:\n")
			for _, f := range p.FailedClusters {
				fmt.Fprintf(&b, "    %s  %s: %s\n", f.Cluster, f.Reason, f.Message)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// header writes the add-on's first line, and the note of an add-on addonops does not manage.
func header(b *strings.Builder, v View) {
	fmt.Fprintf(b, "ADD-ON %s   install strategy: %s   rollout: %s   managed by: %s\n", v.Addon, v.InstallStrategy, v.Phase, orDash(v.ManagedBy))
	if v.Note != "" {
		fmt.Fprintf(b, "  note: %s\n", v.Note)
	}
	if dw := v.DeployerWait; dw != nil {
		fmt.Fprintf(b, "  %d cluster(s) (%s) are %s\n", len(dw.Clusters), listed(dw.Clusters), dw.Message)
	}
}

// listed names at most maxListed items, then how many more.
func listed(items []string) string {
	const maxListed = 5
	if len(items) <= maxListed {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:maxListed], ", ") + fmt.Sprintf(" and %d more", len(items)-maxListed)
}

// desiredVersions names a placement's desired version: its id and its configs' object names.
func desiredVersions(p Placement) string {
	var out []string
	for _, c := range p.Configs {
		if c.Desired != nil {
			out = append(out, objectName(c.Desired))
		}
	}
	switch {
	case len(out) == 0:
		return "the previous version"
	case p.DesiredVersion == "":
		return strings.Join(out, ", ")
	}
	return "version " + p.DesiredVersion + " (" + strings.Join(out, ", ") + ")"
}

// objectName is a config version's object, "namespace/name" or "name"; "-" for none.
func objectName(v *Version) string {
	switch {
	case v == nil:
		return "-"
	case v.Namespace == "":
		return v.Name
	}
	return v.Namespace + "/" + v.Name
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

var stateLabels = map[string]string{
	StateDone: "done", StateInProgress: "in progress", StateFailed: "failed", StateTimedOut: "timed out",
	StateWaiting: "waiting", StateUnconfigurable: "cannot be configured", StateNoAddon: "no add-on",
}

// renderClusters writes one line per cluster: its state and its ManagedClusterAddOn's reason, with
// the message for clusters on their way (failures are detailed under "failed clusters"). Beyond
// maxClusterLines, clusters that are done are only counted.
func renderClusters(b *strings.Builder, clusters []Cluster) {
	if len(clusters) == 0 {
		return
	}
	shown, hidden := clusters, 0
	if len(clusters) > maxClusterLines {
		shown = nil
		for _, c := range clusters {
			if c.State == StateDone && c.Health == Healthy {
				hidden++
				continue
			}
			shown = append(shown, c)
		}
	}
	nameWidth, stateWidth := 0, 0
	for _, c := range shown {
		nameWidth = max(nameWidth, len(c.Cluster))
		stateWidth = max(stateWidth, len(stateLabels[c.State]))
	}
	b.WriteString("  clusters:\n")
	for _, c := range shown {
		line := fmt.Sprintf("    %-*s  %-*s  %s", nameWidth, c.Cluster, stateWidth, stateLabels[c.State], c.Reason)
		switch {
		case c.State == StateInProgress || c.State == StateWaiting || c.State == StateNoAddon:
			switch {
			case c.Message != "" && c.Reason == "":
				line += c.Message
			case c.Message != "":
				line += ": " + c.Message
			}
		case c.State == StateDone && c.Health != Healthy && c.Health != "":
			line += " (add-on " + string(c.Health) + ")"
		}
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	if hidden > 0 {
		fmt.Fprintf(b, "    ... and %d more done\n", hidden)
	}
}

// age prints a duration the way kubectl does for ages: 45s, 3m12s, 2h5m, 3d4h.
func age(d time.Duration) string {
	d = d.Truncate(time.Second)
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
}
