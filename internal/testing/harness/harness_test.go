package harness

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
)

// fakeT records what a wait reports instead of ending the test.
type fakeT struct {
	testing.TB
	fatal string
}

func (f *fakeT) Helper()                           {}
func (f *fakeT) Fatal(args ...any)                 { f.fatal = fmt.Sprint(args...) }
func (f *fakeT) Fatalf(format string, args ...any) { f.fatal = fmt.Sprintf(format, args...) }
func (f *fakeT) Logf(string, ...any)               {}

func TestEventually(t *testing.T) {
	var n atomic.Int32
	ft := &fakeT{}
	Eventually(ft, 5*time.Second, "three polls", func() string {
		if n.Add(1) < 3 {
			return fmt.Sprintf("poll %d", n.Load())
		}
		return ""
	}, Every(time.Millisecond))
	if ft.fatal != "" || n.Load() != 3 {
		t.Fatalf("Eventually failed (%q) or polled %d times, want 3", ft.fatal, n.Load())
	}

	ft = &fakeT{}
	Eventually(ft, 20*time.Millisecond, "the impossible", func() string { return "still 7 MCAs" }, Every(time.Millisecond), Dump(func() string { return "the dump" }))
	for _, want := range []string{"waiting for the impossible", "not within 20ms", "still 7 MCAs", "the dump"} {
		if !strings.Contains(ft.fatal, want) {
			t.Errorf("failure %q does not say %q", ft.fatal, want)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ft = &fakeT{}
	Eventually(ft, time.Minute, "a cancelled wait", func() string { return "no" }, Within(ctx))
	if !strings.Contains(ft.fatal, "context canceled") {
		t.Errorf("a wait whose context is done failed with %q, want it to name the cancellation", ft.fatal)
	}
}

func TestUntilErr(t *testing.T) {
	var polls atomic.Int32
	gone := errors.New("the controller exited")
	_, err := UntilErr(context.Background(), time.Minute, time.Millisecond, func() (string, error) {
		if polls.Add(1) == 3 {
			return "", gone
		}
		return "not yet", nil
	})
	if !errors.Is(err, gone) || polls.Load() != 3 {
		t.Fatalf("UntilErr returned %v after %d polls; want the check's error at the third, at once", err, polls.Load())
	}
	_, err = UntilErr(context.Background(), 10*time.Millisecond, time.Millisecond, func() (string, error) { return "3/5 done", nil })
	if err == nil || !strings.Contains(err.Error(), "not within 10ms: 3/5 done") {
		t.Fatalf("UntilErr timed out with %v, want the last answer", err)
	}
	if d, err := UntilErr(context.Background(), time.Minute, time.Millisecond, func() (string, error) { return "", nil }); err != nil || d < 0 {
		t.Fatalf("UntilErr of a check that holds: %s, %v", d, err)
	}
}

func TestConsistently(t *testing.T) {
	ft := &fakeT{}
	start := time.Now()
	var polls atomic.Int32
	Consistently(ft, 30*time.Millisecond, "nothing moves", func() string { polls.Add(1); return "" }, Every(time.Millisecond))
	if ft.fatal != "" || time.Since(start) < 30*time.Millisecond || polls.Load() < 2 {
		t.Fatalf("Consistently: failure %q after %s and %d polls; want none, at least 30ms and polls all along", ft.fatal, time.Since(start), polls.Load())
	}
	ft = &fakeT{}
	polls.Store(0)
	Consistently(ft, time.Minute, "nothing moves", func() string {
		if polls.Add(1) == 3 {
			return "cluster c1 moved"
		}
		return ""
	}, Every(time.Millisecond))
	if !strings.Contains(ft.fatal, "cluster c1 moved") || polls.Load() != 3 {
		t.Fatalf("Consistently failed with %q after %d polls; want the third poll's answer at once", ft.fatal, polls.Load())
	}
}

func mcaEvent(cluster, desired, desiredHash, applied, appliedHash string) MCAEvent {
	ref := addonv1alpha1.ConfigReference{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"}}
	if desired != "" {
		ref.DesiredConfig = &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Name: desired}, SpecHash: desiredHash}
	}
	if applied != "" {
		ref.LastAppliedConfig = &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Name: applied}, SpecHash: appliedHash}
	}
	m := &addonv1alpha1.ManagedClusterAddOn{}
	m.Namespace, m.Name = cluster, "a"
	m.Status.ConfigReferences = []addonv1alpha1.ConfigReference{ref}
	return MCAEvent{Type: watch.Modified, Cluster: cluster, MCA: m}
}

func TestMaxInFlight(t *testing.T) {
	start := map[string]MCAEvent{
		"c1": mcaEvent("c1", "old", "h0", "old", "h0"),
		"c2": mcaEvent("c2", "old", "h0", "old", "h0"),
		"c3": mcaEvent("c3", "new", "h1", "old", "h0"), // already moving at the start
	}
	deleted := mcaEvent("c3", "new", "h1", "old", "h0")
	deleted.Type = watch.Deleted
	events := []MCAEvent{
		mcaEvent("c1", "new", "h1", "old", "h0"),
		mcaEvent("c1", "new", "h1", "new", "h1"),
		mcaEvent("c2", "new", "h1", "old", "h0"),
		mcaEvent("c1", "new", "h2", "new", "h1"), // changed in place: moving again
		deleted,
		mcaEvent("c2", "new", "h1", "new", "h1"),
	}
	moving := MovingTo("addondeploymentconfigs", "new")
	if n, at := MaxInFlight(start, events, nil, moving); n != 3 || !slices.Equal(at, []string{"c1", "c2", "c3"}) {
		t.Errorf("MaxInFlight = %d %v, want 3 [c1 c2 c3] (c3 moving from the start, c1 again after its in-place change)", n, at)
	}
	if n, at := MaxInFlight(start, events, []string{"c1", "c2"}, moving); n != 2 || !slices.Equal(at, []string{"c1", "c2"}) {
		t.Errorf("MaxInFlight among c1 c2 = %d %v, want 2 [c1 c2] (c1 moving again with a new spec hash)", n, at)
	}
	// Among c2 and c3: the start (c3 moving) is not counted; after c2's moving c2 and c3 are.
	if n, at := MaxInFlight(start, events, []string{"c2", "c3"}, moving, ChangesOnly()); n != 2 || !slices.Equal(at, []string{"c2", "c3"}) {
		t.Errorf("MaxInFlight of changes among c2 c3 = %d %v, want 2 [c2 c3]", n, at)
	}
	// Among c3 alone: its one change (its deletion) ends its move; c1's changes are not moments of c3.
	if n, _ := MaxInFlight(start, events, []string{"c3"}, moving, ChangesOnly()); n != 0 {
		t.Errorf("MaxInFlight of changes among c3 = %d, want 0 (moving at the start only)", n)
	}
	if n, _ := MaxInFlight(start, events, []string{"c3"}, moving); n != 1 {
		t.Errorf("MaxInFlight among c3 = %d, want 1 (moving at the start)", n)
	}
	if n, _ := MaxInFlight(start, events, nil, MovingTo("addontemplates", "new")); n != 0 {
		t.Errorf("MaxInFlight of another resource = %d, want 0", n)
	}
	if i := FirstWhen(start, events, func(s map[string]MCAEvent) bool { return !moving(s["c2"]) && DesiredOf(s["c2"].MCA, "", "new") != nil }); i != 5 {
		t.Errorf("FirstWhen c2 done = %d, want 5", i)
	}
	if i := FirstIndex(events, "c2", moving); i != 2 {
		t.Errorf("FirstIndex c2 moving = %d, want 2", i)
	}
}

func TestSyncBuffer(t *testing.T) {
	var b SyncBuffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				_, _ = b.Write([]byte("x"))
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if got := len(b.String()); got != 800 {
		t.Errorf("%d bytes, want 800", got)
	}
}
