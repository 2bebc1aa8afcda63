package addonstatus

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestBoundMessage(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  string
		cut  bool
	}{
		{name: "empty", msg: ""},
		{name: "short", msg: "install completed with no errors."},
		{name: "at the limit", msg: strings.Repeat("a", MaxMessage)},
		{name: "one byte over", msg: strings.Repeat("a", MaxMessage+1), cut: true},
		{name: "32 KiB", msg: strings.Repeat("x", 32<<10), cut: true},
		// A cut inside a multi-byte character backs off to its start.
		{name: "multi-byte", msg: strings.Repeat("é", MaxMessage), cut: true},
		{name: "emoji", msg: "a" + strings.Repeat("🙂", MaxMessage), cut: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := BoundMessage(tc.msg)
			if !tc.cut {
				if got != tc.msg {
					t.Fatalf("changed a message of %d bytes", len(tc.msg))
				}
				return
			}
			if len(got) > MaxMessage || len(got) < MaxMessage-len(truncatedSuffix)-utf8.UTFMax {
				t.Fatalf("%d bytes, want at most %d and close to it", len(got), MaxMessage)
			}
			if !utf8.ValidString(got) || !strings.HasSuffix(got, truncatedSuffix) || !strings.HasPrefix(tc.msg, strings.TrimSuffix(got, truncatedSuffix)) {
				t.Fatalf("cut message is not a valid prefix with the marker: %q", got[len(got)-40:])
			}
			if again := BoundMessage(got); again != got {
				t.Fatal("cutting a cut message changed it")
			}
		})
	}
}
