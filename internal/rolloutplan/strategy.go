package rolloutplan

// What a placement's rollout strategy means here: defaults, deadlines and soak.

import (
	"math"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/addonops/addonops/internal/rolloutrules"
)

// DefaultUnhealthyDeadline is how long a cluster whose works are applied may stay unhealthy before
// its change fails (FailUnhealthy), when its placement's rollout strategy sets no progressDeadline.
const DefaultUnhealthyDeadline = 5 * time.Minute

// unhealthyDeadline is how long a cluster may stay unhealthy with its works applied: the rollout
// strategy's progressDeadline, or DefaultUnhealthyDeadline when it has none.
func unhealthyDeadline(s clusterv1alpha1.RolloutStrategy) time.Duration {
	cfg := rolloutrules.ConfigOf(s)
	if cfg.ProgressDeadline == "" || cfg.ProgressDeadline == "None" {
		return DefaultUnhealthyDeadline
	}
	d, err := time.ParseDuration(cfg.ProgressDeadline)
	if err != nil || d <= 0 {
		return DefaultUnhealthyDeadline // sdk-go rejects the strategy; the placement waits
	}
	return d
}

// progressDeadline is the strategy's progressDeadline as sdk-go reads it (parseTimeout), as written:
// "" for None or unset (a cluster in progress or failed never times out).
func progressDeadline(s clusterv1alpha1.RolloutStrategy) string {
	d := rolloutrules.ConfigOf(s).ProgressDeadline
	if d == "None" {
		return ""
	}
	if _, err := time.ParseDuration(d); err != nil {
		return "" // sdk-go rejects the strategy; the placement waits
	}
	return d
}

// effectiveStrategy fills what OCM fills before calling sdk-go: type All when unset, and for
// Progressive without maxConcurrency the placement's clustersPerDecisionGroup (OCM's
// addonconfiguration graph.go, before it hands the strategy to sdk-go's RolloutHandler).
func effectiveStrategy(s clusterv1alpha1.RolloutStrategy, placement *clusterv1beta1.Placement) clusterv1alpha1.RolloutStrategy {
	out := *s.DeepCopy()
	if out.Type == "" {
		out.Type = clusterv1alpha1.All
	}
	if out.Type == clusterv1alpha1.Progressive {
		if out.Progressive == nil {
			out.Progressive = &clusterv1alpha1.RolloutProgressive{}
		}
		mc := out.Progressive.MaxConcurrency
		if mc.Type == intstr.Int && mc.IntVal == 0 && mc.StrVal == "" && placement != nil {
			out.Progressive.MaxConcurrency = placement.Spec.DecisionStrategy.GroupStrategy.ClustersPerDecisionGroup
		}
	}
	return out
}

// MaxConcurrency is how many of a placement's total selected clusters its rollout strategy lets
// be in flight at once, as sdk-go sizes a Progressive batch (a count, or a percentage of total
// rounded up; 0, unset or more than total means total) after effectiveStrategy filled the
// placement's clustersPerDecisionGroup. All and ProgressivePerGroup set no number (the latter paces
// by decision group): total. An invalid value, which makes the placement wait, is total too. The
// metrics compare it with the clusters in flight (rolloutmetrics).
func MaxConcurrency(s clusterv1alpha1.RolloutStrategy, placement *clusterv1beta1.Placement, total int) int {
	eff := effectiveStrategy(s, placement)
	if eff.Type != clusterv1alpha1.Progressive {
		return total
	}
	return sizeOf(eff.Progressive.MaxConcurrency, total, total)
}

// sizeOf is a maxConcurrency or maxFailures of total clusters as sdk-go sizes it
// (calculateRolloutSize): a count, or a percentage of total rounded up; 0, unset, more than total or
// invalid (the placement then waits) means def.
func sizeOf(v intstr.IntOrString, total, def int) int {
	n := 0
	switch v.Type {
	case intstr.Int:
		n = int(v.IntVal)
	case intstr.String:
		pct, ok := strings.CutSuffix(v.StrVal, "%")
		f, err := strconv.ParseFloat(pct, 64)
		if !ok || err != nil {
			return def
		}
		n = int(math.Ceil(f / 100 * float64(total)))
	}
	if n <= 0 || n > total {
		return def
	}
	return n
}

func minSuccessTime(s clusterv1alpha1.RolloutStrategy) time.Duration {
	switch {
	case s.Type == clusterv1alpha1.Progressive && s.Progressive != nil:
		return s.Progressive.MinSuccessTime.Duration
	case s.Type == clusterv1alpha1.ProgressivePerGroup && s.ProgressivePerGroup != nil:
		return s.ProgressivePerGroup.MinSuccessTime.Duration
	}
	// sdk-go ignores minSuccessTime under All.
	return 0
}
