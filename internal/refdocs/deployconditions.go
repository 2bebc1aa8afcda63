package refdocs

import (
	"fmt"
	"slices"
	"strings"

	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
)

// deployDoc describes a condition or reason the controller writes on a ManagedClusterAddOn only
// under --deploy-templates, where it does the work of OCM's addon-manager for template add-ons
// (in OCM's words where OCM has them).
type deployDoc struct {
	Pkg, Const, Value string
	// Condition is the condition type the reason goes with, and Status its status ("" for a
	// condition type's own entry).
	Condition, Status string
	Meaning           string
}

var deployDocs = []deployDoc{
	{"internal/templatedeploy", "ConditionManifestApplied", addonv1alpha1.ManagedClusterAddOnManifestApplied, "", "",
		"Whether the cluster's ManifestWorks for the desired configs are written and applied (see [ManifestApplied](#manifestapplied) above): under `--deploy-templates` the controller is the deployer that writes it."},
	{"internal/templatedeploy", "ReasonApplied", addonv1alpha1.AddonManifestAppliedReasonManifestsApplied, "ManifestApplied", "True",
		"Every deploy work reports `Applied=True` at its generation (or the template has no deploy work)."},
	{"internal/templatedeploy", "ReasonAppliedFailed", addonv1alpha1.AddonManifestAppliedReasonManifestsApplyFailed, "ManifestApplied", "False",
		"A deploy work reports `Applied=False` at its generation: the work agent on the cluster could not apply a manifest; the message says which work."},
	{"internal/templatedeploy", "ReasonWorkApplyFailed", addonv1alpha1.AddonManifestAppliedReasonWorkApplyFailed, "ManifestApplied", "False",
		"The controller could not write a ManifestWork (the API server refused it); the message quotes the error."},
	{"internal/templatedeploy", "ReasonConfigsRefused", "ConfigsRefused", "ManifestApplied", "False",
		"The MCA's status names desired configs the controller never decided for this add-on (a managed cluster may write that status): nothing is rendered, bound or signed for them, and a Warning event `DesiredConfigsRefused` names them. The rollout then writes the desired configs it decided back."},
	{"internal/templatedeploy", "ConditionHookManifestComplete", addonv1alpha1.ManagedClusterAddOnHookManifestCompleted, "", "",
		"Whether the template's pre-delete hook ManifestWork completed, while the add-on is being removed from the cluster."},
	{"internal/templatedeploy", "ReasonHookCompleted", "HookManifestIsCompleted", "HookManifestCompleted", "True",
		"The hook work completed: the add-on's works are deleted, then the finalizer is removed."},
	{"internal/templatedeploy", "ReasonHookNotCompleted", "HookManifestIsNotCompleted", "HookManifestCompleted", "False",
		"The hook work has not completed yet; the removal waits for it."},
	{"internal/registration", "ConditionRegistrationApplied", addonv1alpha1.ManagedClusterAddOnRegistrationApplied, "", "",
		"Whether the add-on agent's registration is set up on the hub: its certificate signing requests approved and signed for the identity the controller computes, and its hub RoleBindings made."},
	{"internal/registration", "ReasonPermissionApplied", addonv1alpha1.RegistrationAppliedSetPermissionApplied, "RegistrationApplied", "True",
		"The registrations are configured and their permissions bound."},
	{"internal/registration", "ReasonNilRegistration", addonv1alpha1.RegistrationAppliedNilRegistration, "RegistrationApplied", "True",
		"The template registers nothing."},
	{"internal/registration", "ReasonPermissionFailed", addonv1alpha1.RegistrationAppliedSetPermissionFailed, "RegistrationApplied", "False",
		"A binding failed or was refused (a role the controller was not granted `bind` on, a namespace it may not bind in); the message says which."},
	{"internal/registration", "ReasonPermissionPending", "PermissionConfigPending", "RegistrationApplied", "False",
		"The registration subject is not known yet (the agent has not registered)."},
	{"internal/registration", "ReasonSigningCAInvalid", "SigningCAInvalid", "RegistrationApplied", "False",
		"A CustomSigner's signing CA secret cannot be used; certificate requests of that signer are not approved until it is fixed (`--signing-ca-namespace`)."},
	{"internal/registration", "ReasonSignerReserved", "SignerNameReserved", "RegistrationApplied", "False",
		"A CustomSigner registration of the template names one of Kubernetes' own signers (domain kubernetes.io or k8s.io): it is never registered, approved or signed; the message names it."},
	{"internal/rolloutplan", "ConditionAvailable", addonv1alpha1.ManagedClusterAddOnConditionAvailable, "", "",
		"The add-on's health on the cluster (see [Available](#available) above): under `--deploy-templates` the controller computes it as OCM's health prober does, from the agent Deployments' ready replicas in the works' status feedback."},
	{"internal/rolloutplan", "ReasonWorkNotFound", addonv1alpha1.AddonAvailableReasonWorkNotFound, "Available", "Unknown",
		"The add-on's ManifestWork does not exist yet."},
	{"internal/rolloutplan", "ReasonWorkNotApplied", addonv1alpha1.AddonAvailableReasonWorkNotApply, "Available", "Unknown or False",
		"The work is not applied yet (`Unknown`), or the work agent reports it failed (`False`, with its message)."},
	{"internal/rolloutplan", "ReasonNoProbeResult", addonv1alpha1.AddonAvailableReasonNoProbeResult, "Available", "Unknown",
		"The work's status feedback has no result yet for the probed workloads it names."},
	{"internal/rolloutplan", "ReasonProbeUnavailable", addonv1alpha1.AddonAvailableReasonProbeUnavailable, "Available", "False",
		"A probed workload is not ready; the message names it."},
	{"internal/rolloutplan", "ReasonProbeAvailable", addonv1alpha1.AddonAvailableReasonProbeAvailable, "Available", "True",
		"Every probed workload is ready: the add-on is available."},
}

// deployPackages are the packages whose Condition and Reason constants deployDocs describes.
var deployPackages = []string{"internal/templatedeploy", "internal/registration", "internal/rolloutplan"}

// checkDeployDocs compares deployDocs with the Condition and Reason constants of deployPackages.
func checkDeployDocs(src *Source) []string {
	var problems []string
	for _, pkg := range deployPackages {
		have := map[string]string{}
		for _, d := range deployDocs {
			if d.Pkg == pkg {
				have[d.Const] = d.Value
			}
		}
		problems = append(problems, checkConsts(src, pkg, "deployDocs", []string{"Condition", "Reason"}, have)...)
	}
	for _, d := range deployDocs {
		if !slices.Contains(deployPackages, d.Pkg) {
			problems = append(problems, fmt.Sprintf("internal/refdocs deployDocs: %s.%s: package not in deployPackages", d.Pkg, d.Const))
		}
	}
	return problems
}

// writeDeployConditions writes the page's section on the conditions of --deploy-templates.
func writeDeployConditions(b *strings.Builder) {
	b.WriteString("## Conditions of template add-ons (`--deploy-templates`)\n\n")
	b.WriteString("With `--deploy-templates` the controller does for template add-ons (AddOnTemplate) what OCM's addon-manager does: " +
		"it writes their ManifestWorks, sets up their agents' registration and computes their health, and writes these conditions on " +
		"the ManagedClusterAddOn, with OCM's reasons where OCM has them. Without the flag, OCM's addon-manager writes them.\n\n")
	for _, d := range deployDocs {
		if d.Condition != "" {
			continue
		}
		fmt.Fprintf(b, "### %s (`--deploy-templates`)\n\n%s\n\n", d.Value, d.Meaning)
		fmt.Fprintf(b, "- **In the code**: %s.\n\n", code(d.Pkg+"."+d.Const))
		b.WriteString("| reason | status | meaning |\n|---|---|---|\n")
		for _, r := range deployDocs {
			if r.Condition == d.Value {
				fmt.Fprintf(b, "| %s | %s | %s |\n", code(r.Value), r.Status, md(r.Meaning, true))
			}
		}
		b.WriteString("\n")
	}
}
