package main

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// hubConfig is how the controller reaches the hub, and where that came from.
type hubConfig struct {
	config *rest.Config
	// source says where the configuration came from, for the start-up log.
	source string
	// inCluster: the pod's service account, no kubeconfig.
	inCluster bool
	// context is the kubeconfig context used and namespace the namespace it names ("" none).
	context, namespace string
}

// loadHubConfig finds the hub's configuration in controller-runtime's order
// (sigs.k8s.io/controller-runtime/pkg/client/config): the --kubeconfig file, else $KUBECONFIG,
// else the in-cluster configuration, else ~/.kube/config. It is not that package's GetConfig
// because that one reads its --kubeconfig from a package variable bound to flag.CommandLine (the
// tests run several controllers in one process) and does not tell the kubeconfig's namespace,
// which the controller needs out of a pod. One difference: with --context it skips the in-cluster
// configuration, which has no contexts, rather than ignore the flag.
func loadHubConfig(kubeconfig, kubeContext string) (hubConfig, error) {
	if kubeconfig != "" {
		return fromKubeconfig(&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig}, kubeContext, "--kubeconfig "+kubeconfig)
	}
	env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar)
	var inClusterErr error
	if env == "" && kubeContext == "" {
		cfg, err := rest.InClusterConfig()
		if err == nil {
			return hubConfig{config: cfg, source: "in-cluster (the pod's service account)", inCluster: true}, nil
		}
		inClusterErr = err
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	source := "$KUBECONFIG " + env
	if env == "" {
		rules.Precedence = []string{homeKubeconfig()}
		source = rules.Precedence[0]
	}
	hub, err := fromKubeconfig(rules, kubeContext, source)
	if err != nil && clientcmd.IsEmptyConfig(err) && env == "" {
		why := "--context is set"
		if inClusterErr != nil {
			why = "this is not a pod (" + inClusterErr.Error() + ")"
		}
		return hubConfig{}, fmt.Errorf("no configuration for the hub: --kubeconfig and $KUBECONFIG are unset, %s, and %s holds none: "+
			"set --kubeconfig to the hub's kubeconfig file", why, source)
	}
	return hub, err
}

func fromKubeconfig(rules *clientcmd.ClientConfigLoadingRules, kubeContext, source string) (hubConfig, error) {
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext})
	cfg, err := cc.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return hubConfig{}, err
		}
		hint := ""
		if kubeContext != "" && strings.Contains(err.Error(), "context") {
			hint = " (check --context)"
		}
		return hubConfig{}, fmt.Errorf("loading the hub's kubeconfig from %s%s: %w", source, hint, err)
	}
	hub := hubConfig{config: cfg, source: source, context: kubeContext}
	if raw, err := cc.RawConfig(); err == nil {
		if hub.context == "" {
			hub.context = raw.CurrentContext
		}
		if c := raw.Contexts[hub.context]; c != nil {
			hub.namespace = c.Namespace
		}
	}
	return hub, nil
}

// homeKubeconfig is ~/.kube/config. As controller-runtime: $HOME, else the user's home directory
// (client-go looks in $HOME only, and reads it once at start).
func homeKubeconfig() string {
	home := os.Getenv("HOME")
	if home == "" {
		if u, err := user.Current(); err == nil {
			home = u.HomeDir
		}
	}
	return filepath.Join(home, clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName)
}

// inClusterNamespaceFile holds the pod's namespace in a pod with a service account token.
var inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// podNamespace is the pod's namespace (POD_NAMESPACE or the service account's namespace file) and
// where it came from, or "" outside a pod.
func podNamespace() (namespace, source string) {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns, "POD_NAMESPACE"
	}
	if data, err := os.ReadFile(inClusterNamespaceFile); err == nil {
		if ns := strings.TrimSpace(string(data)); ns != "" {
			return ns, inClusterNamespaceFile
		}
	}
	return "", ""
}

// namespaceChoice is the namespace of the Lease and the version histories when no flag names one.
type namespaceChoice struct {
	namespace string
	// source says why, for the start-up log.
	source string
}

// chooseNamespace is the rule: in a pod its namespace, as before; out of one the kubeconfig
// context's namespace as kubectl resolves it, "default" when the context names none, so that
// `addonops-controller --kubeconfig hub.kubeconfig` runs as the README says, next to whatever
// kubectl shows in that context.
func chooseNamespace(podNS, podSource string, hub hubConfig) namespaceChoice {
	switch {
	case podNS != "":
		return namespaceChoice{podNS, "the pod's namespace (" + podSource + ")"}
	case hub.inCluster:
		return namespaceChoice{"default", "the in-cluster configuration tells no namespace (POD_NAMESPACE unset, no " + inClusterNamespaceFile + ")"}
	case hub.namespace != "":
		return namespaceChoice{hub.namespace, fmt.Sprintf("the namespace of kubeconfig context %q (%s)", hub.context, hub.source)}
	default:
		return namespaceChoice{"default", fmt.Sprintf("kubeconfig context %q (%s) names no namespace, so \"default\" as kubectl", hub.context, hub.source)}
	}
}
