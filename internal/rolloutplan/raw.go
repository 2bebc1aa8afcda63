package rolloutplan

// What the hub's objects say beyond their Go types.

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addonops/internal/rolloutrules"
)

// Raw is what the input's objects say beyond what their Go types hold: the controller's cache
// decodes every object on its own and holds a placeholder, the Go type with the metadata only, for
// one that does not decode (package hubcache).
type Raw interface {
	// Undecodable says why obj, an MCA or a Placement of the input, is such a placeholder, "" when
	// it decoded. Such an MCA cannot be configured: it is never counted done, never written, and its
	// placement names it; such a Placement's clusters keep their configs.
	Undecodable(obj metav1.Object) string
	// RolloutStrategy returns spec.installStrategy.placements[index].rolloutStrategy of the input's
	// CMA as the API server returned it (nil when unset); ok is false when it is not known, and the
	// strategy's Go form is checked instead, which cannot tell an explicit maxConcurrency of 0 from
	// an unset one.
	RolloutStrategy(index int) (strategy map[string]any, ok bool)
}

func (d *decider) undecodable(obj metav1.Object) string {
	if d.in.Raw == nil {
		return ""
	}
	return d.in.Raw.Undecodable(obj)
}

// invalidStrategy checks placement p's rollout strategy with package rolloutrules, the rules the
// rollout-strategy function applies at build time: as the API server returned it when the input
// has it, else its Go form. It returns the progression message, "" when the strategy is valid.
func (d *decider) invalidStrategy(p *placementState) string {
	path := fmt.Sprintf("spec.installStrategy.placements[%d].rolloutStrategy", p.index)
	var probs []rolloutrules.Problem
	if d.in.Raw != nil {
		if raw, ok := d.in.Raw.RolloutStrategy(p.index); ok {
			probs = rolloutrules.Check(path, raw)
		} else {
			probs = rolloutrules.CheckTyped(path, p.spec.RolloutStrategy)
		}
	} else {
		probs = rolloutrules.CheckTyped(path, p.spec.RolloutStrategy)
	}
	if len(probs) == 0 {
		return ""
	}
	s := make([]string, len(probs))
	for i, pr := range probs {
		s[i] = pr.String()
	}
	return InvalidStrategyMessage(PlacementKey(p.key), strings.Join(s, "; "))
}

// InvalidStrategyMessage is the progression message of placement key whose rollout strategy breaks
// the rules (problems: "<field>: <message>", joined).
func InvalidStrategyMessage(key PlacementKey, problems string) string {
	return fmt.Sprintf("the rollout strategy of placement %s is invalid: %s; no cluster of this placement moves until it is fixed", key, problems)
}
