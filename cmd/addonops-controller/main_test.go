package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

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

func TestBadPlacementGrace(t *testing.T) {
	for _, v := range []string{"0s", "-30s"} {
		err := run(context.Background(), []string{"--placement-grace=" + v}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "--placement-grace=") || !strings.Contains(err.Error(), "want a positive duration") {
			t.Errorf("--placement-grace=%s: got %v", v, err)
		}
	}
}

func TestBadInterimHold(t *testing.T) {
	err := run(context.Background(), []string{"--interim-hold=-1s"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "--interim-hold=-1s: want 0") {
		t.Errorf("got %v", err)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--no-such-flag"}, "unknown flag: --no-such-flag"},
		{[]string{"--workers=many"}, `invalid argument "many" for "--workers"`},
		{[]string{"extra"}, `unexpected arguments ["extra"]: addonops-controller takes flags only`},
	} {
		err := run(context.Background(), tc.args, &bytes.Buffer{})
		var usage usageError
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &usage) {
			t.Errorf("%v: got %v, want a usage error with %q", tc.args, err, tc.want)
		}
	}
}

func TestGoStyleFlags(t *testing.T) {
	cmd, _ := newCommand(io.Discard)
	for _, tc := range []struct{ in, want []string }{
		{[]string{"-kubeconfig", "k", "-leader-elect=false"}, []string{"--kubeconfig", "k", "--leader-elect=false"}},
		{[]string{"--kubeconfig=k", "-v=4", "-v", "2"}, []string{"--kubeconfig=k", "-v=4", "-v", "2"}},
		{[]string{"-logtostderr=false", "-vmodule=a=1"}, []string{"--logtostderr=false", "--vmodule=a=1"}},
		{[]string{"-nosuchflag", "--", "-kubeconfig"}, []string{"-nosuchflag", "--", "-kubeconfig"}},
	} {
		if got := goStyleFlags(tc.in, cmd.Flags()); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("goStyleFlags(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestChooseNamespace(t *testing.T) {
	kube := hubConfig{source: "--kubeconfig hub.kubeconfig", context: "hub"}
	kubeNS := kube
	kubeNS.namespace = "ops"
	for _, tc := range []struct {
		name, podNS string
		hub         hubConfig
		want, why   string
	}{
		{"pod", "addonops", hubConfig{inCluster: true}, "addonops", "the pod's namespace (POD_NAMESPACE)"},
		{"pod with a kubeconfig of another cluster", "addonops", kubeNS, "addonops", "the pod's namespace"},
		{"kubeconfig context with a namespace", "", kubeNS, "ops", `the namespace of kubeconfig context "hub" (--kubeconfig hub.kubeconfig)`},
		{"kubeconfig context without one", "", kube, "default", `kubeconfig context "hub" (--kubeconfig hub.kubeconfig) names no namespace, so "default"`},
		{"in-cluster without a namespace file", "", hubConfig{inCluster: true}, "default", "tells no namespace"},
	} {
		got := chooseNamespace(tc.podNS, "POD_NAMESPACE", tc.hub)
		if got.namespace != tc.want || !strings.Contains(got.source, tc.why) {
			t.Errorf("%s: %+v, want %q because %q", tc.name, got, tc.want, tc.why)
		}
	}
}

// writeKubeconfig writes a kubeconfig with two contexts, "plain" (current, no namespace) and
// "ops" (namespace ops), on server.
func writeKubeconfig(t *testing.T, server string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: server}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
	cfg.Contexts["plain"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.Contexts["ops"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u", Namespace: "ops"}
	cfg.CurrentContext = "plain"
	path := filepath.Join(t.TempDir(), "hub.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// The hub's configuration in controller-runtime's order, with --context and the context's namespace.
func TestLoadHubConfig(t *testing.T) {
	flagFile := writeKubeconfig(t, "https://from-flag:6443")
	envFile := writeKubeconfig(t, "https://from-env:6443")
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KUBERNETES_SERVICE_HOST", "") // not a pod

	t.Setenv("KUBECONFIG", envFile)
	hub, err := loadHubConfig(flagFile, "")
	if err != nil || hub.config.Host != "https://from-flag:6443" || hub.context != "plain" || hub.namespace != "" {
		t.Errorf("--kubeconfig beats $KUBECONFIG: %+v, %v", hub, err)
	}
	hub, err = loadHubConfig("", "ops")
	if err != nil || hub.config.Host != "https://from-env:6443" || hub.context != "ops" || hub.namespace != "ops" || !strings.Contains(hub.source, "$KUBECONFIG") {
		t.Errorf("$KUBECONFIG with --context ops: %+v, %v", hub, err)
	}
	if _, err := loadHubConfig("", "nope"); err == nil || !strings.Contains(err.Error(), "nope") || !strings.Contains(err.Error(), "--context") {
		t.Errorf("unknown context: %v", err)
	}
	if _, err := loadHubConfig(filepath.Join(home, "missing"), ""); err == nil || !strings.Contains(err.Error(), "--kubeconfig "+filepath.Join(home, "missing")) {
		t.Errorf("missing --kubeconfig file: %v", err)
	}

	t.Setenv("KUBECONFIG", "")
	if _, err := loadHubConfig("", ""); err == nil || !strings.Contains(err.Error(), "--kubeconfig and $KUBECONFIG are unset, this is not a pod") || !strings.Contains(err.Error(), "set --kubeconfig") {
		t.Errorf("nothing anywhere: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(home, ".kube"), 0o700); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(flagFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".kube", "config"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	hub, err = loadHubConfig("", "")
	if err != nil || hub.config.Host != "https://from-flag:6443" || !strings.Contains(hub.source, ".kube") {
		t.Errorf("~/.kube/config: %+v, %v", hub, err)
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
