//go:build integration

package controller

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/testing/agentrbac"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/simagent"
)

// The hostile-cluster suite of the rollout (docs/trust-model.md): a cluster's agent acts with the
// hub RBAC OCM gives it (internal/testing/agentrbac) and tries to steer other clusters.

// lie runs, until ctx ends, cluster short's agent rewriting its own MCA's status with change
// (read, change, update, every 10 ms), and returns a function that waits for it and tells how many
// lies landed.
func (e *env) lie(ctx context.Context, short string, change func(*addonv1alpha1.ManagedClusterAddOn)) func() int {
	e.t.Helper()
	cluster := e.cluster(short)
	if err := agentrbac.Apply(e.ctx, e.c.Kube, cluster); err != nil {
		e.t.Fatal(err)
	}
	agent, err := agentrbac.Clients(e.hub.Config, cluster)
	if err != nil {
		e.t.Fatal(err)
	}
	api := agent.Addon.AddonV1alpha1().ManagedClusterAddOns(cluster)
	var wg sync.WaitGroup
	lies := 0
	wg.Go(func() {
		for ctx.Err() == nil {
			m, err := api.Get(ctx, e.name, metav1.GetOptions{})
			if err == nil {
				change(m)
				_, err = api.UpdateStatus(ctx, m, metav1.UpdateOptions{})
			}
			// The client's rate limiter refuses a request that would outlive ctx: the end too.
			deadline, _ := ctx.Deadline()
			switch {
			case err == nil:
				lies++
			case ctx.Err() == nil && time.Until(deadline) > time.Second && !apierrors.IsConflict(err):
				e.t.Errorf("cluster %s's agent: %v", cluster, err)
				return
			}
			// As fast as the API server takes it: the controller writes the truth back at once,
			// and the claim must be there when the decision is taken.
			harness.Pass(10 * time.Millisecond)
		}
	})
	return func() int { wg.Wait(); return lies }
}

// Attack 1: one main-placement cluster claims it already applied the next version (its
// lastAppliedConfig names cfg-b with cfg-b's spec hash) before and while the add-on moves to
// cfg-b. cfg-b never becomes healthy on the canary. The gated placement keeps waiting for its
// canary, nothing is a rollback, and no other main-placement cluster is told cfg-b. (Before: the
// claim made cfg-b known good, the move a rollback, and every cluster of aws was told cfg-b.)
func TestForgedLastAppliedDoesNotSkipTheCanary(t *testing.T) {
	t.Parallel()
	e := canaryEnv(t)
	for _, k := range canaryShorts {
		e.outcome(k, "cfg-b", simagent.Never)
	}
	next := e.adcHash("cfg-b")
	ctx, stop := context.WithTimeout(e.ctx, 15*time.Second)
	defer stop()
	lies := e.lie(ctx, "c3", func(m *addonv1alpha1.ManagedClusterAddOn) {
		for i := range m.Status.ConfigReferences {
			r := &m.Status.ConfigReferences[i]
			if r.Resource == "addondeploymentconfigs" {
				r.LastAppliedConfig = &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: e.name, Name: "cfg-b"}, SpecHash: next}
			}
		}
	})
	// The claim is in place before the change.
	e.waitFor(10*time.Second, "c3's claim to have applied cfg-b", func() bool {
		_, i := e.rec.firstApplied(e.cluster("c3"), "cfg-b")
		return i >= 0
	})
	e.setBoth("cfg-b")
	e.waitProgression(10*time.Second, "aws", addonstatus.ReasonWaitingForCanary, "waiting for canary placement")
	<-ctx.Done()
	if n := lies(); n < 20 {
		t.Fatalf("the agent's lie landed only %d times", n)
	}
	for _, c := range []string{"c1", "c2", "c4"} {
		if _, i := e.rec.firstDesired(e.cluster(c), "cfg-b"); i >= 0 {
			t.Errorf("%s was told cfg-b while the canary never ran it (one cluster claimed it)", c)
		}
	}
	for _, r := range e.rec.reasonsSeen("aws") {
		if r == addonstatus.ReasonRollingBack || r == addonstatus.ReasonRollbackSucceeded {
			t.Errorf("aws reported %s: one cluster's claim made cfg-b a rollback (reasons seen: %v)", r, e.rec.reasonsSeen("aws"))
		}
	}
	// The liar alone is pushed back to what it should run; once it stops lying, aws waits for its
	// canary as before.
	e.waitProgression(15*time.Second, "aws", addonstatus.ReasonWaitingForCanary, "waiting for canary placement")
	e.waitFor(15*time.Second, "c3 back on cfg-a", func() bool {
		m := e.rec.mca(e.cluster("c3"))
		return m != nil && strings.HasPrefix(state(m), "cfg-a/cfg-a/True/")
	})
}
