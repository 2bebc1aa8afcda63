// Command config-hash is a KRM function that gives OCM add-on configs immutable, content-derived
// names and rewrites the references to them in ClusterManagementAddOns and ManagedClusterAddOns.
// See README.md.
package main

import "github.com/addonops/addonops/internal/krmfn"

const usage = `config-hash: give add-on configs (AddOnDeploymentConfig, AddOnTemplate, ...) a name suffix
derived from their content, and rewrite the ClusterManagementAddOn / ManagedClusterAddOn references
to them. Reads a ResourceList (kustomize, kpt) or plain YAML on stdin, or the FILEs given.`

func main() {
	krmfn.MainStream("config-hash", usage, process)
}
