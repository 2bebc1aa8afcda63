//go:build integration

package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/simagent"
)

// countingProxy is a plain-HTTP reverse proxy to the hub that records every request the command
// makes (watches included, when they start), and a kubeconfig that points at it.
type countingProxy struct {
	mu       sync.Mutex
	requests []string
	// Kubeconfig reaches the hub through the proxy.
	Kubeconfig string
}

func newCountingProxy(t *testing.T, hub *localhub.Hub) *countingProxy {
	t.Helper()
	target, err := url.Parse(hub.URL)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = transport
	rp.FlushInterval = -1 // watch events as they come
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.requests = append(p.requests, r.Method+" "+r.URL.RequestURI())
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["proxy"] = &clientcmdapi.Cluster{Server: srv.URL}
	cfg.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy"}
	cfg.CurrentContext = "proxy"
	p.Kubeconfig = filepath.Join(t.TempDir(), "proxy.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, p.Kubeconfig); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *countingProxy) since(n int) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.requests[n:]...)
}

func (p *countingProxy) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.requests)
}

// TestWatchFollowsEvents: --watch lists once, then makes no request at all while the rollout
// stands still (the polling it replaces read the hub every 2 s), and shows the change when the
// stuck cluster's agent answers, through the watch it already holds.
func TestWatchFollowsEvents(t *testing.T) {
	s, v1 := halfInstalled(t, "watch-events", "ev1", "ev2")
	proxy := newCountingProxy(t, s.Hub)

	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"addonops", "status", "watch-events", "--watch", "--timeout", "2m", "--kubeconfig", proxy.Kubeconfig}, &out, &errOut)
	}()
	waitOutput := func(what string, cond func(string) bool) {
		t.Helper()
		harness.Eventually(t, 30*time.Second, what, func() string {
			if cond(out.String()) {
				return ""
			}
			return fmt.Sprintf("\nstdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
		})
	}
	waitOutput("the first frame", func(s string) bool { return strings.Contains(s, "1/2 done, 1 in progress") })

	// Quiet: the informers have listed and watch; nothing changes on the hub.
	before := proxy.count()
	harness.Consistently(t, 5*time.Second, "no request while nothing changes", func() string {
		if reqs := proxy.since(before); len(reqs) > 0 {
			return fmt.Sprintf("%d requests while nothing changed (want none: the watches are open):\n%s", len(reqs), strings.Join(reqs, "\n"))
		}
		return ""
	})
	if reqs := proxy.since(before); len(reqs) > 0 {
		t.Errorf("%d requests in 5 s while nothing changed (want none: the watches are open):\n%s", len(reqs), strings.Join(reqs, "\n"))
	}

	// The stuck agent answers; the view follows through the open watches.
	before = proxy.count()
	s.Outcome("ev2", v1, simagent.Succeed)
	s.Poke("ev2")
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("--watch did not end after the rollout finished\nstdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	}
	frames := strings.Split(out.String(), "\n--- ")
	if last := frames[len(frames)-1]; !strings.Contains(last, "rollout: Succeeded") || !strings.Contains(last, "2/2 done") {
		t.Errorf("last frame:\n%s", last)
	}
	// After the change: the open watches, and one direct read that confirms the verdict (the
	// add-on, its MCAs, its placement's decisions), nothing more.
	seen := map[string]int{}
	for _, r := range proxy.since(before) {
		if strings.Contains(r, "watch=true") {
			continue
		}
		kind := "other"
		for _, k := range []string{"clustermanagementaddons/watch-events", "managedclusteraddons", "placementdecisions"} {
			if strings.Contains(r, k) {
				kind = k
			}
		}
		if seen[kind]++; kind == "other" || seen[kind] > 1 {
			t.Errorf("request after the change: %s (want the change through the open watches and one confirming read)", r)
		}
	}
	if strings.Contains(errOut.String(), "deprecated") || strings.Contains(errOut.String(), "retrying") {
		t.Errorf("stderr: %s", errOut.String())
	}
}

// TestWatchSurvivesHubRestart: the hub's API server goes away and comes back during --watch; the
// watch reconnects by itself and still sees the rollout finish.
func TestWatchSurvivesHubRestart(t *testing.T) {
	s, v1 := halfInstalled(t, "watch-restart", "rs1", "rs2")
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"addonops", "status", "watch-restart", "--watch", "--timeout", "3m", "--kubeconfig", s.Hub.Kubeconfig}, &out, &errOut)
	}()
	harness.Eventually(t, 30*time.Second, "the first frame", func() string {
		if strings.Contains(out.String(), "1/2 done, 1 in progress") {
			return ""
		}
		return fmt.Sprintf("\nstdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	})
	t.Cleanup(func() { _ = s.Hub.StartAPIServer(context.Background()) })
	if err := s.Hub.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	// client-go retries a refused watch in silence (its log at -v=4), so the command has nothing
	// to say while the hub is away; the assertion is that it comes back by itself.
	if err := s.Hub.StartAPIServer(context.Background()); err != nil {
		t.Fatal(err)
	}
	up := time.Now()
	s.Outcome("rs2", v1, simagent.Succeed)
	s.Poke("rs2")
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
		}
		t.Logf("the watch saw the rollout finish %s after the hub came back", time.Since(up).Round(time.Millisecond))
	case <-time.After(2 * time.Minute):
		t.Fatalf("--watch did not follow the rollout after the hub came back\nstdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "2/2 done") {
		t.Errorf("stdout:\n%s", out.String())
	}
}
