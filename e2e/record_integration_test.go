//go:build integration

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	watchtools "k8s.io/client-go/tools/watch"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
)

// The suite asserts sequences, not only end states: every change of the add-on's
// ManagedClusterAddOns (and of its ClusterManagementAddOn) is recorded from one watch, in the
// order the API server committed them, so "the canary finished before the others were told to
// move" is a fact about the server's history, not about when the test happened to poll.

const (
	adcResource      = "addondeploymentconfigs"
	templateResource = "addontemplates"
)

func snapMCA(m *addonv1alpha1.ManagedClusterAddOn) []mcaSnap {
	s := mcaSnap{Cluster: m.Namespace}
	for _, r := range m.Status.ConfigReferences {
		desired, applied := &s.DesiredADC, &s.AppliedADC
		switch r.Resource {
		case adcResource:
		case templateResource:
			desired, applied = &s.DesiredTpl, &s.AppliedTpl
		default:
			continue
		}
		if r.DesiredConfig != nil {
			*desired = r.DesiredConfig.Name
		}
		if r.LastAppliedConfig != nil {
			*applied = r.LastAppliedConfig.Name
		}
	}
	if c := meta.FindStatusCondition(m.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionProgressing); c != nil {
		s.Progressing = c.Reason
	}
	if c := meta.FindStatusCondition(m.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionConfigured); c != nil {
		s.Configured = string(c.Status)
	}
	if c := meta.FindStatusCondition(m.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionAvailable); c != nil {
		s.Available = string(c.Status) + "/" + c.Reason
	}
	return []mcaSnap{s}
}

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

// recorder keeps every distinct state of the objects one watch reports, in the server's order.
type recorder[T interface {
	comparable
	key() string
}] struct {
	name   string
	mu     sync.Mutex
	events []T
	latest map[string]T
	err    error // the watch ended unexpectedly
}

// record lists and then watches from the list's resourceVersion (a RetryWatcher resumes after
// a dropped connection without missing events), turning each object into snapshots with snap.
// Snapshots equal to the key's previous one are not recorded. It runs until ctx is done.
func record[T interface {
	comparable
	key() string
}, O runtime.Object](ctx context.Context, t *testing.T, name string,
	list func(context.Context, metav1.ListOptions) ([]O, string, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error),
	snap func(O) []T) *recorder[T] {
	t.Helper()
	r := &recorder[T]{name: name, latest: map[string]T{}}
	items, rv, err := list(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("recording %s: listing: %v", name, err)
	}
	for _, o := range items {
		r.add(snap(o))
	}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, rv, watcherFunc(watchFn))
	if err != nil {
		t.Fatalf("recording %s: %v", name, err)
	}
	go func() {
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					if ctx.Err() == nil {
						r.fail(fmt.Errorf("the watch of %s ended", name))
					}
					return
				}
				switch ev.Type {
				case watch.Added, watch.Modified:
					if o, ok := ev.Object.(O); ok {
						r.add(snap(o))
					}
				case watch.Error:
					r.fail(fmt.Errorf("the watch of %s reported %v", name, ev.Object))
					return
				}
			}
		}
	}()
	return r
}

func (r *recorder[T]) add(snaps []T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range snaps {
		if prev, ok := r.latest[s.key()]; ok && prev == s {
			continue
		}
		r.latest[s.key()] = s
		r.events = append(r.events, s)
	}
}

func (r *recorder[T]) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
}

// mark returns the position of the next event: a step's events are those after its mark.
func (r *recorder[T]) mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// since returns the state of every key at mark and the events after it.
func (r *recorder[T]) since(mark int) (map[string]T, []T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	start := map[string]T{}
	for _, e := range r.events[:mark] {
		start[e.key()] = e
	}
	return start, slices.Clone(r.events[mark:])
}

// waitFor waits until check, given the latest state of every key, returns "".
func (r *recorder[T]) waitFor(t *testing.T, s *suite, what string, check func(map[string]T) string) {
	t.Helper()
	s.eventually(t, what, func() string {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.err != nil {
			return r.err.Error()
		}
		latest := make(map[string]T, len(r.latest))
		for k, v := range r.latest {
			latest[k] = v
		}
		return check(latest)
	})
}

// recordMCAs records the ManagedClusterAddOns named addon in every cluster namespace.
func (s *suite) recordMCAs(ctx context.Context, t *testing.T, addon string) *recorder[mcaSnap] {
	api := s.c.Addon.AddonV1alpha1().ManagedClusterAddOns(metav1.NamespaceAll)
	sel := fields.OneTermEqualSelector("metadata.name", addon).String()
	return record(ctx, t, "ManagedClusterAddOns "+addon,
		func(ctx context.Context, o metav1.ListOptions) ([]*addonv1alpha1.ManagedClusterAddOn, string, error) {
			o.FieldSelector = sel
			l, err := api.List(ctx, o)
			if err != nil {
				return nil, "", err
			}
			var out []*addonv1alpha1.ManagedClusterAddOn
			for i := range l.Items {
				out = append(out, &l.Items[i])
			}
			return out, l.ResourceVersion, nil
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return api.Watch(ctx, o)
		}, snapMCA)
}

// recordCMA records the install progressions of the ClusterManagementAddOn addon.
func (s *suite) recordCMA(ctx context.Context, t *testing.T, addon string) *recorder[progSnap] {
	api := s.c.Addon.AddonV1alpha1().ClusterManagementAddOns()
	sel := fields.OneTermEqualSelector("metadata.name", addon).String()
	return record(ctx, t, "ClusterManagementAddOn "+addon,
		func(ctx context.Context, o metav1.ListOptions) ([]*addonv1alpha1.ClusterManagementAddOn, string, error) {
			o.FieldSelector = sel
			l, err := api.List(ctx, o)
			if err != nil {
				return nil, "", err
			}
			var out []*addonv1alpha1.ClusterManagementAddOn
			for i := range l.Items {
				out = append(out, &l.Items[i])
			}
			return out, l.ResourceVersion, nil
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return api.Watch(ctx, o)
		}, snapCMA)
}

// eventLog formats events for failure messages and -v output.
func eventLog[T fmt.Stringer](events []T) string {
	var b strings.Builder
	for i, e := range events {
		fmt.Fprintf(&b, "\n  %3d %s", i, e)
	}
	return b.String()
}
