//go:build tools

// Package tools pins Flux's controllers and the OCI registry so `go mod tidy` keeps their
// dependencies.
package tools

import (
	_ "github.com/distribution/distribution/v3/cmd/registry"
	_ "github.com/fluxcd/kustomize-controller"
	_ "github.com/fluxcd/source-controller"
)
