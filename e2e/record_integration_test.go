//go:build integration

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/testing/harness"
)

// The suite asserts sequences, not only end states: every change of the add-on's
// ManagedClusterAddOns (and of its ClusterManagementAddOn) is recorded from one watch, in the
// order the API server committed them, so "the canary finished before the others were told to
// move" is a fact about the server's history, not about when the test happened to poll.

const (
	adcResource      = "addondeploymentconfigs"
	templateResource = "addontemplates"
)

// snapMCA is the harness's snapshot of an MCA (harness.StateOf).
func snapMCA(m *addonv1alpha1.ManagedClusterAddOn) []mcaSnap { return []mcaSnap{harness.StateOf(m)} }

func snapCMA(cma *addonv1alpha1.ClusterManagementAddOn) []progSnap {
	var out []progSnap
	for _, p := range cma.Status.InstallProgressions {
		s := progSnap{Placement: p.Namespace + "/" + p.Name}
		if c := meta.FindStatusCondition(p.Conditions, addonv1alpha1.ManagedClusterAddOnConditionProgressing); c != nil {
			s.Reason = c.Reason
		}
		for _, r := range p.ConfigReferences {
			desired, applied, good := &s.DesiredADC, &s.AppliedADC, &s.GoodADC
			switch r.Resource {
			case adcResource:
			case templateResource:
				desired, applied, good = &s.DesiredTpl, &s.AppliedTpl, &s.GoodTpl
			default:
				continue
			}
			for _, f := range []struct {
				dst *string
				src *addonv1alpha1.ConfigSpecHash
			}{{desired, r.DesiredConfig}, {applied, r.LastAppliedConfig}, {good, r.LastKnownGoodConfig}} {
				if f.src != nil {
					*f.dst = f.src.Name
				}
			}
		}
		out = append(out, s)
	}
	return out
}

// recorder is the harness's recording of one watch, in the server's order; a snapshot equal to
// its key's previous one is not recorded.
type recorder[T harness.Keyed] = harness.Recorder[T]

// record records with the harness what list and watchFn report, turning each added or modified
// object into snapshots with snap (deletions are not recorded), until ctx is done or t ends.
func record[T harness.Keyed, O runtime.Object](ctx context.Context, t *testing.T, name string,
	list func(context.Context, metav1.ListOptions) ([]O, string, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error),
	snap func(O) []T) *recorder[T] {
	t.Helper()
	r, err := harness.Record(ctx, name, harness.ListWatch[O]{List: list, Watch: watchFn}, func(typ watch.EventType, o O) []T {
		if typ == watch.Deleted {
			return nil
		}
		return snap(o)
	})
	return harness.ForTest(t, r, err)
}

// recordMCAs records the ManagedClusterAddOns named addon in every cluster namespace.
func (s *suite) recordMCAs(ctx context.Context, t *testing.T, addon string) *recorder[mcaSnap] {
	t.Helper()
	r, err := harness.RecordMCASnapshots(ctx, s.c.Addon, addon, func(typ watch.EventType, m *addonv1alpha1.ManagedClusterAddOn) []mcaSnap {
		if typ == watch.Deleted {
			return nil
		}
		return snapMCA(m)
	})
	return harness.ForTest(t, r, err)
}

// recordCMA records the install progressions of the ClusterManagementAddOn addon.
func (s *suite) recordCMA(ctx context.Context, t *testing.T, addon string) *recorder[progSnap] {
	t.Helper()
	r, err := harness.RecordCMASnapshots(ctx, s.c.Addon, addon, func(typ watch.EventType, m *addonv1alpha1.ClusterManagementAddOn) []progSnap {
		if typ == watch.Deleted {
			return nil
		}
		return snapCMA(m)
	})
	return harness.ForTest(t, r, err)
}

// eventLog formats events for failure messages and -v output.
func eventLog[T fmt.Stringer](events []T) string {
	var b strings.Builder
	for i, e := range events {
		fmt.Fprintf(&b, "\n  %3d %s", i, e)
	}
	return b.String()
}

// waitRecorded waits until check, given the latest state of every key of r, returns "".
func waitRecorded[T harness.Keyed](t *testing.T, s *suite, r *recorder[T], what string, check func(map[string]T) string) {
	t.Helper()
	r.WaitFor(t, timeout, what, check, harness.Within(s.ctx), harness.Logged())
}
