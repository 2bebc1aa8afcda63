package registration

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
)

func TestBindableRoles(t *testing.T) {
	rule := func(groups, resources, verbs, names []string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: groups, Resources: resources, Verbs: verbs, ResourceNames: names}
	}
	rbac := []string{"rbac.authorization.k8s.io"}
	cases := []struct {
		name          string
		rules         []rbacv1.PolicyRule
		cluster, role []string
	}{
		{"bind on clusterroles by name", []rbacv1.PolicyRule{rule(rbac, []string{"clusterroles"}, []string{"bind"}, []string{"a", "b"})}, []string{"a", "b"}, nil},
		{"bind on roles by name", []rbacv1.PolicyRule{rule(rbac, []string{"roles"}, []string{"bind"}, []string{"r"})}, nil, []string{"r"}},
		{"both resources", []rbacv1.PolicyRule{rule(rbac, []string{"roles", "clusterroles"}, []string{"bind"}, []string{"x"})}, []string{"x"}, []string{"x"}},
		{"wildcards but names", []rbacv1.PolicyRule{rule([]string{"*"}, []string{"*"}, []string{"*"}, []string{"w"})}, []string{"w"}, []string{"w"}},
		// bind on every role is granting cluster-admin: it makes nothing bindable.
		{"no resourceNames", []rbacv1.PolicyRule{rule(rbac, []string{"clusterroles"}, []string{"bind"}, nil)}, nil, nil},
		{"escalate is not bind", []rbacv1.PolicyRule{rule(rbac, []string{"clusterroles"}, []string{"escalate"}, []string{"e"})}, nil, nil},
		{"another API group", []rbacv1.PolicyRule{rule([]string{""}, []string{"clusterroles"}, []string{"bind"}, []string{"g"})}, nil, nil},
		{"signers are no roles", []rbacv1.PolicyRule{rule([]string{"certificates.k8s.io"}, []string{"signers"}, []string{"approve", "sign"}, []string{"example.com/s"})}, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := BindableRoles([]*rbacv1.ClusterRole{{Rules: tc.rules}})
			if diff := cmp.Diff(sets.List(sets.New(tc.cluster...)), sets.List(got.ClusterRoles)); diff != "" {
				t.Errorf("ClusterRoles (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(sets.List(sets.New(tc.role...)), sets.List(got.Roles)); diff != "" {
				t.Errorf("Roles (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBindPolicy is the decision on each binding hubPermissions ask for: only what the controller was granted by name, never in its own
// namespace or another cluster's.
func TestBindPolicy(t *testing.T) {
	clusters := sets.New("cluster1", "cluster2")
	p := BindPolicy{
		Bindable:  Bindable{ClusterRoles: sets.New("agent-hub"), Roles: sets.New("agent-reader", "addonops-controller-signing-ca")},
		Protected: sets.New("addonops-system", "open-cluster-management-hub"),
		IsCluster: clusters.Has,
	}
	rb := func(ns, kind, name string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "b"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: name}}
	}
	cases := []struct {
		name string
		rb   *rbacv1.RoleBinding
		want string // "" = allowed
	}{
		{"granted ClusterRole in the cluster's namespace", rb("cluster1", "ClusterRole", "agent-hub"), ""},
		{"granted Role in a namespace of the template's", rb("addon-hub", "Role", "agent-reader"), ""},
		{"granted ClusterRole in a namespace of the template's", rb("addon-hub", "ClusterRole", "agent-hub"), ""},
		{"the deploy-templates ClusterRole: not granted", rb("cluster1", "ClusterRole", "addonops-controller-deploy-templates"),
			`ClusterRole "addonops-controller-deploy-templates" is not granted to the controller for binding by name (bind on clusterroles "addonops-controller-deploy-templates" in a ClusterRole labelled addonops.io/aggregate-to-deploy-templates: "true")`},
		{"cluster-admin: not granted", rb("cluster1", "ClusterRole", "cluster-admin"), "not granted"},
		{"a granted Role's name as a ClusterRole", rb("cluster1", "ClusterRole", "agent-reader"), "not granted"},
		{"a granted ClusterRole's name as a Role", rb("addon-hub", "Role", "agent-hub"), `bind on roles "agent-hub"`},
		{"the signing CA role in the controller's namespace, even granted", rb("addonops-system", "Role", "addonops-controller-signing-ca"),
			"namespace addonops-system is the controller's own"},
		{"the signing CA namespace", rb("open-cluster-management-hub", "Role", "agent-reader"), "namespace open-cluster-management-hub is the controller's own"},
		{"another cluster's namespace", rb("cluster2", "ClusterRole", "agent-hub"), "namespace cluster2 is managed cluster cluster2's; an agent of cluster cluster1 is bound only in its own"},
		{"another API group", &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "cluster1"}, RoleRef: rbacv1.RoleRef{APIGroup: "example.com", Kind: "ClusterRole", Name: "agent-hub"}}, `apiGroup "example.com"`},
		{"another kind", rb("cluster1", "Group", "agent-hub"), `roleRef kind "Group"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := p.Check(tc.rb, "cluster1")
			if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestProtectedNamespaces(t *testing.T) {
	tpl := helloTemplate(t) // signingCA in namespace default
	got := ProtectedNamespaces(tpl, []string{"addonops-system", "", "histories"}, "ca-ns")
	if want := []string{"addonops-system", "ca-ns", "default", "histories"}; !cmp.Equal(want, sets.List(got)) {
		t.Errorf("protected %v, want %v", sets.List(got), want)
	}
}

// TestRoleBindingsRefused: what policy refuses is left out and named, the rest bound; a token
// driver agent that reported another subject than OCM's gets no binding at all.
func TestRoleBindingsRefused(t *testing.T) {
	tpl := helloTemplate(t)
	mca := mcaOf("cluster1", "hello-template")
	onlyCluster := BindPolicy{Bindable: Bindable{ClusterRoles: sets.New("cm-admin"), Roles: sets.New[string]()}}
	got, pending, err := RoleBindings(tpl, mca, Registrations(tpl, mca), onlyCluster)
	var refused *RefusedError
	if !errors.As(err, &refused) || pending || len(got) != 1 || got[0].Namespace != "cluster1" {
		t.Fatalf("got %d bindings, pending %v, err %v", len(got), pending, err)
	}
	if want := `hubPermissions[1] (Role cm-reader in namespace open-cluster-management): Role "cm-reader" is not granted`; len(refused.Reasons) != 1 || !strings.Contains(refused.Reasons[0], want) {
		t.Errorf("reasons %q, want %q", refused.Reasons, want)
	}

	token := func(s addonv1alpha1.Subject) *addonv1alpha1.ManagedClusterAddOn {
		m := mcaOf("cluster1", "hello-template")
		m.Status.KubeClientDriver = "token"
		m.Status.Registrations = []addonv1alpha1.RegistrationConfig{{SignerName: "kubernetes.io/kube-apiserver-client", Subject: s}}
		return m
	}
	pinned := TokenUser("cluster1", "hello-template")
	if pinned != "system:serviceaccount:cluster1:hello-template-agent" {
		t.Fatalf("TokenUser %q", pinned)
	}
	userOnly := []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: pinned}}
	cases := []struct {
		name     string
		subject  addonv1alpha1.Subject
		subjects []rbacv1.Subject // of every binding; nil with refuse or pending
		pending  bool
		refuse   string
	}{
		{"OCM's token identity", addonv1alpha1.Subject{User: pinned}, userOnly, false, ""},
		{"the hub's default groups left behind: tolerated, not bound", addonv1alpha1.Subject{User: pinned, Groups: DefaultGroups("cluster1", "hello-template")}, userOnly, false, ""},
		{"not reported yet", addonv1alpha1.Subject{}, nil, true, ""},
		{"all service accounts", addonv1alpha1.Subject{User: pinned, Groups: []string{"system:serviceaccounts"}}, nil, false, `groups [system:serviceaccounts]`},
		{"unauthenticated", addonv1alpha1.Subject{User: pinned, Groups: []string{"system:unauthenticated"}}, nil, false, "system:unauthenticated"},
		{"another cluster's group", addonv1alpha1.Subject{User: pinned, Groups: []string{"system:open-cluster-management:cluster:cluster2:addon:hello-template"}}, nil, false, "cluster2"},
		{"another service account", addonv1alpha1.Subject{User: "system:serviceaccount:cluster2:hello-template-agent"}, nil, false, `user "system:serviceaccount:cluster2:hello-template-agent"`},
		{"groups only", addonv1alpha1.Subject{Groups: []string{"system:authenticated"}}, nil, false, `user ""`},
		{"organization units", addonv1alpha1.Subject{User: pinned, OrganizationUnits: []string{"x"}}, nil, false, "organization units [x]"},
	}
	for _, tc := range cases {
		t.Run("token driver: "+tc.name, func(t *testing.T) {
			m := token(tc.subject)
			got, pending, err := RoleBindings(tpl, m, Registrations(tpl, m), helloPolicy)
			if pending != tc.pending {
				t.Errorf("pending %v", pending)
			}
			if tc.refuse != "" {
				if !errors.As(err, &refused) || !strings.Contains(err.Error(), tc.refuse) || !strings.Contains(err.Error(), "the token identity of add-on hello-template on cluster cluster1 is user \""+pinned+"\" and no group") || len(got) != 0 {
					t.Errorf("got %d bindings, err %v; want a refusal naming %q", len(got), err, tc.refuse)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.subjects == nil && len(got) != 0 {
				t.Errorf("got %d bindings", len(got))
			}
			for _, rb := range got {
				if diff := cmp.Diff(tc.subjects, rb.Subjects); diff != "" {
					t.Errorf("%s subjects (-want +got):\n%s", rb.Name, diff)
				}
			}
		})
	}
}

func TestReservedSigners(t *testing.T) {
	for signer, want := range map[string]bool{
		"kubernetes.io/kube-apiserver-client":         true,
		"kubernetes.io/kube-apiserver-client-kubelet": true,
		"kubernetes.io/legacy-unknown":                true,
		"k8s.io/anything":                             true,
		"sub.kubernetes.io/x":                         true,
		"Kubernetes.IO/x":                             true,
		"example.com/signer":                          false,
		"notkubernetes.io/x":                          false,
		"open-cluster-management.io/x":                false,
	} {
		if got := ReservedSigner(signer); got != want {
			t.Errorf("ReservedSigner(%q) = %v", signer, got)
		}
	}

	tpl := helloTemplate(t)
	tpl.Spec.Registration[1].CustomSigner.SignerName = "kubernetes.io/kubelet-serving"
	mca := mcaOf("cluster1", "hello-template")
	if regs := Registrations(tpl, mca); len(regs) != 1 || regs[0].SignerName != "kubernetes.io/kube-apiserver-client" || regs[0].Subject.User != DefaultUser("cluster1", "hello-template") {
		t.Errorf("registrations %+v", regs)
	}
	if cas := SigningCAs(tpl, "hub-ns"); len(cas) != 0 {
		t.Errorf("signing CAs %v", cas)
	}
	if got := ReservedSigners(tpl); len(got) != 1 || !strings.Contains(got[0], "customSigner signerName kubernetes.io/kubelet-serving is Kubernetes' own") {
		t.Errorf("reserved %q", got)
	}
	// A CustomSigner claiming the kube-apiserver-client signer before the KubeClient registration
	// does not set its subject.
	claim := helloTemplate(t)
	claim.Spec.Registration[1].CustomSigner.SignerName = "kubernetes.io/kube-apiserver-client"
	claim.Spec.Registration[0], claim.Spec.Registration[1] = claim.Spec.Registration[1], claim.Spec.Registration[0]
	if regs := Registrations(claim, mca); len(regs) != 1 || regs[0].Subject.User != DefaultUser("cluster1", "hello-template") {
		t.Errorf("registrations %+v", regs)
	}
}
