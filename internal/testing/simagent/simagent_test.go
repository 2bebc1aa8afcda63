//go:build integration

package simagent

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/localhub"
)

func TestMain(m *testing.M) { os.Exit(localhub.RunTests(m)) }

const addon = "sim"

func TestAgent(t *testing.T) {
	hub := localhub.ForTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := hub.Clients
	clusters := map[string]Outcome{"ok": Succeed, "bad": Fail, "mute": Never}
	for name := range clusters {
		if err := localhub.EnsureNamespace(ctx, c.Kube, name); err != nil {
			t.Fatal(err)
		}
	}
	cfg := rest.CopyConfig(hub.Config)
	agent, err := New(cfg, Options{
		Addons: []string{addon}, Delay: 100 * time.Millisecond,
		Outcome: func(cluster, a string, configs map[string]string) Outcome {
			if a != addon || configs["addondeploymentconfigs.addon.open-cluster-management.io/ns/cfg"] != "h1" {
				t.Errorf("outcome asked for %s/%s with configs %v", cluster, a, configs)
			}
			return clusters[cluster]
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Start(ctx); err != nil {
		t.Fatal(err)
	}

	mcas := c.Addon.AddonV1alpha1()
	for name := range clusters {
		m, err := mcas.ManagedClusterAddOns(name).Create(ctx, &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: addon, Namespace: name}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		m.Status.ConfigReferences = []addonv1alpha1.ConfigReference{{
			ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"},
			ConfigReferent:      addonv1alpha1.ConfigReferent{Namespace: "ns", Name: "cfg"},
			DesiredConfig:       &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "ns", Name: "cfg"}, SpecHash: "h1"},
		}}
		// Not configured yet: the deployer must leave it alone.
		m.Status.Conditions = []metav1.Condition{{Type: addonv1alpha1.ManagedClusterAddOnConditionConfigured, Status: metav1.ConditionFalse, Reason: "ConfigurationsNotConfigured", Message: "x", LastTransitionTime: metav1.Now()}}
		if _, err := mcas.ManagedClusterAddOns(name).UpdateStatus(ctx, m, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	harness.Consistently(t, time.Second, "no work while Configured=False", func() string {
		for name := range clusters {
			if _, err := c.Work.WorkV1().ManifestWorks(name).Get(ctx, "addon-sim-deploy-0", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Sprintf("%s: work rendered while the MCA was Configured=False (err %v)", name, err)
			}
		}
		return ""
	})

	for name := range clusters {
		m, err := mcas.ManagedClusterAddOns(name).Get(ctx, addon, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: addonv1alpha1.ManagedClusterAddOnConditionConfigured, Status: metav1.ConditionTrue, Reason: "ConfigurationsConfigured", Message: "x"})
		if _, err := mcas.ManagedClusterAddOns(name).UpdateStatus(ctx, m, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]metav1.ConditionStatus{"ok": metav1.ConditionTrue, "bad": metav1.ConditionFalse}
	deadline := time.Now().Add(30 * time.Second)
	for name, status := range want {
		harness.Eventually(t, time.Until(deadline), fmt.Sprintf("%s: work reported %s", name, status), func() string {
			w, err := c.Work.WorkV1().ManifestWorks(name).Get(ctx, "addon-sim-deploy-0", metav1.GetOptions{})
			if err != nil {
				return err.Error()
			}
			applied := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied)
			available := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkAvailable)
			if applied != nil && available != nil && applied.Status == status && available.Status == status &&
				applied.ObservedGeneration == w.Generation && available.ObservedGeneration == w.Generation {
				if got := w.Annotations[ConfigSpecHashAnnotation]; got != `{"addondeploymentconfigs.addon.open-cluster-management.io/ns/cfg":"h1"}` {
					t.Fatalf("%s: annotation %s", name, got)
				}
				if w.Labels[addonv1alpha1.AddonLabelKey] != addon || len(w.OwnerReferences) != 1 || w.OwnerReferences[0].Kind != "ManagedClusterAddOn" {
					t.Fatalf("%s: labels %v owners %v", name, w.Labels, w.OwnerReferences)
				}
				return ""
			}
			return fmt.Sprintf("conditions %+v at generation %d", w.Status.Conditions, w.Generation)
		}, harness.Every(50*time.Millisecond))
	}
	mute := func() string {
		w, err := c.Work.WorkV1().ManifestWorks("mute").Get(ctx, "addon-sim-deploy-0", metav1.GetOptions{})
		if err != nil || len(w.Status.Conditions) != 0 {
			return fmt.Sprintf("mute: work %v, conditions %+v: want rendered and never reported", err, w.Status.Conditions)
		}
		return ""
	}
	harness.Eventually(t, time.Until(deadline), "mute's work rendered", mute)
	harness.Consistently(t, 500*time.Millisecond, "mute's work never reported", mute)

	// A new config version re-renders the work (new generation) and is reported again.
	m, err := mcas.ManagedClusterAddOns("ok").Get(ctx, addon, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gen := int64(0)
	if w, err := c.Work.WorkV1().ManifestWorks("ok").Get(ctx, "addon-sim-deploy-0", metav1.GetOptions{}); err == nil {
		gen = w.Generation
	}
	clusters["ok"] = Succeed
	m.Status.ConfigReferences[0].DesiredConfig.SpecHash = "h1" // same version: nothing to do
	if _, err := mcas.ManagedClusterAddOns("ok").UpdateStatus(ctx, m, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Consistently(t, 500*time.Millisecond, "no re-render without a config change", func() string {
		if w, _ := c.Work.WorkV1().ManifestWorks("ok").Get(ctx, "addon-sim-deploy-0", metav1.GetOptions{}); w.Generation != gen {
			return fmt.Sprintf("work re-rendered without a config change: generation %d -> %d", gen, w.Generation)
		}
		return ""
	})

	// Deleting the MCA deletes its work (no garbage collector on a test hub).
	if err := mcas.ManagedClusterAddOns("ok").Delete(ctx, addon, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, time.Until(deadline), "the work of a deleted MCA deleted", func() string {
		if _, err := c.Work.WorkV1().ManifestWorks("ok").Get(ctx, "addon-sim-deploy-0", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Sprintf("get: %v", err)
		}
		return ""
	}, harness.Every(50*time.Millisecond))
	// The deletion is counted once the Delete call returned, which can be just after the work is
	// gone; the check below says if it never is.
	_, _ = harness.Until(ctx, time.Until(deadline), 10*time.Millisecond, func() string {
		if agent.Stats().WorksDeleted == 0 {
			return "not counted"
		}
		return ""
	})
	if s := agent.Stats(); s.WorksCreated != 3 || s.WorkStatusUpdates != 2 || s.WorksDeleted != 1 {
		t.Fatalf("stats %+v, want 3 created, 2 reported, 1 deleted", s)
	}
}
