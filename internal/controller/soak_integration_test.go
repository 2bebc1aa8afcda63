//go:build integration

package controller

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	watchtools "k8s.io/client-go/tools/watch"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/rolloutplan"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/simagent"
)

// Health is never older than the version, on the real API server: OCM's health
// prober lags the work agent, so when the works report a new generation the MCA's Available=True
// may still describe the old agent. A cluster counts as done only once its add-on stayed healthy
// for the health soak after its works were ready.

const soakTestSoak = 3 * time.Second

// soakCanaryEnv: placement "main" (m1, m2, one at a time) gated by placement "canary" (k1, All,
// progressDeadline 8s), installed at cfg-a without a soak; then the CMA gets a 3s health soak.
func soakCanaryEnv(t *testing.T) *env {
	e := newEnv(t, envOptions{agentDelay: 200 * time.Millisecond})
	e.ensureClusters("m1", "m2", "k1")
	for _, c := range []string{"cfg-a", "cfg-b"} {
		e.adc(c, c)
	}
	e.placement("main", [][]string{{"m1", "m2"}})
	e.placement("canary", [][]string{{"k1"}})
	e.cma(map[string]string{
		addonv1alpha1.AddonLifecycleAnnotationKey: addonv1alpha1.AddonLifecycleSelfManageAnnotationValue,
		rolloutplan.CanaryAnnotation:              `{"` + e.name + `/main": "` + e.name + `/canary"}`,
		rolloutplan.HealthSoakAnnotation:          "0s",
	},
		install{placement: "main", config: "cfg-a", strategy: progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{})},
		install{placement: "canary", config: "cfg-a", strategy: clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All,
			All: &clusterv1alpha1.RolloutAll{RolloutConfig: clusterv1alpha1.RolloutConfig{ProgressDeadline: "8s"}}}},
	)
	e.startController(Options{})
	e.waitInstalled(60*time.Second, "cfg-a", "m1", "m2", "k1")
	e.waitProgression(10*time.Second, "main", addonstatus.ReasonInstallSucceed, "2/2 install completed")
	e.updateCMA(func(cma *addonv1alpha1.ClusterManagementAddOn) {
		cma.Annotations[rolloutplan.HealthSoakAnnotation] = soakTestSoak.String()
	})
	return e
}

// watchWorkReady watches the add-on's deploy work in cluster short and returns a function that
// waits for, and gives, when the work was first seen Applied and Available at its generation with
// config cfg (the time the watch event arrived).
func (e *env) watchWorkReady(short, cfg string) func(timeout time.Duration) time.Time {
	e.t.Helper()
	ns, name := e.cluster(short), "addon-"+e.name+"-deploy-0"
	api := e.c.Work.WorkV1().ManifestWorks(ns)
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	list, err := api.List(e.ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		e.t.Fatal(err)
	}
	ready := func(w *workv1.ManifestWork) bool {
		if !strings.Contains(w.Annotations[simagent.ConfigSpecHashAnnotation], "/"+cfg+`"`) {
			return false
		}
		for _, typ := range []string{workv1.WorkApplied, workv1.WorkAvailable} {
			c := meta.FindStatusCondition(w.Status.Conditions, typ)
			if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != w.Generation {
				return false
			}
		}
		return true
	}
	ctx, cancel := context.WithCancel(e.ctx)
	e.t.Cleanup(cancel)
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, watchFunc(func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.FieldSelector = sel
		return api.Watch(ctx, o)
	}))
	if err != nil {
		e.t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		seen time.Time
	)
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			if wk, ok := ev.Object.(*workv1.ManifestWork); ok && ready(wk) {
				mu.Lock()
				seen = time.Now()
				mu.Unlock()
				return
			}
		}
	}()
	return func(timeout time.Duration) time.Time {
		e.t.Helper()
		var at time.Time
		e.waitFor(timeout, "the work of "+ns+" ready with "+cfg, func() bool {
			mu.Lock()
			defer mu.Unlock()
			at = seen
			return !at.IsZero()
		})
		return at
	}
}

// setUnhealthy writes an MCA's Available=False, as OCM's prober does once it sees the new agent
// is not ready.
func (e *env) setUnhealthy(short string) {
	e.t.Helper()
	api := e.c.Addon.AddonV1alpha1().ManagedClusterAddOns(e.cluster(short))
	for range 10 {
		m, err := api.Get(e.ctx, e.name, metav1.GetOptions{})
		if err != nil {
			e.t.Fatal(err)
		}
		meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: addonstatus.ConditionAvailable, Status: metav1.ConditionFalse,
			Reason: addonv1alpha1.AddonAvailableReasonProbeUnavailable, Message: "Probe addon unavailable with err the new agent crash-loops (set by the test)"})
		if _, err = api.UpdateStatus(e.ctx, m, metav1.UpdateOptions{}); err == nil {
			return
		}
	}
	e.t.Fatal("writing Available kept conflicting")
}

// The canary's works report the new version while its MCA's Available=True still describes the
// old agent; a second later the prober sees the new agent is not ready. The gated placement never
// starts, and the canary fails after its progressDeadline. (Without the health soak the canary
// passed at the first moment, and main got the bad version.)
func TestHealthTurningFalseAfterTheWorksHoldsTheGatedPlacement(t *testing.T) {
	t.Parallel()
	e := soakCanaryEnv(t)
	waitReady := e.watchWorkReady("k1", "cfg-b")
	start := e.rec.count()
	e.setBoth("cfg-b")
	ready := waitReady(30 * time.Second)
	if m := e.rec.mca(e.cluster("k1")); meta.IsStatusConditionFalse(m.Status.Conditions, addonstatus.ConditionAvailable) {
		t.Fatal("k1 is unhealthy before its works are ready: the test does not simulate the race")
	}
	harness.Pass(time.Until(ready.Add(time.Second))) // a time after the works were ready: nothing to poll
	e.setUnhealthy("k1")

	e.waitProgression(30*time.Second, "canary", addonstatus.ReasonUpgradeFailed, e.cluster("k1"))
	// A window longer than the soak after the works were ready, and the canary's failure.
	harness.Pass(time.Until(ready.Add(3 * soakTestSoak)))
	e.waitProgression(10*time.Second, "main", addonstatus.ReasonWaitingForCanary, "")
	// k1's own MCA fails once its add-on has been unhealthy for the progressDeadline (8s), counted
	// from Available's lastTransitionTime, which the API server keeps to the second: up to 9s after
	// the works were ready, so not necessarily by now. (Checking it at once made the test flaky.)
	e.waitCluster(10*time.Second, "k1", "cfg-b/cfg-a/True/UpgradeFailed")
	for _, c := range e.clusters("m1", "m2") {
		if e.rec.desiredSince(c, "cfg-b", start) {
			t.Fatalf("%s was told to run cfg-b although the canary's add-on turned unhealthy during its health soak:%s", c, e.rec.eventsOf(c))
		}
	}
	if p := meta.FindStatusCondition(e.rec.mca(e.cluster("k1")).Status.Conditions, addonstatus.ConditionProgressing); p == nil || !strings.Contains(p.Message, "has not been healthy for 8s") {
		t.Fatalf("k1 Progressing %+v, want the upgrade failed for health", p)
	}
	// The soak never passed: reset when health turned False.
	if hs := meta.FindStatusCondition(e.rec.mca(e.cluster("k1")).Status.Conditions, addonstatus.ConditionHealthSoak); hs == nil || hs.Status != metav1.ConditionFalse || hs.Reason != addonstatus.ReasonNotHealthy {
		t.Fatalf("k1 HealthSoak %+v", hs)
	}
	t.Logf("canary failed %v after its works were ready", e.rec.progressionSince("canary", addonstatus.ReasonUpgradeFailed).Sub(ready).Round(time.Millisecond))
}

// The same, but the health stays True: the canary passes only after the soak, and the gated
// placement starts no sooner than the soak after the canary's works were ready.
func TestHealthSoakDelaysTheGatedPlacement(t *testing.T) {
	t.Parallel()
	e := soakCanaryEnv(t)
	waitReady := e.watchWorkReady("k1", "cfg-b")
	start := e.rec.count()
	e.setBoth("cfg-b")
	ready := waitReady(30 * time.Second)
	e.waitProgression(30*time.Second, "canary", addonstatus.ReasonUpgradeSucceed, "1/1 upgrade completed")
	e.waitCluster(30*time.Second, "m1", "cfg-b/cfg-a/True/Upgrading")
	started, _ := e.rec.firstDesired(e.cluster("m1"), "cfg-b")
	gap := started.Sub(ready)
	t.Logf("main started %v after the canary's works were ready (health soak %v)", gap.Round(time.Millisecond), soakTestSoak)
	if gap < soakTestSoak {
		t.Fatalf("main started %v after the canary's works were ready; the health soak is %v", gap, soakTestSoak)
	}
	if gap > soakTestSoak+5*time.Second {
		t.Fatalf("main started %v after the canary's works were ready; the health soak is only %v", gap, soakTestSoak)
	}
	// Write budget: the push, the soak's start, done.
	if n := e.rec.writes(e.cluster("k1"), start); n > 3 {
		t.Errorf("k1: %d status writes for the upgrade, want at most 3:%s", n, e.rec.eventsOf(e.cluster("k1")))
	}
	hs := meta.FindStatusCondition(e.rec.mca(e.cluster("k1")).Status.Conditions, addonstatus.ConditionHealthSoak)
	if hs == nil || hs.Reason != addonstatus.ReasonSoaked || !strings.Contains(hs.Message, "stayed healthy for 3s") {
		t.Fatalf("k1 HealthSoak %+v", hs)
	}
	e.waitStates(60*time.Second, map[string]string{"m1": "cfg-b/cfg-b/True/UpgradeSucceed", "m2": "cfg-b/cfg-b/True/UpgradeSucceed", "k1": "cfg-b/cfg-b/True/UpgradeSucceed"})
}

// progressionSince is when the CMA's progression of placement first had reason (zero if never).
func (r *recorder) progressionSince(placement, reason string) time.Time {
	for _, ev := range r.cmas.Events() {
		for i := range ev.CMA.Status.InstallProgressions {
			ip := &ev.CMA.Status.InstallProgressions[i]
			if c := rolloutplan.ProgressingOf(ip); ip.Name == placement && c != nil && c.Reason == reason {
				return ev.At
			}
		}
	}
	return time.Time{}
}
