package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// leftovers lists what is still running after the demo's shutdown: the hub's processes (by the
// PIDs localhub reported) and any child process of the demo (a kustomize build, anything a
// component might have started). The demo promises to leave nothing running.
func leftovers(hubPIDs []int) []string {
	var out []string
	for _, pid := range hubPIDs {
		if err := syscall.Kill(pid, 0); err == nil || errors.Is(err, syscall.EPERM) {
			out = append(out, fmt.Sprintf("hub process %d", pid))
		}
	}
	return append(out, children(os.Getpid())...)
}

// children lists the processes whose parent is pid, as "<pid> (<command>)", from /proc.
func children(pid int) []string {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []string
	for _, path := range stats {
		data, err := os.ReadFile(path)
		if err != nil {
			continue // exited meanwhile
		}
		// "<pid> (<comm>) <state> <ppid> ...": comm may hold spaces and parentheses, so split at
		// the last ')'.
		s := string(data)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		fields := strings.Fields(s[end+1:])
		if len(fields) < 2 {
			continue
		}
		ppid, err := strconv.Atoi(fields[1])
		if err != nil || ppid != pid || fields[0] == "Z" {
			continue
		}
		out = append(out, fmt.Sprintf("%s (%s)", strings.TrimSpace(s[:open]), s[open+1:end]))
	}
	return out
}
