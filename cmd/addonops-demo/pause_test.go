package main

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestPauseTarget(t *testing.T) {
	if addon, k, err := pauseTarget(lastExample(t).Objects); err != nil || addon != "helloworld" || k.String() != "default/global-placement" {
		t.Errorf("pauseTarget of 04-rollback: %s %s, %v; want helloworld's gated placement default/global-placement", addon, k, err)
	}
	// Without a canary the first placement that moves in batches is paused; with none, no step.
	plain := cma(map[string]any{"name": "all", "namespace": "ns", "rolloutStrategy": map[string]any{"type": "All"}},
		map[string]any{"name": "batches", "namespace": "ns", "rolloutStrategy": map[string]any{"type": "ProgressivePerGroup"}})
	if _, k, err := pauseTarget([]*unstructured.Unstructured{plain}); err != nil || k.String() != "ns/batches" {
		t.Errorf("pauseTarget without a canary: %s, %v; want ns/batches", k, err)
	}
	all := cma(map[string]any{"name": "all", "namespace": "ns", "rolloutStrategy": map[string]any{"type": "All"}})
	if _, _, err := pauseTarget([]*unstructured.Unstructured{all}); err == nil || !strings.Contains(err.Error(), "nothing to pause") {
		t.Errorf("pauseTarget of an All rollout: %v, want an error saying there is nothing to pause", err)
	}
}
