//go:build tools

// Package addonops pins modules the project builds on before every package imports them, so that
// `go mod tidy` keeps them at their verified versions (see README: dependencies).
package addonops

import (
	_ "github.com/kptdev/krm-functions-sdk/go/fn"
	_ "github.com/yuin/gopher-lua"
	_ "k8s.io/client-go/kubernetes"
	_ "open-cluster-management.io/api/client/addon/clientset/versioned"
	_ "open-cluster-management.io/sdk-go/pkg/apis/cluster/v1alpha1"
	_ "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	_ "sigs.k8s.io/controller-runtime/pkg/envtest"
	_ "sigs.k8s.io/kustomize/api/hasher"
)
