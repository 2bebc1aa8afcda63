package argocd

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/addonops/addonops/internal/testing/localhub"
)

// TestInstallEnv: the environment a container of Argo CD's install gets, as the kubelet would
// give it: literal values (container paths moved under the part's directory), ConfigMap keys read
// from the hub, a missing optional key left out, a missing required key an error.
func TestInstallEnv(t *testing.T) {
	dir := t.TempDir()
	manifest := filepath.Join(dir, "deployment.yaml")
	write := func(env string) {
		t.Helper()
		err := os.WriteFile(manifest, []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: argocd-repo-server}
spec:
  template:
    spec:
      containers:
      - name: other
        env: [{name: NOT_MINE, value: x}]
      - name: argocd-repo-server
        env:
`+env), 0o600)
		if err != nil {
			t.Fatal(err)
		}
	}
	kube := fake.NewClientset(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "argocd-cm", Namespace: Namespace},
		Data:       map[string]string{"timeout.reconciliation": "5s"},
	})
	write(`        - {name: LITERAL, value: "1"}
        - {name: CACHE, value: /tmp/kubecache}
        - name: ARGOCD_RECONCILIATION_TIMEOUT
          valueFrom: {configMapKeyRef: {name: argocd-cm, key: timeout.reconciliation}}
        - name: OPTIONAL_MISSING
          valueFrom: {configMapKeyRef: {name: argocd-cmd-params-cm, key: x, optional: true}}
        - name: REDIS_PASSWORD
          valueFrom: {secretKeyRef: {name: argocd-redis, key: auth}}
`)
	env, err := installEnv(context.Background(), kube, manifest, "argocd-repo-server", dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"LITERAL=1", "CACHE=" + filepath.Join(dir, "root", "tmp", "kubecache"), "ARGOCD_RECONCILIATION_TIMEOUT=5s"}
	if !slices.Equal(env, want) {
		t.Errorf("env %v, want %v", env, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "root", "tmp", "kubecache")); err != nil {
		t.Errorf("the container path was not created: %v", err)
	}

	write(`        - name: REQUIRED_MISSING
          valueFrom: {configMapKeyRef: {name: argocd-cm, key: nope}}
`)
	if _, err := installEnv(context.Background(), kube, manifest, "argocd-repo-server", dir); err == nil || !strings.Contains(err.Error(), "key nope of ConfigMap argocd/argocd-cm") {
		t.Errorf("a missing required key: error %v, want one naming the key and the ConfigMap", err)
	}
	if _, err := installEnv(context.Background(), kube, manifest, "argocd-server", dir); err == nil || !strings.Contains(err.Error(), "no container argocd-server") {
		t.Errorf("a missing container: error %v", err)
	}
}

// TestSetNamespace: what the install's `namespace: argocd` does to its objects.
func TestSetNamespace(t *testing.T) {
	rb := &unstructured.Unstructured{Object: map[string]any{"kind": "RoleBinding", "metadata": map[string]any{"name": "b"},
		"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "sa"}, map[string]any{"kind": "ServiceAccount", "name": "other", "namespace": "x"}}}}
	crb := &unstructured.Unstructured{Object: map[string]any{"kind": "ClusterRoleBinding", "metadata": map[string]any{"name": "c"},
		"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "sa"}}}}
	cr := &unstructured.Unstructured{Object: map[string]any{"kind": "ClusterRole", "metadata": map[string]any{"name": "r"}}}
	for _, o := range []*unstructured.Unstructured{rb, crb, cr} {
		setNamespace(o, Namespace)
	}
	subjects, _, _ := unstructured.NestedSlice(rb.Object, "subjects")
	if rb.GetNamespace() != Namespace || subjects[0].(map[string]any)["namespace"] != Namespace || subjects[1].(map[string]any)["namespace"] != "x" {
		t.Errorf("RoleBinding %v", rb.Object)
	}
	subjects, _, _ = unstructured.NestedSlice(crb.Object, "subjects")
	if crb.GetNamespace() != "" || subjects[0].(map[string]any)["namespace"] != Namespace {
		t.Errorf("ClusterRoleBinding %v", crb.Object)
	}
	if cr.GetNamespace() != "" {
		t.Errorf("ClusterRole %v", cr.Object)
	}
}

// TestReadPlugin reads the CMP configuration the sidecar mounts out of health/argocd/cmp-plugin.yaml.
func TestReadPlugin(t *testing.T) {
	root, err := localhub.RepoRoot("")
	if err != nil {
		t.Fatal(err)
	}
	p, err := readPlugin(root)
	if err != nil {
		t.Fatal(err)
	}
	if p.name != "addonops-kustomize-v1" || !strings.Contains(string(p.yaml), "kind: ConfigManagementPlugin") {
		t.Errorf("plugin %q:\n%s", p.name, p.yaml)
	}
}

// TestRedisCommand: the replies the harness reads from redis.
func TestRedisCommand(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	replies := map[string]string{"PING": "+PONG\r\n", "missing": "$-1\r\n", "key": "$5\r\nhe\r\no\r\n", "bad": "-ERR wrong\r\n"}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				var args []string
				line, _ := r.ReadString('\n') // *N
				n := 0
				for _, ch := range strings.TrimSpace(line[1:]) {
					n = n*10 + int(ch-'0')
				}
				for range n {
					_, _ = r.ReadString('\n') // $len
					arg, _ := r.ReadString('\n')
					args = append(args, strings.TrimSpace(arg))
				}
				_, _ = io.WriteString(c, replies[args[len(args)-1]])
			}()
		}
	}()
	addr := ln.Addr().String()
	ctx := context.Background()
	for _, tc := range []struct {
		args    []string
		want    string
		null    bool
		wantErr string
	}{
		{args: []string{"PING"}, want: "PONG"},
		{args: []string{"GET", "missing"}, null: true},
		{args: []string{"GET", "key"}, want: "he\r\no"},
		{args: []string{"GET", "bad"}, wantErr: "redis: ERR wrong"},
	} {
		got, err := redisCommand(ctx, addr, tc.args...)
		switch {
		case tc.wantErr != "":
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("%v: error %v, want %q", tc.args, err, tc.wantErr)
			}
		case err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case tc.null && got != nil:
			t.Errorf("%v: %q, want nil", tc.args, got)
		case !tc.null && string(got) != tc.want:
			t.Errorf("%v: %q, want %q", tc.args, got, tc.want)
		}
	}
}
