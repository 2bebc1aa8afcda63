package rolloutplan

import (
	"testing"

	"github.com/addonops/addonops/internal/addonstatus"
)

// What a cluster writes in its MCA status is evidence about that cluster only (docs/trust-model.md):
// it never makes a version known good for the placement.

// forgeApplied writes, as cluster's agent may, cfg's spec hash as the cluster's lastAppliedConfig
// and desiredConfig, with the add-on Available.
func (w *world) forgeApplied(cluster, cfg string) {
	w.t.Helper()
	m := w.mcas[cluster].DeepCopy()
	c := cfgOf(cfg)
	for i := range m.Status.ConfigReferences {
		r := &m.Status.ConfigReferences[i]
		r.DesiredConfig.Name, r.DesiredConfig.SpecHash = c.Name, c.SpecHash
		if r.LastAppliedConfig != nil {
			r.LastAppliedConfig.Name, r.LastAppliedConfig.SpecHash = c.Name, c.SpecHash
		}
	}
	w.mcas[cluster] = m
}

// One main-placement cluster claims it already runs the next version b. When the add-on moves to b,
// the gated placement still waits for its canary (which never becomes healthy on b): no rollback,
// no other cluster is told b.
func TestForgedLastAppliedIsNoKnownGoodVersion(t *testing.T) {
	for _, liar := range []string{"c3", "k1"} {
		t.Run(liar, func(t *testing.T) {
			w, aws, canary := canaryWorld(t)
			w.installAll()
			w.forgeApplied(liar, "b")
			w.setConfig(aws, "b")
			w.setConfig(canary, "b")
			for range 3 {
				w.step()
				w.agents(unhealthy, "k1", "k2")
				w.forgeApplied(liar, "b")
			}
			w.step()
			if ip := w.progression(aws); ip.Conditions[0].Reason != addonstatus.ReasonWaitingForCanary {
				t.Fatalf("aws: %s %q, want WaitingForCanary", ip.Conditions[0].Reason, ip.Conditions[0].Message)
			}
			for _, r := range w.eventReasons() {
				if r == "RollbackStarted" || r == "CanaryPassed" {
					t.Fatalf("event %s after one cluster's claim: %v", r, w.eventReasons())
				}
			}
			for _, c := range w.desiredSet("b") {
				if c != liar && c != "k1" && c != "k2" {
					t.Fatalf("cluster %s told to run b (told b: %v)", c, w.desiredSet("b"))
				}
			}
		})
	}
}
