// Command addonops shows and steers the rollout of OCM add-ons managed by addonops:
//
//	addonops status ADDON [--watch [--timeout D]] [-o json|yaml]
//	addonops pause ADDON [--placement NS/NAME]
//	addonops resume ADDON [--placement NS/NAME]
//	addonops promote ADDON --placement NS/NAME
//	addonops override-window ADDON --placement NS/NAME
//	addonops retry ADDON [--placement NS/NAME]
//	addonops abort ADDON [--placement NS/NAME] | --auto=true|false
//	addonops history ADDON [--placement NS/NAME] [-n NAMESPACE] [-o json|yaml]
//	addonops completion bash|zsh|fish|powershell
//
// It reaches the hub like kubectl (--kubeconfig, --context, $KUBECONFIG, ...). Installed as
// kubectl-addonops on the PATH it is a kubectl plugin: `kubectl addonops status ADDON`.
//
// Every day-2 command (pause, resume, promote, override-window, retry, abort) writes one annotation on the
// ClusterManagementAddOn, exactly as documented in internal/operations, so a GitOps user can
// commit the same annotation instead.
//
// Exit codes: 0 success (with status --watch: the rollout succeeded); 1 the rollout failed
// (status --watch); 2 --timeout passed before the rollout finished (status --watch); 3 anything
// else (bad usage, add-on not found, hub unreachable, a request refused).
package main

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailed  = 1
	exitTimeout = 2
	exitError   = 3
)

func main() {
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

// programName is how the user called us: "kubectl addonops" when run as the kubectl plugin
// (kubectl runs kubectl-addonops from the PATH), else the binary's name.
func programName(argv0 string) string {
	base := strings.TrimSuffix(filepath.Base(argv0), ".exe")
	if base == "kubectl-addonops" {
		return "kubectl addonops"
	}
	if base == "" || base == "." {
		return "addonops"
	}
	return base
}

// signalContext is cancelled by Ctrl-C or SIGTERM, so --watch stops cleanly.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}
