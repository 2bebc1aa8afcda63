package rolloutplan

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/internal/addonstatus"
)

func TestGateOf(t *testing.T) {
	cma := func(ann map[string]string) *addonv1alpha1.ClusterManagementAddOn {
		return &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Annotations: ann}}
	}
	cases := []struct {
		name        string
		ann         map[string]string
		want        Gate
		wantProblem string
	}{
		{"no annotation: the default", nil, Gate{Checked: true, Soak: DefaultHealthSoak}, ""},
		{"30s", map[string]string{HealthSoakAnnotation: "30s"}, Gate{Checked: true, Soak: 30 * time.Second}, ""},
		{"2m with spaces", map[string]string{HealthSoakAnnotation: " 2m "}, Gate{Checked: true, Soak: 2 * time.Minute}, ""},
		{"0s: no soak", map[string]string{HealthSoakAnnotation: "0s"}, Gate{Checked: true}, ""},
		{"0 is a duration too", map[string]string{HealthSoakAnnotation: "0"}, Gate{Checked: true}, ""},
		{"not a duration: the default, and why", map[string]string{HealthSoakAnnotation: "30"}, Gate{Checked: true, Soak: DefaultHealthSoak},
			`annotation addonops.io/health-soak: "30" is not a Go duration (such as 30s or 2m); the default health soak 10s applies`},
		{"empty: the default, and why", map[string]string{HealthSoakAnnotation: ""}, Gate{Checked: true, Soak: DefaultHealthSoak}, `"" is not a Go duration`},
		{"negative: the default, and why", map[string]string{HealthSoakAnnotation: "-5s"}, Gate{Checked: true, Soak: DefaultHealthSoak}, `"-5s" is negative`},
		{"health check off", map[string]string{HealthCheckAnnotation: "none", HealthSoakAnnotation: "1m"}, Gate{Soak: time.Minute}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := GateOf(cma(tc.ann))
			if got.Checked != tc.want.Checked || got.Soak != tc.want.Soak {
				t.Fatalf("GateOf = %+v, want %+v", got, tc.want)
			}
			if tc.wantProblem == "" && got.Problem != "" || !strings.Contains(got.Problem, tc.wantProblem) {
				t.Fatalf("problem %q, want %q", got.Problem, tc.wantProblem)
			}
		})
	}
}

// soakWorld is one MCA in an upgrade to b, looked at by Progress at chosen moments, with its works
// and health changed in between; the status Progress returns is what a write would store.
type soakWorld struct {
	t     *testing.T
	m     *addonv1alpha1.ManagedClusterAddOn
	works []*workv1.ManifestWork
	gate  Gate
}

var (
	annB   = `{"addondeploymentconfigs.addon.open-cluster-management.io/default/cfg-b":"bbbb"}`
	pushAt = t1
)

func soakAt(d time.Duration) metav1.Time { return metav1.NewTime(pushAt.Add(d)) }

// newSoakWorld: the MCA ran a, its add-on healthy since long before (Available=True at t0, from the
// old agent), and was pushed to b at pushAt; the deployer wrote the work for b (generation 2), which
// the work agent has not reported yet.
func newSoakWorld(t *testing.T, gate Gate) *soakWorld {
	m := mca([]addonv1alpha1.ConfigReference{ref(&a1, &a1)},
		cond(addonstatus.ConditionConfigured, "True", addonstatus.ReasonConfigured, t0),
		cond(addonstatus.ConditionProgressing, "False", addonstatus.ReasonInstallSucceed, t0),
		cond(addonstatus.ConditionManifestApplied, "True", "AddonManifestApplied", t0),
		cond(addonstatus.ConditionAvailable, "True", "ProbeAvailable", metav1.NewTime(t0.Add(-time.Hour))))
	w := &soakWorld{t: t, m: m, gate: gate, works: []*workv1.ManifestWork{work("addon-hello-deploy-0", 2, annB,
		wcond(workv1.WorkApplied, "True", 1), wcond(workv1.WorkAvailable, "True", 1))}}
	w.m.Status = Push(w.m, []Config{b1}, w.works, addonstatus.Upgrade, gate, pushAt)
	w.expect(false, metav1.ConditionFalse, addonstatus.ReasonWorksNotReady)
	return w
}

// worksReady: the work agent reports generation 2.
func (w *soakWorld) worksReady() {
	w.works = []*workv1.ManifestWork{work("addon-hello-deploy-0", 2, annB, wcond(workv1.WorkApplied, "True", 2), wcond(workv1.WorkAvailable, "True", 2))}
}

// available: the health prober writes Available (a transition at when, as meta.SetStatusCondition).
func (w *soakWorld) available(status metav1.ConditionStatus, when metav1.Time) {
	m := w.m.DeepCopy()
	c := meta.FindStatusCondition(m.Status.Conditions, addonstatus.ConditionAvailable)
	if c.Status != status {
		c.Status, c.LastTransitionTime = status, when
	}
	w.m = m
}

// look runs Progress at now and stores its result; it returns the recheck.
func (w *soakWorld) look(now metav1.Time) time.Duration {
	st, recheck := Progress(w.m, w.works, w.gate, now)
	m := w.m.DeepCopy()
	m.Status = st
	w.m = m
	return recheck
}

// expect checks done-ness and the HealthSoak condition.
func (w *soakWorld) expect(done bool, soak metav1.ConditionStatus, reason string) {
	w.t.Helper()
	if got := addonstatus.Applied(w.m); got != done {
		w.t.Fatalf("done = %v, want %v; conditions %+v", got, done, w.m.Status.Conditions)
	}
	hs := meta.FindStatusCondition(w.m.Status.Conditions, addonstatus.ConditionHealthSoak)
	if hs == nil || hs.Status != soak || hs.Reason != reason {
		w.t.Fatalf("HealthSoak = %+v, want %s/%s", hs, soak, reason)
	}
}

func (w *soakWorld) soakSince() metav1.Time {
	return meta.FindStatusCondition(w.m.Status.Conditions, addonstatus.ConditionHealthSoak).LastTransitionTime
}

func TestHealthSoak(t *testing.T) {
	soak := Gate{Checked: true, Soak: 10 * time.Second}
	// A soak starts at the whole second its HealthSoak transition time names, somewhere in which
	// Progress saw it begin: it is over a second after start+soak, so it lasts at least the soak.
	const whole = 11 * time.Second

	t.Run("health True since before the works were ready waits the whole soak from then", func(t *testing.T) {
		w := newSoakWorld(t, soak)
		// The prober's Available=True (from the old agent) is all there is; the works are not ready.
		if r := w.look(soakAt(time.Second)); r != 0 {
			t.Fatalf("recheck %v before the works are ready", r)
		}
		w.expect(false, metav1.ConditionFalse, addonstatus.ReasonWorksNotReady)
		w.worksReady()
		if r := w.look(soakAt(3 * time.Second)); r != whole {
			t.Fatalf("recheck %v, want the whole soak (10s, and the second it began in)", r)
		}
		w.expect(false, metav1.ConditionTrue, addonstatus.ReasonSoaking)
		if since := w.soakSince(); !since.Equal(ptr(soakAt(3 * time.Second))) {
			t.Fatalf("soak since %v, want when the works were seen ready", since)
		}
		if r := w.look(soakAt(13 * time.Second)); r != time.Second {
			t.Fatalf("recheck %v, want 1s", r)
		}
		w.expect(false, metav1.ConditionTrue, addonstatus.ReasonSoaking)
		if r := w.look(soakAt(14 * time.Second)); r != 0 {
			t.Fatalf("recheck %v once done", r)
		}
		w.expect(true, metav1.ConditionTrue, addonstatus.ReasonSoaked)
		p := meta.FindStatusCondition(w.m.Status.Conditions, addonstatus.ConditionProgressing)
		if p.Reason != addonstatus.ReasonUpgradeSucceed {
			t.Fatalf("Progressing %+v", p)
		}
	})

	t.Run("health turns False during the soak: not done; the soak restarts when True again", func(t *testing.T) {
		w := newSoakWorld(t, soak)
		w.worksReady()
		w.look(soakAt(2 * time.Second))
		w.expect(false, metav1.ConditionTrue, addonstatus.ReasonSoaking)
		// The new agent crash-loops: the prober notices a second later.
		w.available(metav1.ConditionFalse, soakAt(3*time.Second))
		w.look(soakAt(3 * time.Second))
		w.expect(false, metav1.ConditionFalse, addonstatus.ReasonNotHealthy)
		if p := meta.FindStatusCondition(w.m.Status.Conditions, addonstatus.ConditionProgressing); p.Reason != addonstatus.ReasonUpgrading || !strings.Contains(p.Message, "waiting for it to be healthy: Available=False") {
			t.Fatalf("Progressing %+v", p)
		}
		// Long past the first soak's end, still unhealthy: not done.
		w.look(soakAt(30 * time.Second))
		w.expect(false, metav1.ConditionFalse, addonstatus.ReasonNotHealthy)
		// Healthy again: a whole new soak.
		w.available(metav1.ConditionTrue, soakAt(40*time.Second))
		if r := w.look(soakAt(40 * time.Second)); r != whole {
			t.Fatalf("recheck %v, want a whole soak", r)
		}
		w.expect(false, metav1.ConditionTrue, addonstatus.ReasonSoaking)
		w.look(soakAt(50 * time.Second))
		w.expect(false, metav1.ConditionTrue, addonstatus.ReasonSoaking)
		w.look(soakAt(51 * time.Second))
		w.expect(true, metav1.ConditionTrue, addonstatus.ReasonSoaked)
	})

	t.Run("a flap between two looks restarts the soak", func(t *testing.T) {
		w := newSoakWorld(t, soak)
		w.worksReady()
		w.look(soakAt(2 * time.Second))
		// False at +4s and True again at +5s, and Progress looked at neither: Available's
		// transition time tells.
		w.available(metav1.ConditionFalse, soakAt(4*time.Second))
		w.available(metav1.ConditionTrue, soakAt(5*time.Second))
		if r := w.look(soakAt(6 * time.Second)); r != whole {
			t.Fatalf("recheck %v, want a whole soak from now", r)
		}
		if since := w.soakSince(); !since.Equal(ptr(soakAt(6 * time.Second))) {
			t.Fatalf("soak since %v", since)
		}
		w.look(soakAt(13 * time.Second))
		w.expect(false, metav1.ConditionTrue, addonstatus.ReasonSoaking)
		w.look(soakAt(17 * time.Second))
		w.expect(true, metav1.ConditionTrue, addonstatus.ReasonSoaked)
	})

	t.Run("works no longer ready during the soak: it restarts once they are", func(t *testing.T) {
		w := newSoakWorld(t, soak)
		w.worksReady()
		w.look(soakAt(2 * time.Second))
		w.works[0].Generation = 3 // the deployer rewrote the work; the agent has not reported it
		w.look(soakAt(5 * time.Second))
		w.expect(false, metav1.ConditionFalse, addonstatus.ReasonWorksNotReady)
		w.works = []*workv1.ManifestWork{work("addon-hello-deploy-0", 3, annB, wcond(workv1.WorkApplied, "True", 3), wcond(workv1.WorkAvailable, "True", 3))}
		w.look(soakAt(7 * time.Second))
		w.expect(false, metav1.ConditionTrue, addonstatus.ReasonSoaking)
		w.look(soakAt(17 * time.Second))
		w.expect(false, metav1.ConditionTrue, addonstatus.ReasonSoaking)
		w.look(soakAt(18 * time.Second))
		w.expect(true, metav1.ConditionTrue, addonstatus.ReasonSoaked)
	})

	t.Run("soak 0: done as soon as health is seen with the works ready", func(t *testing.T) {
		w := newSoakWorld(t, Gate{Checked: true})
		w.look(soakAt(time.Second))
		w.expect(false, metav1.ConditionFalse, addonstatus.ReasonWorksNotReady)
		w.worksReady()
		if r := w.look(soakAt(2 * time.Second)); r != 0 {
			t.Fatalf("recheck %v", r)
		}
		w.expect(true, metav1.ConditionTrue, addonstatus.ReasonSoaked)
		if since := w.soakSince(); !since.Equal(ptr(soakAt(2 * time.Second))) {
			t.Fatalf("soak since %v", since)
		}
	})

	t.Run("soak 0 still needs health after the works are ready", func(t *testing.T) {
		w := newSoakWorld(t, Gate{Checked: true})
		w.available(metav1.ConditionFalse, soakAt(time.Second))
		w.worksReady()
		w.look(soakAt(2 * time.Second))
		w.expect(false, metav1.ConditionFalse, addonstatus.ReasonNotHealthy)
	})

	t.Run("the soak lives in the status: a restarted controller carries on", func(t *testing.T) {
		w := newSoakWorld(t, soak)
		w.worksReady()
		w.look(soakAt(2 * time.Second))
		// What the API server returns after the write, read by a new controller process.
		restarted := &soakWorld{t: t, m: w.m.DeepCopy(), works: w.works, gate: soak}
		if r := restarted.look(soakAt(9 * time.Second)); r != 4*time.Second {
			t.Fatalf("recheck %v after the restart, want the 4s left", r)
		}
		restarted.look(soakAt(13 * time.Second))
		restarted.expect(true, metav1.ConditionTrue, addonstatus.ReasonSoaked)
	})

	t.Run("soaking writes once: later looks change nothing until it ends", func(t *testing.T) {
		w := newSoakWorld(t, soak)
		w.worksReady()
		w.look(soakAt(2 * time.Second))
		before := w.m.Status.DeepCopy()
		for _, s := range []time.Duration{3, 5, 8, 12} {
			w.look(soakAt(s * time.Second))
			if !equality.Semantic.DeepEqual(*before, w.m.Status) {
				t.Fatalf("look at +%ds changed the status:\n%s\nwas\n%s", s, js(t, w.m.Status), js(t, before))
			}
		}
	})

	t.Run("a soak recorded before the attempt does not count", func(t *testing.T) {
		w := newSoakWorld(t, soak)
		w.worksReady()
		// An older controller pushed without resetting the condition: True since before the push.
		*meta.FindStatusCondition(w.m.Status.Conditions, addonstatus.ConditionHealthSoak) = soaking(t0)
		if r := w.look(soakAt(2 * time.Second)); r != whole {
			t.Fatalf("recheck %v, want a whole soak", r)
		}
		w.expect(false, metav1.ConditionTrue, addonstatus.ReasonSoaking)
	})

	t.Run("an unparsable annotation is named in the Progressing message", func(t *testing.T) {
		gate := GateOf(&addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{HealthSoakAnnotation: "ten seconds"}}})
		w := newSoakWorld(t, gate)
		w.worksReady()
		if r := w.look(soakAt(2 * time.Second)); r != DefaultHealthSoak+time.Second {
			t.Fatalf("recheck %v, want the default soak", r)
		}
		p := meta.FindStatusCondition(w.m.Status.Conditions, addonstatus.ConditionProgressing)
		if !strings.Contains(p.Message, `it must stay healthy for 10s (health soak) before the cluster counts as done (annotation addonops.io/health-soak: "ten seconds" is not a Go duration (such as 30s or 2m); the default health soak 10s applies)`) {
			t.Fatalf("Progressing message %q", p.Message)
		}
	})

	t.Run("no health prober (Customized, no Available): no soak", func(t *testing.T) {
		w := newSoakWorld(t, soak)
		w.m.Status.Conditions = slicesDelete(w.m.Status.Conditions, addonstatus.ConditionAvailable)
		w.m.Status.HealthCheck.Mode = addonv1alpha1.HealthCheckModeCustomized
		w.worksReady()
		w.look(soakAt(2 * time.Second))
		w.expect(true, metav1.ConditionTrue, addonstatus.ReasonSoaked)
	})
}

func ptr[T any](v T) *T { return &v }

func slicesDelete(conds []metav1.Condition, typ string) []metav1.Condition {
	var out []metav1.Condition
	for _, c := range conds {
		if c.Type != typ {
			out = append(out, c)
		}
	}
	return out
}
