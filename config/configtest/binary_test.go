//go:build integration

package configtest_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addonops/config/configtest"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/krmfntest"
)

// TestControllerBinaryAsDeployed runs the addonops-controller binary the way the Deployment of
// config/default (and of the deploy-templates component) runs it: its args, POD_NAMESPACE from the
// pod, a kubeconfig holding only a token of its ServiceAccount. Only the listen addresses are moved
// to free loopback ports (the test shares the machine). It must win the Lease, report /readyz ok,
// never be refused, and stop cleanly on SIGTERM.
func TestControllerBinaryAsDeployed(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "addonops-controller")
	if err := krmfntest.Build(root, bin, "./cmd/addonops-controller"); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{base, deployTemplates} {
		t.Run(filepath.Base(d), func(t *testing.T) { runAsDeployed(t, bin, d) })
	}
}

func runAsDeployed(t *testing.T, bin, dir string) {
	hub, _ := hubWith(t, dir)
	ctx := context.Background()
	var dep *appsv1.Deployment
	for _, o := range build(t, dir) {
		if o.GetKind() == "Deployment" {
			dep = convert[appsv1.Deployment](t, o)
		}
	}
	container := dep.Spec.Template.Spec.Containers[0]
	env := map[string]string{}
	for _, e := range container.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			env[e.Name] = dep.Namespace
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		default:
			t.Fatalf("env %s: the test cannot provide %+v", e.Name, e.ValueFrom)
		}
	}

	kubeconfig, err := configtest.ServiceAccountKubeconfig(ctx, hub, configtest.Namespace, configtest.ServiceAccount, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}

	probes, metrics := freePort(t), freePort(t)
	args := expand(container.Args, env)
	args = append(args, "--kubeconfig="+kubeconfig,
		"--health-probe-bind-address=127.0.0.1:"+probes, "--metrics-bind-address=127.0.0.1:"+metrics)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "POD_NAMESPACE="+env["POD_NAMESPACE"])
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	defer func() {
		if !stopped {
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("addonops-controller %s:\n%s", strings.Join(args, " "), out.String())
		}
	}()

	deadline := time.Now().Add(90 * time.Second)
	harness.Eventually(t, 90*time.Second, "/readyz ok (within 90s)", func() string {
		select {
		case err := <-exited:
			stopped = true
			t.Fatalf("the controller exited before it was ready: %v", err)
		default:
		}
		resp, err := http.Get("http://127.0.0.1:" + probes + "/readyz")
		if err != nil {
			return "last: " + err.Error()
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return "last: " + resp.Status
		}
		return ""
	}, harness.Every(200*time.Millisecond))
	// A standby replica is ready too: leadership is the Lease, which may come a little later.
	var lease *coordinationv1.Lease
	harness.Eventually(t, time.Until(deadline), "the controller to hold Lease "+dep.Namespace+"/addonops-controller-leader (within 90s)", func() string {
		lease, err = hub.Clients.Kube.CoordinationV1().Leases(dep.Namespace).Get(ctx, "addonops-controller-leader", metav1.GetOptions{})
		switch {
		case err != nil:
			return err.Error()
		case lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "":
			return "no holder"
		}
		return ""
	}, harness.Every(200*time.Millisecond))
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		stopped = true
		if err != nil {
			t.Errorf("the controller exited with %v on SIGTERM, want 0", err)
		}
	case <-time.After(40 * time.Second):
		t.Fatal("the controller did not stop within 40s of SIGTERM")
	}
	if n := strings.Count(strings.ToLower(out.String()), "forbidden"); n > 0 {
		t.Errorf("the controller was refused %d times with the RBAC of %s", n, dir)
	}
	// The next run must win the Lease again: it was released on SIGTERM.
	if err := hub.Clients.Kube.CoordinationV1().Leases(dep.Namespace).Delete(ctx, lease.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_ = hub.Clients.Kube.CoreV1().Events(dep.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=Lease"})
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expand replaces $(VAR) in args with the container's environment, as the kubelet does.
func expand(args []string, env map[string]string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = varRef.ReplaceAllStringFunc(a, func(ref string) string {
			if v, ok := env[ref[2:len(ref)-1]]; ok {
				return v
			}
			return ref
		})
	}
	return out
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}
