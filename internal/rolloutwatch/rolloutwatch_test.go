package rolloutwatch

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonfake "open-cluster-management.io/api/client/addon/clientset/versioned/fake"
	clusterfake "open-cluster-management.io/api/client/cluster/clientset/versioned/fake"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/ocmkinds"
	"github.com/addonops/addonops/internal/testing/harness"
)

// hubServing is a discovery client that serves OCM's kinds the view reads.
func hubServing(kinds []ocmkinds.Kind) *fakediscovery.FakeDiscovery {
	byGV := map[string]*metav1.APIResourceList{}
	var lists []*metav1.APIResourceList
	for _, k := range kinds {
		l, ok := byGV[k.GroupVersion()]
		if !ok {
			l = &metav1.APIResourceList{GroupVersion: k.GroupVersion()}
			byGV[k.GroupVersion()] = l
			lists = append(lists, l)
		}
		l.APIResources = append(l.APIResources, metav1.APIResource{Name: k.Resource, Kind: k.Kind, Verbs: metav1.Verbs{"get", "list", "watch"}})
	}
	return &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: lists}}
}

// The view's input follows the hub: NotFound before the ClusterManagementAddOn exists, then the
// add-on, its ManagedClusterAddOns without managedFields, and the clusters of its placement once
// the placement's decisions are listed; each change signals, and OnClusterManagementAddOn sees
// the add-on.
func TestInputFollowsTheHub(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	addons, clusters := addonfake.NewSimpleClientset(), clusterfake.NewSimpleClientset()
	hub := Hub{Addon: addons, Cluster: clusters, Discovery: hubServing(ocmkinds.Status), Host: "fake",
		BaseName: func(context.Context, configref.Ref) (string, bool) { return "", false }}
	w, err := Start(ctx, hub, "hello")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); w.Wait() }()
	if _, err := w.Input(); !apierrors.IsNotFound(err) {
		t.Fatalf("Input before the add-on exists: %v, want NotFound", err)
	}
	var seen atomic.Int32
	if err := w.OnClusterManagementAddOn(func(cma *addonv1alpha1.ClusterManagementAddOn) {
		if cma.Name == "hello" {
			seen.Add(1)
		}
	}); err != nil {
		t.Fatal(err)
	}

	cma := &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: "hello"},
		Spec: addonv1alpha1.ClusterManagementAddOnSpec{InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyPlacements,
			Placements: []addonv1alpha1.PlacementStrategy{{PlacementRef: addonv1alpha1.PlacementRef{Namespace: "ns", Name: "all"}}}}}}
	if _, err := addons.AddonV1alpha1().ClusterManagementAddOns().Create(ctx, cma, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "hello",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "test", Operation: metav1.ManagedFieldsOperationUpdate}}}}
	if _, err := addons.AddonV1alpha1().ManagedClusterAddOns("c1").Create(ctx, mca, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	decision := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "all-decision-1",
		Labels: map[string]string{clusterv1beta1.PlacementLabel: "all"}}}
	created, err := clusters.ClusterV1beta1().PlacementDecisions("ns").Create(ctx, decision, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status.Decisions = []clusterv1beta1.ClusterDecision{{ClusterName: "c1"}, {ClusterName: "c2"}}
	if _, err := clusters.ClusterV1beta1().PlacementDecisions("ns").UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	select {
	case <-w.Changed():
	case <-time.After(time.Minute):
		t.Fatal("no change signalled after the add-on was created")
	}
	harness.Eventually(t, time.Minute, "the add-on, its MCA and its placement's clusters in the input", func() string {
		in, err := w.Input()
		switch {
		case err != nil:
			return err.Error()
		case in.CMA.Name != "hello":
			return "CMA " + in.CMA.Name
		case len(in.MCAs) != 1:
			return "no MCA yet"
		case !slices.Equal(in.Clusters["ns/all"], []string{"c1", "c2"}):
			return fmt.Sprintf("clusters of ns/all: %q", in.Clusters["ns/all"])
		}
		if in.MCAs[0].ManagedFields != nil {
			t.Fatalf("the MCA keeps its managedFields %v: the cache should drop them", in.MCAs[0].ManagedFields)
		}
		return ""
	})
	harness.EventuallyTrue(t, time.Minute, "OnClusterManagementAddOn called with the add-on", func() bool { return seen.Load() > 0 })
}
