package addonrollout

import (
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/rolloutplan"
)

// progressMCA is an MCA under way with an upgrade since t0, with the given extra conditions.
func progressMCA(t0 metav1.Time, msg string, conds ...metav1.Condition) *addonv1alpha1.ManagedClusterAddOn {
	m := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "a", ResourceVersion: "7"}}
	m.Status.Conditions = append([]metav1.Condition{{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionTrue,
		Reason: addonstatus.ReasonUpgrading, Message: msg, LastTransitionTime: t0}}, conds...)
	return m
}

// The progress reconciler's write decision: a computed status that is the written one is nothing
// to do; an interim change (rolloutplan.Interim) is held until the hold has lasted since the
// written status first fell behind; anything settled, or held too long, is written.
func TestDecideProgress(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC))
	now := t0.Add(time.Minute)
	const hold = 15 * time.Second
	soakStarted := metav1.Condition{Type: addonstatus.ConditionHealthSoak, Status: metav1.ConditionTrue, Reason: addonstatus.ReasonSoaking, LastTransitionTime: t0}
	availUnknown := metav1.Condition{Type: addonstatus.ConditionAvailable, Status: metav1.ConditionUnknown, Reason: rolloutplan.ReasonWorkNotApplied, LastTransitionTime: t0}
	availTrue := metav1.Condition{Type: addonstatus.ConditionAvailable, Status: metav1.ConditionTrue, Reason: rolloutplan.ReasonProbeAvailable, LastTransitionTime: t0}
	availFalse := metav1.Condition{Type: addonstatus.ConditionAvailable, Status: metav1.ConditionFalse, Reason: rolloutplan.ReasonProbeUnavailable, LastTransitionTime: t0}

	written := progressMCA(t0, "upgrading")
	soaking := progressMCA(t0, "upgrading", soakStarted).Status
	done := progressMCA(t0, "upgrading").Status
	done.Conditions[0].Reason = addonstatus.ReasonUpgradeSucceed
	done.Conditions[0].Status = metav1.ConditionFalse
	writtenUnknown := progressMCA(t0, "upgrading", availUnknown)
	writtenFalse := progressMCA(t0, "upgrading", availFalse)
	nowHealthy := progressMCA(t0, "upgrading", availTrue, soakStarted).Status
	attempt := rolloutplan.Attempt(written)

	tests := []struct {
		name    string
		written *addonv1alpha1.ManagedClusterAddOn
		st      addonv1alpha1.ManagedClusterAddOnStatus
		recheck time.Duration
		probes  bool
		hold    time.Duration
		held    HeldStatus
		heldOK  bool

		want      progressAction
		wantAfter time.Duration
		wantSince time.Time
		wantHeld  []string // condition types held
	}{
		{name: "computed status is the written one: nothing held, look again when it asks",
			written: written, st: written.Status, recheck: 30 * time.Second, hold: hold,
			want: progressUnchanged, wantAfter: 30 * time.Second},
		{name: "unchanged with something held: still unchanged (what is held is dropped)",
			written: written, st: written.Status, hold: hold, held: HeldStatus{Attempt: attempt, Since: t0.Time}, heldOK: true,
			want: progressUnchanged, wantAfter: 0},
		{name: "a health soak starting is interim: held from now for the whole hold",
			written: written, st: soaking, hold: hold,
			want: progressHold, wantAfter: hold, wantSince: now, wantHeld: []string{addonstatus.ConditionHealthSoak}},
		{name: "held: looks again at the computation's recheck when it comes first",
			written: written, st: soaking, recheck: 5 * time.Second, hold: hold,
			want: progressHold, wantAfter: 5 * time.Second, wantSince: now, wantHeld: []string{addonstatus.ConditionHealthSoak}},
		{name: "held for a while already: the hold runs from when the written status fell behind",
			written: written, st: soaking, recheck: 30 * time.Second, hold: hold, held: HeldStatus{Attempt: attempt, Since: now.Add(-10 * time.Second)}, heldOK: true,
			want: progressHold, wantAfter: 5 * time.Second, wantSince: now.Add(-10 * time.Second), wantHeld: []string{addonstatus.ConditionHealthSoak}},
		{name: "held as long as the hold: written",
			written: written, st: soaking, hold: hold, held: HeldStatus{Attempt: attempt, Since: now.Add(-hold)}, heldOK: true,
			want: progressWrite},
		{name: "held longer than the hold: written",
			written: written, st: soaking, hold: hold, held: HeldStatus{Attempt: attempt, Since: now.Add(-time.Hour)}, heldOK: true,
			want: progressWrite},
		{name: "what is held belongs to another attempt: the hold starts again now",
			written: written, st: soaking, hold: hold, held: HeldStatus{Attempt: "other", Since: now.Add(-time.Hour)}, heldOK: false,
			want: progressHold, wantAfter: hold, wantSince: now, wantHeld: []string{addonstatus.ConditionHealthSoak}},
		{name: "held without a start: the hold starts now",
			written: written, st: soaking, hold: hold, held: HeldStatus{Attempt: attempt}, heldOK: true,
			want: progressHold, wantAfter: hold, wantSince: now, wantHeld: []string{addonstatus.ConditionHealthSoak}},
		{name: "no hold (negative InterimHold): an interim change is written at once",
			written: written, st: soaking, hold: -1, want: progressWrite},
		{name: "zero hold: written at once",
			written: written, st: soaking, hold: 0, want: progressWrite},
		{name: "a settled change (the upgrade done) is written at once",
			written: written, st: done, hold: hold, want: progressWrite},
		{name: "a settled change is written even while something is held",
			written: written, st: done, hold: hold, held: HeldStatus{Attempt: attempt, Since: now}, heldOK: true, want: progressWrite},
		{name: "health prober: health turning known (Unknown to True) is interim, Available held with the soak",
			written: writtenUnknown, st: nowHealthy, probes: true, hold: hold,
			want: progressHold, wantAfter: hold, wantSince: now, wantHeld: []string{addonstatus.ConditionHealthSoak, addonstatus.ConditionAvailable}},
		{name: "health prober: an unhealthy add-on that recovers (False to True) is written at once",
			written: writtenFalse, st: nowHealthy, probes: true, hold: hold, want: progressWrite},
		{name: "not the health prober: an Available change is someone else's and settled",
			written: writtenUnknown, st: nowHealthy, probes: false, hold: hold, want: progressWrite},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.written.DeepCopy()
			d := decideProgress(tc.written, tc.st, tc.recheck, tc.probes, tc.hold, tc.held, tc.heldOK, now)
			if d.action != tc.want {
				t.Fatalf("action %d, want %d", d.action, tc.want)
			}
			if !equality.Semantic.DeepEqual(before, tc.written) {
				t.Fatal("decideProgress changed the written MCA")
			}
			if d.action == progressWrite {
				return // when to look again comes after the write (progressWritten)
			}
			if d.after != tc.wantAfter {
				t.Errorf("look again after %v, want %v", d.after, tc.wantAfter)
			}
			if d.action != progressHold {
				if d.held.Attempt != "" || d.held.Conditions != nil || !d.held.Since.IsZero() {
					t.Errorf("nothing to hold, got %+v", d.held)
				}
				return
			}
			if !d.held.Since.Equal(tc.wantSince) {
				t.Errorf("held since %v, want %v", d.held.Since, tc.wantSince)
			}
			if d.held.Attempt != rolloutplan.Attempt(tc.written) {
				t.Errorf("held for attempt %q, want the written MCA's %q", d.held.Attempt, rolloutplan.Attempt(tc.written))
			}
			var types []string
			for _, c := range d.held.Conditions {
				types = append(types, c.Type)
				if want := meta.FindStatusCondition(tc.st.Conditions, c.Type); want == nil || !equality.Semantic.DeepEqual(*want, c) {
					t.Errorf("held %+v, not the computed %+v", c, want)
				}
			}
			if !slices.Equal(types, tc.wantHeld) {
				t.Errorf("held conditions %v, want %v", types, tc.wantHeld)
			}
		})
	}
}

func TestProgressWritten(t *testing.T) {
	tests := []struct {
		name       string
		skipped    bool
		recheck    time.Duration
		wantAfter  time.Duration
		wantForget bool
	}{
		{name: "written: held dropped, the computation's recheck", recheck: 42 * time.Second, wantAfter: 42 * time.Second, wantForget: true},
		{name: "written, nothing to recheck", recheck: 0, wantAfter: 0, wantForget: true},
		{name: "skipped (changed since read): held kept, looked at again soon", skipped: true, recheck: 42 * time.Second, wantAfter: progressStaleRecheck},
		{name: "skipped with no recheck still looks again", skipped: true, wantAfter: progressStaleRecheck},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			after, forget := progressWritten(tc.skipped, tc.recheck)
			if after != tc.wantAfter || forget != tc.wantForget {
				t.Fatalf("progressWritten = %v, %v; want %v, %v", after, forget, tc.wantAfter, tc.wantForget)
			}
		})
	}
}

func TestHeldConditions(t *testing.T) {
	soak := metav1.Condition{Type: addonstatus.ConditionHealthSoak, Status: metav1.ConditionTrue, Reason: addonstatus.ReasonSoaking}
	avail := metav1.Condition{Type: addonstatus.ConditionAvailable, Status: metav1.ConditionUnknown, Reason: rolloutplan.ReasonWorkNotApplied}
	prog := metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionTrue, Reason: addonstatus.ReasonUpgrading}
	tests := []struct {
		name   string
		conds  []metav1.Condition
		probes bool
		want   []metav1.Condition
	}{
		{name: "health prober: soak and health", conds: []metav1.Condition{prog, avail, soak}, probes: true, want: []metav1.Condition{soak, avail}},
		{name: "not the prober: never Available", conds: []metav1.Condition{prog, avail, soak}, want: []metav1.Condition{soak}},
		{name: "no soak yet", conds: []metav1.Condition{prog, avail}, probes: true, want: []metav1.Condition{avail}},
		{name: "neither: nothing", conds: []metav1.Condition{prog}, probes: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := heldConditions(addonv1alpha1.ManagedClusterAddOnStatus{Conditions: tc.conds}, tc.probes)
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Fatalf("held %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestMinPositive(t *testing.T) {
	tests := []struct{ a, b, want time.Duration }{
		{0, 0, 0}, {0, 5, 5}, {5, 0, 5}, {3, 5, 3}, {5, 3, 3}, {-1, 5, 5}, {5, -1, 5},
	}
	for _, tc := range tests {
		t.Run(tc.a.String()+","+tc.b.String(), func(t *testing.T) {
			if got := minPositive(tc.a, tc.b); got != tc.want {
				t.Fatalf("minPositive(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
			}
		})
	}
}

// The health prober's Available is set on a copy (the MCA may be the cache's) from the add-on's
// own deploy works only, and the cluster's own availability.
func TestWithProbedHealth(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC))
	now := metav1.NewTime(t0.Add(time.Minute))
	applied := metav1.Condition{Type: addonstatus.ConditionManifestApplied, Status: metav1.ConditionTrue, Reason: "AddonManifestApplied", LastTransitionTime: t0}
	work := func(name string, hosted bool, avail metav1.ConditionStatus) *workv1.ManifestWork {
		w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: name, Generation: 1, Labels: map[string]string{addonv1alpha1.AddonLabelKey: "a"}},
			Status: workv1.ManifestWorkStatus{Conditions: []metav1.Condition{{Type: workv1.WorkAvailable, Status: avail, ObservedGeneration: 1, Message: "down", LastTransitionTime: t0}}}}
		if hosted {
			w.Labels[addonv1alpha1.AddonNamespaceLabelKey] = "open-cluster-management-agent-addon"
		}
		return w
	}
	unknownCluster := &clusterv1.ManagedCluster{Status: clusterv1.ManagedClusterStatus{Conditions: []metav1.Condition{
		{Type: clusterv1.ManagedClusterConditionAvailable, Status: metav1.ConditionUnknown, Reason: "ManagedClusterLeaseUpdateStopped"}}}}
	tests := []struct {
		name       string
		conds      []metav1.Condition
		cluster    *clusterv1.ManagedCluster
		works      []*workv1.ManifestWork
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		{name: "works not written yet, no health known: Unknown", wantStatus: metav1.ConditionUnknown, wantReason: rolloutplan.ReasonWorkNotFound},
		{name: "a deploy work unavailable: False", conds: []metav1.Condition{applied}, works: []*workv1.ManifestWork{work("addon-a-deploy-0", false, metav1.ConditionFalse)},
			wantStatus: metav1.ConditionFalse, wantReason: rolloutplan.ReasonWorkNotApplied},
		{name: "only another add-on's or a hosted work: no deploy work found", conds: []metav1.Condition{applied},
			works:      []*workv1.ManifestWork{work("addon-b-deploy-0", false, metav1.ConditionFalse), work("addon-a-deploy-0", true, metav1.ConditionFalse)},
			wantStatus: metav1.ConditionUnknown, wantReason: rolloutplan.ReasonWorkNotFound},
		{name: "cluster not reporting: Unknown with the cluster's reason", conds: []metav1.Condition{applied}, cluster: unknownCluster,
			works: []*workv1.ManifestWork{work("addon-a-deploy-0", false, metav1.ConditionFalse)}, wantStatus: metav1.ConditionUnknown, wantReason: "ManagedClusterLeaseUpdateStopped"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mca := progressMCA(t0, "upgrading", tc.conds...)
			before := mca.DeepCopy()
			got := withProbedHealth(mca, "a", tc.cluster, tc.works, now)
			if !equality.Semantic.DeepEqual(before, mca) {
				t.Fatal("withProbedHealth changed the MCA it was given")
			}
			c := meta.FindStatusCondition(got.Status.Conditions, addonstatus.ConditionAvailable)
			if c == nil || c.Status != tc.wantStatus || c.Reason != tc.wantReason {
				t.Fatalf("Available %+v, want %s %s", c, tc.wantStatus, tc.wantReason)
			}
			if got.Status.HealthCheck.Mode != addonv1alpha1.HealthCheckModeCustomized {
				t.Errorf("health check mode %q, want Customized (the prober's)", got.Status.HealthCheck.Mode)
			}
		})
	}
}

func TestWorkMCAKey(t *testing.T) {
	work := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "addon-a-deploy-0", Labels: map[string]string{addonv1alpha1.AddonLabelKey: "a"}}}
	hosted := work.DeepCopy()
	hosted.Labels[addonv1alpha1.AddonNamespaceLabelKey] = "agents"
	tests := []struct {
		name   string
		obj    any
		want   string
		wantOK bool
	}{
		{name: "a work: its add-on in its namespace", obj: work, want: "c1/a", wantOK: true},
		{name: "a deleted work's tombstone", obj: cache.DeletedFinalStateUnknown{Key: "c1/addon-a-deploy-0", Obj: work}, want: "c1/a", wantOK: true},
		{name: "a hosted work concerns no MCA here", obj: hosted},
		{name: "a tombstone of something else", obj: cache.DeletedFinalStateUnknown{Key: "x", Obj: &addonv1alpha1.ManagedClusterAddOn{}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := workMCAKey(tc.obj)
			if got != tc.want || ok != tc.wantOK {
				t.Fatalf("workMCAKey = %q, %v; want %q, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}
