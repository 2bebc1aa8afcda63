// Command argocd runs the parts of Argo CD the GitOps end-to-end test needs (internal/testing/argocd):
// the application controller, the repo server and the config management plugin (CMP) server. Like
// Argo CD's own cmd/main.go it picks the command from the binary's name (bin/argocd-application-
// controller, bin/argocd-repo-server and bin/argocd-cmp-server are links to one binary) or from
// $ARGOCD_BINARY_NAME. The API server, UI, CLI, Dex and the other commands are left out on purpose:
// they are not needed to sync from Git, and they would drag in much more to build.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	appcontroller "github.com/argoproj/argo-cd/v3/cmd/argocd-application-controller/commands"
	cmpserver "github.com/argoproj/argo-cd/v3/cmd/argocd-cmp-server/commands"
	reposerver "github.com/argoproj/argo-cd/v3/cmd/argocd-repo-server/commands"
	"github.com/argoproj/argo-cd/v3/util/log"
)

// binaryNameEnv is the variable Argo CD's cmd/main.go reads to override the binary's name.
const binaryNameEnv = "ARGOCD_BINARY_NAME"

func init() {
	// As Argo CD's cmd/main.go: klog follows the configured log level and format.
	klog.SetLogger(log.NewLogrusLogger(log.NewWithCurrentConfig()))
}

func main() {
	name := filepath.Base(os.Args[0])
	if v := os.Getenv(binaryNameEnv); v != "" {
		name = v
	}
	var command *cobra.Command
	switch name {
	case "argocd-application-controller":
		command = appcontroller.NewCommand()
	case "argocd-repo-server":
		command = reposerver.NewCommand()
	case "argocd-cmp-server":
		command = cmpserver.NewCommand()
	default:
		fmt.Fprintf(os.Stderr, "argocd: unknown command %q: run this binary as argocd-application-controller, "+
			"argocd-repo-server or argocd-cmp-server (a link with that name, or %s=<name>)\n", name, binaryNameEnv)
		os.Exit(2)
	}
	if err := command.Execute(); err != nil {
		os.Exit(1)
	}
}
