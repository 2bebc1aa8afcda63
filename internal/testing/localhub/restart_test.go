//go:build integration

package localhub_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addonops/internal/testing/localhub"
)

// The API server can be stopped and started again on the same address, with its data.
func TestRestartAPIServer(t *testing.T) {
	h := localhub.ForTest(t)
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "survives-restart"}, Data: map[string]string{"k": "v"}}
	if _, err := h.Clients.Kube.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := h.PIDs()
	if err := h.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	_, err := h.Clients.Kube.CoreV1().ConfigMaps("default").Get(short, cm.Name, metav1.GetOptions{})
	cancel()
	if err == nil {
		t.Fatal("the API server answered after StopAPIServer")
	}
	start := time.Now()
	if err := h.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("kube-apiserver restarted in %s", time.Since(start).Round(time.Millisecond))
	got, err := h.Clients.Kube.CoreV1().ConfigMaps("default").Get(ctx, cm.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("after the restart: %v", err)
	}
	if got.Data["k"] != "v" {
		t.Errorf("after the restart the ConfigMap holds %v", got.Data)
	}
	after := h.PIDs()
	if after[0] == before[0] || after[1] != before[1] {
		t.Errorf("PIDs (kube-apiserver, etcd) went from %v to %v: want a new kube-apiserver and the same etcd", before, after)
	}
}
