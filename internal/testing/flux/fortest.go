package flux

import (
	"bytes"
	"context"
	"os"

	"github.com/addonops/addonops/internal/testing/childproc"
	"github.com/addonops/addonops/internal/testing/localhub"
)

// TB is what ForTest needs of a test (childproc.TB).
type TB = childproc.TB

// ForTest starts Flux on hub for one test and stops it when the test ends. When the test failed,
// the logs are kept and their path and last lines are printed. Anything that prevents the start,
// missing binaries included, fails the test: a GitOps suite never passes by skipping.
func ForTest(t TB, hub *localhub.Hub, opts Options) *Flux {
	t.Helper()
	f, err := Start(context.Background(), hub, opts)
	if err != nil {
		t.Fatalf("flux.ForTest: %v", err)
	}
	t.Cleanup(func() {
		if f.stopped.Load() {
			return // the test stopped it itself
		}
		// A refusal anywhere is a right Flux's RBAC (flux2's manifests/rbac) does not give, even
		// when the test got through.
		for _, log := range f.LogFiles() {
			if data, err := os.ReadFile(log); err != nil {
				t.Errorf("reading %s: %v", log, err)
			} else if n := bytes.Count(data, []byte("forbidden")); n > 0 {
				t.Errorf("Flux was refused %d times with the RBAC of its install (grep forbidden %s)", n, log)
			}
		}
		if t.Failed() {
			childproc.LogTails(t, "Flux's", f.Dir, f.LogFiles(), 40)
			f.opts.KeepLogs = true
		}
		if err := f.Stop(); err != nil {
			t.Errorf("stopping Flux: %v (logs in %s)", err, f.Dir)
		}
	})
	return f
}
