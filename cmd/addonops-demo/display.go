package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/addonops/addonops/internal/rolloutview"
)

// row is one placement in the live progress: its progress line and, for canary rollouts, a line
// with the canary's state.
type row struct {
	Key    string
	Line   string
	Canary string
}

// versionLabel names a config version for people: the agent version the demo read from the
// config (AGENT_VERSION), else rolloutview's "<base name>@<short hash>".
type versionLabel func(*rolloutview.Version) string

// rows lays out the placements of the snapshots: bar, counts, the progression's reason, and the
// config version moving (last applied -> desired), all from rolloutview's view of the hub.
func rows(snaps []snapshot, label versionLabel) []row {
	width := 0
	for _, s := range snaps {
		for _, p := range s.View.Placements {
			width = max(width, len(p.Key()))
		}
	}
	rollingBack := map[string]bool{}
	for _, s := range snaps {
		for _, p := range s.View.Placements {
			rollingBack[p.Key()] = p.Change == "rollback" && !s.Stale[p.Key()]
		}
	}
	var out []row
	for _, s := range snaps {
		for _, p := range s.View.Placements {
			if s.Stale[p.Key()] {
				// The progression (if any) is about the last step: its counts would mislead.
				out = append(out, row{Key: p.Key(), Line: fmt.Sprintf("%-*s %s  waiting for the controller to pick up the new configs",
					width, p.Key(), rolloutview.Bar(rolloutview.Progress{}))})
				continue
			}
			pr := p.Progress
			var b strings.Builder
			fmt.Fprintf(&b, "%-*s %s %*d/%d done, %d in progress, %d failed", width, p.Key(), rolloutview.Bar(pr),
				len(fmt.Sprint(pr.Total)), pr.Done, pr.Total, pr.InProgress, pr.Failed)
			if pr.TimedOut > 0 {
				fmt.Fprintf(&b, ", %d timed out", pr.TimedOut)
			}
			fmt.Fprintf(&b, "  %s", cmp.Or(p.Reason, "waiting for the controller"))
			if ver := versions(p, label); ver != "" {
				fmt.Fprintf(&b, "  %s", ver)
			}
			r := row{Key: p.Key(), Line: b.String()}
			if c := p.Canary; c != nil {
				switch {
				case c.Canary != "" && p.Change == "rollback":
					// The controller adopts a rollback's configs at once (they become the last
					// known good): the canary did not pass them, and is not waited for.
					r.Canary = "rollback: not gated by canary " + c.Canary + " (a rollback never waits for the canary)"
				case c.Canary != "":
					r.Canary = "canary: " + c.State
				case len(c.CanaryFor) > 0 && !slices.ContainsFunc(c.CanaryFor, func(g string) bool { return !rollingBack[g] }):
					r.Canary = "canary for " + strings.Join(c.CanaryFor, ", ") + ", which roll back without waiting for it"
				case len(c.CanaryFor) > 0:
					r.Canary = "canary for " + strings.Join(c.CanaryFor, ", ") + ": " + c.State
				default:
					r.Canary = "canary: " + c.State
				}
			}
			out = append(out, r)
		}
	}
	return out
}

// versions shows the AddOnDeploymentConfig slot of a placement: "v0.10.0 -> v0.11.0" while it
// moves, "v0.11.0" once applied.
func versions(p rolloutview.Placement, label versionLabel) string {
	for _, c := range p.Configs {
		if !strings.HasPrefix(c.Resource, "addondeploymentconfigs.") {
			continue
		}
		if c.Desired == nil {
			return ""
		}
		desired := label(c.Desired)
		if c.LastApplied == nil || *c.LastApplied == *c.Desired {
			return desired
		}
		return label(c.LastApplied) + " -> " + desired
	}
	return ""
}

// display draws the live progress: on a terminal it redraws one frame in place; otherwise it
// prints a timestamped line for each placement whose line changed, at most once per interval, so
// logs and CI output stay readable.
type display struct {
	w        io.Writer
	tty      bool
	width    int // terminal columns; lines are cut to fit so a frame never wraps
	interval time.Duration

	drawn     int // lines of the frame on screen (terminal)
	lastPrint time.Time
	printed   map[string]string // plain: last line printed per placement
}

func newDisplay(w io.Writer, tty bool, width int, interval time.Duration) *display {
	return &display{w: w, tty: tty, width: width, interval: interval, printed: map[string]string{}}
}

// update shows the current state of a running step.
func (d *display) update(stepName string, elapsed time.Duration, rs []row, now time.Time) {
	if d.tty {
		lines := []string{fmt.Sprintf("step %s  %s", stepName, seconds(elapsed))}
		for _, r := range rs {
			lines = append(lines, "  "+r.Line)
			if r.Canary != "" {
				lines = append(lines, "      "+r.Canary)
			}
		}
		d.redraw(lines)
		return
	}
	if now.Sub(d.lastPrint) < d.interval {
		return
	}
	d.printChanged(elapsed, rs)
	d.lastPrint = now
}

// finish shows the final state of a step and leaves it on screen.
func (d *display) finish(stepName string, elapsed time.Duration, rs []row) {
	if d.tty {
		d.update(stepName, elapsed, rs, time.Now())
		d.drawn = 0 // keep the last frame
		return
	}
	d.printChanged(elapsed, rs)
	d.printed = map[string]string{}
	d.lastPrint = time.Time{}
}

// printChanged prints the rows that differ from what was printed last for their placement.
func (d *display) printChanged(elapsed time.Duration, rs []row) {
	var b strings.Builder
	for _, r := range rs {
		text := r.Line
		if r.Canary != "" {
			text += "\n           " + r.Canary
		}
		if d.printed[r.Key] == text {
			continue
		}
		d.printed[r.Key] = text
		fmt.Fprintf(&b, "  [%7s] %s\n", seconds(elapsed), text)
	}
	io.WriteString(d.w, b.String())
}

// redraw replaces the frame on screen with lines.
func (d *display) redraw(lines []string) {
	var b strings.Builder
	if d.drawn > 0 {
		fmt.Fprintf(&b, "\033[%dF\033[J", d.drawn) // up to the frame's first line, clear to the end
	}
	for _, l := range lines {
		if d.width > 1 && len(l) >= d.width {
			l = l[:d.width-1]
		}
		b.WriteString(l)
		b.WriteString("\n")
	}
	d.drawn = len(lines)
	io.WriteString(d.w, b.String())
}

// printf prints a message line; on a terminal the live frame above it stays.
func (d *display) printf(format string, args ...any) {
	d.drawn = 0
	fmt.Fprintf(d.w, format, args...)
}

// seconds formats a duration as "12.3s" (or "2m03s" from two minutes on).
func seconds(d time.Duration) string {
	if d < 2*time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}
