// Package registration registers template add-on agents with the hub
// (docs/design/addon-template.md#registration): it writes
// a ManagedClusterAddOn's status.registrations, status.namespace and RegistrationApplied condition,
// keeps the RoleBindings of the template's hubPermissions, approves the agents' certificate signing
// requests for exactly the expected identity and signs CustomSigner requests with the template's CA.
//
// Deliberate differences from OCM, each tested:
//
//  1. CustomSigner CSRs are approved only when their subject is the template's (or the default)
//     subject for that cluster and add-on, and their requester is that cluster's agent; OCM approves
//     them unchecked.
//  2. KubeClient CSRs must come from exactly "system:open-cluster-management:<cluster>:<agent>" in
//     group "system:open-cluster-management:<cluster>"; OCM checks a prefix without the final colon,
//     which also accepts cluster "<cluster>x". Their organizations must be exactly the default
//     groups; subject alternative names are refused.
//  3. The expected identity comes from the AddOnTemplate, never from the MCA status a managed
//     cluster's agent can write; and the AddOnTemplate is one the controller or Git decided for
//     the add-on (hubcache.Authorized): a template a cluster names in its MCA status alone binds,
//     approves and signs nothing (hubcache.Cache.Refuse).
//  4. SingleNamespace RoleBindings are named per cluster and deleted when the MCA goes or the
//     template stops asking for them; OCM gives every cluster the same binding (each cluster
//     overwrites the subjects of the others) and never deletes it. Two hubPermissions that would
//     share one RoleBinding are an error (OCM keeps the last).
//  5. A missing or malformed signing CA is a RegistrationApplied=False condition and the CSRs of
//     that signer wait; OCM approves them and fails to sign.
//  6. With the token driver the agent's hub identity is OCM's, pinned: user
//     system:serviceaccount:<cluster>:<addon>-agent and no group (TokenUser). OCM binds whatever
//     subject the cluster's agent wrote into the MCA status, so a cluster could bind a template's
//     hub permissions to system:serviceaccounts or another cluster's group; here any other subject
//     is refused (SetPermissionFailed, a Warning event) and nothing is bound for it.
//  7. hubPermissions bind only roles the controller was granted bind on by name, never into the
//     controller's own namespaces nor another managed cluster's (permissions.go); OCM binds what
//     Kubernetes lets it.
//  8. CustomSigner names of Kubernetes' own domains (kubernetes.io, k8s.io) are refused: never
//     registered, approved or signed.
//  9. A CustomSigner certificate carries the subject the controller computes, never the request's
//     other attributes, and honours spec.expirationSeconds up to CertValidity.
package registration

import (
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/hubcache"
	"github.com/addonops/addonops/internal/render"
)

// Condition strings (addon-framework's registration controller, plus the CA problem).
const (
	ConditionRegistrationApplied = addonv1alpha1.ManagedClusterAddOnRegistrationApplied
	ReasonPermissionApplied      = addonv1alpha1.RegistrationAppliedSetPermissionApplied // SetPermissionApplied
	ReasonNilRegistration        = addonv1alpha1.RegistrationAppliedNilRegistration      // NilRegistration
	ReasonPermissionFailed       = addonv1alpha1.RegistrationAppliedSetPermissionFailed  // SetPermissionFailed
	ReasonPermissionPending      = "PermissionConfigPending"
	ReasonSigningCAInvalid       = "SigningCAInvalid"
	ReasonSignerReserved         = "SignerNameReserved"
	MessageConfigured            = "Registration of the addon agent is configured"

	// AddonTemplateLabel marks hub resources made for a template add-on (OCM templateagent).
	AddonTemplateLabel = "open-cluster-management.io/addon-template-name"

	// DefaultSigningCANamespace is where a signingCA without a namespace is looked for: OCM's
	// addon-manager namespace default.
	DefaultSigningCANamespace = "open-cluster-management-hub"

	kubeClientDriverToken = "token"
	authenticatedGroup    = "system:authenticated"
)

// AgentName is the agent name OCM gives a template add-on.
func AgentName(addon string) string { return addon + "-agent" }

// DefaultUser is the user OCM registers an add-on agent as (addon-framework agent.DefaultUser).
func DefaultUser(cluster, addon string) string {
	return fmt.Sprintf("system:open-cluster-management:cluster:%s:addon:%s:agent:%s", cluster, addon, AgentName(addon))
}

// DefaultGroups are the groups OCM registers an add-on agent in (agent.DefaultGroups).
func DefaultGroups(cluster, addon string) []string {
	return []string{
		fmt.Sprintf("system:open-cluster-management:cluster:%s:addon:%s", cluster, addon),
		fmt.Sprintf("system:open-cluster-management:addon:%s", addon),
		authenticatedGroup,
	}
}

// TokenUser is the user OCM's token driver registers an add-on agent as: ServiceAccount
// <addon>-agent in the cluster's namespace on the hub, which OCM's addon-manager creates and the
// cluster's registration agent requests tokens for (ocm pkg/registration/register/token, the
// driver's ensureSubject; pkg/addon/controllers/addontokeninfra). The agent writes it into the MCA
// status, and only the user: no groups.
func TokenUser(cluster, addon string) string {
	return "system:serviceaccount:" + cluster + ":" + AgentName(addon)
}

// CheckTokenSubject checks the KubeClient subject a token-driver agent reported: its user must be
// TokenUser. Groups are tolerated only when they are the default ones of this cluster and add-on
// (the hub writes them before the agent tells its driver, and OCM's v1beta1 token driver sets the
// user only, leaving them); they are never bound (RoleBindings binds TokenUser alone).
func CheckTokenSubject(s addonv1alpha1.Subject, cluster, addon string) error {
	want := TokenUser(cluster, addon)
	extra := sets.New(s.Groups...).Difference(sets.New(DefaultGroups(cluster, addon)...))
	if s.User != want || extra.Len() > 0 || len(s.OrganizationUnits) > 0 {
		return fmt.Errorf("token driver: the agent reported subject user %q, groups %v, organization units %v; the token identity of add-on %s on cluster %s is user %q and no group",
			s.User, s.Groups, s.OrganizationUnits, addon, cluster, want)
	}
	return nil
}

// ReservedSigner reports whether a signer name belongs to Kubernetes (domain kubernetes.io or
// k8s.io, or a subdomain): kube-controller-manager signs those once approved, so a CustomSigner of
// that name would have the controller approve certificates of Kubernetes' own signers.
func ReservedSigner(signer string) bool {
	domain, _, _ := strings.Cut(signer, "/")
	domain = strings.ToLower(domain)
	for _, d := range []string{"kubernetes.io", "k8s.io"} {
		if domain == d || strings.HasSuffix(domain, "."+d) {
			return true
		}
	}
	return false
}

// ReservedSigners lists the template's CustomSigner registrations refused for their name
// (ReservedSigner), as messages.
func ReservedSigners(t *addonv1alpha1.AddOnTemplate) []string {
	var out []string
	for _, reg := range t.Spec.Registration {
		if reg.Type == addonv1alpha1.RegistrationTypeCustomSigner && reg.CustomSigner != nil && ReservedSigner(reg.CustomSigner.SignerName) {
			msg := fmt.Sprintf("customSigner signerName %s is Kubernetes' own (kubernetes.io, k8s.io): it is never registered, approved or signed", reg.CustomSigner.SignerName)
			if !slices.Contains(out, msg) {
				out = append(out, msg)
			}
		}
	}
	return out
}

// RefusedError is a registration refused as hostile or forbidden (not merely malformed): an agent
// subject that is not the pinned one, a role or namespace hubPermissions may not bind. What is
// refused is not bound, and a binding made for it before is deleted.
type RefusedError struct{ Reasons []string }

func (e *RefusedError) Error() string { return "refused: " + strings.Join(e.Reasons, "; ") }

// Registrations returns the status.registrations of a template add-on on a cluster (OCM
// TemplateCSRConfigurationsFunc): one KubeClient entry (signer kubernetes.io/kube-apiserver-client,
// default subject) and one entry per CustomSigner signer (its subject or the default), in template
// order, first of each signer wins; CustomSigners of Kubernetes' names (ReservedSigner) are left
// out. With the token driver (status.kubeClientDriver, set by the agent) an existing KubeClient
// subject is kept as OCM keeps it (writing another would fight the agent), but it is only bound
// when it is the pinned one (RoleBindings).
func Registrations(t *addonv1alpha1.AddOnTemplate, mca *addonv1alpha1.ManagedClusterAddOn) []addonv1alpha1.RegistrationConfig {
	cluster, addon := mca.Namespace, mca.Name
	var out []addonv1alpha1.RegistrationConfig
	has := func(signer string) bool {
		return slices.ContainsFunc(out, func(r addonv1alpha1.RegistrationConfig) bool { return r.SignerName == signer })
	}
	for _, reg := range t.Spec.Registration {
		switch reg.Type {
		case addonv1alpha1.RegistrationTypeKubeClient:
			if has(certificatesv1.KubeAPIServerClientSignerName) {
				continue
			}
			rc := addonv1alpha1.RegistrationConfig{SignerName: certificatesv1.KubeAPIServerClientSignerName,
				Subject: addonv1alpha1.Subject{User: DefaultUser(cluster, addon), Groups: DefaultGroups(cluster, addon)}}
			if mca.Status.KubeClientDriver == kubeClientDriverToken {
				rc.Subject = addonv1alpha1.Subject{}
				for _, old := range mca.Status.Registrations {
					if old.SignerName == certificatesv1.KubeAPIServerClientSignerName {
						rc.Subject = old.Subject
					}
				}
			}
			out = append(out, rc)
		case addonv1alpha1.RegistrationTypeCustomSigner:
			if reg.CustomSigner == nil || ReservedSigner(reg.CustomSigner.SignerName) || has(reg.CustomSigner.SignerName) {
				continue
			}
			out = append(out, addonv1alpha1.RegistrationConfig{SignerName: reg.CustomSigner.SignerName, Subject: customSubject(reg.CustomSigner, cluster, addon)})
		}
	}
	return out
}

// customSubject is a CustomSigner's subject: the template's, else the default one.
func customSubject(cs *addonv1alpha1.CustomSignerRegistrationConfig, cluster, addon string) addonv1alpha1.Subject {
	if cs.Subject != nil {
		return *cs.Subject.DeepCopy()
	}
	return addonv1alpha1.Subject{User: DefaultUser(cluster, addon), Groups: DefaultGroups(cluster, addon)}
}

// SingleNamespaceBindingName names a SingleNamespace RoleBinding: per cluster, because every
// cluster's agent is bound in the same namespace.
func SingleNamespaceBindingName(addon, cluster string, ref rbacv1.RoleRef) string {
	return fmt.Sprintf("open-cluster-management:%s:%s:%s:agent", addon, cluster, strings.ToLower(ref.Kind))
}

// BindingLabels are the labels of an add-on's RoleBindings: OCM's two plus the cluster, which lets
// a binding outside the cluster namespace be found and cleaned up.
func BindingLabels(cluster, addon string) map[string]string {
	return map[string]string{addonv1alpha1.AddonLabelKey: addon, AddonTemplateLabel: "", hubcache.ClusterNameLabel: cluster}
}

// RoleBindings returns the RoleBindings the template's KubeClient hubPermissions ask for on a
// cluster and policy allows, bound to the agent's pinned identity: with the CSR driver the
// KubeClient subject of regs (the default user and groups, without system:authenticated), with
// the token driver TokenUser alone, once the agent reported it (before: pending=true, no
// bindings). A reported token subject that is not TokenUser, and a binding policy refuses, give a
// *RefusedError listing them and no binding for them (the rest are returned); a malformed
// permission gives another error and no bindings.
func RoleBindings(t *addonv1alpha1.AddOnTemplate, mca *addonv1alpha1.ManagedClusterAddOn, regs []addonv1alpha1.RegistrationConfig, policy BindPolicy) (bindings []*rbacv1.RoleBinding, pending bool, err error) {
	cluster, addon := mca.Namespace, mca.Name
	var perms []addonv1alpha1.HubPermissionConfig
	for _, reg := range t.Spec.Registration {
		if reg.Type == addonv1alpha1.RegistrationTypeKubeClient && reg.KubeClient != nil {
			perms = append(perms, reg.KubeClient.HubPermissions...)
		}
	}
	if len(perms) == 0 {
		return nil, false, nil
	}
	var reported *addonv1alpha1.Subject
	for i := range regs {
		if regs[i].SignerName == certificatesv1.KubeAPIServerClientSignerName {
			reported = &regs[i].Subject
		}
	}
	var subjects []rbacv1.Subject
	if mca.Status.KubeClientDriver == kubeClientDriverToken {
		if reported == nil || reported.User == "" && len(reported.Groups) == 0 && len(reported.OrganizationUnits) == 0 {
			return nil, true, nil
		}
		if err := CheckTokenSubject(*reported, cluster, addon); err != nil {
			return nil, false, &RefusedError{Reasons: []string{err.Error()}}
		}
		subjects = []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: TokenUser(cluster, addon)}}
	} else if reported != nil {
		if reported.User != "" {
			subjects = append(subjects, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: reported.User})
		}
		for _, g := range reported.Groups {
			if g != authenticatedGroup {
				subjects = append(subjects, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: g})
			}
		}
	}
	if len(subjects) == 0 {
		return nil, true, nil
	}
	owner := metav1.OwnerReference{APIVersion: addonv1alpha1.SchemeGroupVersion.String(), Kind: "ManagedClusterAddOn", Name: addon, UID: mca.UID}
	where := map[string]int{}
	var refused []string
	for i, p := range perms {
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Labels: BindingLabels(cluster, addon)}, Subjects: slices.Clone(subjects)}
		switch p.Type {
		case addonv1alpha1.HubPermissionsBindingCurrentCluster:
			if p.CurrentCluster == nil || p.CurrentCluster.ClusterRoleName == "" {
				return nil, false, fmt.Errorf("hubPermissions[%d]: type CurrentCluster needs currentCluster.clusterRoleName", i)
			}
			rb.Namespace, rb.Name = cluster, hubcache.ClusterBindingName(addon)
			rb.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: p.CurrentCluster.ClusterRoleName}
			// Garbage collection removes it with the MCA; the reconciler does too, for hubs without.
			rb.OwnerReferences = []metav1.OwnerReference{owner}
		case addonv1alpha1.HubPermissionsBindingSingleNamespace:
			if p.SingleNamespace == nil || p.SingleNamespace.Namespace == "" || p.SingleNamespace.RoleRef.Name == "" {
				return nil, false, fmt.Errorf("hubPermissions[%d]: type SingleNamespace needs singleNamespace.namespace and singleNamespace.roleRef", i)
			}
			rb.Namespace, rb.Name = p.SingleNamespace.Namespace, SingleNamespaceBindingName(addon, cluster, p.SingleNamespace.RoleRef)
			rb.RoleRef = p.SingleNamespace.RoleRef
		default:
			return nil, false, fmt.Errorf("hubPermissions[%d]: unknown type %q (want CurrentCluster or SingleNamespace)", i, p.Type)
		}
		key := rb.Namespace + "/" + rb.Name
		if j, dup := where[key]; dup {
			return nil, false, fmt.Errorf("hubPermissions[%d] and hubPermissions[%d] both need RoleBinding %s (one binding per namespace and role kind); merge them into one role", j, i, key)
		}
		where[key] = i
		if err := policy.Check(rb, cluster); err != nil {
			refused = append(refused, fmt.Sprintf("hubPermissions[%d] (%s %s in namespace %s): %v", i, rb.RoleRef.Kind, rb.RoleRef.Name, rb.Namespace, err))
			continue
		}
		bindings = append(bindings, rb)
	}
	if len(refused) > 0 {
		return bindings, false, &RefusedError{Reasons: refused}
	}
	return bindings, false, nil
}

// BindingChanges is how to get from the existing RoleBindings to the desired ones.
type BindingChanges struct {
	Create []*rbacv1.RoleBinding
	// Update carries the existing resourceVersion.
	Update []*rbacv1.RoleBinding
	// Replace are bindings whose roleRef changed: the API server does not allow changing it, so
	// they are deleted and created again.
	Replace []*rbacv1.RoleBinding
	Delete  []*rbacv1.RoleBinding
}

// Empty reports whether there is nothing to do.
func (b BindingChanges) Empty() bool {
	return len(b.Create)+len(b.Update)+len(b.Replace)+len(b.Delete) == 0
}

// DiffBindings compares desired with what exists. ours are the existing bindings labelled for the
// cluster and add-on (deleted when not desired); lookup finds any existing binding by namespace
// and name (one created by OCM is taken over).
func DiffBindings(desired, ours []*rbacv1.RoleBinding, lookup func(namespace, name string) *rbacv1.RoleBinding) BindingChanges {
	var ch BindingChanges
	want := map[string]bool{}
	for _, d := range desired {
		want[d.Namespace+"/"+d.Name] = true
		cur := lookup(d.Namespace, d.Name)
		switch {
		case cur == nil:
			ch.Create = append(ch.Create, d)
		case cur.RoleRef != d.RoleRef:
			ch.Replace = append(ch.Replace, d)
		case !bindingEqual(cur, d):
			u := cur.DeepCopy()
			if u.Labels == nil {
				u.Labels = map[string]string{}
			}
			for k, v := range d.Labels {
				u.Labels[k] = v
			}
			u.Subjects = d.Subjects
			u.OwnerReferences = d.OwnerReferences
			ch.Update = append(ch.Update, u)
		}
	}
	for _, o := range ours {
		if !want[o.Namespace+"/"+o.Name] {
			ch.Delete = append(ch.Delete, o)
		}
	}
	return ch
}

func bindingEqual(cur, want *rbacv1.RoleBinding) bool {
	for k, v := range want.Labels {
		if got, ok := cur.Labels[k]; !ok || got != v {
			return false
		}
	}
	return equality.Semantic.DeepEqual(cur.Subjects, want.Subjects) &&
		equality.Semantic.DeepEqual(cur.OwnerReferences, want.OwnerReferences)
}

// templateConfigTypes are the config types of every template add-on, in the order written: the
// SupportedConfigGVRs of OCM's template agent (addon-framework's BuiltInAddOnConfigGVRs:
// AddOnDeploymentConfigs and AddOnTemplates). OCM writes them in Go map order, which changes from
// one sync to the next; sorted, a status write never only reorders them.
var templateConfigTypes = []addonv1alpha1.ConfigGroupResource{
	{Group: configref.AddOnDeploymentConfigs.Group, Resource: configref.AddOnDeploymentConfigs.Resource},
	{Group: configref.AddOnTemplates.Group, Resource: configref.AddOnTemplates.Resource},
}

// IsTemplateAddon reports whether cma is a template add-on, by OCM's rule (addontemplate
// controller, SupportAddOnTemplate): one of its spec.supportedConfigs is of type AddOnTemplates,
// with or without a default.
func IsTemplateAddon(cma *addonv1alpha1.ClusterManagementAddOn) bool {
	for _, sc := range cma.Spec.SupportedConfigs {
		if sc.Group == configref.AddOnTemplates.Group && sc.Resource == configref.AddOnTemplates.Resource {
			return true
		}
	}
	return false
}

// SupportedConfigs is the status.supportedConfigs of an MCA of cma, and whether addonops, as the
// add-on's manager, writes it: for a template add-on (IsTemplateAddon), the config types its agent
// is rendered from, whatever the CMA lists (OCM's per-template addon-framework manager writes them
// from its registration controller for every MCA of the add-on, before registering it). Tools and
// OCM's addonprogressing controller read them to tell which spec.configs the add-on can use. For
// other add-ons addonops deploys nothing, so it is no manager of theirs and writes nothing.
func SupportedConfigs(cma *addonv1alpha1.ClusterManagementAddOn) ([]addonv1alpha1.ConfigGroupResource, bool) {
	if cma == nil || !IsTemplateAddon(cma) {
		return nil, false
	}
	return slices.Clone(templateConfigTypes), true
}

// Status is what the registration reconciler writes into an MCA status.
type Status struct {
	Registrations []addonv1alpha1.RegistrationConfig
	Namespace     string
	Condition     metav1.Condition
}

// Apply writes s into st.
func (s Status) Apply(st *addonv1alpha1.ManagedClusterAddOnStatus, set func(*[]metav1.Condition, metav1.Condition)) {
	st.Registrations = s.Registrations
	st.Namespace = s.Namespace
	set(&st.Conditions, s.Condition)
}

// Problems are what keeps a registration from being applied, by condition reason.
type Problems struct {
	// Bind is a hubPermissions error or refusal (RoleBindings) or a failed write:
	// SetPermissionFailed.
	Bind error
	// Signers are CustomSigners refused for their name (ReservedSigners): SignerNameReserved.
	Signers []string
	// CAs are unusable signing CAs: SigningCAInvalid.
	CAs []string
}

// Condition is the RegistrationApplied condition: no problems ⇒ True (NilRegistration when the
// template registers nothing); a binding error or refusal ⇒ SetPermissionFailed (refused signers
// named too); a refused signer name ⇒ SignerNameReserved; an empty subject ⇒
// PermissionConfigPending; a CA problem ⇒ SigningCAInvalid.
func Condition(regs []addonv1alpha1.RegistrationConfig, pending bool, p Problems) metav1.Condition {
	c := metav1.Condition{Type: ConditionRegistrationApplied}
	switch {
	case p.Bind != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonPermissionFailed, "Failed to set permission for hub agent: "+p.Bind.Error()
		if len(p.Signers) > 0 {
			c.Message += "; " + strings.Join(p.Signers, "; ")
		}
	case len(p.Signers) > 0:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonSignerReserved, strings.Join(p.Signers, "; ")
	case len(p.CAs) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, ReasonSigningCAInvalid
		c.Message = strings.Join(p.CAs, "; ") + "; certificate requests of that signer are not approved until it is fixed"
	case pending:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonPermissionPending, "registration subject not ready"
	case len(regs) == 0:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, ReasonNilRegistration, MessageConfigured
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, ReasonPermissionApplied, MessageConfigured
	}
	// Errors and CA problems can be long: cut as the hub cache cuts what it reads back.
	c.Message = addonstatus.BoundMessage(c.Message)
	return c
}

// InstallNamespace is status.namespace for a template add-on: where the agent runs (first
// Deployment's or DaemonSet's namespace, overridden by the first ADC's agentInstallNamespace).
func InstallNamespace(t *addonv1alpha1.AddOnTemplate, adcs []*addonv1alpha1.AddOnDeploymentConfig) string {
	var adc *addonv1alpha1.AddOnDeploymentConfig
	if len(adcs) > 0 {
		adc = adcs[0]
	}
	return render.AgentInstallNamespace(t, adc)
}

// SigningCAs lists the signing CA secrets of the template's CustomSigner registrations by signer
// name, with the default namespace filled in; reserved signers (ReservedSigner) have none.
func SigningCAs(t *addonv1alpha1.AddOnTemplate, defaultNamespace string) map[string]addonv1alpha1.SigningCARef {
	out := map[string]addonv1alpha1.SigningCARef{}
	for _, reg := range t.Spec.Registration {
		if reg.Type != addonv1alpha1.RegistrationTypeCustomSigner || reg.CustomSigner == nil || ReservedSigner(reg.CustomSigner.SignerName) {
			continue
		}
		if _, ok := out[reg.CustomSigner.SignerName]; ok {
			continue
		}
		ref := reg.CustomSigner.SigningCA
		if ref.Namespace == "" {
			ref.Namespace = defaultNamespace
		}
		out[reg.CustomSigner.SignerName] = ref
	}
	return out
}
