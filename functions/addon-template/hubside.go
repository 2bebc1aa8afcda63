package main

import (
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/addonops/addonops/internal/configref"
)

// TemplateManifestAnnotation overrides generate's selection for one object: "true" puts it into
// the AddOnTemplate even when it is hub-side (and silences the Secret warning), "false" leaves it
// out. generate removes the annotation from the manifests it puts into the template.
const TemplateManifestAnnotation = "addonops.io/template-manifest"

// ocmIdentityPrefix starts the user and group names OCM gives add-on agents and its own components
// on the hub (system:open-cluster-management:cluster:<cluster>:addon:<addon>...). Only the hub
// authenticates them, so a binding with such a subject grants hub permissions.
const ocmIdentityPrefix = "system:open-cluster-management:"

// objectID is what identifies an object on a cluster: API group, kind, namespace, name.
type objectID struct {
	group, kind, namespace, name string
}

func idOf(n *yaml.RNode) objectID {
	return objectID{configref.GroupOf(n.GetApiVersion()), n.GetKind(), n.GetNamespace(), n.GetName()}
}

func (id objectID) String() string {
	return id.kind + " " + namespacedName(id.namespace, id.name)
}

// hubRole is a role the template's registration binds on the hub, and which field says so.
type hubRole struct {
	id  objectID
	why string
}

// hubSideRefs lists what the registration references on the hub: the roles of the hub
// permissions and the signing CA Secrets of custom signers.
//
//   - kubeClient.hubPermissions[] type CurrentCluster: the ClusterRole currentCluster.clusterRoleName
//     (OCM binds it in every cluster namespace);
//   - type SingleNamespace: the roleRef, a Role in singleNamespace.namespace or a ClusterRole;
//   - customSigner.signingCA: the Secret signingCA.name (in signingCA.namespace when set; without
//     it, OCM's addon-manager namespace, so any namespace matches).
func hubSideRefs(regs []addonv1alpha1.RegistrationSpec) (roles, secrets []hubRole) {
	for i, reg := range regs {
		at := fmt.Sprintf("spec.registration[%d]", i)
		if reg.KubeClient != nil {
			for j, p := range reg.KubeClient.HubPermissions {
				why := fmt.Sprintf("%s.kubeClient.hubPermissions[%d]", at, j)
				switch {
				case p.CurrentCluster != nil && p.CurrentCluster.ClusterRoleName != "":
					roles = append(roles, hubRole{objectID{rbacv1.GroupName, "ClusterRole", "", p.CurrentCluster.ClusterRoleName}, why})
				case p.SingleNamespace != nil && p.SingleNamespace.RoleRef.Kind == "Role":
					roles = append(roles, hubRole{objectID{rbacv1.GroupName, "Role", p.SingleNamespace.Namespace, p.SingleNamespace.RoleRef.Name}, why})
				case p.SingleNamespace != nil && p.SingleNamespace.RoleRef.Kind == "ClusterRole":
					roles = append(roles, hubRole{objectID{rbacv1.GroupName, "ClusterRole", "", p.SingleNamespace.RoleRef.Name}, why})
				}
			}
		}
		if reg.CustomSigner != nil && reg.CustomSigner.SigningCA.Name != "" {
			ca := reg.CustomSigner.SigningCA
			secrets = append(secrets, hubRole{objectID{"", "Secret", ca.Namespace, ca.Name}, at + ".customSigner.signingCA"})
		}
	}
	return roles, secrets
}

// hubSide tells why an input object belongs on the hub rather than in the agent's template, or ""
// when it does not. The rule, applied to every candidate manifest of generate:
//
//  1. a role a hub permission of the registration binds (see hubSideRefs);
//  2. a custom signer's signing CA Secret;
//  3. a RoleBinding or ClusterRoleBinding with a User or Group subject named
//     system:open-cluster-management:... (an agent's or OCM component's hub identity);
//  4. a RoleBinding or ClusterRoleBinding whose roleRef is a role of rule 1 that is in the input
//     (a RoleBinding's Role in the binding's namespace).
//
// inputRoles are the input's roles of rule 1.
func hubSide(n *yaml.RNode, roles, secrets []hubRole, inputRoles map[objectID]bool) string {
	id := idOf(n)
	for _, r := range roles {
		if id == r.id {
			return "the hub permission " + r.why + " binds it on the hub"
		}
	}
	for _, s := range secrets {
		if id.group == "" && id.kind == "Secret" && id.name == s.id.name && (s.id.namespace == "" || s.id.namespace == id.namespace) {
			return "it is the signing CA of " + s.why + ", read on the hub"
		}
	}
	if id.group != rbacv1.GroupName || (id.kind != "RoleBinding" && id.kind != "ClusterRoleBinding") {
		return ""
	}
	if subjects, _ := n.Pipe(yaml.Lookup("subjects")); subjects != nil {
		elements, _ := subjects.Elements()
		for _, s := range elements {
			kind, name := stringField(s, "kind"), stringField(s, "name")
			if (kind == rbacv1.UserKind || kind == rbacv1.GroupKind) && strings.HasPrefix(name, ocmIdentityPrefix) {
				return fmt.Sprintf("its subject %s %s is an identity OCM gives on the hub", kind, name)
			}
		}
	}
	if ref, _ := n.Pipe(yaml.Lookup("roleRef")); ref != nil && stringField(ref, "apiGroup") == rbacv1.GroupName {
		role := objectID{rbacv1.GroupName, stringField(ref, "kind"), "", stringField(ref, "name")}
		if role.kind == "Role" {
			role.namespace = id.namespace
		}
		if inputRoles[role] {
			return "it binds " + role.String() + ", a hub-side role of the input"
		}
	}
	return ""
}

func stringField(n *yaml.RNode, field string) string {
	f := n.Field(field)
	if f == nil || f.Value.YNode().Kind != yaml.ScalarNode {
		return ""
	}
	return f.Value.YNode().Value
}
