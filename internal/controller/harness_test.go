package controller

// The integration suite runs the controller in-process against the real kube-apiserver and etcd of
// internal/testing/localhub, with internal/testing/simagent playing add-on manager and work agent. Tests run in
// parallel on one shared hub: each test has its own add-on name, namespace and clusters, and its own
// controller restricted to its add-on.

import (
	"context"
	"os"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/addonops/addonops/internal/testing/localhub"
)

func TestMain(m *testing.M) { os.Exit(localhub.RunTests(m)) }

// watchFunc adapts a watch call to client-go's WatcherWithContext.
type watchFunc func(context.Context, metav1.ListOptions) (watch.Interface, error)

func (f watchFunc) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return f(ctx, o)
}
