package harness

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition renders condition typ of conds as "Status/Reason: message", "-" when absent: what a
// wait on a condition compares (by prefix) and quotes.
func Condition(conds []metav1.Condition, typ string) string {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil {
		return "-"
	}
	return fmt.Sprintf("%s/%s: %s", c.Status, c.Reason, c.Message)
}

// WaitMCACondition waits until the recorded MCA of cluster has condition typ starting with want
// ("Status", "Status/Reason" or more).
func WaitMCACondition(t testing.TB, r *Recorder[MCAEvent], timeout time.Duration, cluster, typ, want string, opts ...Option) time.Duration {
	t.Helper()
	return r.WaitFor(t, timeout, fmt.Sprintf("%s: %s %s", cluster, typ, want), func(latest map[string]MCAEvent) string {
		e, ok := latest[cluster]
		if !ok {
			return "(no MCA)"
		}
		if got := Condition(e.MCA.Status.Conditions, typ); !strings.HasPrefix(got, want) {
			return got
		}
		return ""
	}, opts...)
}

// WaitProgression waits until the recorded CMA addon's install progression of placement has
// condition typ starting with want ("Status", "Status/Reason" or more).
func WaitProgression(t testing.TB, r *Recorder[CMAEvent], timeout time.Duration, addon, placement, typ, want string, opts ...Option) time.Duration {
	t.Helper()
	return r.WaitFor(t, timeout, fmt.Sprintf("progression %s of %s: %s %s", placement, addon, typ, want), func(latest map[string]CMAEvent) string {
		e, ok := latest[addon]
		if !ok {
			return "(no CMA)"
		}
		for _, ip := range e.CMA.Status.InstallProgressions {
			if ip.Name == placement {
				if got := Condition(ip.Conditions, typ); !strings.HasPrefix(got, want) {
					return got
				}
				return ""
			}
		}
		return "(no install progression " + placement + ")"
	}, opts...)
}
