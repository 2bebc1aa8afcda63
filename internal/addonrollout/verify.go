package addonrollout

import (
	"github.com/addonops/addonops/internal/rolloutplan"
	"github.com/addonops/addonops/internal/verification"
)

// Verifier runs the verification of rollout batches (internal/verifyrun.Runner): the decision
// reads the runs that ended (Lookup) and asks for the ones it needs (Start).
type Verifier interface {
	Lookup(verification.Batch) (verification.Result, bool)
	Start(verification.Batch, verification.Ref, verification.TemplateKey)
}

// Enqueue has the add-on's decision taken again: a verifier calls it when a run ended.
func (c *Rollout) Enqueue(addon string) {
	if q := c.queue.Load(); q != nil {
		(*q).Add(addon)
	}
}

// lookupVerifications is the decision's Input.Verifications: nil without a verifier.
func (c *Rollout) lookupVerifications() rolloutplan.VerificationLookup {
	if c.opts.Verifier == nil {
		return nil
	}
	return c.opts.Verifier.Lookup
}

// startVerifications hands the runs the decision asks for to the verifier.
func (c *Rollout) startVerifications(reqs []rolloutplan.VerifyRequest) {
	if c.opts.Verifier == nil {
		return
	}
	for _, r := range reqs {
		c.opts.Verifier.Start(r.Batch, r.Ref, r.Template)
	}
}
