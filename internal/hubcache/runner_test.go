//go:build integration

package hubcache

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/localhub"
)

func TestMain(m *testing.M) { os.Exit(localhub.RunTests(m)) }

// Run on a real API server: it returns nil when stopped, and a reconciler that fails to start
// stops the whole cache with its error instead of leaving the process running without it.
func TestRun(t *testing.T) {
	hub := localhub.ForTest(t)
	run := func(watchErr error) (error, time.Duration) {
		t.Helper()
		c, err := New(hub.Config, Options{Addons: AddonsAll})
		if err != nil {
			t.Fatal(err)
		}
		started := make(chan struct{})
		if err := c.Add(Reconciler{Name: "good", Sync: func(context.Context, string) (time.Duration, error) { return 0, nil },
			Watch: func(Queue) error { close(started); return nil }}); err != nil {
			t.Fatal(err)
		}
		if watchErr != nil {
			if err := c.Add(Reconciler{Name: "bad", Sync: func(context.Context, string) (time.Duration, error) { return 0, nil },
				Watch: func(Queue) error { return watchErr }}); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Add(Reconciler{Name: "good"}); err == nil {
			t.Errorf("a second reconciler named good was accepted")
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		begun := time.Now()
		go func() { done <- c.Run(ctx) }()
		if watchErr == nil {
			<-started
			harness.EventuallyTrue(t, 30*time.Second, "the cache to sync", c.Synced, harness.Every(20*time.Millisecond))
			cancel()
		}
		select {
		case err := <-done:
			return err, time.Since(begun)
		case <-time.After(30 * time.Second):
			t.Fatal("Run did not return within 30s")
			return nil, 0
		}
	}
	if err, _ := run(nil); err != nil {
		t.Errorf("stopped: Run returned %v, want nil", err)
	}
	err, took := run(errors.New("no handlers for you"))
	if err == nil || !strings.Contains(err.Error(), "no handlers for you") || !strings.Contains(err.Error(), "bad") {
		t.Errorf("a failing reconciler: Run returned %v, want its error naming it", err)
	}
	t.Logf("Run returned %s after start: %v", took.Round(time.Millisecond), err)
}
