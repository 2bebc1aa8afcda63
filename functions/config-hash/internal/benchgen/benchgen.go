// Package benchgen generates hub packages of add-on configs and ClusterManagementAddOns of any size,
// for config-hash's benchmark and scale tests.
package benchgen

import (
	"fmt"
	"strings"
)

// Namespaces is how many namespaces the AddOnDeploymentConfigs are spread over.
const Namespaces = 10

// Documents returns a package of configs configs and cmas ClusterManagementAddOns as YAML
// documents, configs first. Half the configs are AddOnDeploymentConfigs, half AddOnTemplates.
// Config i belongs to add-on i mod cmas; each add-on refers to each of its configs exactly once:
// its first template and first deployment config as defaults (v1alpha1 supportedConfigs), the
// others from two placements. Every reference therefore points at a config in the package.
func Documents(configs, cmas int) []string {
	if cmas < 1 {
		cmas = 1
	}
	docs := make([]string, 0, configs+cmas)
	owned := make([][]int, cmas)
	for i := range configs {
		docs = append(docs, config(i, cmas))
		owned[i%cmas] = append(owned[i%cmas], i)
	}
	for c := range cmas {
		docs = append(docs, cma(c, owned[c], cmas))
	}
	return docs
}

// Stream is Documents as one YAML stream.
func Stream(configs, cmas int) string {
	return strings.Join(Documents(configs, cmas), "---\n")
}

// ResourceList is the package as kustomize and kpt hand it to a function.
func ResourceList(configs, cmas int) string {
	var b strings.Builder
	b.WriteString("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n")
	for _, d := range Documents(configs, cmas) {
		b.WriteString("- " + strings.ReplaceAll(strings.TrimRight(d, "\n"), "\n", "\n  ") + "\n")
	}
	return b.String()
}

func isTemplate(i, cmas int) bool { return (i/cmas)%2 == 1 }

func addonName(c int) string { return fmt.Sprintf("addon-%04d", c) }

func configName(i, cmas int) string {
	if isTemplate(i, cmas) {
		return fmt.Sprintf("%s-template-%d", addonName(i%cmas), i)
	}
	return fmt.Sprintf("%s-config-%d", addonName(i%cmas), i)
}

func configNamespace(i int) string { return fmt.Sprintf("addon-config-%d", i%Namespaces) }

func config(i, cmas int) string {
	name := configName(i, cmas)
	if isTemplate(i, cmas) {
		return fmt.Sprintf(`apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnTemplate
metadata:
  name: %[1]s
spec:
  addonName: %[2]s
  agentSpec:
    workload:
      manifests:
      - apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: %[2]s-agent
          namespace: open-cluster-management-agent-addon
        spec:
          replicas: 1
          selector:
            matchLabels:
              app: %[2]s-agent
          template:
            metadata:
              labels:
                app: %[2]s-agent
            spec:
              serviceAccountName: %[2]s-agent
              containers:
              - name: agent
                image: quay.io/example/%[2]s:v1.%[3]d.0
                args:
                - --cluster-name={{CLUSTER_NAME}}
                - --hub-kubeconfig=/managed/hub-kubeconfig/kubeconfig
                resources:
                  requests: {cpu: 10m, memory: 32Mi}
  registration:
  - type: KubeClient
`, name, addonName(i%cmas), i)
	}
	return fmt.Sprintf(`apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnDeploymentConfig
metadata:
  name: %s
  namespace: %s
spec:
  agentInstallNamespace: open-cluster-management-agent-addon
  customizedVariables:
  - name: LOG_LEVEL
    value: "%d"
  - name: REPLICAS
    value: "1"
  nodePlacement:
    nodeSelector:
      node-role.kubernetes.io/infra: ""
    tolerations:
    - key: node-role.kubernetes.io/infra
      operator: Exists
      effect: NoSchedule
`, name, configNamespace(i), i%5)
}

func ref(i, cmas int, indent string) string {
	if isTemplate(i, cmas) {
		return fmt.Sprintf("%s- group: addon.open-cluster-management.io\n%s  resource: addontemplates\n%s  name: %s\n",
			indent, indent, indent, configName(i, cmas))
	}
	return fmt.Sprintf("%s- group: addon.open-cluster-management.io\n%s  resource: addondeploymentconfigs\n%s  namespace: %s\n%s  name: %s\n",
		indent, indent, indent, configNamespace(i), indent, configName(i, cmas))
}

func cma(c int, owned []int, cmas int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: ClusterManagementAddOn\nmetadata:\n  name: %s\nspec:\n  supportedConfigs:\n", addonName(c))
	var rest []int
	seenTemplate, seenADC := false, false
	for _, i := range owned {
		switch {
		case isTemplate(i, cmas) && !seenTemplate:
			seenTemplate = true
			fmt.Fprintf(&b, "  - group: addon.open-cluster-management.io\n    resource: addontemplates\n    defaultConfig:\n      name: %s\n", configName(i, cmas))
		case !isTemplate(i, cmas) && !seenADC:
			seenADC = true
			fmt.Fprintf(&b, "  - group: addon.open-cluster-management.io\n    resource: addondeploymentconfigs\n    defaultConfig:\n      name: %s\n      namespace: %s\n",
				configName(i, cmas), configNamespace(i))
		default:
			rest = append(rest, i)
		}
	}
	b.WriteString("  installStrategy:\n    type: Placements\n    placements:\n")
	half := len(rest) / 2
	for p, group := range [][]int{rest[:half], rest[half:]} {
		fmt.Fprintf(&b, "    - name: wave-%d\n      namespace: open-cluster-management-hub\n      rolloutStrategy:\n        type: Progressive\n        progressive: {maxConcurrency: 10%%}\n", p)
		if len(group) == 0 {
			continue
		}
		b.WriteString("      configs:\n")
		for _, i := range group {
			b.WriteString(ref(i, cmas, "      "))
		}
	}
	return b.String()
}
