package childproc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Running reports whether process pid runs: it exists and is not a zombie waiting for a reaper
// that is not us (an orphan). A process of another user counts as running.
func Running(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	state, _, _, ok := stat(pid)
	return ok && state != "Z"
}

// stat reads the state, parent and command name of pid from /proc/<pid>/stat: "<pid> (<comm>)
// <state> <ppid> ...", where comm may hold spaces and parentheses (so it splits at the last ')').
func stat(pid int) (state string, ppid int, comm string, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, "", false // exited meanwhile
	}
	s := string(data)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return "", 0, "", false
	}
	fields := strings.Fields(s[end+1:])
	if len(fields) < 2 {
		return "", 0, "", false
	}
	ppid, err = strconv.Atoi(fields[1])
	return fields[0], ppid, s[open+1 : end], err == nil
}

// Children lists the running processes whose parent is pid, as "<pid> (<command>)": what a
// harness or the demo left behind once it stopped everything it started.
func Children(pid int) []string {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []string
	for _, path := range stats {
		child, err := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		if err != nil {
			continue
		}
		if state, ppid, comm, ok := stat(child); ok && ppid == pid && state != "Z" {
			out = append(out, fmt.Sprintf("%d (%s)", child, comm))
		}
	}
	return out
}

// Leftovers lists what still runs of pids (the processes a harness started, "process <pid>") and
// any child of this process: after a shutdown that promises to leave nothing running, it should
// be empty.
func Leftovers(pids []int) []string {
	var out []string
	for _, pid := range pids {
		if Running(pid) {
			out = append(out, fmt.Sprintf("process %d", pid))
		}
	}
	return append(out, Children(os.Getpid())...)
}
