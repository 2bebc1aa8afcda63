package argocd

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addonops/internal/testing/childproc"
	"github.com/addonops/addonops/internal/testing/localhub"
)

// TB is what ForTest needs of a test (childproc.TB).
type TB = childproc.TB

// ForTest starts Argo CD on hub for one test and stops it when the test ends. When the test
// failed, or a part exited on its own, the logs are kept and their last lines printed. Anything
// that prevents the start, missing binaries included, fails the test.
func ForTest(t TB, hub *localhub.Hub, opts Options) *ArgoCD {
	t.Helper()
	a, err := Start(context.Background(), hub, opts)
	if err != nil {
		t.Fatalf("argocd.ForTest: %v", err)
	}
	t.Cleanup(func() {
		if err := a.Failure(); err != nil {
			t.Errorf("%v", err)
		}
		failed := t.Failed()
		if failed {
			childproc.LogTails(t, "Argo CD's", a.LogDir, a.LogFiles(), 40)
		}
		if err := a.stop(failed || a.opts.KeepLogs); err != nil {
			t.Errorf("stopping Argo CD: %v (logs in %s)", err, a.LogDir)
		}
	})
	return a
}

// Application reads an Application from the hub.
func (a *ArgoCD) Application(ctx context.Context, name string) (*Application, error) {
	u, err := a.hub.Clients.Dynamic.Resource(ApplicationResource).Namespace(Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("argocd: reading Application %s: %w", name, err)
	}
	raw, err := json.Marshal(u.Object)
	if err != nil {
		return nil, fmt.Errorf("argocd: Application %s: %w", name, err)
	}
	var app Application
	if err := json.Unmarshal(raw, &app); err != nil {
		return nil, fmt.Errorf("argocd: decoding Application %s: %w", name, err)
	}
	return &app, nil
}
