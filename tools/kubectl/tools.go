//go:build tools

// Package tools pins the kubectl command so `go mod tidy` keeps its dependencies.
package tools

import _ "k8s.io/kubernetes/cmd/kubectl"
