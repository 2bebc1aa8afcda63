package localhub

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
)

// TB is the part of testing.TB that ForTest uses; *testing.T and *testing.B satisfy it. (An
// interface keeps the testing package out of binaries that only call Start.)
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// TestingM is what RunTests needs of *testing.M.
type TestingM interface {
	Run() int
}

// shared is the one hub of a test package.
var shared struct {
	managed atomic.Bool // RunTests is running the package's tests
	once    sync.Once
	hub     *Hub
	err     error
}

// RunTests runs a test package's tests and stops its shared hub afterwards, if one was started.
// Every package that calls ForTest needs:
//
//	func TestMain(m *testing.M) { os.Exit(localhub.RunTests(m)) }
//
// A failure to stop the hub cleanly fails the package.
func RunTests(m TestingM) int {
	shared.managed.Store(true)
	code := m.Run()
	if shared.hub != nil {
		if err := shared.hub.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "localhub: stopping the shared test hub: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// ForTest returns the test package's hub, starting it on first use (5-10 s); later calls, from any
// test, return the same hub, so tests must use their own names or namespaces. Anything that prevents
// the hub from starting, missing binaries included, fails the test: a suite never passes by
// skipping. Each test package (one process) gets its own ports and directory, so packages run in
// parallel without colliding.
func ForTest(t TB) *Hub {
	t.Helper()
	if !shared.managed.Load() {
		t.Fatalf("localhub.ForTest: this package has no TestMain that calls localhub.RunTests, so nothing " +
			"would stop the shared hub; add\n\tfunc TestMain(m *testing.M) { os.Exit(localhub.RunTests(m)) }")
	}
	shared.once.Do(func() {
		shared.hub, shared.err = Start(context.Background(), Options{})
	})
	if shared.err != nil {
		t.Fatalf("localhub.ForTest: starting the test hub: %v", shared.err)
	}
	return shared.hub
}
