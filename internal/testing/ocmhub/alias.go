package ocmhub

import (
	"fmt"
	"net/url"
	"strings"
	"sync"

	"k8s.io/client-go/tools/clientcmd"
)

// Why every work agent gets its own spelling of the hub's address
//
// OCM's work agent names the AppliedManifestWork of a ManifestWork "<hub hash>-<work name>", where
// the hub hash is the SHA-256 of the server URL in its --workload-source-config kubeconfig, and
// AppliedManifestWorks are cluster-scoped on the spoke. In a real fleet each agent has its own
// spoke, so that is unique. Here every spoke is the hub's own API server: two agents given the same
// URL write the same AppliedManifestWork for same-named works (and OCM's add-on framework names
// them the same in every cluster namespace), take each other's resources and report Applied for
// objects that the other agent deleted (seen on this machine: cluster3's ConfigMap was gone while
// its work said Applied=True, Available=True).
//
// So each agent gets a kubeconfig whose server is "localhost" spelled with its own upper/lower
// case mix ("localhost", "Localhost", "lOcalhost", ...): the same API server (host names are
// case-insensitive for the resolver and for certificate checks, and localhub's serving certificate
// names localhost), but a different hub hash. A cluster keeps its spelling for the life of the
// process, so a restarted agent finds its AppliedManifestWorks again, as a real one would.

// hostAliasLetters is the name whose case is varied; its 9 letters give 512 spellings.
const hostAliasLetters = "localhost"

// maxAliases is how many distinct spellings exist, hence how many clusters one process can run
// agents for on one hub.
const maxAliases = 1 << len(hostAliasLetters)

// hostAlias returns spelling n (0 <= n < maxAliases) of "localhost": bit i of n upper-cases letter i.
func hostAlias(n int) (string, error) {
	if n < 0 || n >= maxAliases {
		return "", fmt.Errorf("alias %d out of range: only %d spellings of %q exist, so one process can run work "+
			"agents for at most %d clusters per hub", n, maxAliases, hostAliasLetters, maxAliases)
	}
	b := []byte(hostAliasLetters)
	for i := range b {
		if n&(1<<i) != 0 {
			b[i] -= 'a' - 'A'
		}
	}
	return string(b), nil
}

// aliasServer rewrites a loopback server URL (https://127.0.0.1:PORT or https://localhost:PORT) to
// spelling n of localhost, keeping scheme, port and path.
func aliasServer(server string, n int) (string, error) {
	u, err := url.Parse(server)
	if err != nil {
		return "", fmt.Errorf("parsing the hub URL %q: %w", server, err)
	}
	host := u.Hostname()
	if host != "127.0.0.1" && !strings.EqualFold(host, "localhost") {
		return "", fmt.Errorf("hub URL %q: work agents need a loopback hub (127.0.0.1 or localhost) to give each "+
			"agent its own spelling of localhost", server)
	}
	alias, err := hostAlias(n)
	if err != nil {
		return "", err
	}
	if port := u.Port(); port != "" {
		u.Host = alias + ":" + port
	} else {
		u.Host = alias
	}
	return u.String(), nil
}

// aliases hands out spellings: one per (hub URL, cluster) for the life of the process.
var aliases = struct {
	sync.Mutex
	byHub map[string]map[string]int
}{byHub: map[string]map[string]int{}}

// aliasFor returns the spelling number of cluster on the hub at hubURL, assigning the next free one
// on first use.
func aliasFor(hubURL, cluster string) (int, error) {
	aliases.Lock()
	defer aliases.Unlock()
	clusters := aliases.byHub[hubURL]
	if clusters == nil {
		clusters = map[string]int{}
		aliases.byHub[hubURL] = clusters
	}
	if n, ok := clusters[cluster]; ok {
		return n, nil
	}
	n := len(clusters)
	if n >= maxAliases {
		return 0, fmt.Errorf("cluster %s: work agents for %d clusters already ran on hub %s in this process, the most "+
			"this package can keep apart (each needs its own spelling of localhost)", cluster, n, hubURL)
	}
	clusters[cluster] = n
	return n, nil
}

// writeAliasKubeconfig copies the hub's kubeconfig to path with every cluster's server rewritten
// to spelling n of localhost, and returns the new server URL.
func writeAliasKubeconfig(hubKubeconfig, path string, n int) (string, error) {
	cfg, err := clientcmd.LoadFromFile(hubKubeconfig)
	if err != nil {
		return "", fmt.Errorf("reading the hub kubeconfig %s: %w", hubKubeconfig, err)
	}
	var server string
	for name, cluster := range cfg.Clusters {
		s, err := aliasServer(cluster.Server, n)
		if err != nil {
			return "", fmt.Errorf("kubeconfig %s, cluster %s: %w", hubKubeconfig, name, err)
		}
		cluster.Server = s
		server = s
	}
	if server == "" {
		return "", fmt.Errorf("the hub kubeconfig %s names no cluster", hubKubeconfig)
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return server, nil
}
