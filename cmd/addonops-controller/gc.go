package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
)

// defaultGCPercent is the controller's garbage collection target unless --gc-percent or GOGC
// says otherwise. Go's default, 100, lets the heap grow to twice what is live before a
// collection, and the controller's peak resident set is its binary's pages plus about 2.2 times
// its live heap; 40 lets the heap grow by 40 %. In `make bench-controller` at 5,000 clusters,
// 50 took the peak RSS from 93–96 MB to 81 MB, and under --deploy-templates from 162 MB to
// 128–135 MB (four runs of the same code: the peak depends on how far the watch events run ahead
// of the workers); 40 took the latter to 124–128 MB (two runs), for about 10 % more controller
// CPU and no wall time beyond the runs' spread (a rollout waits on the API server's CPU, not the
// controller's: README, "Performance"). A third run at 40 peaked at 131 MB, over the aim; 30 took
// two runs to 119 MB, for 4-25 % more controller CPU than 40 and, again, no wall time beyond the
// runs' spread (1,000 clusters without soak: upgrade 21.2 and 22.2 s against 22.5 s). Prometheus
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
