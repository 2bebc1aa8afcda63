// Package promserver runs a real Prometheus server (bin/prometheus, built from Prometheus' Go module
// by `make prometheus-server`, the version of bin/promtool) for the verification gates' tests, and
// a test exporter whose per-cluster series the test sets: Prometheus scrapes the exporter every
// ScrapeInterval and answers the gates' queries through its HTTP API, as in production.
package promserver

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/addonops/addonops/internal/testing/childproc"
)

// ScrapeInterval is how often the server scrapes the exporter (and evaluates nothing else).
const ScrapeInterval = time.Second

// Exporter serves the series a test controls: addon_error_rate{cluster}, a gauge per cluster.
type Exporter struct {
	ErrorRate *prometheus.GaugeVec
	srv       *httptest.Server
}

// Target is the exporter's address (host:port), as a scrape target.
func (e *Exporter) Target() string { return strings.TrimPrefix(e.srv.URL, "http://") }

// Server is a running Prometheus server.
type Server struct {
	// URL is the server's address, for an AnalysisTemplate's provider.prometheus.address.
	URL  string
	proc *childproc.Process
	dir  string
}

// Binary is the Prometheus server the tests run: $ADDONOPS_PROMETHEUS, else <repo>/bin/prometheus.
func Binary() (string, error) {
	if p := os.Getenv("ADDONOPS_PROMETHEUS"); p != "" {
		if err := childproc.CheckExecutable(p); err != nil {
			return "", fmt.Errorf("ADDONOPS_PROMETHEUS=%s: %v (fix or unset it)", p, err)
		}
		return p, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			p := filepath.Join(d, "bin", "prometheus")
			if err := childproc.CheckExecutable(p); err != nil {
				return "", fmt.Errorf("the Prometheus server %s: %v: build it with `make prometheus-server` in the repository root (or set ADDONOPS_PROMETHEUS)", p, err)
			}
			return p, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod in %s or above: run the tests inside the repository", wd)
		}
	}
}

// ForTest starts an exporter and a Prometheus server scraping it, both stopped when the test ends.
func ForTest(t childproc.TB) (*Server, *Exporter) {
	t.Helper()
	reg := prometheus.NewRegistry()
	exp := &Exporter{ErrorRate: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "addon_error_rate", Help: "Error rate of the add-on's agent, per cluster (set by the test)."}, []string{"cluster"})}
	reg.MustRegister(exp.ErrorRate)
	exp.srv = httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(exp.srv.Close)

	bin, err := Binary()
	if err != nil {
		t.Fatalf("Prometheus server: %v", err)
	}
	dir, err := os.MkdirTemp("", "promserver-")
	if err != nil {
		t.Fatalf("Prometheus server: %v", err)
	}
	cfg := fmt.Sprintf("global:\n  scrape_interval: %s\n  scrape_timeout: %s\nscrape_configs:\n- job_name: exporter\n  static_configs:\n  - targets: [%q]\n",
		ScrapeInterval, ScrapeInterval, exp.Target())
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o600); err != nil {
		t.Fatalf("Prometheus server: %v", err)
	}
	port, err := childproc.FreePort()
	if err != nil {
		t.Fatalf("Prometheus server: %v", err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	proc, err := childproc.Start(childproc.Spec{Name: "prometheus", Path: bin, Dir: dir, LogCommand: true, Args: []string{
		"--config.file=" + filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=" + addr,
	}})
	if err != nil {
		t.Fatalf("Prometheus server: %v", err)
	}
	s := &Server{URL: "http://" + addr, proc: proc, dir: dir}
	t.Cleanup(func() {
		_ = proc.Stop(10 * time.Second)
		if t.Failed() {
			childproc.LogTails(t, "Prometheus server", dir, []string{proc.LogPath}, 30)
			return
		}
		_ = os.RemoveAll(dir)
	})
	if err := s.waitUp(60 * time.Second); err != nil {
		childproc.LogTails(t, "Prometheus server", dir, []string{proc.LogPath}, 30)
		t.Fatalf("Prometheus server %s: %v", bin, err)
	}
	return s, exp
}

// waitUp waits until the server is ready and has scraped the exporter once.
func (s *Server) waitUp(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last string
	for {
		select {
		case <-s.proc.Done():
			return fmt.Errorf("exited before it was ready: %v", s.proc.Err())
		case <-ctx.Done():
			return fmt.Errorf("not ready with the exporter scraped within %s: %s", timeout, last)
		case <-time.After(200 * time.Millisecond):
		}
		resp, err := http.Get(s.URL + `/api/v1/query?query=up{job="exporter"}==1`)
		if err != nil {
			last = err.Error()
			continue
		}
		var body strings.Builder
		buf := make([]byte, 4096)
		n, _ := resp.Body.Read(buf)
		body.Write(buf[:n])
		_ = resp.Body.Close()
		last = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, body.String())
		if resp.StatusCode == http.StatusOK && strings.Contains(body.String(), `"job":"exporter"`) {
			return nil
		}
	}
}
