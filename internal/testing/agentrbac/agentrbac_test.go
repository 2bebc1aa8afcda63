//go:build integration

package agentrbac_test

import (
	"context"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/testing/agentrbac"
	"github.com/addonops/addonops/internal/testing/localhub"
)

func TestMain(m *testing.M) { os.Exit(localhub.RunTests(m)) }

// TestAgentRBAC checks the hostile-cluster suites' premise on a real API server: with OCM's agent
// RBAC a cluster writes its own MCA's status, and nothing of another cluster nor any MCA's spec.
func TestAgentRBAC(t *testing.T) {
	ctx := context.Background()
	hub := localhub.ForTest(t)
	for _, ns := range []string{"rbac-own", "rbac-other"} {
		if _, err := hub.Clients.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := hub.Clients.Addon.AddonV1alpha1().ManagedClusterAddOns(ns).Create(ctx, &addonv1alpha1.ManagedClusterAddOn{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := agentrbac.Apply(ctx, hub.Clients.Kube, "rbac-own"); err != nil {
		t.Fatal(err)
	}
	if err := agentrbac.Apply(ctx, hub.Clients.Kube, "rbac-own"); err != nil {
		t.Fatalf("applying again: %v", err)
	}
	agent, err := agentrbac.Clients(hub.Config, "rbac-own")
	if err != nil {
		t.Fatal(err)
	}
	patch := []byte(`{"status":{"namespace":"forged"}}`)
	if _, err := agent.Addon.AddonV1alpha1().ManagedClusterAddOns("rbac-own").Patch(ctx, "probe", types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		t.Errorf("the agent could not patch its own MCA's status: %v", err)
	}
	if _, err := agent.Addon.AddonV1alpha1().ManagedClusterAddOns("rbac-other").Patch(ctx, "probe", types.MergePatchType, patch, metav1.PatchOptions{}, "status"); !apierrors.IsForbidden(err) {
		t.Errorf("patching another cluster's MCA status: want Forbidden, got %v", err)
	}
	if _, err := agent.Addon.AddonV1alpha1().ManagedClusterAddOns("rbac-own").Patch(ctx, "probe", types.MergePatchType, []byte(`{"spec":{"installNamespace":"x"}}`), metav1.PatchOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("patching its own MCA's spec: want Forbidden, got %v", err)
	}
	if _, err := agent.Kube.CoreV1().Secrets("rbac-own").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("listing Secrets in its own namespace: want Forbidden, got %v", err)
	}
}
