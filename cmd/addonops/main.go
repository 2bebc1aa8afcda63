// Command addonops shows where an add-on's rollout stands on an OCM hub:
//
//	addonops status ADDON [--watch [--timeout D]] [-o json|yaml] [kubectl connection flags]
//
// It reads the hub like kubectl (--kubeconfig, --context, $KUBECONFIG, ...). Installed as
// kubectl-addonops on the PATH it is a kubectl plugin: `kubectl addonops status ADDON`.
//
// Exit codes: 0 success (with --watch: the rollout succeeded); 1 the rollout failed (--watch);
// 2 --timeout passed before the rollout finished (--watch); 3 anything else (bad usage, add-on
// not found, hub unreachable).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/addonops/addonops/internal/version"
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

func run(args []string, stdout, stderr io.Writer) int {
	prog := programName(args[0])
	if len(args) < 2 {
		usage(stderr, prog)
		return exitError
	}
	switch args[1] {
	case "status":
		return runStatus(prog, args[2:], stdout, stderr)
	case "help", "-h", "--help":
		usage(stdout, prog)
		return exitOK
	case "version", "--version":
		fmt.Fprintln(stdout, version.String(prog))
		return exitOK
	}
	fmt.Fprintf(stderr, "%s: unknown command %q\n\n", prog, args[1])
	usage(stderr, prog)
	return exitError
}

func usage(w io.Writer, prog string) {
	fmt.Fprintf(w, `%[1]s shows the rollout of OCM add-ons managed by addonops.

Usage:
  %[1]s status ADDON [flags]   per placement: clusters done/total, in progress, failed and timed
                              out, config versions (desired, last applied, last known good),
                              canary state and failed clusters

Run '%[1]s status --help' for the flags.
`, prog)
}

// signalContext is cancelled by Ctrl-C or SIGTERM, so --watch stops cleanly.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}
