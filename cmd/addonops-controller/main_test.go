package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
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

func TestBadLogFormat(t *testing.T) {
	err := run(context.Background(), []string{"--log-format=yaml"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), `--log-format="yaml": want "text" or "json"`) {
		t.Errorf("got %v", err)
	}
}

func TestBadDeployerWait(t *testing.T) {
	for _, v := range []string{"0s", "-1m"} {
		err := run(context.Background(), []string{"--deployer-wait=" + v}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "--deployer-wait="+strings.TrimSuffix(v, "m")) || !strings.Contains(err.Error(), "want a positive duration") {
			t.Errorf("--deployer-wait=%s: got %v", v, err)
		}
	}
}

func TestLeaderElectionNamespace(t *testing.T) {
	dir := t.TempDir()
	nsFile := filepath.Join(dir, "namespace")
	defer func(old string) { inClusterNamespaceFile = old }(inClusterNamespaceFile)
	inClusterNamespaceFile = nsFile

	t.Setenv("POD_NAMESPACE", "")
	if _, err := leaderElectionNamespace(""); err == nil || !strings.Contains(err.Error(), "set --leader-election-namespace, or --leader-elect=false") {
		t.Errorf("no namespace anywhere: %v", err)
	}
	// The command refuses to start rather than guess.
	if err := run(context.Background(), []string{"--kubeconfig=/nonexistent"}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "leader election needs the namespace") {
		t.Errorf("run: %v", err)
	}
	if err := os.WriteFile(nsFile, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ flag, env, want string }{
		{"", "", "from-file"},
		{"", "from-env", "from-env"},
		{"from-flag", "from-env", "from-flag"},
	} {
		t.Setenv("POD_NAMESPACE", tc.env)
		got, err := leaderElectionNamespace(tc.flag)
		if err != nil || got != tc.want {
			t.Errorf("flag %q env %q: %q, %v; want %q", tc.flag, tc.env, got, err, tc.want)
		}
	}
}

func TestInformersSyncedCheck(t *testing.T) {
	elected := make(chan struct{})
	synced := false
	check := informersSynced(elected, func() bool { return synced })
	if err := check(nil); err != nil {
		t.Errorf("standby: %v (a replica waiting for the Lease must be ready)", err)
	}
	close(elected)
	if err := check(nil); err == nil {
		t.Error("leader with unsynced caches is ready")
	}
	synced = true
	if err := check(nil); err != nil {
		t.Errorf("leader synced: %v", err)
	}
}
