// Package render turns an AddOnTemplate into the agent manifests one managed cluster gets: the
// objects OCM's template agent (ocm pkg/addon/templateagent) puts into the cluster's
// ManifestWorks. The addon-template KRM function previews and validates with it at build time and
// the controller deploys with it at run time, so a preview in a pull request is exactly what lands
// on a cluster. Everything here is a pure function of its inputs; nothing does I/O.
//
// Semantics follow OCM's template agent (pkg/addon/templateagent: values.go, template_agent.go and
// its decorators; docs/design/addon-template.md#variables-and-built-ins):
//
//   - Variables: HUB_KUBECONFIG (default /managed/hub-kubeconfig/kubeconfig, only when the template
//     has spec.registration), overridden by the first AddOnDeploymentConfig's customizedVariables,
//     overridden by the built-ins CLUSTER_NAME and INSTALL_NAMESPACE (the latter only when the ADC
//     sets agentInstallNamespace).
//   - Every container (not init container) of every Deployment and DaemonSet gets the env
//     HUB_KUBECONFIG (with registration), CLUSTER_NAME, INSTALL_NAMESPACE (with an ADC install
//     namespace); a volume and mount per registration (hub-kubeconfig, cert-<signer>); the ADC's
//     node placement, image mirrors (ADC registries, else the ManagedCluster's image-registries
//     annotation), proxy env and CA bundle, and resource requirements. Workloads go through the
//     typed apps/v1 round trip OCM does, so the output carries the same implied fields.
//   - With an ADC agentInstallNamespace every namespaced object moves to it, (Cluster)RoleBinding
//     subjects get it, Namespace objects are renamed to it. The CRD defaults an omitted
//     agentInstallNamespace to open-cluster-management-agent-addon; an explicit "" keeps the
//     template's namespaces. DecodeAddOnDeploymentConfig applies that default to files.
//   - A proxy CA bundle injects the ConfigMap <addon>-proxy-ca after the template's manifests.
//
// Deliberate differences from OCM, each tested and listed in the addon-template README:
//
//  1. Values are substituted inside the decoded strings (values and map keys) instead of the raw
//     JSON text, so a value holding quotes, backslashes or newlines lands exactly as given and can
//     never break a manifest or inject fields.
//  2. An undefined variable is an error naming the variable and every manifest and field using it
//     (OCM renders ""). A "{{" without "}}" is an error (OCM's fasttemplate panics).
//  3. ADC tolerations apply even when the ADC sets no node selector (OCM ignores them then).
//  4. An env variable the container already defines is set to OCM's value in place rather than
//     appended a second time; Kubernetes uses the last duplicate, so the agent sees what it would
//     under OCM, without the duplicate.
//  5. A Deployment or DaemonSet that does not decode as apps/v1 after substitution is an error
//     (OCM silently deploys it undecorated, without its hub kubeconfig).
//  6. A volume name or mount path OCM injects that the template already uses is an error at render
//     time (under OCM the API server rejects the workload when the ManifestWork is applied).
//  7. A customized variable named like one of OCM's private values (__PROXY, ...) is an error.
//  8. A variable value that is not valid UTF-8 is an error: no Kubernetes object can carry it.
//  9. Two rendered objects with the same API group, kind, namespace and name are an error naming
//     both manifests (written twice, moved into one install namespace, or named alike by a
//     variable); OCM's work builder keeps one of them silently.
//
// Things OCM does silently are reported as Result.Warnings: more than one ADC (only the first is
// used), workload fields that are not part of apps/v1 (the typed round trip drops them), and
// resourceRequirements containerIDs that are not valid patterns (skipped).
package render
