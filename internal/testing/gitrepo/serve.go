package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// prefix is the URL path the repositories are served under: http://host/git/<name>.
const prefix = "/git"

// Server serves every repository under a directory over Git's smart HTTP protocol, read-only.
type Server struct {
	// URL is the base URL: a repository root/<name> is at URL + "/" + name.
	URL string
	srv *http.Server
}

// ServeHTTP starts git-http-backend (Git's own smart HTTP server, run as a CGI program) for the
// repositories under root, on a free loopback port. Stop it with Close.
func ServeHTTP(root string) (*Server, error) {
	backend, err := httpBackend()
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("serving Git repositories under %s: %w", root, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("serving Git repositories under %s: %w", abs, err)
	}
	h := &cgi.Handler{
		Path: backend,
		Root: prefix,
		Env: []string{
			"GIT_PROJECT_ROOT=" + abs,
			// Only repositories made by New (which marks them export-ok) are served.
			"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		},
	}
	s := &Server{
		URL: "http://" + ln.Addr().String() + prefix,
		srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second},
	}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("stopping the Git HTTP server %s: %w", s.URL, err)
	}
	return nil
}

// httpBackend finds git-http-backend in git's exec path.
func httpBackend() (string, error) {
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		return "", fmt.Errorf("finding git-http-backend: git --exec-path: %w (is Debian's git installed?)", err)
	}
	path := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := exec.LookPath(path); err != nil {
		return "", fmt.Errorf("finding git-http-backend: %w (Debian's git package ships it)", err)
	}
	return path, nil
}
