//go:build tools

// Package tools pins kpt's main package so `go mod tidy` keeps its dependencies.
package tools

import _ "github.com/kptdev/kpt"
