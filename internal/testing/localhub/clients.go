package localhub

import (
	"fmt"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
)

// Clients are the typed clients every suite needs against a hub. The fields are interfaces, so the
// helpers in this package also accept fake clientsets in unit tests.
type Clients struct {
	Kube          kubernetes.Interface
	APIExtensions apiextensionsclient.Interface
	Cluster       clusterclient.Interface
	Addon         addonclient.Interface
	Work          workclient.Interface
	Dynamic       dynamic.Interface
}

// NewClients builds Clients sharing one HTTP client (one connection pool) from cfg.
func NewClients(cfg *rest.Config) (*Clients, error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the HTTP client for %s: %w", cfg.Host, err)
	}
	c := &Clients{}
	if c.Kube, err = kubernetes.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("building the Kubernetes client: %w", err)
	}
	if c.APIExtensions, err = apiextensionsclient.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("building the apiextensions client: %w", err)
	}
	if c.Cluster, err = clusterclient.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("building the OCM cluster client: %w", err)
	}
	if c.Addon, err = addonclient.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("building the OCM add-on client: %w", err)
	}
	if c.Work, err = workclient.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("building the OCM work client: %w", err)
	}
	if c.Dynamic, err = dynamic.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("building the dynamic client: %w", err)
	}
	return c, nil
}
