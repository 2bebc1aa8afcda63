package apiaudit

import (
	"strings"
	"testing"
)

// Lines as kube-apiserver 1.35 writes them (trimmed): one per request at ResponseComplete; other
// stages are skipped.
const sample = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a","stage":"ResponseComplete","requestURI":"/apis/addon.open-cluster-management.io/v1alpha1/namespaces/c1/managedclusteraddons/x/status","verb":"update","user":{"username":"bench-ocm","groups":["system:masters","system:authenticated"]},"userAgent":"addon/v0.0.0","objectRef":{"resource":"managedclusteraddons","namespace":"c1","name":"x","apiGroup":"addon.open-cluster-management.io","apiVersion":"v1alpha1","subresource":"status"},"responseStatus":{"metadata":{},"code":409},"requestReceivedTimestamp":"2025-01-02T03:04:05.123456Z","stageTimestamp":"2025-01-02T03:04:05.124000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"b","stage":"ResponseStarted","verb":"watch","user":{"username":"bench-ocm"},"objectRef":{"resource":"manifestworks","apiGroup":"work.open-cluster-management.io"},"requestReceivedTimestamp":"2025-01-02T03:04:05Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"c","stage":"ResponseComplete","requestURI":"/apis/work.open-cluster-management.io/v1/namespaces/c1/manifestworks","verb":"create","user":{"username":"bench-ocm"},"objectRef":{"resource":"manifestworks","namespace":"c1","apiGroup":"work.open-cluster-management.io","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":201},"requestReceivedTimestamp":"2025-01-02T03:04:06Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"d","stage":"ResponseComplete","requestURI":"/healthz","verb":"get","user":{"username":"bench-ocm"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2025-01-02T03:04:07Z"}
`

func TestRead(t *testing.T) {
	var got []Request
	if err := read(strings.NewReader(sample), func(r Request) { got = append(got, r) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("got %d requests, want 3 (ResponseStarted skipped): %+v", len(got), got)
	}
	if r := got[0]; r.Key() != "managedclusteraddons/status update" || !r.IsWrite() || !r.Failed() || r.User != "bench-ocm" ||
		r.Received.Nanosecond() != 123456000 {
		t.Errorf("first request %+v (key %q)", r, r.Key())
	}
	if r := got[1]; r.Key() != "manifestworks create" || !r.IsWrite() || r.Failed() {
		t.Errorf("second request %+v", r)
	}
	if r := got[2]; r.Key() != "(non-resource) get" || r.IsWrite() || r.URI != "/healthz" {
		t.Errorf("third request %+v", r)
	}
	c := Counts{}
	for _, r := range got {
		c.Add(r)
	}
	if n := c.Sum(func(k string) bool { return strings.HasPrefix(k, "manifestworks ") }); n != 1 {
		t.Errorf("manifestworks: %d", n)
	}
}

func TestReadRejectsGarbage(t *testing.T) {
	err := read(strings.NewReader("{\n"), func(Request) {})
	if err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("err = %v, want one naming line 1", err)
	}
}
