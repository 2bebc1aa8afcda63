package localhub

import (
	"os"
	"strings"
	"testing"
)

// Options.Users get tokens of their own, in system:masters like the admin; names the token file
// cannot hold, or that repeat, are refused.
func TestUserTokens(t *testing.T) {
	c, err := writeCredentials(t.TempDir(), []string{"bench-a", "bench-b"})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(c.tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 3 {
		t.Fatalf("token file has %d lines, want 3:\n%s", len(lines), data)
	}
	seen := map[string]bool{c.token: true}
	for i, u := range []string{"bench-a", "bench-b"} {
		tok := c.userTokens[u]
		if tok == "" || seen[tok] {
			t.Fatalf("%s: token %q is empty or not its own", u, tok)
		}
		seen[tok] = true
		if want := tok + "," + u + "," + u + `,"system:masters"`; lines[i+1] != want {
			t.Errorf("line %d: %q, want %q", i+2, lines[i+1], want)
		}
	}
	for _, bad := range [][]string{{"a", "a"}, {adminUser}, {""}, {"a,b"}} {
		if _, err := writeCredentials(t.TempDir(), bad); err == nil {
			t.Errorf("users %q accepted", bad)
		}
	}
}
