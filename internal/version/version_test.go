package version

import (
	"runtime"
	"strings"
	"testing"
)

// TestStamped checks that a version set with -ldflags -X wins over the build info, and that
// String names the program, the version and the toolchain.
func TestStamped(t *testing.T) {
	old := Version
	t.Cleanup(func() { Version = old })

	Version = "v9.8.7-test"
	if got := Get(); got != "v9.8.7-test" {
		t.Fatalf("Get() = %q with Version stamped, want v9.8.7-test", got)
	}
	s := String("prog")
	for _, want := range []string{"prog v9.8.7-test (", runtime.Version(), runtime.GOOS + "/" + runtime.GOARCH} {
		if !strings.Contains(s, want) {
			t.Errorf("String(prog) = %q, want it to contain %q", s, want)
		}
	}
}

// TestUnstamped checks the fallback: a test binary has no module version in its build info
// ("(devel)" or empty), so Get says "devel" rather than an empty string.
func TestUnstamped(t *testing.T) {
	old := Version
	t.Cleanup(func() { Version = old })

	Version = ""
	if got := Get(); got != "devel" {
		t.Fatalf("Get() = %q without a stamp in a test binary, want devel", got)
	}
}
