//go:build integration

package localhub

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addonops/internal/testing/childproc"
)

// TestInstallCRDsIsIdempotent re-applies the CRDs to a running hub: nothing changes.
func TestInstallCRDsIsIdempotent(t *testing.T) {
	h := ForTest(t)
	ctx := context.Background()
	files, err := findCRDFiles(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	before := crdVersions(t, h)
	if err := installCRDs(ctx, h.Clients, files); err != nil {
		t.Fatal(err)
	}
	if after := crdVersions(t, h); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("re-applying the CRDs changed them: resourceVersions %v, then %v", before, after)
	}
	if len(before) != len(requiredCRDs) {
		t.Errorf("hub has %d OCM CRDs, want %d", len(before), len(requiredCRDs))
	}
}

// TestPortTakenIsRetryable checks that a port taken between choosing and binding is recognised, so
// Start retries with new ports instead of failing a parallel test package.
func TestPortTakenIsRetryable(t *testing.T) {
	bins, err := findBinaries(Options{})
	if err != nil {
		t.Fatal(err)
	}
	taken, err := net.Listen("tcp", net.JoinHostPort(loopback, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	ports, err := childproc.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := startEtcd(ctx, bins.etcd, t.TempDir(), taken.Addr().(*net.TCPAddr).Port, ports[0])
	if err == nil {
		_ = p.stop(stopGrace)
		t.Fatal("etcd started on a taken port")
	}
	if !errors.Is(err, errPortTaken) {
		t.Errorf("etcd on a taken port: err = %v, want errPortTaken", err)
	}
}

func crdVersions(t *testing.T, h *Hub) map[string]string {
	t.Helper()
	list, err := h.Clients.APIExtensions.ApiextensionsV1().CustomResourceDefinitions().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, crd := range list.Items {
		if strings.HasSuffix(crd.Name, ".open-cluster-management.io") {
			out[crd.Name] = crd.ResourceVersion
		}
	}
	return out
}
