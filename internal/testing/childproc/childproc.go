// Package childproc runs the long-lived helper processes of the test hubs (etcd, kube-apiserver,
// OCM's placement controller and work agents) as children that cannot outlive their parent: each
// runs in its own process group with SIGKILL as its parent-death signal, writes its output to a log
// file, and is stopped with SIGTERM, then SIGKILL, and reaped.
//
// The parent-death signal is why this is not exec.CommandContext: if the test binary or the demo
// dies without stopping its children (a `go test -timeout` panic, kill -9), the kernel kills them
// too instead of leaving them to hold ports, leases and data directories. (The death signal follows
// the OS thread that forked; Go keeps its threads for the life of the process unless a goroutine
// locked to one exits, which the callers never do.)
package childproc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Spec says what to start.
type Spec struct {
	// Name names the process in messages and its log, Dir/<Name>.log.
	Name string
	// Path is the binary; Args its arguments.
	Path string
	Args []string
	// Dir is the working directory and where the log is created.
	Dir string
	// Env is the environment; nil inherits the parent's.
	Env []string
	// LogCommand heads the log with the command line, so a log alone says how to reproduce the run.
	LogCommand bool
}

// Process is a started child process.
type Process struct {
	Name    string
	LogPath string
	// Started is when the process was started.
	Started time.Time

	cmd     *exec.Cmd
	done    chan struct{} // closed once the process has exited and been reaped
	waitErr error         // valid after done is closed
}

// Start starts the process in its own process group with SIGKILL as its parent-death signal, its
// stdout and stderr in its log.
func Start(s Spec) (*Process, error) {
	logPath := filepath.Join(s.Dir, s.Name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating the log of %s: %w", s.Name, err)
	}
	if s.LogCommand {
		fmt.Fprintf(logFile, "# %s %s\n", s.Path, strings.Join(s.Args, " "))
	}
	cmd := exec.Command(s.Path, s.Args...)
	cmd.Dir = s.Dir
	cmd.Env = s.Env
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p := &Process{Name: s.Name, LogPath: logPath, Started: time.Now(), cmd: cmd, done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", s.Name, s.Path, err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// PID is the process's ID, which is also its process group's.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Done is closed once the process has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited tells whether the process has exited and been reaped.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err waits until the process has exited and returns how (exec.Cmd.Wait's error).
func (p *Process) Err() error {
	<-p.done
	return p.waitErr
}

// KilledError is Stop's error for a process that ignored SIGTERM for the whole grace period and
// was killed: it is gone, but its log may say why it hung.
type KilledError struct {
	Name    string
	PID     int
	Grace   time.Duration
	LogPath string
}

func (e *KilledError) Error() string {
	return fmt.Sprintf("%s (pid %d) ignored SIGTERM for %s and was killed; see %s", e.Name, e.PID, e.Grace, e.LogPath)
}

// Stop sends SIGTERM to the process group, then SIGKILL after grace, and waits until the process is
// reaped, so its PID is really gone when Stop returns. A process that needed SIGKILL gives a
// *KilledError.
func (p *Process) Stop(grace time.Duration) error {
	if p.Exited() {
		return nil
	}
	pgid := -p.PID()
	if err := syscall.Kill(pgid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stopping %s (pid %d): %w", p.Name, p.PID(), err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	if err := syscall.Kill(pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing %s (pid %d): %w", p.Name, p.PID(), err)
	}
	select {
	case <-p.done:
		return &KilledError{Name: p.Name, PID: p.PID(), Grace: grace, LogPath: p.LogPath}
	case <-time.After(grace):
		return fmt.Errorf("%s (pid %d) still running %s after SIGKILL", p.Name, p.PID(), grace)
	}
}

// Tail returns the last n lines of a log file, for error messages.
func Tail(path string, n int) string {
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

// CheckExecutable says why path cannot be started as a binary, in words that complete a sentence
// beginning with the path ("/x/etcd not found"), or returns nil.
func CheckExecutable(path string) error {
	info, err := os.Stat(path)
	if os.IsNotExist(err) {
		return fmt.Errorf("not found")
	}
	if err != nil {
		return err
	}
	if info.IsDir() {
		return fmt.Errorf("is a directory, not a binary")
	}
	if info.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("is not executable (mode %s)", info.Mode().Perm())
	}
	return nil
}
