package main

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/krmfn"
	"github.com/addonops/addonops/internal/render"
)

// validate checks every OCM object of the input against its CRD schema (what the hub's API server
// would reject), then every AddOnTemplate and AddOnDeploymentConfig for what the schema cannot
// tell; it changes nothing.
func validate(req *krmfn.Request) {
	tpls, adcs := decodeInputs(req)
	for _, it := range req.Items {
		// Templates and ADCs were checked by decodeInputs; the other OCM kinds of the CRDs
		// (ClusterManagementAddOn, ManagedClusterAddOn, Placement...) here.
		if !isPreviewObject(it) && isOCM(it) && !isKind(it, addOnTemplateKind) && !isKind(it, addOnDeploymentConfigKind) {
			checkSchema(req, it)
		}
	}
	for _, a := range adcs {
		checkADC(req, a)
	}
	for _, t := range tpls {
		checkTemplate(req, t, adcs, true)
	}
}

const kubeAPIServerClientSigner = "kubernetes.io/kube-apiserver-client"

// exampleCluster is the cluster name trial renderings use.
const exampleCluster = "example-cluster"

// checkTemplate records what is wrong with a template. full adds the checks that depend on the
// AddOnDeploymentConfigs (variables defined, trial rendering).
func checkTemplate(req *krmfn.Request, t template, adcs []deploymentConfig, full bool) {
	errorsBefore := countErrors(req)
	spec := &t.obj.Spec
	if spec.AddonName == "" {
		req.Errorf(t.node, "spec.addonName", "%s has no spec.addonName: set the name of the add-on it belongs to", krmfn.Describe(t.node))
	} else if msgs := validation.IsDNS1123Subdomain(spec.AddonName); len(msgs) > 0 {
		req.Errorf(t.node, "spec.addonName", "%s: spec.addonName %q is not a valid add-on name: %s", krmfn.Describe(t.node), spec.AddonName, strings.Join(msgs, "; "))
	}
	checkRegistration(req, t)
	if spec.AgentSpec.DeleteOption != nil {
		req.Warningf(t.node, "spec.agentSpec.deleteOption", "%s: spec.agentSpec.deleteOption is ignored by OCM; use the annotation addon.open-cluster-management.io/deletion-orphan on manifests to keep them on add-on removal", krmfn.Describe(t.node))
	}
	if spec.AgentSpec.Executor != nil {
		req.Warningf(t.node, "spec.agentSpec.executor", "%s: spec.agentSpec.executor is ignored by OCM", krmfn.Describe(t.node))
	}
	if len(spec.AgentSpec.Workload.Manifests) == 0 {
		req.Errorf(t.node, "spec.agentSpec.workload.manifests", "%s has no manifests: an add-on template deploys at least its agent", krmfn.Describe(t.node))
	}
	checkManifestIdentity(req, t)

	r, err := render.Compile(t.obj)
	if err != nil {
		reportRenderError(req, t, "", err)
		return
	}
	for _, w := range r.Warnings() {
		req.Warningf(t.node, "", "%s: %s", krmfn.Describe(t.node), w)
	}
	uses := r.Variables()
	indexes := make([]int, 0, len(uses))
	for i := range uses {
		indexes = append(indexes, i)
	}
	sort.Ints(indexes)
	for _, i := range indexes {
		for _, u := range uses[i] {
			if !render.IsIdentifier(u.Name) {
				req.Errorf(t.node, manifestField(i, u.Field), "%s: {{%s}} at %s is not a variable: names are C identifiers ([A-Za-z_][A-Za-z0-9_]*) and the text between {{ and }} is taken literally",
					krmfn.Describe(t.node), u.Name, manifestField(i, u.Field))
			}
		}
	}
	if !full {
		return
	}
	// Rendering would only repeat what is already reported.
	if checkVariablesDefined(req, t, adcs, indexes, uses) && countErrors(req) == errorsBefore {
		trialRender(req, t, r, adcs, indexes, uses)
	}
}

func countErrors(req *krmfn.Request) int {
	n := 0
	for _, r := range req.Results {
		if r.Severity == "error" {
			n++
		}
	}
	return n
}

// reportRenderError turns rendering errors into results located in the template.
func reportRenderError(req *krmfn.Request, t template, prefix string, err error) {
	var errs []error
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		errs = joined.Unwrap()
	} else {
		errs = []error{err}
	}
	for _, e := range errs {
		var re *render.Error
		field := ""
		if errors.As(e, &re) {
			if re.Manifest >= 0 {
				field = manifestField(re.Manifest, re.Field)
			} else {
				field = re.Field
			}
		}
		req.Errorf(t.node, field, "%s: %s%v", krmfn.Describe(t.node), prefix, e)
	}
}

// checkManifestIdentity: every manifest has apiVersion, kind and metadata.name, and no object
// (group, kind, namespace, name) appears twice.
func checkManifestIdentity(req *krmfn.Request, t template) {
	seen := map[string]int{}
	for i, m := range t.obj.Spec.AgentSpec.Workload.Manifests {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(m.Raw); err != nil {
			continue // reported by Compile
		}
		var missing []string
		if u.GetAPIVersion() == "" {
			missing = append(missing, "apiVersion")
		}
		if u.GetKind() == "" {
			missing = append(missing, "kind")
		}
		if u.GetName() == "" {
			missing = append(missing, "metadata.name")
		}
		if len(missing) > 0 {
			req.Errorf(t.node, manifestField(i, ""), "%s: manifest %d has no %s", krmfn.Describe(t.node), i, strings.Join(missing, ", "))
			continue
		}
		gvk := u.GroupVersionKind()
		key := strings.Join([]string{gvk.Group, gvk.Kind, u.GetNamespace(), u.GetName()}, "/")
		if first, dup := seen[key]; dup {
			req.Errorf(t.node, manifestField(i, ""), "%s: manifest %d is the same object as manifest %d (%s %s): a cluster can hold it only once",
				krmfn.Describe(t.node), i, first, u.GetKind(), namespacedName(u.GetNamespace(), u.GetName()))
			continue
		}
		seen[key] = i
	}
}

func namespacedName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// checkRegistration: type matches its fields, signer names follow the CRD pattern, hub
// permissions are complete, and nothing would make OCM inject the same volume twice.
func checkRegistration(req *krmfn.Request, t template) {
	kubeClients := 0
	signers := map[string]int{}
	for i, reg := range t.obj.Spec.Registration {
		at := fmt.Sprintf("spec.registration[%d]", i)
		bad := func(field, format string, args ...any) {
			req.Errorf(t.node, at+field, "%s: %s%s: %s", krmfn.Describe(t.node), at, field, fmt.Sprintf(format, args...))
		}
		switch reg.Type {
		case addonv1alpha1.RegistrationTypeKubeClient:
			kubeClients++
			if kubeClients == 2 {
				bad(".type", "a second KubeClient registration: there is one hub kubeconfig per add-on (OCM would mount hub-kubeconfig twice)")
			}
			if reg.CustomSigner != nil {
				bad(".customSigner", "customSigner is only for type CustomSigner")
			}
			if reg.KubeClient != nil {
				for j, p := range reg.KubeClient.HubPermissions {
					checkHubPermission(bad, fmt.Sprintf(".kubeClient.hubPermissions[%d]", j), p)
				}
			}
		case addonv1alpha1.RegistrationTypeCustomSigner:
			if reg.KubeClient != nil {
				bad(".kubeClient", "kubeClient is only for type KubeClient")
			}
			cs := reg.CustomSigner
			if cs == nil {
				bad(".customSigner", "type CustomSigner needs customSigner with signerName and signingCA")
				continue
			}
			// Its length and pattern are the CRD schema's.
			if cs.SignerName == kubeAPIServerClientSigner {
				bad(".customSigner.signerName", "%s is the signer of type KubeClient; use type KubeClient", kubeAPIServerClientSigner)
			}
			if first, dup := signers[cs.SignerName]; dup {
				bad(".customSigner.signerName", "%q is already used by spec.registration[%d]", cs.SignerName, first)
			}
			signers[cs.SignerName] = i
			if cs.SigningCA.Name == "" {
				bad(".customSigner.signingCA.name", "the signing CA Secret's name is required: OCM signs the agent's CSRs with it")
			}
		}
		// A missing or unknown type is the CRD schema's to report.
	}
}

func checkHubPermission(bad func(field, format string, args ...any), at string, p addonv1alpha1.HubPermissionConfig) {
	switch p.Type {
	case addonv1alpha1.HubPermissionsBindingCurrentCluster:
		if p.SingleNamespace != nil {
			bad(at+".singleNamespace", "singleNamespace is only for type SingleNamespace")
		}
		if p.CurrentCluster == nil || p.CurrentCluster.ClusterRoleName == "" {
			bad(at+".currentCluster.clusterRoleName", "type CurrentCluster needs currentCluster.clusterRoleName, the ClusterRole bound in the cluster namespace")
		}
	case addonv1alpha1.HubPermissionsBindingSingleNamespace:
		if p.CurrentCluster != nil {
			bad(at+".currentCluster", "currentCluster is only for type CurrentCluster")
		}
		sn := p.SingleNamespace
		if sn == nil {
			bad(at+".singleNamespace", "type SingleNamespace needs singleNamespace with namespace and roleRef")
			return
		}
		if sn.Namespace == "" {
			bad(at+".singleNamespace.namespace", "the namespace to bind in is required")
		}
		switch {
		case sn.RoleRef.Kind != "Role" && sn.RoleRef.Kind != "ClusterRole":
			bad(at+".singleNamespace.roleRef.kind", "%q is not Role or ClusterRole", sn.RoleRef.Kind)
		case sn.RoleRef.Name == "":
			bad(at+".singleNamespace.roleRef.name", "the role's name is required")
		case sn.RoleRef.APIGroup != rbacv1.GroupName:
			bad(at+".singleNamespace.roleRef.apiGroup", "must be %s, got %q", rbacv1.GroupName, sn.RoleRef.APIGroup)
		}
	}
	// A missing or unknown type is the CRD schema's to report.
}

// checkADC: customized variables are not OCM's private names. That names are identifiers and
// unique is the CRD schema's to report (pattern, list-map keys).
func checkADC(req *krmfn.Request, a deploymentConfig) {
	for i, v := range a.obj.Spec.CustomizedVariables {
		if strings.HasPrefix(v.Name, "__") && isReserved(v.Name) {
			at := fmt.Sprintf("spec.customizedVariables[%d].name", i)
			req.Errorf(a.node, at, "%s: %s %q is reserved by OCM for internal values", krmfn.Describe(a.node), at, v.Name)
		}
	}
}

func isReserved(name string) bool {
	return slices.Contains([]string{"__NODE_PLACEMENT", "__REGISTRIES", "__INSTALL_NAMESPACE", "__PROXY", "__RESOURCE_REQUIREMENTS"}, name)
}

// definedBy tells which AddOnDeploymentConfigs define each variable.
func definedBy(adcs []deploymentConfig) map[string][]int {
	out := map[string][]int{}
	for i, a := range adcs {
		for _, v := range a.obj.Spec.CustomizedVariables {
			if !slices.Contains(out[v.Name], i) {
				out[v.Name] = append(out[v.Name], i)
			}
		}
		if a.obj.Spec.AgentInstallNamespace != "" && !slices.Contains(out[render.VarInstallNamespace], i) {
			out[render.VarInstallNamespace] = append(out[render.VarInstallNamespace], i)
		}
	}
	return out
}

// checkVariablesDefined: every variable is a built-in or set by an AddOnDeploymentConfig of the
// input. One error per undefined variable lists where it is used.
func checkVariablesDefined(req *krmfn.Request, t template, adcs []deploymentConfig, indexes []int, uses map[int][]render.VariableUse) bool {
	defined := definedBy(adcs)
	builtin := func(name string) bool {
		return name == render.VarClusterName || (name == render.VarHubKubeconfig && t.obj.Spec.Registration != nil)
	}
	where := map[string][]string{}
	first := map[string]string{}
	var names []string
	for _, i := range indexes {
		for _, u := range uses[i] {
			if builtin(u.Name) || len(defined[u.Name]) > 0 || !render.IsIdentifier(u.Name) {
				continue // invalid names are reported on their own
			}
			if _, ok := where[u.Name]; !ok {
				names = append(names, u.Name)
				first[u.Name] = manifestField(i, u.Field)
			}
			where[u.Name] = append(where[u.Name], manifestField(i, u.Field))
		}
	}
	for _, n := range names {
		hint := "set it in spec.customizedVariables of an AddOnDeploymentConfig in the input"
		switch n {
		case render.VarHubKubeconfig:
			hint = "HUB_KUBECONFIG is built in only when the template has spec.registration; " + hint
		case render.VarInstallNamespace:
			hint = "INSTALL_NAMESPACE is built in only when an AddOnDeploymentConfig sets spec.agentInstallNamespace; " + hint
		}
		req.Errorf(t.node, first[n], "%s: variable %s is not defined (used at %s): %s", krmfn.Describe(t.node), n, strings.Join(where[n], ", "), hint)
	}
	return len(names) == 0
}

// trialRender renders the template with each AddOnDeploymentConfig of the input (or none) for an
// example cluster, to find what only rendering shows: workloads that do not decode after
// substitution, volume clashes, bindings without subjects. A variable another ADC defines is
// given a placeholder, and reported as a warning: clusters using this ADC would fail. An ADC that
// fails its CRD schema is never rendered with: the hub would not hold it, and its error is
// reported already.
func trialRender(req *krmfn.Request, t template, r *render.Renderer, adcs []deploymentConfig, indexes []int, uses map[int][]render.VariableUse) {
	type trial struct {
		label string
		adc   *addonv1alpha1.AddOnDeploymentConfig
	}
	trials := []trial{{label: "without an AddOnDeploymentConfig"}}
	if len(adcs) > 0 {
		trials = nil
		for _, a := range adcs {
			if a.valid {
				trials = append(trials, trial{label: "with " + krmfn.Describe(a.node), adc: a.obj})
			}
		}
	}
	reported := map[string]bool{}
	for _, tr := range trials {
		c := render.Cluster{Name: exampleCluster}
		if tr.adc != nil {
			adc := tr.adc.DeepCopy()
			have := map[string]bool{}
			for _, v := range adc.Spec.CustomizedVariables {
				have[v.Name] = true
			}
			var missing []string
			for _, i := range indexes {
				for _, u := range uses[i] {
					builtin := u.Name == render.VarClusterName || (u.Name == render.VarHubKubeconfig && t.obj.Spec.Registration != nil) ||
						(u.Name == render.VarInstallNamespace && adc.Spec.AgentInstallNamespace != "")
					if builtin || have[u.Name] {
						continue
					}
					have[u.Name] = true
					missing = append(missing, u.Name)
					adc.Spec.CustomizedVariables = append(adc.Spec.CustomizedVariables, addonv1alpha1.CustomizedVariable{Name: u.Name, Value: "placeholder"})
				}
			}
			if len(missing) > 0 {
				req.Warningf(t.node, "", "%s: %s does not define %s, which another AddOnDeploymentConfig of the input does: clusters rendering with it would fail",
					krmfn.Describe(t.node), describeADC(tr.adc), strings.Join(missing, ", "))
			}
			c.DeploymentConfigs = []*addonv1alpha1.AddOnDeploymentConfig{adc}
		}
		res, err := r.Render(c)
		if err != nil {
			reportRenderError(req, t, "rendering "+tr.label+": ", err)
			continue
		}
		for _, w := range res.Warnings {
			if !reported[w] && !slices.Contains(r.Warnings(), w) {
				reported[w] = true
				req.Warningf(t.node, "", "%s: rendering %s: %s", krmfn.Describe(t.node), tr.label, w)
			}
		}
	}
}

func describeADC(adc *addonv1alpha1.AddOnDeploymentConfig) string {
	return "AddOnDeploymentConfig " + namespacedName(adc.Namespace, adc.Name)
}
