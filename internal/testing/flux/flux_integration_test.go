//go:build integration

package flux

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/addonops/addonops/internal/testing/gitrepo"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/ssapply"
)

// TestDeliversAnArtifact pushes a ConfigMap with the flux CLI to the registry and has Flux apply it
// from an OCIRepository through a Kustomization, each controller with its ServiceAccount's token;
// Stop then leaves no process.
func TestDeliversAnArtifact(t *testing.T) {
	hub := localhub.ForTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	f := ForTest(t, hub, Options{})
	t.Logf("started in %s, registry %s", f.StartDuration.Round(time.Millisecond), f.Registry)

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: flux-harness\n  namespace: default\ndata:\n  a: b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	artifact := "oci://" + f.Registry + "/harness/manifests"
	const sha = "0123456789abcdef0123456789abcdef01234567"
	ran, err := f.Publish(ctx, dir, artifact, dir, "harness", sha)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ran {
		t.Logf("$ flux %s (%s)", strings.Join(c.Args, " "), c.Took.Round(time.Millisecond))
	}
	objs, err := ssapply.Decode(strings.NewReader(fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: harness, namespace: %[1]s}
spec: {interval: 1m, url: %[2]q, insecure: true, ref: {tag: main}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: harness, namespace: %[1]s}
spec: {interval: 1m, sourceRef: {kind: OCIRepository, name: harness}, path: ./, prune: true, wait: true, timeout: 1m}
`, Namespace, artifact)))
	if err != nil {
		t.Fatal(err)
	}
	applier, err := ssapply.New(hub.Clients.Dynamic, hub.Clients.Kube.Discovery(), "flux-harness-test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := applier.ApplyAll(ctx, objs); err != nil {
		t.Fatal(err)
	}
	kustomizations := hub.Clients.Dynamic.Resource(schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}).Namespace(Namespace)
	// CommitState, as the demo and e2e read it, until Flux calls the commit healthy.
	var st gitrepo.CommitState
	_, err = harness.UntilErr(ctx, 3*time.Minute, 200*time.Millisecond, func() (string, error) {
		switch st = f.CommitState(ctx, "harness", sha); {
		case st.Fatal:
			return "", errors.New(st.Problem)
		case st.Verdict != gitrepo.Healthy:
			return st.Line, nil
		}
		return "", nil
	})
	if err != nil {
		t.Fatalf("Flux did not call the commit healthy: %v", err)
	}
	t.Log(st.Line)
	k, err := kustomizations.Get(ctx, "harness", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if conds, _, _ := unstructured.NestedSlice(k.Object, "status", "conditions"); !strings.Contains(fmt.Sprint(conds), "reason:ReconciliationSucceeded") {
		t.Errorf("Flux called the commit healthy, but the Kustomization's conditions are %v, want Ready ReconciliationSucceeded", conds)
	}
	if !st.Applied || !st.Current || st.VerdictAt.IsZero() || st.Problem != "" {
		t.Errorf("CommitState of the healthy commit: %+v, want applied, current, a verdict time and no problem", st)
	}
	cm, err := hub.Clients.Kube.CoreV1().ConfigMaps("default").Get(ctx, "flux-harness", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Flux did not apply the pushed ConfigMap: %v", err)
	}
	managers := ""
	for _, mf := range cm.ManagedFields {
		managers += mf.Manager + " "
	}
	if !strings.Contains(managers, KustomizeManager) {
		t.Errorf("the ConfigMap's managers are %q, want %s", managers, KustomizeManager)
	}

	if err := f.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, p := range f.procs {
		if err := syscall.Kill(p.PID(), 0); err == nil {
			t.Errorf("%s (pid %d) still runs after Stop", p.Name, p.PID())
		}
	}
	if _, err := os.Stat(f.Dir); !os.IsNotExist(err) {
		t.Errorf("Stop left %s: %v", f.Dir, err)
	}
}
