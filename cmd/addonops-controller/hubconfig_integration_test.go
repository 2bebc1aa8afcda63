//go:build integration

package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/addonops/addonops/internal/testing/childproc"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/localhub"
)

// userKubeconfig writes dir/hub.kubeconfig: the hub's credentials in two contexts, the current one
// "hub" naming no namespace (as most kubeconfigs a user is handed) and "ops" naming namespace ops.
func userKubeconfig(t *testing.T, hub *localhub.Hub, dir, ops string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(hub.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Contexts[cfg.CurrentContext].DeepCopy()
	c.Namespace = ""
	cfg.Contexts["hub"] = c
	o := c.DeepCopy()
	o.Namespace = ops
	cfg.Contexts["ops"] = o
	cfg.CurrentContext = "hub"
	path := filepath.Join(dir, "hub.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// environ is the test's environment without the variables that say where the hub and the pod are.
func environ(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECONFIG=") && !strings.HasPrefix(kv, "POD_NAMESPACE=") && !strings.HasPrefix(kv, "KUBERNETES_SERVICE_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// docs/design/architecture.md's local run command, `addonops-controller --kubeconfig hub.kubeconfig`, as a process
// out of a pod (only the ports differ, so that parallel test packages do not collide): it starts,
// takes the Lease in the kubeconfig context's namespace ("default": the context names none) and
// says so at start-up. Then KUBECONFIG=hub.kubeconfig with --context ops: the Lease in ops.
func TestREADMERunCommand(t *testing.T) {
	hub := localhub.ForTest(t)
	const ops = "readme-ops"
	if _, err := hub.Clients.Kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ops}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	dir := t.TempDir()
	userKubeconfig(t, hub, dir, ops)

	for _, tc := range []struct {
		name      string
		args, env []string
		namespace string
		why       string
	}{
		{"flag", []string{"--kubeconfig", "hub.kubeconfig"}, nil, "default", `kubeconfig context \"hub\" (--kubeconfig hub.kubeconfig) names no namespace`},
		{"env", []string{"--context", "ops"}, []string{"KUBECONFIG=hub.kubeconfig"}, ops, `the namespace of kubeconfig context \"ops\" ($KUBECONFIG hub.kubeconfig)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			probes := freeAddr(t)
			args := append(tc.args, "--metrics-bind-address", "0", "--health-probe-bind-address", probes)
			p, err := childproc.Start(childproc.Spec{Name: "readme-" + tc.name, Path: os.Args[0], Args: args, Dir: dir,
				Env: environ(append(tc.env, processEnv+"=1")...), LogCommand: true})
			if err != nil {
				t.Fatal(err)
			}
			logText := func() string { data, _ := os.ReadFile(p.LogPath); return string(data) }
			defer func() {
				if err := p.Stop(10 * time.Second); err != nil {
					t.Errorf("stopping: %v", err)
				}
				if t.Failed() {
					t.Logf("log:\n%s", childproc.Tail(p.LogPath, 60))
				}
			}()
			leases := hub.Clients.Kube.CoordinationV1().Leases(tc.namespace)
			harness.EventuallyTrue(t, 60*time.Second, "the Lease in "+tc.namespace+" held and the controller's caches synced", func() bool {
				l, err := leases.Get(context.Background(), LeaderElectionID, metav1.GetOptions{})
				return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" && strings.Contains(logText(), "Caches synced")
			})
			harness.EventuallyTrue(t, 30*time.Second, "/readyz", func() bool { code, _ := get(probes, "/readyz"); return code == http.StatusOK })
			if log := logText(); !strings.Contains(log, ` namespace="`+tc.namespace+`"`) || !strings.Contains(log, tc.why) || !strings.Contains(log, "--leader-election-namespace, --history-namespace") {
				t.Errorf("the start-up log does not say the namespace is %s because %s, nor which flags override it", tc.namespace, tc.why)
			}
		})
	}
}

// On a hub without OCM's CRDs the controller neither crash-loops nor repeats client-go: /readyz
// fails with the missing kinds and how to install them, one error line says the same (the next
// after 30 s), and once the CRDs are installed it starts its controller and gets ready.
func TestWaitsForOCMKinds(t *testing.T) {
	hub, err := localhub.Start(context.Background(), localhub.Options{WithoutCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hub.Stop() })
	in := startInstance(t, hub, "bare", "--leader-elect=false", "--history-namespace=default", "--deploy-templates")

	var body string
	harness.EventuallyTrue(t, 20*time.Second, "/readyz/ocm-kinds to name the missing kinds", func() bool {
		var code int
		code, body = get(in.probes, "/readyz/ocm-kinds")
		return code == http.StatusInternalServerError && strings.Contains(body, "does not serve")
	})
	for _, want := range []string{"ClusterManagementAddOn (addon.open-cluster-management.io/v1alpha1)", "ManifestWork (work.open-cluster-management.io/v1)",
		"AddOnTemplate", "clusteradm init", "open-cluster-management.io/api v1.3.0", hub.URL} {
		if !strings.Contains(body, want) {
			t.Errorf("/readyz/ocm-kinds lacks %q:\n%s", want, body)
		}
	}
	if code, all := in.readyz(); code != http.StatusInternalServerError || !strings.Contains(all, "[-]ocm-kinds failed") || !strings.Contains(all, "[+]hub ok") {
		t.Errorf("/readyz %d:\n%s", code, all)
	}
	// Two more checks (every 5 s) log nothing new.
	harness.Consistently(t, 2*hubCheckInterval+time.Second, "one log line about the missing kinds", func() string {
		if n := strings.Count(in.log.String(), "lacks OCM's kinds"); n != 1 {
			return fmt.Sprintf("%d lines", n)
		}
		return ""
	})
	count := 0
	for _, ln := range strings.Split(in.log.String(), "\n") {
		if strings.Contains(ln, "lacks OCM's kinds") {
			count++
			if !strings.Contains(ln, `"error"=`) || !strings.Contains(ln, "ClusterManagementAddOn") {
				t.Errorf("not an error line naming the kinds: %s", ln)
			}
		}
	}
	if count != 1 {
		t.Errorf("%d log lines about the missing kinds in %s, want 1:\n%s", count, 2*hubCheckInterval, in.log)
	}
	if strings.Contains(in.log.String(), "could not find the requested resource") {
		t.Errorf("the controller started its informers before the kinds were there:\n%s", in.log)
	}
	select {
	case err := <-in.done:
		t.Fatalf("the controller stopped: %v", err)
	default:
	}

	installed := time.Now()
	if err := hub.InstallCRDs(context.Background()); err != nil {
		t.Fatal(err)
	}
	harness.EventuallyTrue(t, 30*time.Second, "/readyz after the CRDs were installed", func() bool { code, _ := in.readyz(); return code == http.StatusOK })
	t.Logf("ready %s after the CRDs were installed", time.Since(installed).Round(time.Millisecond))
	if _, ok := in.log.first(installed, "The hub serves OCM's kinds now"); !ok {
		t.Errorf("no log line about the kinds being there:\n%s", in.log)
	}
}
