// Command config-hash is a KRM function that gives OCM add-on configs immutable, content-derived
// names and rewrites the references to them in ClusterManagementAddOns and ManagedClusterAddOns.
// See README.md.
package main

import (
	"fmt"
	"os"

	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/crdschema"
	"github.com/addonops/addonops/internal/krmfn"
	"github.com/addonops/addonops/internal/version"
)

const usage = `config-hash: give add-on configs (AddOnDeploymentConfig, AddOnTemplate, ...) a name suffix
derived from their content, and rewrite the ClusterManagementAddOn / ManagedClusterAddOn references
to them. Reads a ResourceList (kustomize, kpt) or plain YAML on stdin, or the FILEs given.`

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		fmt.Println(version.String("config-hash"))
		return
	}
	// The schemas of the configs every run meets, built before the input is read: the memory
	// limit ExecuteStream sets counts them as the process's own, not the input's.
	for _, kind := range []string{"AddOnDeploymentConfig", "AddOnTemplate"} {
		crdschema.OCM().Lookup(configref.AddonGroup+"/v1alpha1", kind)
	}
	krmfn.MainStream("config-hash", usage, process)
}
