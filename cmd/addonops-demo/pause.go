package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/operations"
	"github.com/addonops/addonops/internal/testing/harness"
)

// The pause/resume step (steps/05-pause-resume) follows the rollout examples: a new good version,
// rolled out as the last example does (Progressive, behind the canary). Once the first batch of
// the gated placement started, the demo pauses that placement the way a person does with
// `addonops pause ADDON --placement NS/NAME`: the same annotation (addonops.io/pause,
// internal/operations' format), written the same way (a JSON merge patch of that one annotation,
// guarded by the resourceVersion, with the CLI's field manager). It holds the pause until the
// clusters in flight finished and then a few seconds more, showing that no new cluster starts (the
// placement reports reason Paused, its counts stay where they are), then resumes it as `addonops
// resume` does and the rollout completes. The MCA changes recorded over the step prove it: no
// cluster of the placement was told the version between the pause and the resume.
const (
	// pauseHold is how long the pause holds (before --speed) once its clusters in flight finished:
	// without the pause the next batch would have started within it. At least minPauseHold.
	pauseHold    = 4 * time.Second
	minPauseHold = time.Second
	// maxPauseWait bounds (before --speed) how long the demo waits for the clusters in flight to
	// finish before it resumes anyway. At least minPauseWait.
	maxPauseWait = 2 * time.Minute
	minPauseWait = 20 * time.Second
)

// pausePlan is what the pause step pauses: placement Placement of add-on Addon, while it rolls out
// the AddOnDeploymentConfig Config ("<namespace>/<name>"), AGENT_VERSION Version.
type pausePlan struct {
	Addon     string
	Placement canary.PlacementKey
	Config    string
	Version   string
}

// pauseTarget picks the add-on and the placement the pause step pauses (the gates step's window
// holds the same): the placement a canary gates (the first, by name), else the first placement
// rolled out Progressive or ProgressivePerGroup, one that moves its clusters in batches, so a
// pause between them holds some.
func pauseTarget(objs []*unstructured.Unstructured) (string, canary.PlacementKey, error) {
	var cmas []*unstructured.Unstructured
	for _, o := range objs {
		if o.GroupVersionKind() == cmaGVK {
			cmas = append(cmas, o)
		}
	}
	if len(cmas) != 1 {
		return "", canary.PlacementKey{}, fmt.Errorf("want one ClusterManagementAddOn to pause, found %d", len(cmas))
	}
	cma := cmas[0]
	if gated, err := canary.Parse(cma.GetAnnotations()); err == nil && len(gated) > 0 {
		keys := make([]canary.PlacementKey, 0, len(gated))
		for k := range gated {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, canary.Compare)
		return cma.GetName(), keys[0], nil
	}
	placements, _, _ := unstructured.NestedSlice(cma.Object, "spec", "installStrategy", "placements")
	for _, raw := range placements {
		p, _ := raw.(map[string]any)
		if typ, _, _ := unstructured.NestedString(p, "rolloutStrategy", "type"); typ == "Progressive" || typ == "ProgressivePerGroup" {
			return cma.GetName(), canary.PlacementKey{Namespace: fmt.Sprint(p["namespace"]), Name: fmt.Sprint(p["name"])}, nil
		}
	}
	return "", canary.PlacementKey{}, fmt.Errorf("no placement of ClusterManagementAddOn %s rolls out in batches (Progressive or ProgressivePerGroup): "+
		"there is nothing to pause between them", cma.GetName())
}

// Phases of the pause step.
const (
	pauseWaiting = iota // for the placement's first batch
	pauseWritten        // the annotation is written; waiting for reason Paused
	pauseHolding        // paused: waiting for the clusters in flight, then the hold
	pauseDone           // resumed, or given up (Problem)
)

// pauser runs the pause of one step.
type pauser struct {
	r     *demoRun
	rec   *harness.Recorder[harness.MCAStateEvent] // the step's recording
	plan  pausePlan
	start time.Time // the step's start
	hold  time.Duration
	wait  time.Duration
	phase int
	res   PauseResult
	// owned are the placement's clusters, from the last snapshot.
	owned              []string
	pausedAt, frozenAt time.Time
	toldAtPause        map[string]bool
	during             map[string]bool
	wrote              bool // the annotation is written and not removed yet
}

func (r *demoRun) newPauser(plan pausePlan, start time.Time, rec *harness.Recorder[harness.MCAStateEvent]) *pauser {
	return &pauser{r: r, rec: rec, plan: plan, start: start,
		hold:   max(time.Duration(float64(pauseHold)/r.o.Speed), minPauseHold),
		wait:   max(time.Duration(float64(maxPauseWait)/r.o.Speed), minPauseWait),
		res:    PauseResult{Placement: plan.Placement.String(), Version: plan.Version},
		during: map[string]bool{}}
}

// waiting returns the channel of recorded MCA changes while the pauser waits for the first batch
// (the step wakes at once to pause it), else nil.
func (p *pauser) waiting(changed <-chan struct{}) <-chan struct{} {
	if p == nil || p.phase != pauseWaiting || len(p.owned) == 0 {
		return nil
	}
	return changed
}

// told lists the placement's clusters whose MCA was told the version, from the recording.
func (p *pauser) told(states map[string]harness.MCAState) []string {
	var out []string
	for _, c := range p.owned {
		if states[c].Desired() == p.plan.Config {
			out = append(out, c)
		}
	}
	return out
}

// trigger pauses the placement once one of its clusters was told the version. It reports whether
// it acted.
func (p *pauser) trigger(ctx context.Context, now time.Time) bool {
	if p.phase != pauseWaiting || len(p.owned) == 0 {
		return false
	}
	told := p.told(harness.LatestStates(p.rec, p.plan.Addon))
	if len(told) == 0 {
		return false
	}
	d := p.r.disp
	d.printf("   -- %s started its first batch at %s (%s told %s); a person pauses it:\n", p.plan.Placement, seconds(now.Sub(p.start)),
		describeTold(told), p.plan.Version)
	d.printf("   $ addonops pause %s --placement %s\n", p.plan.Addon, p.plan.Placement)
	outcome, err := editPause(ctx, p.r.clients.Addon, p.plan.Addon, p.plan.Placement, true)
	if err != nil {
		p.res.Problem = fmt.Sprintf("pausing %s: %v", p.plan.Placement, err)
		p.phase = pauseDone
		d.printf("   ERROR: %s\n", p.res.Problem)
		return true
	}
	p.wrote = true
	p.res.WrittenAt = time.Since(p.start)
	printOutcome(d, outcome)
	p.phase = pauseWritten
	return true
}

// advance moves the pause on with the step's latest snapshots.
func (p *pauser) advance(ctx context.Context, snaps []snapshot, now time.Time) {
	if p.phase == pauseDone {
		return
	}
	key := p.plan.Placement.String()
	var pl *placementView
	for _, s := range snaps {
		if s.View.Addon != p.plan.Addon {
			continue
		}
		p.owned = s.owned(key)
		p.res.Clusters = len(p.owned)
		for i := range s.View.Placements {
			if s.View.Placements[i].Key() == key && s.View.Placements[i].Behind == "" {
				pl = &placementView{reason: s.View.Placements[i].Reason, done: addonstatus.IsDoneReason(s.View.Placements[i].Reason)}
			}
		}
	}
	states := harness.LatestStates(p.rec, p.plan.Addon)
	d := p.r.disp
	switch p.phase {
	case pauseWaiting:
		if p.trigger(ctx, now) {
			return
		}
		if pl != nil && pl.done {
			p.res.Problem = fmt.Sprintf("%s finished its rollout (%s) before the demo saw its first batch: nothing left to pause", key, pl.reason)
			p.phase = pauseDone
		}
	case pauseWritten:
		switch {
		case pl != nil && pl.reason == addonstatus.ReasonPaused:
			p.pausedAt = now
			p.res.PausedAt = now.Sub(p.start)
			p.toldAtPause = map[string]bool{}
			for _, c := range p.told(states) {
				p.toldAtPause[c] = true
				p.res.ToldAtPause = append(p.res.ToldAtPause, c)
				if !states[c].Runs(p.plan.Config) && !states[c].Failed() {
					p.res.InFlightAtPause++
				}
			}
			p.res.Held = len(p.owned) - len(p.res.ToldAtPause)
			d.printf("   -- the controller paused %s (reason Paused) at %s: %d of its clusters in flight finish, %d wait; no new cluster starts\n",
				key, seconds(p.res.PausedAt), p.res.InFlightAtPause, p.res.Held)
			p.phase = pauseHolding
		case pl != nil && pl.done:
			p.res.Problem = fmt.Sprintf("%s finished its rollout (%s) before the controller reported the pause", key, pl.reason)
			p.phase = pauseDone
		}
	case pauseHolding:
		for _, c := range p.told(states) {
			if !p.toldAtPause[c] && !p.during[c] {
				p.during[c] = true
				p.res.ToldDuring = append(p.res.ToldDuring, c)
				d.printf("   NOT AS EXPECTED: %s was told %s while %s was paused\n", c, p.plan.Version, key)
			}
		}
		inFlight, done := 0, 0
		for c := range p.toldAtPause {
			switch st := states[c]; {
			case st.Runs(p.plan.Config):
				done++
			case !st.Failed():
				inFlight++
			}
		}
		if inFlight == 0 && p.frozenAt.IsZero() {
			p.frozenAt = now
			d.printf("   -- its clusters in flight finished at %s: %d/%d run %s; the pause holds %s more, and nothing moves\n",
				seconds(now.Sub(p.start)), done, len(p.owned), p.plan.Version, seconds(p.hold))
		}
		timedOut := now.Sub(p.pausedAt) >= p.wait
		if (p.frozenAt.IsZero() || now.Sub(p.frozenAt) < p.hold) && !timedOut {
			return
		}
		if timedOut && p.frozenAt.IsZero() {
			p.res.Problem = fmt.Sprintf("%d clusters of %s in flight did not finish within %s of the pause", inFlight, key, seconds(p.wait))
		}
		if pl != nil {
			p.res.ReasonAtResume = pl.reason
		}
		p.res.DoneAtResume = 0
		for _, c := range p.owned {
			if states[c].Runs(p.plan.Config) {
				p.res.DoneAtResume++
			}
		}
		told := len(p.toldAtPause) + len(p.during)
		d.printf("   -- paused for %s: %d/%d clusters run %s, %d told in all, %d told during the pause, %d held (reason %s); a person resumes it:\n",
			seconds(now.Sub(p.pausedAt)), p.res.DoneAtResume, len(p.owned), p.plan.Version, told, len(p.during), len(p.owned)-told, p.res.ReasonAtResume)
		p.resume(ctx)
	}
}

// placementView is what the pauser reads of its placement in a snapshot.
type placementView struct {
	reason string
	done   bool
}

// resume removes the placement from the pause annotation, as `addonops resume` does.
func (p *pauser) resume(ctx context.Context) {
	d := p.r.disp
	d.printf("   $ addonops resume %s --placement %s\n", p.plan.Addon, p.plan.Placement)
	outcome, err := editPause(ctx, p.r.clients.Addon, p.plan.Addon, p.plan.Placement, false)
	p.phase = pauseDone
	if err != nil {
		p.res.Problem = fmt.Sprintf("resuming %s: %v", p.plan.Placement, err)
		d.printf("   ERROR: %s\n", p.res.Problem)
		return
	}
	p.wrote = false
	p.res.ResumedAt = time.Since(p.start)
	printOutcome(d, outcome)
}

// finish completes the result from the step's recording: when each of the placement's clusters was
// first told the version. A pause still in place (the step ended otherwise: interrupted, timed
// out) is removed, so the steps after it are not paused.
func (p *pauser) finish(events []harness.MCAStateEvent) *PauseResult {
	if p.wrote {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := editPause(ctx, p.r.clients.Addon, p.plan.Addon, p.plan.Placement, false); err == nil {
			p.wrote = false
			if p.res.Problem == "" {
				p.res.Problem = "the step ended while the placement was paused; the demo resumed it"
			}
		}
	}
	if p.phase == pauseWaiting && p.res.Problem == "" {
		p.res.Problem = fmt.Sprintf("the step ended before %s started its first batch: nothing was paused", p.plan.Placement)
	}
	told := harness.FirstTold(events, p.plan.Addon, p.plan.Config, p.owned)
	for c, at := range told {
		p.res.Told = append(p.res.Told, ToldAt{Cluster: c, At: at.Sub(p.start)})
	}
	slices.SortFunc(p.res.Told, func(a, b ToldAt) int {
		if a.At != b.At {
			return int(a.At - b.At)
		}
		return strings.Compare(a.Cluster, b.Cluster)
	})
	res := p.res
	return &res
}

// editPause pauses or resumes placement k of add-on addon on the hub exactly as `addonops pause|resume
// ADDON --placement k` does (operations.Pause or Resume, written by operations.Annotator with the
// CLI's field manager). It returns what the command prints (operations.Outcome).
func editPause(ctx context.Context, c addonclient.Interface, addon string, k canary.PlacementKey, pause bool) (string, error) {
	decide := operations.Resume
	if pause {
		decide = operations.Pause
	}
	a := operations.Annotator{Client: c, FieldManager: operations.CLIFieldManager}
	_, edit, changed, err := a.Write(ctx, addon, operations.PauseAnnotation, func(cma *addonv1alpha1.ClusterManagementAddOn) (operations.Edit, error) {
		return decide(cma, &k)
	})
	if err != nil {
		return "", err
	}
	return operations.Outcome(addon, operations.PauseAnnotation, edit, changed), nil
}

// printOutcome prints what the command printed, under the demo's "   $ addonops ..." line.
func printOutcome(d *display, outcome string) {
	for line := range strings.Lines(outcome) {
		d.printf("   %s", line)
	}
}

// describeTold names the clusters just told a version: "cluster-03 was", "cluster-03, cluster-04 were".
func describeTold(clusters []string) string {
	if len(clusters) == 1 {
		return clusters[0] + " was"
	}
	return describe(clusters, 5) + " were"
}
