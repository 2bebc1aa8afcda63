package main

// The status command against a real API server (internal/testing/localhub) with addonops' controller
// rolling out real add-ons over simulated clusters (internal/testing/rolloutsim). Tests run one
// after the other: each scenario runs its own controller.

import (
	"bytes"
	"os"
	"testing"

	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/localhub"
)

// runMainEnv makes the test binary behave as the command (for the subprocess and kubectl plugin
// tests): TestMain then runs main's run with the process's own argv.
const runMainEnv = "ADDONOPS_STATUS_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		os.Exit(run(os.Args, os.Stdout, os.Stderr))
	}
	os.Exit(localhub.RunTests(m))
}

type result struct {
	code           int
	stdout, stderr string
}

// status runs the command in-process.
func status(args ...string) result {
	var out, errOut bytes.Buffer
	code := run(append([]string{"addonops", "status"}, args...), &out, &errOut)
	return result{code, out.String(), errOut.String()}
}

// startStatus runs the command in-process in the background: the test reads its output while it
// runs (stdout, stderr) and its result once it ended (done).
func startStatus(args ...string) (stdout, stderr *harness.SyncBuffer, done <-chan result) {
	stdout, stderr = &harness.SyncBuffer{}, &harness.SyncBuffer{}
	ch := make(chan result, 1)
	go func() {
		code := run(append([]string{"addonops", "status"}, args...), stdout, stderr)
		ch <- result{code, stdout.String(), stderr.String()}
	}()
	return stdout, stderr, ch
}
