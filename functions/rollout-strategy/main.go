// Command rollout-strategy is a KRM function that lets ClusterManagementAddOns be written with the
// rollout vocabulary of the add-on lifecycle design (UpdateAll, RollingUpdate,
// RollingUpdateWithCanary) and emits OCM's RolloutStrategy API plus addonops's canary annotation,
// and that checks every rollout strategy and canary of its input at build time. See README.md.
package main

import (
	"fmt"
	"os"

	"github.com/addonops/addonops/internal/krmfn"
	"github.com/addonops/addonops/internal/version"
)

const usage = `rollout-strategy: translate ClusterManagementAddOn rollout strategies written as UpdateAll,
RollingUpdate or RollingUpdateWithCanary into OCM's All / Progressive and the annotation
addonops.io/canary-placements, and validate every rollout strategy and canary placement.
Reads a ResourceList (kustomize, kpt) or plain YAML on stdin, or the FILEs given.`

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		fmt.Println(version.String("rollout-strategy"))
		return
	}
	krmfn.Main("rollout-strategy", usage, process)
}
