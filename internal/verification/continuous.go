package verification

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// Continuous verification (Argo Rollouts' background analysis, for a placement): besides the runs
// after each batch, an annotation entry may name a template that the controller runs over and over
// while the placement rolls out a version, over every cluster told the version so far, one run at a
// time, Interval apart:
//
//	addonops.io/verification: '[{"placement": "*", "template": "smoke-tests",
//	  "continuous": {"template": "error-rate", "interval": "2m"}}]'
//
// A failed run fails every cluster told the version; an inconclusive one holds the placement for a
// person, as a batch's run does. docs/spec/verification.md states the rules.

// DefaultContinuousInterval is the time between a continuous run's end and the next run's start
// when the entry sets no interval.
const DefaultContinuousInterval = time.Minute

// Continuous is an annotation entry's continuous verification: the template to run while the
// placement rolls out a version, and the time between runs.
type Continuous struct {
	// Template, Kind, Namespace and Args name the template and its argument values, as the entry's
	// own fields do for the batch runs.
	Template  string            `json:"template"`
	Kind      string            `json:"kind,omitempty"`
	Namespace string            `json:"namespace,omitempty"`
	Args      map[string]string `json:"args,omitempty"`
	// Interval is the time from a run's end to the next run's start, a Go duration ("2m");
	// DefaultContinuousInterval when empty.
	Interval string `json:"interval,omitempty"`
}

// Every returns the time between runs. The annotation's parser checked Interval.
func (c *Continuous) Every() time.Duration {
	if c == nil || c.Interval == "" {
		return DefaultContinuousInterval
	}
	d, err := time.ParseDuration(c.Interval)
	if err != nil || d <= 0 {
		return DefaultContinuousInterval
	}
	return d
}

// Ref returns the continuous template as a reference of its own, for the runner (which reads the
// template and resolves its arguments as for a batch) and for TemplateKey.
func (c *Continuous) Ref(of Ref) Ref {
	return Ref{Placement: of.Placement, Template: c.Template, Kind: c.Kind, Namespace: c.Namespace, Args: c.Args, Index: of.Index}
}

// normalize defaults the kind and returns what is wrong with the entry, for ParseValue.
func (c *Continuous) normalize() []string {
	if c == nil {
		return nil
	}
	if c.Kind == "" {
		c.Kind = KindAnalysisTemplate
	}
	problems := templateProblems(continuousFields, c.Template, c.Kind, c.Namespace, c.Args)
	if c.Interval != "" {
		if d, err := time.ParseDuration(c.Interval); err != nil || d <= 0 {
			problems = append(problems, fmt.Sprintf("continuous.interval %q: want a positive duration such as \"2m\"", c.Interval))
		}
	}
	return problems
}

// NewContinuousBatch returns continuous run number run (1-based) of a placement's rollout of a
// version over clusters, the clusters told the version when the run is asked for. Its batch number
// (the batch argument) is 0.
func NewContinuousBatch(addon, placement, version string, run int, clusters []string) Batch {
	b := NewBatch(addon, placement, version, 0, clusters)
	b.Continuous = run
	return b
}

// continuousKey identifies a continuous run by its add-on, placement, version and number, not by
// its clusters: the clusters told the version grow while a run runs, and a decision that asks again
// for the running run with more clusters must not start a second one (one run at a time).
func (b Batch) continuousKey() string {
	h := sha256.New()
	fmt.Fprintf(h, "continuous\x00%s\x00%s\x00%s\x00%d", b.Addon, b.Placement, b.Version, b.Continuous)
	return hex.EncodeToString(h.Sum(nil))[:16]
}
