//go:build integration

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestVersionFlag(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"--version"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "addonops-controller devel (go") {
		t.Errorf("--version printed %q", out.String())
	}
}

// --help exits 0 with the product's flags and klog's -v and --vmodule; klog's other flags are
// hidden but still accepted.
func TestHelp(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"--help"}, &out); err != nil {
		t.Fatalf("--help: %v", err)
	}
	help := out.String()
	for _, want := range []string{"--kubeconfig string", "--context string", "--leader-election-namespace", "--log-format", "-v, --v Level", "--vmodule", "--version", "$KUBECONFIG"} {
		if !strings.Contains(help, want) {
			t.Errorf("--help lacks %q:\n%s", want, help)
		}
	}
	for _, hidden := range []string{"logtostderr", "log_dir", "skip_headers", "stderrthreshold", "one_output"} {
		if strings.Contains(help, hidden) {
			t.Errorf("--help shows klog's %s:\n%s", hidden, help)
		}
	}
	if n := strings.Count(help, "\n      --") + strings.Count(help, "\n  -"); n > 40 {
		t.Errorf("--help lists %d flags", n)
	}
	// Hidden is not gone: klog's flags parse (with --version, so nothing runs).
	if err := run(context.Background(), []string{"--version", "--add_dir_header=false", "-v=0", "--v=0"}, &bytes.Buffer{}); err != nil {
		t.Errorf("klog flags: %v", err)
	}
}
