//go:build integration

package configtest_test

import (
	"context"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/addonops/addonops/config/configtest"
)

const (
	networkPolicyComponent = "config/components/networkpolicy"
	// withNetworkPolicy is config/default plus the component, as a user's overlay combines them.
	withNetworkPolicy = "config/configtest/testdata/networkpolicy"
)

// TestNetworkPolicyComponent: the component builds on its own (one NetworkPolicy in
// addonops-system) and on config/default, adding only that; the API server takes it; and, read
// with NetworkPolicy's rules, it lets only pods of namespaces labelled metrics: enabled reach the
// metrics port, anyone reach the probes, and nobody reach any other port of the controller's pods.
func TestNetworkPolicyComponent(t *testing.T) {
	alone := build(t, networkPolicyComponent)
	if len(alone) != 1 || alone[0].GetKind() != "NetworkPolicy" || alone[0].GetNamespace() != configtest.Namespace ||
		alone[0].GetLabels()["app.kubernetes.io/part-of"] != "addonops" {
		t.Fatalf("%s builds %d objects, want one NetworkPolicy in %s labelled app.kubernetes.io/part-of=addonops", networkPolicyComponent, len(alone), configtest.Namespace)
	}
	baseObjs, overlay := build(t, base), build(t, withNetworkPolicy)
	if len(overlay) != len(baseObjs)+1 {
		t.Errorf("%s has %d objects, want config/default's %d and the NetworkPolicy", withNetworkPolicy, len(overlay), len(baseObjs))
	}
	for _, o := range baseObjs {
		i := slices.IndexFunc(overlay, func(x *unstructured.Unstructured) bool {
			return x.GetKind() == o.GetKind() && x.GetNamespace() == o.GetNamespace() && x.GetName() == o.GetName()
		})
		if i < 0 || !equalJSON(t, overlay[i].Object, o.Object) {
			t.Errorf("%s changes or lacks %s %s of config/default", withNetworkPolicy, o.GetKind(), o.GetName())
		}
	}
	np := convert[networkingv1.NetworkPolicy](t, one(t, withNetworkPolicy, overlay, "NetworkPolicy"))
	dep := convert[appsv1.Deployment](t, one(t, withNetworkPolicy, overlay, "Deployment"))
	pod := dep.Spec.Template

	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
		t.Errorf("policyTypes %v, want [Ingress] (egress must reach the hub's API server, wherever it is)", np.Spec.PolicyTypes)
	}
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
		t.Fatalf("podSelector %v does not select the controller's pods %v (%v)", np.Spec.PodSelector, pod.Labels, err)
	}

	monitoring := map[string]string{"kubernetes.io/metadata.name": "monitoring", "metrics": "enabled"}
	other := map[string]string{"kubernetes.io/metadata.name": "tenant"}
	for _, tc := range []struct {
		from    map[string]string // the source pod's namespace labels
		port    string            // the container port's name
		allowed bool
	}{
		{monitoring, "metrics", true},
		{other, "metrics", false},
		{map[string]string{"metrics": "true"}, "metrics", false},
		{monitoring, "probes", true},
		{other, "probes", true},
	} {
		if got := admits(t, np, pod.Spec.Containers[0].Ports, tc.from, tc.port); got != tc.allowed {
			t.Errorf("a pod in a namespace labelled %v reaches port %s: %v, want %v", tc.from, tc.port, got, tc.allowed)
		}
	}
	// No other port: every port a rule names is one of the container's, and none is left open to
	// everyone but the probes.
	for _, r := range np.Spec.Ingress {
		if len(r.Ports) == 0 {
			t.Errorf("ingress rule %+v names no port: it opens every port", r)
		}
		for _, p := range r.Ports {
			if containerPort(pod.Spec.Containers[0].Ports, p.Port) == nil {
				t.Errorf("ingress rule port %v is no port of the controller's container", p.Port)
			}
		}
	}

	// The API server takes it (named ports, selectors) as the user applies it.
	hub, _ := hubWith(t, base)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := configtest.Apply(ctx, hub, alone); err != nil {
		t.Fatalf("server-side applying %s: %v", networkPolicyComponent, err)
	}
	t.Cleanup(func() {
		err := hub.Clients.Kube.NetworkingV1().NetworkPolicies(np.Namespace).Delete(context.Background(), np.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	})
	got, err := hub.Clients.Kube.NetworkingV1().NetworkPolicies(np.Namespace).Get(ctx, np.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Ingress) != len(np.Spec.Ingress) {
		t.Errorf("the API server kept %d ingress rules of %d", len(got.Spec.Ingress), len(np.Spec.Ingress))
	}
}

// admits reads np as Kubernetes defines NetworkPolicy ingress: a connection to a selected pod is
// allowed if some rule matches both its source (no peers: any source; a namespaceSelector alone:
// any pod of a matching namespace) and its port (no ports: any port).
func admits(t *testing.T, np *networkingv1.NetworkPolicy, ports []corev1.ContainerPort, nsLabels map[string]string, portName string) bool {
	t.Helper()
	for _, r := range np.Spec.Ingress {
		from := len(r.From) == 0
		for _, peer := range r.From {
			if peer.IPBlock != nil || peer.PodSelector != nil || peer.NamespaceSelector == nil {
				t.Fatalf("peer %+v: the test reads namespaceSelector peers only", peer)
			}
			s, err := metav1.LabelSelectorAsSelector(peer.NamespaceSelector)
			if err != nil {
				t.Fatal(err)
			}
			from = from || s.Matches(labels.Set(nsLabels))
		}
		port := len(r.Ports) == 0
		for _, p := range r.Ports {
			if c := containerPort(ports, p.Port); c != nil && c.Name == portName && (p.Protocol == nil || *p.Protocol == c.Protocol) {
				port = true
			}
		}
		if from && port {
			return true
		}
	}
	return false
}

// containerPort is the container port a NetworkPolicy port names (by name or number).
func containerPort(ports []corev1.ContainerPort, p *intstr.IntOrString) *corev1.ContainerPort {
	for i, c := range ports {
		if p != nil && (p.Type == intstr.String && p.StrVal == c.Name || p.Type == intstr.Int && p.IntVal == c.ContainerPort) {
			return &ports[i]
		}
	}
	return nil
}
