// Package version is the version stamped into every addonops binary at build time:
//
//	go build -ldflags "-X github.com/addonops/addonops/internal/version.Version=v0.3.0" ./...
//
// `go install github.com/addonops/addonops/...@VERSION` stamps nothing through ldflags, so the
// module version Go records in the binary's build info is used then.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is set with -ldflags -X; empty means "take it from the build info".
var Version string

// Get returns the version of this binary: the stamped one, else the module version from the build
// info (set by go install mod@version), else "devel".
func Get() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// String is what --version prints: "<program> <version> (<go version> <os>/<arch>)".
func String(program string) string {
	return fmt.Sprintf("%s %s (%s %s/%s)", program, Get(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
