package ocmhub

import (
	"context"

	"github.com/addonops/addonops/internal/testing/childproc"
	"github.com/addonops/addonops/internal/testing/localhub"
)

// TB is the part of testing.TB that ForTest uses; *testing.T and *testing.B satisfy it. (An
// interface keeps the testing package out of binaries that only call Start.)
type TB interface {
	Helper()
	Cleanup(func())
	Failed() bool
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// ForTest starts OCM's placement controller on hub (usually localhub.ForTest(t)) for one test and
// stops it, with every work agent added, when the test ends. When the test failed, the logs are
// kept and their path and last lines are printed. Anything that prevents the start, missing
// binaries included, fails the test: the e2e suite never passes by skipping.
func ForTest(t TB, hub *localhub.Hub, opts Options) *OCM {
	t.Helper()
	o, err := Start(context.Background(), hub, opts)
	if err != nil {
		t.Fatalf("ocmhub.ForTest: %v", err)
	}
	t.Cleanup(func() {
		failed := t.Failed()
		if failed {
			for _, log := range o.LogFiles() {
				t.Logf("last lines of %s:\n%s", log, childproc.Tail(log, 15))
			}
			t.Logf("OCM logs kept in %s", o.LogDir)
		}
		if err := o.stop(failed || o.opts.KeepLogs); err != nil {
			t.Errorf("stopping OCM's processes: %v (logs in %s)", err, o.LogDir)
		}
	})
	return o
}
