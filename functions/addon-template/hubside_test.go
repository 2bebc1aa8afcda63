package main

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// TestHubSide is the hub-side rule of generate, object by object.
func TestHubSide(t *testing.T) {
	regs := []addonv1alpha1.RegistrationSpec{
		{Type: addonv1alpha1.RegistrationTypeKubeClient, KubeClient: &addonv1alpha1.KubeClientRegistrationConfig{
			HubPermissions: []addonv1alpha1.HubPermissionConfig{
				{Type: addonv1alpha1.HubPermissionsBindingCurrentCluster, CurrentCluster: &addonv1alpha1.CurrentClusterBindingConfig{ClusterRoleName: "hub-role"}},
				{Type: addonv1alpha1.HubPermissionsBindingSingleNamespace, SingleNamespace: &addonv1alpha1.SingleNamespaceBindingConfig{
					Namespace: "data", RoleRef: rbacRoleRef("Role", "data-reader")}},
				{Type: addonv1alpha1.HubPermissionsBindingSingleNamespace, SingleNamespace: &addonv1alpha1.SingleNamespaceBindingConfig{
					Namespace: "other", RoleRef: rbacRoleRef("ClusterRole", "shared-reader")}},
			}}},
		{Type: addonv1alpha1.RegistrationTypeCustomSigner, CustomSigner: &addonv1alpha1.CustomSignerRegistrationConfig{
			SignerName: "example.com/s", SigningCA: addonv1alpha1.SigningCARef{Name: "ca", Namespace: "hub-ns"}}},
		{Type: addonv1alpha1.RegistrationTypeCustomSigner, CustomSigner: &addonv1alpha1.CustomSignerRegistrationConfig{
			SignerName: "example.com/t", SigningCA: addonv1alpha1.SigningCARef{Name: "ca2"}}},
	}
	roles, secrets := hubSideRefs(regs)
	// Rule 4 needs the role in the input: data/data-reader and hub-role are, shared-reader is not.
	inputRoles := map[objectID]bool{
		{"rbac.authorization.k8s.io", "ClusterRole", "", "hub-role"}: true,
		{"rbac.authorization.k8s.io", "Role", "data", "data-reader"}: true,
	}
	cases := []struct {
		obj     string
		hubSide bool
	}{
		{"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: hub-role}", true},
		{"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: shared-reader}", true},
		{"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: agent-role}", false},
		{"apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: data-reader, namespace: data}", true},
		{"apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: data-reader, namespace: agent}", false},
		{"apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: hub-role, namespace: agent}", false},
		{"apiVersion: example.com/v1\nkind: ClusterRole\nmetadata: {name: hub-role}", false},
		{"apiVersion: v1\nkind: Secret\nmetadata: {name: ca, namespace: hub-ns}", true},
		{"apiVersion: v1\nkind: Secret\nmetadata: {name: ca, namespace: agent}", false},
		{"apiVersion: v1\nkind: Secret\nmetadata: {name: ca2, namespace: anywhere}", true},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ca, namespace: hub-ns}", false},
		// Bindings: to a hub-side role of the input, or to an OCM hub identity.
		{"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: b}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: hub-role}\nsubjects: [{kind: ServiceAccount, name: x, namespace: y}]", true},
		{"apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: b, namespace: data}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: data-reader}", true},
		{"apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: b, namespace: agent}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: data-reader}", false},
		{"apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: b, namespace: agent}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: shared-reader}", false},
		{"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: b}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}\nsubjects: [{kind: Group, name: 'system:open-cluster-management:cluster:c1:addon:a'}]", true},
		{"apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: b, namespace: n}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}\nsubjects: [{kind: User, name: 'system:open-cluster-management:cluster:c1:addon:a:agent:x'}]", true},
		{"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: b}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}\nsubjects: [{kind: ServiceAccount, name: 'system:open-cluster-management:x', namespace: n}]", false},
		{"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: b}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}\nsubjects: [{kind: ServiceAccount, name: agent, namespace: n}]", false},
	}
	for _, tc := range cases {
		n, err := yaml.Parse(tc.obj)
		if err != nil {
			t.Fatal(err)
		}
		if why := hubSide(n, roles, secrets, inputRoles); (why != "") != tc.hubSide {
			t.Errorf("%s\nhub-side %q, want %v", tc.obj, why, tc.hubSide)
		}
	}
	if r, s := hubSideRefs(nil); len(r)+len(s) != 0 {
		t.Errorf("no registration: hub-side %v %v", r, s)
	}
}

func rbacRoleRef(kind, name string) rbacv1.RoleRef {
	return rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: kind, Name: name}
}

// TestUnquotedPlaceholder: what YAML makes of an unquoted {{VAR}}, in a plain file and as kpt
// passes it on, is found with its field; quoted placeholders and ordinary maps are not.
func TestUnquotedPlaceholder(t *testing.T) {
	cases := []struct{ obj, field, text string }{
		{"kind: A\ndata: {level: {{LEVEL}}}", "data.level", "{{LEVEL}}"},
		{"kind: A\ndata:\n  level: {{LEVEL}}", "data.level", "{{LEVEL}}"},
		{"kind: A\nspec:\n  containers:\n  - image: {{IMAGE}}", "spec.containers[0].image", "{{IMAGE}}"},
		{"kind: A\nspec:\n  image: {? {IMAGE: ''} : ''}", "spec.image", "{{IMAGE}}"},
		{"kind: A\ndata:\n  {{KEY}}: x", "data", "{{KEY}} (as a key)"},
		{"kind: A\ndata:\n  level: '{{LEVEL}}'\n  other: \"{{X}}\"\n  plain: a-{{Y}}", "", ""},
		{"kind: A\ndata: {m: {a: null}, n: {}}", "", ""},
	}
	for _, tc := range cases {
		n, err := yaml.Parse(tc.obj)
		if err != nil {
			t.Fatalf("%s: %v", tc.obj, err)
		}
		if field, text := unquotedPlaceholder(n); field != tc.field || text != tc.text {
			t.Errorf("%s: got %q %q, want %q %q", tc.obj, field, text, tc.field, tc.text)
		}
	}
}
