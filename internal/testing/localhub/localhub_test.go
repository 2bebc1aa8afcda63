package localhub_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/clientcmd"
	clusterv1beta1client "open-cluster-management.io/api/client/cluster/clientset/versioned/typed/cluster/v1beta1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/addonops/addonops/internal/testing/localhub"
)

func TestMain(m *testing.M) {
	// A child started by TestKubeconfigWorksInAnotherProcess: use the kubeconfig and exit.
	if path := os.Getenv(kubeconfigChildEnv); path != "" {
		os.Exit(kubeconfigChild(path))
	}
	os.Exit(localhub.RunTests(m))
}

const kubeconfigChildEnv = "LOCALHUB_TEST_KUBECONFIG_CHILD"

func kubeconfigChild(path string) int {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	c, err := localhub.NewClients(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	list, err := c.Cluster.ClusterV1().ManagedClusters().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for _, mc := range list.Items {
		fmt.Printf("managedcluster %s\n", mc.Name)
	}
	return 0
}

// TestMissingBinariesAreNamed checks the errors a machine without the binaries gets: each names
// the binary, where it was looked for and what provides it.
func TestMissingBinariesAreNamed(t *testing.T) {
	t.Setenv("ADDONOPS_ETCD", "")
	t.Setenv("ADDONOPS_KUBE_APISERVER", "")
	emptyRepo := t.TempDir()
	for _, tc := range []struct {
		name string
		env  map[string]string
		opts localhub.Options
		want []string
	}{{
		name: "options",
		opts: localhub.Options{EtcdPath: "/nonexistent/etcd", APIServerPath: "/nonexistent/kube-apiserver"},
		want: []string{
			"etcd: /nonexistent/etcd (from Options.EtcdPath) not found", "`make etcd`",
			"kube-apiserver: /nonexistent/kube-apiserver (from Options.APIServerPath) not found", "`make bin/kube-apiserver`",
		},
	}, {
		name: "environment",
		env:  map[string]string{"ADDONOPS_ETCD": "/nonexistent/etcd", "ADDONOPS_KUBE_APISERVER": "/nonexistent/kas"},
		want: []string{
			"etcd: /nonexistent/etcd (from $ADDONOPS_ETCD) not found. Fix or unset $ADDONOPS_ETCD",
			"kube-apiserver: /nonexistent/kas (from $ADDONOPS_KUBE_APISERVER) not found. Fix or unset $ADDONOPS_KUBE_APISERVER",
		},
	}, {
		name: "default location in the repository",
		opts: localhub.Options{RepoRoot: emptyRepo},
		want: []string{
			"kube-apiserver: " + emptyRepo + "/bin/kube-apiserver not found. Build it with `make bin/kube-apiserver`",
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			h, err := localhub.Start(context.Background(), tc.opts)
			if err == nil {
				_ = h.Stop()
				t.Fatal("Start with missing binaries succeeded")
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

// decisionGetter adapts the typed client to sdk-go's PlacementDecisionGetter (OCM feeds it a lister).
type decisionGetter struct {
	c clusterv1beta1client.ClusterV1beta1Interface
}

func (g decisionGetter) List(selector labels.Selector, namespace string) ([]*clusterv1beta1.PlacementDecision, error) {
	list, err := g.c.PlacementDecisions(namespace).List(context.Background(), metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, err
	}
	var out []*clusterv1beta1.PlacementDecision
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out, nil
}

// ApplyCRDs refuses anything but a CustomResourceDefinition before it writes anything: a CRD file
// that holds another kind is a mistake of its caller.
func TestApplyCRDsRefusesOtherKinds(t *testing.T) {
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x"}}}
	err := localhub.ApplyCRDs(context.Background(), nil, "test", []*unstructured.Unstructured{cm})
	if err == nil || !strings.Contains(err.Error(), "ConfigMap x is not a CustomResourceDefinition") {
		t.Errorf("ApplyCRDs(ConfigMap) = %v, want an error naming it", err)
	}
}
