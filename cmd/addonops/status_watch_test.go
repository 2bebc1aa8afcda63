package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

// syncBuffer is a bytes.Buffer the test reads while the command writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

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
