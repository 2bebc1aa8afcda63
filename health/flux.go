package health

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling/engine"
	"github.com/fluxcd/pkg/apis/kustomize"
	fluxcel "github.com/fluxcd/pkg/runtime/cel"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// FluxChecks are the healthCheckExprs of a Flux Kustomization, compiled into the status readers
// kustomize-controller builds from them (fluxcd/pkg/runtime/cel PollerWithCustomHealthChecks: the
// first entry of a group/kind wins).
type FluxChecks struct {
	readers []engine.StatusReader
}

// LoadFluxChecks reads the first Kustomization (kustomize.toolkit.fluxcd.io) in a multi-document
// YAML file and compiles its spec.healthCheckExprs as Flux does; an expression that does not parse
// is an error, as it fails the Kustomization.
func LoadFluxChecks(path string) (*FluxChecks, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading Flux Kustomization: %w", err)
	}
	dec := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := dec.Read()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: no kustomize.toolkit.fluxcd.io Kustomization in the file", path)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		var k struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Spec       struct {
				HealthCheckExprs []kustomize.CustomHealthCheck `json:"healthCheckExprs"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(doc, &k); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if k.Kind != "Kustomization" || schema.FromAPIVersionAndKind(k.APIVersion, k.Kind).Group != "kustomize.toolkit.fluxcd.io" {
			continue
		}
		ctors, err := fluxcel.PollerWithCustomHealthChecks(context.Background(), k.Spec.HealthCheckExprs)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		mapper := meta.NewDefaultRESTMapper(nil)
		c := &FluxChecks{}
		for _, ctor := range ctors {
			c.readers = append(c.readers, ctor(mapper))
		}
		return c, nil
	}
}

// Status evaluates obj as Flux's health check does and returns the kstatus status: Current,
// InProgress, Failed, or Unknown with the evaluation error (Flux then keeps waiting, as for
// InProgress, until the Kustomization's timeout). ok is false when no expression covers the
// object's group/kind.
func (c *FluxChecks) Status(obj *unstructured.Unstructured) (status string, evalErr error, ok bool) {
	gk := obj.GroupVersionKind().GroupKind()
	for _, r := range c.readers {
		if !r.Supports(gk) {
			continue
		}
		rs, err := r.ReadStatusForObject(context.Background(), nil, obj)
		if err != nil {
			return "", err, true
		}
		return rs.Status.String(), rs.Error, true
	}
	return "", nil, false
}
