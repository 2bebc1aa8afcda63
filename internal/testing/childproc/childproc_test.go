package childproc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/addonops/addonops/internal/testing/harness"
)

// gone tells whether pid no longer runs: it does not exist, or it is a zombie waiting for a reaper
// that is not us (the orphan case).
func gone(pid int) bool { return !Running(pid) }

func TestStartLogsAndStops(t *testing.T) {
	dir := t.TempDir()
	p, err := Start(Spec{
		Name: "talker", Path: "/bin/sh", Args: []string{"-c", `echo "out $GREETING"; echo err >&2; exec sleep 60`},
		Dir: dir, Env: []string{"GREETING=hello"}, LogCommand: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if p.LogPath != filepath.Join(dir, "talker.log") {
		t.Errorf("LogPath = %s, want dir/talker.log", p.LogPath)
	}
	if pgid, err := syscall.Getpgid(p.PID()); err != nil || pgid != p.PID() {
		t.Errorf("process group = %d (%v), want its own (%d)", pgid, err, p.PID())
	}
	// The shell has written both lines once the log holds them; poll briefly.
	want := "# /bin/sh -c echo \"out $GREETING\"; echo err >&2; exec sleep 60\nout hello\nerr"
	// The check below says what the log held if the wait ran out.
	_, _ = harness.Until(context.Background(), 10*time.Second, 10*time.Millisecond, func() string {
		if got := Tail(p.LogPath, 10); got != want {
			return fmt.Sprintf("the log holds %q", got) // never "" (done), even for an empty log
		}
		return ""
	})
	if got := Tail(p.LogPath, 10); got != want {
		t.Errorf("log = %q, want %q", got, want)
	}
	if p.Exited() {
		t.Fatal("exited before Stop")
	}
	if err := p.Stop(5 * time.Second); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if !p.Exited() || !gone(p.PID()) {
		t.Errorf("still running after Stop (Exited %t)", p.Exited())
	}
	if err := p.Stop(time.Second); err != nil {
		t.Errorf("second Stop: %v, want nil", err)
	}
}

func TestStopKillsWhatIgnoresSIGTERM(t *testing.T) {
	dir := t.TempDir()
	p, err := Start(Spec{Name: "stubborn", Path: "/bin/sh", Args: []string{"-c", `trap '' TERM; echo ready; while :; do sleep 1; done`}, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	// Stop's result below says whether the trap was set in time.
	_, _ = harness.Until(context.Background(), 10*time.Second, 10*time.Millisecond, func() string {
		if got := Tail(p.LogPath, 1); got != "ready" {
			return fmt.Sprintf("the log ends with %q", got) // never "" (done), even for an empty log
		}
		return ""
	})
	err = p.Stop(300 * time.Millisecond)
	var killed *KilledError
	if !errors.As(err, &killed) {
		t.Fatalf("Stop = %v, want a *KilledError", err)
	}
	want := fmt.Sprintf("stubborn (pid %d) ignored SIGTERM for 300ms and was killed; see %s", p.PID(), p.LogPath)
	if err.Error() != want {
		t.Errorf("Stop = %q, want %q", err, want)
	}
	if !gone(p.PID()) {
		t.Error("still running after Stop")
	}
}

func TestExitOnItsOwn(t *testing.T) {
	p, err := Start(Spec{Name: "quitter", Path: "/bin/sh", Args: []string{"-c", "exit 3"}, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var exit *exec.ExitError
	if err := p.Err(); !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Errorf("Err = %v, want exit status 3", err)
	}
	select {
	case <-p.Done():
	default:
		t.Error("Done not closed after Err returned")
	}
	if err := p.Stop(time.Second); err != nil {
		t.Errorf("Stop of an exited process = %v, want nil", err)
	}
}

func TestStartErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "no-such-binary")
	_, err := Start(Spec{Name: "ghost", Path: missing, Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "starting ghost ("+missing+")") {
		t.Errorf("missing binary: err = %v, want it named", err)
	}
	_, err = Start(Spec{Name: "nowhere", Path: "/bin/true", Dir: filepath.Join(dir, "missing-dir")})
	if err == nil || !strings.Contains(err.Error(), "creating the log of nowhere") {
		t.Errorf("missing log directory: err = %v, want it named", err)
	}
}

// TestDiesWithItsParent runs this test binary as a parent that starts a child and exits without
// stopping it: the parent-death signal must kill the child.
func TestDiesWithItsParent(t *testing.T) {
	if os.Getenv("CHILDPROC_TEST_PARENT") != "" {
		p, err := Start(Spec{Name: "orphan", Path: "/bin/sleep", Args: []string{"60"}, Dir: os.Getenv("CHILDPROC_TEST_PARENT")})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(2)
		}
		fmt.Println(p.PID())
		os.Exit(0) // no Stop
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestDiesWithItsParent$")
	cmd.Env = append(os.Environ(), "CHILDPROC_TEST_PARENT="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("parent: %v\n%s", err, out)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("parent printed %q", out)
	}
	if _, err := harness.Until(context.Background(), 10*time.Second, 20*time.Millisecond, func() string {
		if !gone(pid) {
			return "still running"
		}
		return ""
	}); err != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("child %d still running 10s after its parent exited", pid)
	}
}

func TestTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	if err := os.WriteFile(path, []byte("a\nb\nc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for n, want := range map[int]string{1: "c", 2: "b\nc", 5: "a\nb\nc"} {
		if got := Tail(path, n); got != want {
			t.Errorf("Tail(%d) = %q, want %q", n, got, want)
		}
	}
	if got := Tail(path+".missing", 3); !strings.HasPrefix(got, "(cannot read ") {
		t.Errorf("Tail of a missing file = %q, want it to say it cannot read it", got)
	}
}

func TestCheckExecutable(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "plain")
	exe := filepath.Join(dir, "exe")
	if err := os.WriteFile(notExec, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(dir, "missing"), "not found"},
		{dir, "is a directory, not a binary"},
		{notExec, "is not executable (mode -rw-r--r--)"},
		{exe, ""},
	} {
		err := CheckExecutable(tc.path)
		if got := fmt.Sprint(err); (tc.want == "" && err != nil) || (tc.want != "" && got != tc.want) {
			t.Errorf("CheckExecutable(%s) = %v, want %q", tc.path, err, tc.want)
		}
	}
}

// TestChildrenAndLeftovers: a running child is listed by its parent's Children and by Leftovers,
// by PID too; once stopped, it is listed by neither.
func TestChildrenAndLeftovers(t *testing.T) {
	p, err := Start(Spec{Name: "sleeper", Path: "/bin/sleep", Args: []string{"60"}, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%d (sleep)", p.PID())
	if got := Children(os.Getpid()); !slices.Contains(got, want) {
		t.Errorf("Children = %v, want %q among them", got, want)
	}
	if got := Leftovers([]int{p.PID()}); !slices.Contains(got, want) || !slices.Contains(got, fmt.Sprintf("process %d", p.PID())) {
		t.Errorf("Leftovers = %v, want the process by PID and as a child", got)
	}
	if err := p.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got := Leftovers([]int{p.PID()}); len(got) > 0 {
		t.Errorf("Leftovers after Stop = %v, want none", got)
	}
	if Running(p.PID()) {
		t.Errorf("Running(%d) after Stop", p.PID())
	}
}

func TestFreePorts(t *testing.T) {
	ports, err := FreePorts(5)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p <= 0 || seen[p] {
			t.Fatalf("ports %v: want 5 distinct ports", ports)
		}
		seen[p] = true
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("port %d is not free after FreePorts returned: %v", p, err)
		}
		l.Close()
	}
	if p, err := FreePort(); err != nil || p <= 0 {
		t.Errorf("FreePort() = %d, %v", p, err)
	}
}

func TestWaitReady(t *testing.T) {
	dir := t.TempDir()
	p, err := Start(Spec{Name: "sleeper", Path: "/bin/sh", Args: []string{"-c", "sleep 30"}, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(time.Second)
	checks := 0
	err = p.WaitReady(context.Background(), time.Millisecond, func(context.Context) error {
		if checks++; checks < 3 {
			return errors.New("port closed")
		}
		return nil
	})
	if err != nil || checks != 3 {
		t.Fatalf("WaitReady = %v after %d checks, want nil after 3", err, checks)
	}

	// A check that hangs ends when the process exits, and the error says it exited.
	quitter, err := Start(Spec{Name: "quitter", Path: "/bin/sh", Args: []string{"-c", "sleep 0.2; exit 3"}, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	err = quitter.WaitReady(context.Background(), time.Millisecond, func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	})
	if err == nil || !strings.Contains(err.Error(), "exited during start-up (exit status 3)") {
		t.Fatalf("WaitReady of a process that exits = %v, want it to say so", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err = p.WaitReady(ctx, time.Millisecond, func(context.Context) error { return errors.New("connection refused") })
	if err == nil || !strings.Contains(err.Error(), "not ready") || !strings.Contains(err.Error(), "last check: connection refused") {
		t.Fatalf("WaitReady past its context = %v, want not ready with the last check", err)
	}
}
