package templatedeploy_test

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

type watchFunc func(context.Context, metav1.ListOptions) (watch.Interface, error)

func (f watchFunc) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return f(ctx, o)
}
