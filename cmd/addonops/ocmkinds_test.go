//go:build integration

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/addonops/addonops/internal/testing/localhub"
)

// On a hub without OCM's CRDs every command that reads an add-on says which kinds are missing and
// how to install them, not that the add-on is not found; with the CRDs, a missing add-on is again
// "not found".
func TestHubWithoutOCMKinds(t *testing.T) {
	hub, err := localhub.Start(context.Background(), localhub.Options{WithoutCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hub.Stop() })
	commands := [][]string{
		{"status"},
		{"status", "-o", "json"},
		{"status", "hello"},
		{"status", "hello", "--clusters"},
		{"status", "hello", "--watch", "--timeout", "10s"},
		{"pause", "hello"},
		{"resume", "hello"},
		{"promote", "hello", "--placement", "default/all"},
		{"retry", "hello"},
		{"abort", "hello"},
		{"abort", "hello", "--auto=true"},
	}
	run1 := func(args []string) (int, string) {
		var out, errOut bytes.Buffer
		code := run(append(append([]string{"addonops"}, args...), "--kubeconfig", hub.Kubeconfig), &out, &errOut)
		return code, out.String() + errOut.String()
	}
	for _, args := range commands {
		code, out := run1(args)
		if code != exitError {
			t.Errorf("%v: exit %d, want %d", args, code, exitError)
		}
		for _, want := range []string{"is not an Open Cluster Management hub addonops can use", "does not serve ClusterManagementAddOn (addon.open-cluster-management.io/v1alpha1)", "clusteradm init", hub.URL} {
			if !strings.Contains(out, want) {
				t.Errorf("%v: output lacks %q:\n%s", args, want, out)
			}
		}
		if strings.Contains(out, "not found") {
			t.Errorf("%v: says not found:\n%s", args, out)
		}
	}

	if err := hub.InstallCRDs(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"status", "hello"}, {"pause", "hello"}} {
		code, out := run1(args)
		if code != exitError || !strings.Contains(out, "not found") || strings.Contains(out, "does not serve") {
			t.Errorf("%v with OCM's CRDs: exit %d:\n%s", args, code, out)
		}
	}
	if code, out := run1([]string{"status"}); code != exitOK {
		t.Errorf("status with OCM's CRDs: exit %d:\n%s", code, out)
	}
}
