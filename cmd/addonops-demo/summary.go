package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/testing/stepcheck"
)

// The step results and their judges are internal/testing/stepcheck's, shared with the end-to-end
// suite.
type (
	Result        = stepcheck.Result
	RollbackCheck = stepcheck.RollbackCheck
	PauseResult   = stepcheck.PauseResult
	ToldAt        = stepcheck.ToldAt
	GatesResult   = stepcheck.GatesResult
	GateBatch     = stepcheck.GateBatch
	Notification  = stepcheck.Notification
)

const (
	Succeeded   = stepcheck.Succeeded
	Failed      = stepcheck.Failed
	TimedOut    = stepcheck.TimedOut
	Interrupted = stepcheck.Interrupted
	Error       = stepcheck.Error
)

// PlacementResult is one placement at the end of a step.
type PlacementResult struct {
	Key    string
	Reason string
	// Counts as rolloutview reads them from the install progression.
	Total, Done, InProgress, Failed int
	// Desired is the AddOnDeploymentConfig the placement rolls out, DesiredVersion its agent
	// version when the config names one.
	Desired, DesiredVersion string
	// Canary is the canary state, for placements in a canary rollout.
	Canary string
}

// StepResult is one step of the demo.
type StepResult struct {
	Step     string
	Result   Result
	Expected bool
	// Why explains an unexpected result, or an error.
	Why      string
	Duration time.Duration
	// Clusters counts the clusters of the step's placements; Done those that run the step's
	// config.
	Clusters, Done int
	// Failed are the clusters reported failed or timed out.
	Failed []string
	// Reasons are the first failure messages.
	Reasons []string
	// Config is the AddOnDeploymentConfig the step rolls out (from the install progressions'
	// desired configs; several are joined with ","), Version its AGENT_VERSION.
	Config, Version string
	Notes           []string
	Placements      []PlacementResult
	// Rollbacks are the placements the step rolls back (their configs go back to a version that
	// completed on them in an earlier step), with what the demo saw of them.
	Rollbacks []RollbackCheck
	// Pause is what the pause step saw (nil for the other steps).
	Pause *PauseResult
	// Gates is what the gates step saw (nil for the other steps).
	Gates *GatesResult
	// Engine is what the GitOps engine did for the step (nil without --engine).
	Engine *EngineResult
	// kind is the step's (an example, the pause, the bad version, its revert): it decides what is
	// expected.
	kind stepKind
}

// Summary is the demo's outcome.
type Summary struct {
	Clusters, Canaries int
	Failing            []string
	Deployer           string
	// Engine names the GitOps engine that delivered the steps ("" for the demo's own apply).
	Engine             string
	Speed              float64
	HubStart, Register time.Duration
	Total              time.Duration
	Steps              []StepResult
	Interrupted        bool
	// Leftovers are processes still running after the shutdown (there must be none).
	Leftovers []string
	// Histories are the version histories the controller kept, by add-on, read after the last step.
	Histories map[string]*history.Record
}

// Exit codes of the demo.
const (
	exitOK          = 0
	exitUnexpected  = 1 // a step did not end as expected, or something was left running
	exitError       = 2 // the demo could not run (bad flags, missing binaries, hub did not start)
	exitInterrupted = 130
)

// ExitCode is 0 when every step ended as expected and nothing was left running.
func (s *Summary) ExitCode() int {
	if s.Interrupted {
		return exitInterrupted
	}
	if len(s.Leftovers) > 0 {
		return exitUnexpected
	}
	for _, st := range s.Steps {
		if !st.Expected {
			return exitUnexpected
		}
	}
	return exitOK
}

// printSummary writes the summary table.
func printSummary(w io.Writer, s *Summary) {
	delivery := ""
	if s.Engine != "" {
		delivery = ", delivered by " + s.Engine + " from a local Git repository"
	}
	fmt.Fprintf(w, "\nSUMMARY: %d simulated clusters (%d canary, %d failing), %s%s, speed %g\n",
		s.Clusters, s.Canaries, len(s.Failing), s.Deployer, delivery, s.Speed)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tRESULT\tCLUSTERS\tDONE\tFAILED\tTIME\tCONFIG")
	for _, st := range s.Steps {
		result := string(st.Result)
		if !st.Expected && st.Result != Interrupted {
			result += " (unexpected)"
		}
		cfg := st.Config
		if st.Version != "" {
			cfg += " (" + st.Version + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\n", st.Step, result, st.Clusters, st.Done, len(st.Failed), seconds(st.Duration), cfg)
	}
	tw.Flush()
	for _, st := range s.Steps {
		if len(st.Failed) > 0 {
			fmt.Fprintf(w, "  %s: failed clusters %s\n", st.Step, describe(st.Failed, 8))
		}
		for _, n := range st.Notes {
			fmt.Fprintf(w, "  %s: %s\n", st.Step, n)
		}
		if st.Engine != nil {
			fmt.Fprintf(w, "  %s: %s\n", st.Step, st.Engine.describe())
		}
		if !st.Expected && st.Why != "" && st.Result != Interrupted {
			fmt.Fprintf(w, "  %s: NOT AS EXPECTED: %s\n", st.Step, st.Why)
		}
	}
	var steps time.Duration
	for _, st := range s.Steps {
		steps += st.Duration
	}
	fmt.Fprintf(w, "  hub start %s, cluster registration %s, rollouts %s, total %s\n",
		seconds(s.HubStart), seconds(s.Register), seconds(steps), seconds(s.Total))
}

// joinNonEmpty joins the distinct non-empty values.
func joinNonEmpty(values []string) string {
	var out []string
	for _, v := range values {
		if v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return strings.Join(out, ",")
}
