package main

// The command's integration tests run run() in-process, several instances at once when needed,
// against the real kube-apiserver and etcd of internal/testing/localhub. The tests of this package share one
// hub and do not run in parallel: one of them stops the hub's API server.

import (
	"os"
	"testing"

	"github.com/addonops/addonops/internal/testing/localhub"
)

// processEnv, set in the environment of the test binary, makes it the controller process itself
// (runProcess with the binary's arguments), so the tests can start and kill real processes
// without building the command first.
const processEnv = "ADDONOPS_TEST_CONTROLLER_PROCESS"

func TestMain(m *testing.M) {
	if os.Getenv(processEnv) == "1" {
		os.Exit(runProcess(os.Args[1:]))
	}
	os.Exit(localhub.RunTests(m))
}
