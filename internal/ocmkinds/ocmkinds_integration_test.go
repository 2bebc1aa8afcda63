//go:build integration

package ocmkinds

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"k8s.io/client-go/discovery"

	"github.com/addonops/addonops/internal/testing/localhub"
)

// TestCheckOnRealHub asks a real kube-apiserver without OCM's CRDs, then with them.
func TestCheckOnRealHub(t *testing.T) {
	hub, err := localhub.Start(context.Background(), localhub.Options{WithoutCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hub.Stop() })
	disc, err := discovery.NewDiscoveryClientForConfig(hub.Config)
	if err != nil {
		t.Fatal(err)
	}

	err = Check(disc, hub.URL, Controller(true))
	var missing *MissingError
	if !errors.As(err, &missing) {
		t.Fatalf("bare API server: got %v, want a *MissingError", err)
	}
	want := []string{"ClusterManagementAddOn", "ManagedClusterAddOn", "ManagedCluster", "Placement", "PlacementDecision", "ManifestWork", "AddOnTemplate", "AddOnDeploymentConfig"}
	if !reflect.DeepEqual(missing.Kinds(), want) {
		t.Errorf("missing %v, want %v", missing.Kinds(), want)
	}
	if !strings.Contains(err.Error(), hub.URL) {
		t.Errorf("message does not name the hub: %v", err)
	}

	if err := hub.InstallCRDs(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, kinds := range [][]Kind{Controller(true), Status, Day2} {
		if err := Check(disc, hub.URL, kinds); err != nil {
			t.Errorf("after installing OCM's CRDs: %v", err)
		}
	}
}
