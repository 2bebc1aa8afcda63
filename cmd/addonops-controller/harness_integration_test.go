//go:build integration

package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/addonops/addonops/internal/testing/localhub"
)

// instance is one run() of the command.
type instance struct {
	t       *testing.T
	name    string
	metrics string // host:port
	probes  string // host:port
	log     *logLines
	cancel  context.CancelFunc
	done    chan error
	stopped time.Time
}

// startInstance runs the command with the hub's kubeconfig, free metrics and probe ports and args.
func startInstance(t *testing.T, hub *localhub.Hub, name string, args ...string) *instance {
	t.Helper()
	in := &instance{t: t, name: name, metrics: freeAddr(t), probes: freeAddr(t), log: &logLines{t: t, name: name}, done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	in.cancel = cancel
	ctx = logr.NewContext(ctx, funcr.New(in.log.write, funcr.Options{Verbosity: 2}))
	all := append([]string{"--kubeconfig", hub.Kubeconfig, "--metrics-bind-address", in.metrics, "--health-probe-bind-address", in.probes}, args...)
	go func() { in.done <- run(ctx, all, io.Discard) }()
	// Registered first, so run last: controller-runtime's goroutines may log after run returned,
	// and testing panics on a Logf after the test completed.
	t.Cleanup(func() { in.log.ended.Store(true) })
	t.Cleanup(func() { in.stop() })
	return in
}

// stop cancels the instance and waits until run returns.
func (in *instance) stop() {
	in.t.Helper()
	if in.cancel == nil {
		return
	}
	in.cancel()
	in.cancel = nil
	in.stopped = time.Now()
	select {
	case err := <-in.done:
		if err != nil {
			in.t.Errorf("%s: run: %v", in.name, err)
		}
	case <-time.After(40 * time.Second):
		in.t.Errorf("%s: run did not return within 40s of its context's end", in.name)
	}
}

// get returns the status code and body of GET http://addr/path (code 0: no answer).
func get(addr, path string) (int, string) {
	client := &http.Client{Timeout: 3 * time.Second}
	resp, err := client.Get("http://" + addr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func (in *instance) readyz() (int, string) { return get(in.probes, "/readyz?verbose") }

func (in *instance) healthz() (int, string) { return get(in.probes, "/healthz") }

// scrape returns the /metrics page as a scraper allowed to read it gets it (a token of a
// ServiceAccount bound to the ClusterRole addonops-metrics-reader of config/rbac), or "" while the
// endpoint does not answer 200.
func (in *instance) scrape() string {
	in.t.Helper()
	code, body := getTLS(in.metrics, "/metrics", metricsReaderToken(in.t), nil)
	if code != http.StatusOK {
		in.t.Logf("%s: GET /metrics: %d %s", in.name, code, body)
		return ""
	}
	return body
}

// getTLS returns the status code and body of GET https://addr/path with token as bearer token
// ("" sends none), verifying the server's certificate against roots (nil: not verified, as for the
// controller's self-signed default). Code 0: no answer.
func getTLS(addr, path, token string, roots *x509.CertPool) (int, string) {
	tlsConfig := &tls.Config{RootCAs: roots, InsecureSkipVerify: roots == nil} //nolint:gosec // self-signed unless roots
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig}}
	defer client.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodGet, "https://"+addr+path, nil)
	if err != nil {
		return 0, err.Error()
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// logLines keeps an instance's log lines with their times and passes them to the test log.
type logLines struct {
	t    *testing.T
	name string
	mu   sync.Mutex
	all  []logLine
	// ended is set when the test ends: later lines are kept but no longer passed to its log.
	ended atomic.Bool
}

type logLine struct {
	at   time.Time
	text string
}

func (l *logLines) write(prefix, args string) {
	line := strings.TrimSpace(prefix + " " + args)
	l.mu.Lock()
	l.all = append(l.all, logLine{at: time.Now(), text: line})
	l.mu.Unlock()
	if !l.ended.Load() {
		l.t.Logf("[%s] %s", l.name, line)
	}
}

// first returns the first line after since containing every one of parts.
func (l *logLines) first(since time.Time, parts ...string) (logLine, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
next:
	for _, ln := range l.all {
		if ln.at.Before(since) {
			continue
		}
		for _, p := range parts {
			if !strings.Contains(ln.text, p) {
				continue next
			}
		}
		return ln, true
	}
	return logLine{}, false
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b bytes.Buffer
	for _, ln := range l.all {
		fmt.Fprintf(&b, "%s %s\n", ln.at.Format("15:04:05.000"), ln.text)
	}
	return b.String()
}
