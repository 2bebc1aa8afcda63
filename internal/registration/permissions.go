package registration

import (
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
)

// What a template's hubPermissions may bind is decided by the controller itself, not left to
// Kubernetes: the API server lets a subject create a RoleBinding to any role whose every rule it
// holds itself, whether or not it was granted bind on it. The controller holds reading its signing
// CA (Role addonops-controller-signing-ca in its namespace) and writing ManifestWorks in every
// cluster namespace (ClusterRole addonops-controller-deploy-templates): a template naming either
// would hand them to every cluster's agent. So a binding is made only when
//   - its role is one the controller was granted bind on by name (BindableRoles), and
//   - its namespace is the cluster's own, or a SingleNamespace one that is neither one of the
//     controller's own (the signing CA's, the lease's, the version histories') nor another managed
//     cluster's.

// GrantsLabel marks the ClusterRoles whose rules grant the controller what templates name: bind on
// their roles, approve and sign on their signers (config/components/deploy-templates/grants_role.yaml
// aggregates them into the controller's addonops-controller-deploy-templates-grants).
const GrantsLabel = "addonops.io/aggregate-to-deploy-templates"

// Bindable are the roles the controller may bind, by kind and name.
type Bindable struct {
	ClusterRoles, Roles sets.Set[string]
}

// BindableRoles reads the roles granted bind by name from the rules of the grants ClusterRoles
// (GrantsLabel): a rule of API group rbac.authorization.k8s.io (or "*"), verb bind (or "*") and
// resource clusterroles or roles (or "*") lists them in resourceNames. A rule without resourceNames
// (bind on every role: cluster-admin for whoever can write a template) adds nothing: only what is
// granted by name is bound.
func BindableRoles(grants []*rbacv1.ClusterRole) Bindable {
	b := Bindable{ClusterRoles: sets.New[string](), Roles: sets.New[string]()}
	for _, cr := range grants {
		for _, rule := range cr.Rules {
			if len(rule.ResourceNames) == 0 || !anyOf(rule.APIGroups, rbacv1.GroupName) || !anyOf(rule.Verbs, "bind") {
				continue
			}
			if anyOf(rule.Resources, "clusterroles") {
				b.ClusterRoles.Insert(rule.ResourceNames...)
			}
			if anyOf(rule.Resources, "roles") {
				b.Roles.Insert(rule.ResourceNames...)
			}
		}
	}
	return b
}

func anyOf(list []string, want string) bool {
	return slices.Contains(list, want) || slices.Contains(list, rbacv1.ResourceAll)
}

// BindPolicy is what hubPermissions may bind.
type BindPolicy struct {
	Bindable Bindable
	// Protected are namespaces no binding goes into: the controller's own.
	Protected sets.Set[string]
	// IsCluster reports whether a namespace is a managed cluster's (its name).
	IsCluster func(namespace string) bool
}

// Check decides whether rb, made for cluster's agent, may be created; the error says why not.
func (p BindPolicy) Check(rb *rbacv1.RoleBinding, cluster string) error {
	ref := rb.RoleRef
	var bindable sets.Set[string]
	switch {
	case ref.APIGroup != rbacv1.GroupName:
		return fmt.Errorf("roleRef %s %q: apiGroup %q, want %s", ref.Kind, ref.Name, ref.APIGroup, rbacv1.GroupName)
	case ref.Kind == "ClusterRole":
		bindable = p.Bindable.ClusterRoles
	case ref.Kind == "Role":
		bindable = p.Bindable.Roles
	default:
		return fmt.Errorf("roleRef kind %q, want ClusterRole or Role", ref.Kind)
	}
	// The namespace first: whatever is granted, these are never bound into.
	ns := rb.Namespace
	if p.Protected.Has(ns) {
		return fmt.Errorf("namespace %s is the controller's own (its signing CAs, lease or version histories); no agent is bound there", ns)
	}
	if ns != cluster && p.IsCluster != nil && p.IsCluster(ns) {
		return fmt.Errorf("namespace %s is managed cluster %s's; an agent of cluster %s is bound only in its own", ns, ns, cluster)
	}
	if !bindable.Has(ref.Name) {
		return fmt.Errorf("%s %q is not granted to the controller for binding by name (bind on %s %q in a ClusterRole labelled %s: \"true\")",
			ref.Kind, ref.Name, strings.ToLower(ref.Kind)+"s", ref.Name, GrantsLabel)
	}
	return nil
}

// ProtectedNamespaces are the namespaces of the controller (given) and of the template's signing
// CAs, with defaultCANamespace for a signingCA without one.
func ProtectedNamespaces(t *addonv1alpha1.AddOnTemplate, controller []string, defaultCANamespace string) sets.Set[string] {
	out := sets.New[string]()
	for _, ns := range controller {
		if ns != "" {
			out.Insert(ns)
		}
	}
	if defaultCANamespace != "" {
		out.Insert(defaultCANamespace)
	}
	for _, ref := range SigningCAs(t, defaultCANamespace) {
		out.Insert(ref.Namespace)
	}
	return out
}
