package main

import (
	"strings"
	"testing"

	"github.com/addonops/addonops/internal/testing/harness"
)

// syncBuffer is a buffer the test reads while the command writes it.
type syncBuffer = harness.SyncBuffer

// --interval, the polling period of old, is accepted and ignored with a deprecation note.
func TestIntervalDeprecated(t *testing.T) {
	r := status("--interval", "1s", "--help")
	if r.code != exitOK {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "--interval duration") {
		t.Errorf("--help still lists --interval:\n%s", r.stderr)
	}
}
