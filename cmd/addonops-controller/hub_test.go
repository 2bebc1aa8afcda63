package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
)

// The checker against a real HTTP server: not ready before the first check, an error line at the
// first failure and again after errorEvery (not at every check), an info line when the hub is back.
func TestHubChecker(t *testing.T) {
	var healthy atomic.Bool
	healthy.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		if !healthy.Load() {
			http.Error(w, "[-]etcd failed: reason withheld", http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	defer srv.Close()

	h, err := newHubChecker(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	h.errorEvery = 300 * time.Millisecond
	clk := clocktesting.NewFakePassiveClock(time.Now())
	h.clock = clk
	var mu sync.Mutex
	var lines []string
	ctx := logr.NewContext(context.Background(), funcr.New(func(_, args string) {
		mu.Lock()
		lines = append(lines, args)
		mu.Unlock()
	}, funcr.Options{}))
	count := func(part string) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, l := range lines {
			if strings.Contains(l, part) {
				n++
			}
		}
		return n
	}

	if err := h.Check(nil); err == nil {
		t.Error("ready before the first check")
	}
	h.check(ctx)
	if err := h.Check(nil); err != nil {
		t.Errorf("healthy hub: %v", err)
	}
	healthy.Store(false)
	for range 3 {
		h.check(ctx)
	}
	err = h.Check(nil)
	if err == nil || !strings.Contains(err.Error(), "hub API server "+srv.URL+" unreachable or not ready") || !strings.Contains(err.Error(), "etcd failed") {
		t.Errorf("failing hub: %v", err)
	}
	if n := count("Hub unreachable"); n != 1 {
		t.Errorf("%d error lines for three failed checks in a row, want 1: %v", n, lines)
	}
	clk.SetTime(clk.Now().Add(350 * time.Millisecond)) // past errorEvery: the next failed check repeats the error
	h.check(ctx)
	if n := count("Hub still unreachable"); n != 1 {
		t.Errorf("%d repeated error lines after errorEvery, want 1: %v", n, lines)
	}
	healthy.Store(true)
	h.check(ctx)
	if err := h.Check(nil); err != nil {
		t.Errorf("hub back: %v", err)
	}
	if n := count("Hub reachable again"); n != 1 {
		t.Errorf("%d lines about the hub being back, want 1: %v", n, lines)
	}
	if n := count(`"error"=`); n != 2 {
		t.Errorf("%d error-level lines, want 2: %v", n, lines)
	}
}
