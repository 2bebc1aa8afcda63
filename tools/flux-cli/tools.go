//go:build tools

// Package tools pins the flux CLI's module so `go mod tidy` keeps its dependencies. The CLI is
// not built from this module's graph: see tools/flux/flux.mk.
package tools

import _ "github.com/fluxcd/flux2/v2/cmd/flux"
