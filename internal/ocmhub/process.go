package ocmhub

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// process is one OCM component running as a child process, its output in a log file.
type process struct {
	name    string // "placement", "work-agent-cluster1": also the log file's base name
	cmd     *exec.Cmd
	logPath string
	started time.Time
	done    chan struct{} // closed once the process has exited and been reaped
	waitErr error         // valid after done is closed
}

// launch starts path in its own process group with SIGKILL as its parent-death signal, so a test
// binary killed by `go test -timeout` takes OCM's processes with it instead of leaving them to
// fight over the next hub's ports. (The death signal follows the OS thread that forked; Go keeps
// its threads for the life of the process unless a goroutine locked to one exits, which this
// package never does.)
//
// TMPDIR points into dir: OCM's commands (openshift/library-go's controllercmd) write a self-signed
// serving certificate to a fresh temporary directory at every start and never remove it.
func launch(name, path string, args []string, dir string) (*process, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating the log of %s: %w", name, err)
	}
	tmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("creating %s: %w", tmp, err)
	}
	// The command line heads the log, so a log alone says how to reproduce the run.
	fmt.Fprintf(logFile, "# %s %s\n", path, strings.Join(args, " "))

	cmd := exec.Command(path, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p := &process{name: name, cmd: cmd, logPath: logPath, started: time.Now(), done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("ocmhub: starting %s (%s): %w", name, path, err)
	}
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
// reaped. SIGTERM matters: on it OCM's commands release their leader-election lease, so the next
// process for the same component (a restarted agent, the next test's placement controller) takes
// over at once instead of waiting up to 2m17s for the lease to expire.
func (p *process) stop(grace time.Duration) error {
	if p.exited() {
		return nil
	}
	pgid := -p.pid()
	if err := syscall.Kill(pgid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("ocmhub: stopping %s (pid %d): %w", p.name, p.pid(), err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	if err := syscall.Kill(pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("ocmhub: killing %s (pid %d): %w", p.name, p.pid(), err)
	}
	select {
	case <-p.done:
		return fmt.Errorf("ocmhub: %s (pid %d) ignored SIGTERM for %s and was killed; see %s", p.name, p.pid(), grace, p.logPath)
	case <-time.After(grace):
		return fmt.Errorf("ocmhub: %s (pid %d) still running %s after SIGKILL", p.name, p.pid(), grace)
	}
}

// failure describes a process that exited or never became ready, quoting the end of its log.
func (p *process) failure(what string) error {
	return fmt.Errorf("ocmhub: %s %s; last lines of %s:\n%s", p.name, what, p.logPath, tail(p.logPath, 25))
}

// waitReady polls ready until it returns nil, the process exits or ctx ends.
func (p *process) waitReady(ctx context.Context, interval time.Duration, ready func(context.Context) error) error {
	var last error
	for {
		if p.exited() {
			return p.failure(fmt.Sprintf("exited during start-up (%v)", p.waitErr))
		}
		last = ready(ctx)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return p.failure(fmt.Sprintf("not ready %s after start (last check: %v)",
				time.Since(p.started).Round(time.Second), last))
		case <-p.done:
		case <-time.After(interval):
		}
	}
}

// tail returns the last n lines of a log file, for error messages.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
