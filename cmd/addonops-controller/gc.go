package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
)

// defaultGCPercent is the controller's garbage collection target unless --gc-percent or GOGC
// says otherwise. The peak resident set is the binary's pages plus about 2.2 times the live heap
// at Go's default, 100 (the heap may grow to twice what is live before a collection). 30 keeps
// the 5,000-cluster benchmark under --deploy-templates below its 130 MB aim with a margin, where
// 40 does not reliably; it costs controller CPU but no wall time, because a rollout waits on the
// API server's CPU, not the controller's (the runs are logged under docs/benchmarks). Prometheus
// (since 2.53) sets its own default below Go's, 75, for the same reason.
const defaultGCPercent = 30

// gcPercent decides the garbage collection target: --gc-percent when given on the command line,
// else the GOGC environment variable when set (Go applied it at start), else defaultGCPercent.
// apply tells whether the process must set it (debug.SetGCPercent).
func gcPercent(flag int, flagGiven bool, gogc string) (percent int, source string, apply bool, err error) {
	switch {
	case flagGiven:
		if flag < 1 {
			return 0, "", false, fmt.Errorf("--gc-percent=%d: want 1 or more (percent the heap may grow past what is live before a collection)", flag)
		}
		return flag, "--gc-percent", true, nil
	case gogc != "":
		p, err := strconv.Atoi(gogc)
		if err != nil { // "off", or what Go itself ignores
			return 0, "GOGC", false, nil
		}
		return p, "GOGC", false, nil
	}
	return defaultGCPercent, "default", true, nil
}

// setGCPercent applies the garbage collection target and returns it and where it came from.
func setGCPercent(flag int, flagGiven bool) (int, string, error) {
	p, source, apply, err := gcPercent(flag, flagGiven, os.Getenv("GOGC"))
	if err != nil {
		return 0, "", err
	}
	if apply {
		debug.SetGCPercent(p)
	}
	return p, source, nil
}
