package localhub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// loopback is the only address the hub listens on.
const loopback = "127.0.0.1"

// errPortTaken marks a start that failed because another process bound a port between freePorts
// choosing it and our process binding it; Start retries with new ports.
var errPortTaken = errors.New("port already in use")

// process is one child process whose output goes to a log file in the hub directory.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed once the process has exited and been reaped
	waitErr error         // valid after done is closed
}

// launch starts a child process in its own process group, with SIGKILL as its parent-death signal:
// if the test binary or the demo dies without calling Stop (a `go test -timeout` panic, kill -9),
// the kernel kills the hub with it instead of leaving etcd and kube-apiserver running.
//
// (The death signal follows the OS thread that forked; Go keeps its threads for the life of the
// process unless a goroutine locked to one exits, which this package never does.)
func launch(name, path string, args []string, dir string, env []string) (*process, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating %s log: %w", name, err)
	}
	cmd := exec.Command(path, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("localhub: starting %s (%s): %w", name, path, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process group, then SIGKILL after grace, and waits until the process is
// reaped, so its PID is really gone when stop returns.
func (p *process) stop(grace time.Duration) error {
	if p.exited() {
		return nil
	}
	pgid := -p.pid()
	if err := syscall.Kill(pgid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("localhub: stopping %s (pid %d): %w", p.name, p.pid(), err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	if err := syscall.Kill(pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("localhub: killing %s (pid %d): %w", p.name, p.pid(), err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
		return fmt.Errorf("localhub: %s (pid %d) still running %s after SIGKILL", p.name, p.pid(), grace)
	}
}

// failure describes a process that exited or never became ready, with the end of its log. A bind
// failure is wrapped as errPortTaken so Start can retry.
func (p *process) failure(what string) error {
	log := tail(p.logPath, 25)
	msg := fmt.Sprintf("localhub: %s %s; last lines of %s:\n%s", p.name, what, p.logPath, log)
	if strings.Contains(log, "address already in use") {
		return fmt.Errorf("%w: %s", errPortTaken, msg)
	}
	return errors.New(msg)
}

// waitReady polls ready until it returns nil, the process exits or ctx ends.
func (p *process) waitReady(ctx context.Context, interval time.Duration, ready func(context.Context) error) error {
	start := time.Now()
	var last error
	for {
		if p.exited() {
			return p.failure(fmt.Sprintf("exited during start-up (%v)", p.waitErr))
		}
		// One check may hang (someone else's listener on our port); the process exiting ends it.
		attemptCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		go func() {
			select {
			case <-p.done:
				cancel()
			case <-attemptCtx.Done():
			}
		}()
		last = ready(attemptCtx)
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return p.failure(fmt.Sprintf("not ready after %s (last check: %v)", time.Since(start).Round(time.Second), last))
		case <-p.done:
		case <-time.After(interval):
		}
	}
}

// freePorts returns n distinct loopback ports that were free a moment ago. They are held open
// together so the kernel cannot return the same port twice.
func freePorts(n int) ([]int, error) {
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", net.JoinHostPort(loopback, "0"))
		if err != nil {
			return nil, fmt.Errorf("localhub: finding a free loopback port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// startEtcd runs a single-member etcd with its data in dir/etcd and waits until /health is true.
func startEtcd(ctx context.Context, bin, dir string, clientPort, peerPort int) (*process, error) {
	clientURL := "http://" + loopback + ":" + strconv.Itoa(clientPort)
	peerURL := "http://" + loopback + ":" + strconv.Itoa(peerPort)
	args := []string{
		"--name=hub",
		"--data-dir=" + filepath.Join(dir, "etcd"),
		"--listen-client-urls=" + clientURL,
		"--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=hub=" + peerURL,
		"--initial-cluster-state=new",
		"--logger=zap",
		"--log-outputs=stderr",
	}
	p, err := launch("etcd", bin, args, dir, etcdEnv())
	if err != nil {
		return nil, err
	}
	client := &http.Client{}
	err = p.waitReady(ctx, 50*time.Millisecond, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, clientURL+"/health", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"health":"true"`) {
			return fmt.Errorf("/health: %s %s", resp.Status, strings.TrimSpace(string(body)))
		}
		return nil
	})
	if err != nil {
		_ = p.stop(stopGrace)
		return nil, err
	}
	return p, nil
}

// etcdEnv is our environment without ETCD_* variables: etcd reads them as flags and refuses to start
// when one conflicts with a flag we pass (a developer's ETCD_DATA_DIR, say).
func etcdEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ETCD_") {
			env = append(env, kv)
		}
	}
	// etcd 3.4 refuses to run on architectures other than amd64 unless told to.
	if runtime.GOARCH != "amd64" {
		env = append(env, "ETCD_UNSUPPORTED_ARCH="+runtime.GOARCH)
	}
	return env
}

// startAPIServer runs kube-apiserver and waits until /readyz passes (all post-start hooks done,
// RBAC bootstrap policy included).
func startAPIServer(ctx context.Context, bin, dir string, args []string, c *Clients) (*process, error) {
	p, err := launch("kube-apiserver", bin, args, dir, os.Environ())
	if err != nil {
		return nil, err
	}
	rc := c.Kube.Discovery().RESTClient()
	err = p.waitReady(ctx, 200*time.Millisecond, func(ctx context.Context) error {
		body, err := rc.Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("/readyz: %w: %s", err, strings.TrimSpace(string(body)))
		}
		return nil
	})
	if err != nil {
		_ = p.stop(stopGrace)
		return nil, err
	}
	return p, nil
}
