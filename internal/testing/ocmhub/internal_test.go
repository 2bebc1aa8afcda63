package ocmhub

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/addonops/addonops/internal/testing/localhub"
)

func TestHostAlias(t *testing.T) {
	for _, tc := range []struct {
		n       int
		want    string
		wantErr string
	}{
		{n: 0, want: "localhost"},
		{n: 1, want: "Localhost"},
		{n: 2, want: "lOcalhost"},
		{n: 3, want: "LOcalhost"},
		{n: 256, want: "localhosT"},
		{n: maxAliases - 1, want: "LOCALHOST"},
		{n: maxAliases, wantErr: "at most 512 clusters"},
		{n: -1, wantErr: "out of range"},
	} {
		got, err := hostAlias(tc.n)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("hostAlias(%d) = %q, %v; want an error containing %q", tc.n, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("hostAlias(%d) = %q, %v; want %q", tc.n, got, err, tc.want)
		}
	}

	// Every spelling is distinct, or two agents would share a hub hash.
	seen := map[string]int{}
	for n := range maxAliases {
		s, err := hostAlias(n)
		if err != nil {
			t.Fatal(err)
		}
		if m, dup := seen[s]; dup {
			t.Fatalf("spellings %d and %d are both %q", m, n, s)
		}
		seen[s] = n
	}
}

func TestAliasServer(t *testing.T) {
	for _, tc := range []struct {
		server  string
		n       int
		want    string
		wantErr string
	}{
		{server: "https://127.0.0.1:6443", n: 1, want: "https://Localhost:6443"},
		{server: "https://localhost:6443/prefix", n: 2, want: "https://lOcalhost:6443/prefix"},
		{server: "https://LOCALHOST", n: 0, want: "https://localhost"},
		{server: "https://10.0.0.1:6443", n: 1, wantErr: "need a loopback hub"},
		{server: "://bad", n: 1, wantErr: "parsing the hub URL"},
	} {
		got, err := aliasServer(tc.server, tc.n)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("aliasServer(%q, %d) = %q, %v; want an error containing %q", tc.server, tc.n, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("aliasServer(%q, %d) = %q, %v; want %q", tc.server, tc.n, got, err, tc.want)
		}
	}
}

func TestAliasForIsStablePerHubAndCluster(t *testing.T) {
	hub := "https://127.0.0.1:1/" + t.Name() // a hub no other test uses
	a1, err := aliasFor(hub, "cluster1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := aliasFor(hub, "cluster2")
	if err != nil {
		t.Fatal(err)
	}
	a2, err := aliasFor(hub, "cluster1")
	if err != nil {
		t.Fatal(err)
	}
	if a1 != a2 {
		t.Errorf("cluster1 got spelling %d, then %d: a restarted agent must keep its hub hash", a1, a2)
	}
	if a1 == b {
		t.Errorf("cluster1 and cluster2 share spelling %d: their AppliedManifestWorks would collide", a1)
	}
	other, err := aliasFor(hub+"-other", "cluster2")
	if err != nil {
		t.Fatal(err)
	}
	if other != 0 {
		t.Errorf("first cluster of another hub got spelling %d, want 0 (spellings are per hub)", other)
	}
}

func TestWriteAliasKubeconfig(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "hub")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["hub"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:4443", CertificateAuthorityData: []byte("ca")}
	cfg.AuthInfos["hub"] = &clientcmdapi.AuthInfo{Token: "secret"}
	cfg.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "hub"}
	cfg.CurrentContext = "hub"
	if err := clientcmd.WriteToFile(*cfg, src); err != nil {
		t.Fatal(err)
	}

	dst := filepath.Join(dir, "agent")
	server, err := writeAliasKubeconfig(src, dst, 5)
	if err != nil {
		t.Fatal(err)
	}
	if server != "https://LoCalhost:4443" {
		t.Errorf("server = %q, want https://LoCalhost:4443", server)
	}
	got, err := clientcmd.LoadFromFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	if got.Clusters["hub"].Server != server || string(got.Clusters["hub"].CertificateAuthorityData) != "ca" ||
		got.AuthInfos["hub"].Token != "secret" || got.CurrentContext != "hub" {
		t.Errorf("alias kubeconfig lost or changed credentials: %+v %+v", got.Clusters["hub"], got.AuthInfos["hub"])
	}

	if _, err := writeAliasKubeconfig(filepath.Join(dir, "missing"), dst, 1); err == nil ||
		!strings.Contains(err.Error(), "reading the hub kubeconfig") {
		t.Errorf("missing kubeconfig: err = %v, want it named", err)
	}
}

// TestMissingBinariesAreNamed checks the messages a fresh clone gets before `make ocm-binaries`.
func TestMissingBinariesAreNamed(t *testing.T) {
	root := t.TempDir() // a repository root without bin/
	t.Setenv(placementBinary.env, "")
	t.Setenv(workBinary.env, "")

	_, err := placementBinary.resolve("", root)
	want := []string{"OCM placement controller", filepath.Join(root, "bin/ocm-placement"), "not found",
		"make bin/ocm-placement", "make ocm-binaries", "ADDONOPS_OCM_PLACEMENT"}
	assertMentions(t, err, want)

	t.Setenv(workBinary.env, filepath.Join(root, "nowhere", "work"))
	_, err = workBinary.resolve("", root)
	assertMentions(t, err, []string{"OCM work agent", filepath.Join(root, "nowhere", "work"), "$ADDONOPS_OCM_WORK",
		"make bin/ocm-work"})

	notExec := filepath.Join(root, "ocm-work")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = workBinary.resolve(notExec, root)
	assertMentions(t, err, []string{notExec, "is not executable"})

	exe := filepath.Join(root, "bin", "ocm-work")
	if err := os.MkdirAll(filepath.Dir(exe), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(workBinary.env, "")
	if got, err := workBinary.resolve("", root); err != nil || got != exe {
		t.Errorf("resolve with bin/ocm-work present = %q, %v; want %q", got, err, exe)
	}
}

func assertMentions(t *testing.T, err error, want []string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one mentioning %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
}

// TestStartNamesMissingBinaries: Start fails before touching the hub or creating anything, naming
// both binaries and the make target.
func TestStartNamesMissingBinaries(t *testing.T) {
	t.Setenv(placementBinary.env, "")
	t.Setenv(workBinary.env, "")
	t.Setenv("TMPDIR", t.TempDir()) // where a log directory would appear
	root := t.TempDir()
	hub := &localhub.Hub{Clients: &localhub.Clients{}, Kubeconfig: "unused", URL: "https://127.0.0.1:1"}
	o, err := Start(context.Background(), hub, Options{RepoRoot: root})
	if o != nil {
		t.Errorf("Start returned an OCM despite missing binaries")
	}
	assertMentions(t, err, []string{"make ocm-binaries", filepath.Join(root, "bin/ocm-placement"),
		filepath.Join(root, "bin/ocm-work")})
	if left, _ := os.ReadDir(os.Getenv("TMPDIR")); len(left) > 0 {
		t.Errorf("Start left %v in TMPDIR", left)
	}

	// With SimulatedAgents no work agent runs: only the placement controller is asked for.
	_, err = Start(context.Background(), hub, Options{RepoRoot: root, SimulatedAgents: true})
	assertMentions(t, err, []string{"make ocm-binaries", filepath.Join(root, "bin/ocm-placement")})
	if err != nil && strings.Contains(err.Error(), "bin/ocm-work") {
		t.Errorf("Start with SimulatedAgents asks for the work agent: %v", err)
	}
	if _, err := PlacementBinary("", root); err == nil || !strings.Contains(err.Error(), "make bin/ocm-placement") {
		t.Errorf("PlacementBinary in a tree without it: %v, want an error naming make bin/ocm-placement", err)
	}

	if _, err := Start(context.Background(), nil, Options{}); err == nil || !strings.Contains(err.Error(), "localhub") {
		t.Errorf("Start without a hub: err = %v, want one saying it needs a localhub.Hub", err)
	}
}
