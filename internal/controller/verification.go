package controller

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/addonops/addonops/internal/verification"
	"github.com/addonops/addonops/internal/verifyrun"
)

// Argo Rollouts' template kinds, as the hub serves them (Argo Rollouts' CRDs, or addonops' own in
// config/components/verification on a hub without Argo Rollouts).
var (
	analysisTemplates        = schema.GroupVersionResource{Group: verification.Group, Version: verification.Version, Resource: "analysistemplates"}
	clusterAnalysisTemplates = schema.GroupVersionResource{Group: verification.Group, Version: verification.Version, Resource: "clusteranalysistemplates"}
)

// templateReader reads verification templates live from the hub: a run reads its template once,
// when it starts, so no informer (and no watch on a kind the hub may not serve) is needed.
func templateReader(client dynamic.Interface) verifyrun.TemplateReader {
	return func(ctx context.Context, key verification.TemplateKey) (map[string]any, error) {
		var (
			obj *unstructured.Unstructured
			err error
		)
		gvr := analysisTemplates
		if key.Kind == verification.KindClusterAnalysisTemplate {
			gvr = clusterAnalysisTemplates
			obj, err = client.Resource(gvr).Get(ctx, key.Name, metav1.GetOptions{})
		} else {
			obj, err = client.Resource(gvr).Namespace(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
		}
		switch {
		case apierrors.IsNotFound(err) && isKindNotServed(err):
			return nil, fmt.Errorf("the hub serves no %s (%s): install Argo Rollouts' CRDs, or addonops' config/components/verification on a hub without Argo Rollouts", gvr.Resource, gvr.GroupVersion())
		case apierrors.IsNotFound(err):
			return nil, fmt.Errorf("%s not found: create it, or fix annotation %s", key, verification.Annotation)
		case apierrors.IsForbidden(err):
			return nil, fmt.Errorf("the controller may not read %s: %w (grant get on %s in its ClusterRole)", key, err, gvr.GroupResource())
		case err != nil:
			return nil, fmt.Errorf("reading %s: %w", key, err)
		}
		return obj.UnstructuredContent(), nil
	}
}

// isKindNotServed tells a 404 for a resource the server does not serve from one for a missing
// object: the latter names the object in its details.
func isKindNotServed(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d == nil || d.Name == ""
}
