package ocmhub

import (
	"context"

	"github.com/addonops/addonops/internal/testing/childproc"
	"github.com/addonops/addonops/internal/testing/localhub"
)

// TB is what ForTest needs of a test (childproc.TB).
type TB = childproc.TB

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
			childproc.LogTails(t, "OCM", o.LogDir, o.LogFiles(), 15)
		}
		if err := o.stop(failed || o.opts.KeepLogs); err != nil {
			t.Errorf("stopping OCM's processes: %v (logs in %s)", err, o.LogDir)
		}
	})
	return o
}
