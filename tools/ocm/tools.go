//go:build tools

// Package tools pins OCM's commands so `go mod tidy` keeps their dependencies.
package tools

import (
	_ "open-cluster-management.io/ocm/cmd/placement"
	_ "open-cluster-management.io/ocm/cmd/work"
)
