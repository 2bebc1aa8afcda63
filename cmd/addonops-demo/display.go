package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/addonops/addonops/internal/rolloutview"
	"github.com/addonops/addonops/internal/testing/stepcheck"
)

// frame is what the live progress shows of a running step: each add-on as `addonops status ADDON`
// prints it without the per-cluster lines (rolloutview.RenderSummary), then Extra lines (the GitOps
// engine's status).
type frame struct {
	Views []rolloutview.View
	Extra []string
}

// lines renders the frame; now dates the view's ages.
func (f frame) lines(now time.Time) []string {
	var b strings.Builder
	for i, v := range f.Views {
		if i > 0 {
			b.WriteString("\n")
		}
		_ = rolloutview.RenderSummary(&b, v, now) // a strings.Builder does not fail
	}
	out := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if b.Len() == 0 {
		out = nil
	}
	return append(out, f.Extra...)
}

// key identifies what the frame shows, without the ages that change every second and the
// per-cluster states the summary does not show: plain output prints a frame when its key changes.
func (f frame) key() string {
	views := make([]rolloutview.View, len(f.Views))
	for i, v := range f.Views {
		v.Placements = append([]rolloutview.Placement(nil), v.Placements...)
		for j := range v.Placements {
			v.Placements[j].Clusters = nil
		}
		views[i] = v
	}
	js, _ := json.Marshal(struct {
		Views []rolloutview.View
		Extra []string
	}{views, f.Extra})
	return string(js)
}

// display draws the live progress: on a terminal it redraws one frame in place (as `addonops
// status --watch` does); otherwise it prints the frame when what it shows changed, at most once
// per interval, so logs and CI output stay readable.
type display struct {
	w        io.Writer
	tty      bool
	width    int // terminal columns; lines are cut to fit so a frame never wraps
	interval time.Duration

	drawn     int // lines of the frame on screen (terminal)
	lastPrint time.Time
	printed   string // plain: the key of the last frame printed
}

func newDisplay(w io.Writer, tty bool, width int, interval time.Duration) *display {
	return &display{w: w, tty: tty, width: width, interval: interval}
}

// update shows the current state of a running step.
func (d *display) update(stepName string, elapsed time.Duration, f frame, now time.Time) {
	if d.tty {
		d.redraw(append([]string{fmt.Sprintf("step %s  %s", stepName, seconds(elapsed))}, f.lines(now)...))
		return
	}
	if now.Sub(d.lastPrint) < d.interval {
		return
	}
	d.printChanged(elapsed, f, now)
	d.lastPrint = now
}

// finish shows the final state of a step and leaves it on screen.
func (d *display) finish(stepName string, elapsed time.Duration, f frame) {
	if d.tty {
		d.update(stepName, elapsed, f, time.Now())
		d.drawn = 0 // keep the last frame
		return
	}
	d.printChanged(elapsed, f, time.Now())
	d.printed = ""
	d.lastPrint = time.Time{}
}

// printChanged prints the frame unless it shows what was printed last.
func (d *display) printChanged(elapsed time.Duration, f frame, now time.Time) {
	if k := f.key(); k != d.printed {
		d.printed = k
		var b strings.Builder
		fmt.Fprintf(&b, "  --- %s\n", seconds(elapsed))
		for _, l := range f.lines(now) {
			b.WriteString(strings.TrimRight("  "+l, " ") + "\n")
		}
		io.WriteString(d.w, b.String())
	}
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

// seconds formats a duration as the step checks do (stepcheck.Seconds): "12.3s", "2m03s".
func seconds(d time.Duration) string { return stepcheck.Seconds(d) }
