// Package configtest deploys the kustomize tree in config/ onto a test hub (internal/testing/localhub) the
// way a user does, and gives back a client configuration that carries only a token of the
// controller's ServiceAccount: code run with it has exactly the RBAC the deployment grants.
//
// It lives next to config/ (rather than in internal/) because it is the executable half of those
// manifests: its own tests check that config/default builds, server-side applies, meets the
// restricted Pod Security Standard and grants no more than it should, and the e2e suite runs the
// controller through it.
package configtest

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/ssapply"
)

const (
	// Namespace and ServiceAccount are the controller's, as config/default names them.
	Namespace      = "addonops-system"
	ServiceAccount = "addonops-controller"
	// FieldManager applies the manifests, in the role of the user's kubectl, Argo CD or Flux.
	FieldManager = "addonops-deploy"
)

// Build runs `kustomize build dir` (dir relative to root, the repository) with the kustomize
// binary given, and decodes the output.
func Build(ctx context.Context, kustomize, root, dir string) ([]*unstructured.Unstructured, error) {
	cmd := exec.CommandContext(ctx, kustomize, "build", dir)
	cmd.Dir = root
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w\n%s", dir, err, stderr.String())
	}
	objs, err := ssapply.Decode(&stdout)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	if len(objs) == 0 {
		return nil, fmt.Errorf("kustomize build %s printed no objects", dir)
	}
	return objs, nil
}

// Apply server-side applies objs in kustomize's order, as `kubectl apply --server-side -f -` does,
// then aggregates ClusterRoles (see AggregateClusterRoles).
func Apply(ctx context.Context, hub *localhub.Hub, objs []*unstructured.Unstructured) error {
	applier, err := ssapply.New(hub.Clients.Dynamic, hub.Clients.Kube.Discovery(), FieldManager)
	if err != nil {
		return err
	}
	if _, err := applier.ApplyAll(ctx, objs); err != nil {
		return err
	}
	return AggregateClusterRoles(ctx, hub.Clients.Kube)
}

// AggregateClusterRoles does once what kube-controller-manager's clusterrole-aggregation
// controller does continuously: the rules of every ClusterRole with an aggregationRule become the
// rules of the ClusterRoles its selectors match, in name order, without duplicates. The test hub
// runs no kube-controller-manager; without this the aggregated ClusterRoles of config/ would stay
// empty there.
func AggregateClusterRoles(ctx context.Context, kube kubernetes.Interface) error {
	list, err := kube.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing ClusterRoles to aggregate: %w", err)
	}
	slices.SortFunc(list.Items, func(a, b rbacv1.ClusterRole) int { return strings.Compare(a.Name, b.Name) })
	for _, role := range list.Items {
		if role.AggregationRule == nil {
			continue
		}
		rules, err := AggregatedRules(role.AggregationRule, list.Items)
		if err != nil {
			return fmt.Errorf("ClusterRole %s: %w", role.Name, err)
		}
		if equality.Semantic.DeepEqual(rules, role.Rules) {
			continue
		}
		next := role.DeepCopy()
		next.Rules = rules
		if _, err := kube.RbacV1().ClusterRoles().Update(ctx, next, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("aggregating the rules of ClusterRole %s: %w", role.Name, err)
		}
	}
	return nil
}

// AggregatedRules is the aggregation controller's rule: the rules of the roles (sorted by name)
// that any selector of agg matches, each rule once, the aggregated roles themselves excluded.
func AggregatedRules(agg *rbacv1.AggregationRule, roles []rbacv1.ClusterRole) ([]rbacv1.PolicyRule, error) {
	var rules []rbacv1.PolicyRule
	for _, sel := range agg.ClusterRoleSelectors {
		s, err := metav1.LabelSelectorAsSelector(&sel)
		if err != nil {
			return nil, fmt.Errorf("aggregation selector: %w", err)
		}
		for _, r := range roles {
			if r.AggregationRule != nil || !s.Matches(labels.Set(r.Labels)) {
				continue
			}
			for _, rule := range r.Rules {
				if !slices.ContainsFunc(rules, func(x rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(x, rule) }) {
					rules = append(rules, rule)
				}
			}
		}
	}
	return rules, nil
}

// ServiceAccountConfig returns a configuration for hub that authenticates with nothing but a
// token of the ServiceAccount namespace/name, issued by the TokenRequest API (as the kubelet
// mounts one into the controller's pod): it trusts the hub's serving CA and carries no client
// certificate, no impersonation and none of the hub's admin credentials.
func ServiceAccountConfig(ctx context.Context, hub *localhub.Hub, namespace, name string) (*rest.Config, error) {
	tr, err := hub.Clients.Kube.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("requesting a token for ServiceAccount %s/%s: %w", namespace, name, err)
	}
	cfg := rest.AnonymousClientConfig(hub.Config)
	cfg.BearerToken = tr.Status.Token
	return cfg, nil
}

// ServiceAccountKubeconfig writes, into dir, a kubeconfig holding ServiceAccountConfig's
// credentials, for running the controller binary as its pod would run, and returns its path.
func ServiceAccountKubeconfig(ctx context.Context, hub *localhub.Hub, namespace, name, dir string) (string, error) {
	cfg, err := ServiceAccountConfig(ctx, hub, namespace, name)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kubeconfig")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["hub"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData, CertificateAuthority: cfg.CAFile}
	kc.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "sa"}
	kc.CurrentContext = "hub"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return "", fmt.Errorf("writing the kubeconfig of ServiceAccount %s/%s: %w", namespace, name, err)
	}
	return path, nil
}
