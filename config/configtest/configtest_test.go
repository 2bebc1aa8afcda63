//go:build integration

package configtest_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/addonops/addonops/config/configtest"
	"github.com/addonops/addonops/internal/testing/krmfntest"
	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/ssapply"
)

const (
	base            = "config/default"
	deployTemplates = "config/configtest/testdata/deploy-templates" // base + component + samples
)

var kustomize, root string

func TestMain(m *testing.M) {
	var err error
	if root, err = localhub.RepoRoot(""); err != nil {
		fmt.Fprintln(os.Stderr, "configtest:", err)
		os.Exit(1)
	}
	if kustomize, err = krmfntest.KustomizePath(root); err != nil {
		fmt.Fprintln(os.Stderr, "configtest:", err)
		os.Exit(1)
	}
	os.Exit(localhub.RunTests(m))
}

func build(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := configtest.Build(context.Background(), kustomize, root, dir)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func convert[T any](t *testing.T, o *unstructured.Unstructured) *T {
	t.Helper()
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, out); err != nil {
		t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
	}
	return out
}

// TestNoWildcards: nothing config/ grants names every group, resource, verb or name, and secrets
// are only ever granted in a namespaced Role.
func TestNoWildcards(t *testing.T) {
	for _, dir := range []string{base, deployTemplates} {
		for _, o := range build(t, dir) {
			var rules []rbacv1.PolicyRule
			switch o.GetKind() {
			case "ClusterRole":
				rules = convert[rbacv1.ClusterRole](t, o).Rules
			case "Role":
				rules = convert[rbacv1.Role](t, o).Rules
			default:
				continue
			}
			for _, r := range rules {
				for _, f := range [][]string{r.APIGroups, r.Resources, r.Verbs, r.ResourceNames, r.NonResourceURLs} {
					if slices.ContainsFunc(f, func(s string) bool { return strings.Contains(s, "*") }) {
						t.Errorf("%s: %s %s grants a wildcard: %+v", dir, o.GetKind(), o.GetName(), r)
					}
				}
				if slices.Contains(r.Resources, "secrets") && o.GetKind() != "Role" {
					t.Errorf("%s: %s %s grants secrets beyond one namespace: %+v", dir, o.GetKind(), o.GetName(), r)
				}
			}
		}
	}
}

// TestDeployment checks what the issue asks of the Deployment, in the built output.
func TestDeployment(t *testing.T) {
	for _, tc := range []struct {
		dir      string
		wantArgs []string
	}{
		{base, []string{"--leader-elect=true", "--metrics-bind-address=:8443"}},
		{deployTemplates, []string{"--leader-elect=true", "--metrics-bind-address=:8443", "--deploy-templates", "--signing-ca-namespace=$(POD_NAMESPACE)"}},
	} {
		var deps []*appsv1.Deployment
		for _, o := range build(t, tc.dir) {
			if o.GetKind() == "Deployment" {
				deps = append(deps, convert[appsv1.Deployment](t, o))
			}
		}
		if len(deps) != 1 {
			t.Fatalf("%s: %d Deployments, want 1", tc.dir, len(deps))
		}
		d := deps[0]
		pod := d.Spec.Template.Spec
		if d.Namespace != configtest.Namespace || pod.ServiceAccountName != configtest.ServiceAccount {
			t.Errorf("%s: Deployment in %q running as %q, want %s and %s", tc.dir, d.Namespace, pod.ServiceAccountName, configtest.Namespace, configtest.ServiceAccount)
		}
		if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
			t.Errorf("%s: replicas %v, want 2 (one leader, one warm)", tc.dir, d.Spec.Replicas)
		}
		if len(pod.Containers) != 1 {
			t.Fatalf("%s: %d containers, want 1", tc.dir, len(pod.Containers))
		}
		c := pod.Containers[0]
		if !slices.Equal(c.Args, tc.wantArgs) {
			t.Errorf("%s: args %q, want %q", tc.dir, c.Args, tc.wantArgs)
		}
		ports := map[string]int32{}
		for _, p := range c.Ports {
			ports[p.Name] = p.ContainerPort
		}
		if ports["metrics"] != 8443 || ports["probes"] != 8081 {
			t.Errorf("%s: ports %v, want metrics 8443 (HTTPS) and probes 8081", tc.dir, ports)
		}
		for probe, path := range map[*corev1.Probe]string{c.LivenessProbe: "/healthz", c.ReadinessProbe: "/readyz"} {
			if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != path || probe.HTTPGet.Port.String() != "probes" {
				t.Errorf("%s: probe %+v, want GET %s on port probes (8081)", tc.dir, probe, path)
			}
		}
		sc := c.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
			t.Errorf("%s: container securityContext %+v, want readOnlyRootFilesystem, no privilege escalation, drop ALL", tc.dir, sc)
		}
		if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
			t.Errorf("%s: resources %+v, want cpu and memory requests and limits", tc.dir, c.Resources)
		}
	}
}

// hubWith applies dir to the package's test hub and returns a client that is the controller's
// ServiceAccount.
func hubWith(t *testing.T, dir string) (*localhub.Hub, kubernetes.Interface) {
	t.Helper()
	hub := localhub.ForTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	objs := build(t, dir)
	if err := configtest.Apply(ctx, hub, objs); err != nil {
		t.Fatalf("server-side applying %s: %v", dir, err)
	}
	// The tests share one hub: remove what another test's deployment added (a GitOps tool prunes).
	for _, other := range []string{base, deployTemplates} {
		for _, o := range build(t, other) {
			if !slices.ContainsFunc(objs, func(x *unstructured.Unstructured) bool {
				return x.GetKind() == o.GetKind() && x.GetNamespace() == o.GetNamespace() && x.GetName() == o.GetName()
			}) {
				prune(t, hub, o)
			}
		}
	}
	cfg, err := configtest.ServiceAccountConfig(ctx, hub, configtest.Namespace, configtest.ServiceAccount)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CertData != nil || cfg.KeyData != nil || cfg.CertFile != "" || cfg.Username != "" || cfg.Impersonate.UserName != "" || cfg.BearerToken == hub.Config.BearerToken {
		t.Fatal("the ServiceAccount configuration carries credentials other than its own token")
	}
	sa, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return hub, sa
}

func prune(t *testing.T, hub *localhub.Hub, o *unstructured.Unstructured) {
	t.Helper()
	rbac := hub.Clients.Kube.RbacV1()
	ctx, del := context.Background(), metav1.DeleteOptions{}
	var err error
	switch o.GetKind() {
	case "ClusterRole":
		err = rbac.ClusterRoles().Delete(ctx, o.GetName(), del)
	case "ClusterRoleBinding":
		err = rbac.ClusterRoleBindings().Delete(ctx, o.GetName(), del)
	case "Role":
		err = rbac.Roles(o.GetNamespace()).Delete(ctx, o.GetName(), del)
	case "RoleBinding":
		err = rbac.RoleBindings(o.GetNamespace()).Delete(ctx, o.GetName(), del)
	default:
		t.Fatalf("pruning %s %s: only RBAC objects are expected to differ between the deployments", o.GetKind(), o.GetName())
	}
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("pruning %s %s: %v", o.GetKind(), o.GetName(), err)
	}
}

type access struct {
	verb, group, resource, sub, namespace, name string
	allowed                                     bool
}

func (a access) String() string {
	return fmt.Sprintf("%s %s.%s/%s %s/%s", a.verb, a.resource, a.group, a.sub, a.namespace, a.name)
}

func checkAccess(t *testing.T, sa kubernetes.Interface, cases []access) {
	t.Helper()
	for _, a := range cases {
		r, err := sa.AuthorizationV1().SelfSubjectAccessReviews().Create(context.Background(), &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.sub, Namespace: a.namespace, Name: a.name}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("SelfSubjectAccessReview %s: %v", a, err)
		}
		if r.Status.Allowed != a.allowed {
			t.Errorf("the controller's ServiceAccount may %s: %v, want %v (%s)", a, r.Status.Allowed, a.allowed, r.Status.Reason)
		}
	}
}

const (
	addonGroup = "addon.open-cluster-management.io"
	certGroup  = "certificates.k8s.io"
	rbacGroup  = "rbac.authorization.k8s.io"
)

// common is what the ServiceAccount may and may not do with or without --deploy-templates.
var common = []access{
	{"list", addonGroup, "clustermanagementaddons", "", "", "", true},
	{"get", addonGroup, "clustermanagementaddons", "", "", "x", true},
	{"watch", addonGroup, "managedclusteraddons", "", "", "", true},
	{"create", addonGroup, "managedclusteraddons", "", "cluster1", "", true},
	{"update", addonGroup, "managedclusteraddons", "status", "cluster1", "x", true},
	{"update", addonGroup, "clustermanagementaddons", "status", "", "x", true},
	{"list", "cluster.open-cluster-management.io", "placementdecisions", "", "", "", true},
	{"list", "work.open-cluster-management.io", "manifestworks", "", "", "", true},
	{"create", "", "events", "", metav1.NamespaceDefault, "", true},
	{"update", "", "events", "", metav1.NamespaceDefault, "x", false},
	{"update", "coordination.k8s.io", "leases", "", configtest.Namespace, "addonops-controller-leader", true},
	{"update", "coordination.k8s.io", "leases", "", "kube-system", "addonops-controller-leader", false},
	{"update", addonGroup, "clustermanagementaddons", "", "", "x", false},
	{"get", "", "secrets", "", "kube-system", "x", false},
	{"list", "", "secrets", "", "", "", false},
	{"create", rbacGroup, "clusterrolebindings", "", "", "", false},
	{"bind", rbacGroup, "clusterroles", "", "", "cluster-admin", false},
	{"escalate", rbacGroup, "clusterroles", "", "", "", false},
	{"create", "", "pods", "", configtest.Namespace, "", false},
	{"impersonate", "", "serviceaccounts", "", "", "", false},
	// The metrics endpoint asks the hub who a scraper is and whether it may get /metrics.
	{"create", "authentication.k8s.io", "tokenreviews", "", "", "", true},
	{"create", "authorization.k8s.io", "subjectaccessreviews", "", "", "", true},
	{"create", "authorization.k8s.io", "localsubjectaccessreviews", "", "default", "", false},
}

// TestBaseOnHub applies config/default to a real kube-apiserver (with --authorization-mode=RBAC)
// and checks what its ServiceAccount may do with a token of its own.
func TestBaseOnHub(t *testing.T) {
	_, sa := hubWith(t, base)
	checkAccess(t, sa, append(slices.Clone(common),
		access{"create", "work.open-cluster-management.io", "manifestworks", "", "cluster1", "", false},
		access{"create", rbacGroup, "rolebindings", "", "cluster1", "", false},
		access{"update", certGroup, "certificatesigningrequests", "approval", "", "x", false},
	))
}

// TestDeployTemplatesOnHub adds the deploy-templates component and the sample custom config
// grant, and checks the aggregated ClusterRoles (filled the way kube-controller-manager does) and
// that re-applying, as a GitOps tool does on every sync, leaves their rules alone.
func TestDeployTemplatesOnHub(t *testing.T) {
	hub, sa := hubWith(t, deployTemplates)
	checkAccess(t, sa, append(slices.Clone(common),
		access{"create", "work.open-cluster-management.io", "manifestworks", "", "cluster1", "", true},
		access{"delete", rbacGroup, "rolebindings", "", "cluster1", "x", true},
		// The grants ClusterRoles, read to bind only what they grant by name; never written.
		access{"watch", rbacGroup, "clusterroles", "", "", "", true},
		access{"update", rbacGroup, "clusterroles", "", "", "x", false},
		access{"update", certGroup, "certificatesigningrequests", "approval", "", "x", true},
		access{"update", certGroup, "certificatesigningrequests", "status", "", "x", true},
		access{"approve", certGroup, "signers", "", "", "kubernetes.io/kube-apiserver-client", true},
		access{"approve", certGroup, "signers", "", "", "kubernetes.io/kube-apiserver-client-kubelet", false},
		access{"sign", certGroup, "signers", "", "", "example.com/any", false},
		access{"get", "", "secrets", "", configtest.Namespace, "signing-ca", true},
		access{"list", "", "secrets", "", configtest.Namespace, "", false},
		access{"get", "", "secrets", "", "open-cluster-management-hub", "signing-ca", false},
		// config/samples/custom-config-reader.yaml, through addonops-controller-configs.
		access{"watch", "widgets.example.com", "widgetconfigs", "", "", "", true},
		access{"create", "widgets.example.com", "widgetconfigs", "", "default", "", false},
	))

	// A GitOps tool applies the same manifests again on every sync, while the aggregation
	// controller owns the rules of the aggregated roles: the re-apply must leave them.
	ctx := context.Background()
	applier, err := ssapply.New(hub.Clients.Dynamic, hub.Clients.Kube.Discovery(), configtest.FieldManager)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := applier.ApplyAll(ctx, build(t, deployTemplates)); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"addonops-controller-configs", "addonops-controller-deploy-templates-grants"} {
		cr, err := hub.Clients.Kube.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cr.AggregationRule == nil {
			t.Errorf("ClusterRole %s has no aggregationRule", name)
		}
		if name == "addonops-controller-configs" && len(cr.Rules) == 0 {
			t.Errorf("re-applying the manifests emptied the aggregated rules of ClusterRole %s", name)
		}
	}
}

// TestRestrictedPodSecurity creates the Deployment's pod (server-side dry run) in the namespace of
// config/default, which enforces the restricted Pod Security Standard; a pod without the
// securityContext is refused there, so the check is real.
func TestRestrictedPodSecurity(t *testing.T) {
	hub, _ := hubWith(t, base)
	var dep *appsv1.Deployment
	for _, o := range build(t, base) {
		if o.GetKind() == "Deployment" {
			dep = convert[appsv1.Deployment](t, o)
		}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "addonops-controller-pss", Namespace: configtest.Namespace, Labels: dep.Spec.Template.Labels},
		Spec: dep.Spec.Template.Spec}
	pods := hub.Clients.Kube.CoreV1().Pods(configtest.Namespace)
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	if _, err := pods.Create(context.Background(), pod, dry); err != nil {
		t.Fatalf("the controller's pod is refused in %s: %v", configtest.Namespace, err)
	}
	loose := pod.DeepCopy()
	loose.Spec.SecurityContext = nil
	loose.Spec.Containers[0].SecurityContext = nil
	_, err := pods.Create(context.Background(), loose, dry)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "restricted") {
		t.Fatalf("a pod without securityContext in %s: %v, want it forbidden by the restricted Pod Security Standard", configtest.Namespace, err)
	}
}

// TestAggregatedRules is the aggregation rule on its own.
func TestAggregatedRules(t *testing.T) {
	read := rbacv1.PolicyRule{APIGroups: []string{"g"}, Resources: []string{"r"}, Verbs: []string{"list", "watch"}}
	other := rbacv1.PolicyRule{APIGroups: []string{"h"}, Resources: []string{"s"}, Verbs: []string{"list"}}
	sel := metav1.LabelSelector{MatchLabels: map[string]string{"a": "true"}}
	agg := &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{sel}}
	roles := []rbacv1.ClusterRole{
		{ObjectMeta: metav1.ObjectMeta{Name: "a1", Labels: map[string]string{"a": "true"}}, Rules: []rbacv1.PolicyRule{read}},
		{ObjectMeta: metav1.ObjectMeta{Name: "a2", Labels: map[string]string{"a": "true"}}, Rules: []rbacv1.PolicyRule{read, other}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b", Labels: map[string]string{"a": "false"}}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"delete"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "agg", Labels: map[string]string{"a": "true"}}, AggregationRule: agg, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}}}},
	}
	got, err := configtest.AggregatedRules(agg, roles)
	if err != nil {
		t.Fatal(err)
	}
	if want := []rbacv1.PolicyRule{read, other}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("AggregatedRules = %v, want %v", got, want)
	}
}
