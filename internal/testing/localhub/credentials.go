package localhub

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
)

// adminUser is the identity every client of the hub uses: a static token in system:masters, so RBAC
// never gets in the way of tests, the demo or OCM's components.
const adminUser = "addonops-admin"

// credentials are the files kube-apiserver needs and what clients need to reach it.
type credentials struct {
	servingCertFile, servingKeyFile string
	caPEM                           []byte // the self-signed serving certificate chain clients trust
	tokenFile, token                string
	serviceAccountKeyFile           string
	// userTokens are the tokens of Options.Users, by user name.
	userTokens map[string]string
}

// writeCredentials creates a serving certificate for 127.0.0.1/localhost, a service-account signing
// key and a static token file in dir: the admin's token and one per name of users, each in
// system:masters too.
func writeCredentials(dir string, users []string) (*credentials, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	c := &credentials{
		servingCertFile:       filepath.Join(dir, "serving.crt"),
		servingKeyFile:        filepath.Join(dir, "serving.key"),
		tokenFile:             filepath.Join(dir, "tokens.csv"),
		serviceAccountKeyFile: filepath.Join(dir, "service-account.key"),
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(loopback, []net.IP{net.ParseIP(loopback)}, []string{"localhost"})
	if err != nil {
		return nil, fmt.Errorf("generating the API server's serving certificate: %w", err)
	}
	c.caPEM = certPEM

	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("generating the service-account key: %w", err)
	}
	saPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)})

	if c.token, err = newToken(); err != nil {
		return nil, fmt.Errorf("generating the admin token: %w", err)
	}
	// Token file format: token,user,uid,"group1,group2".
	tokens := fmt.Sprintf("%s,%s,%s,\"system:masters\"\n", c.token, adminUser, adminUser)
	c.userTokens = map[string]string{}
	for _, u := range users {
		if u == adminUser || c.userTokens[u] != "" || u == "" || strings.ContainsAny(u, ",\"\n") {
			return nil, fmt.Errorf("localhub: Options.Users: %q is empty, repeated, reserved or holds a comma, quote or newline", u)
		}
		if c.userTokens[u], err = newToken(); err != nil {
			return nil, fmt.Errorf("generating the token of %s: %w", u, err)
		}
		tokens += fmt.Sprintf("%s,%s,%s,\"system:masters\"\n", c.userTokens[u], u, u)
	}

	for path, data := range map[string][]byte{
		c.servingCertFile:       certPEM,
		c.servingKeyFile:        keyPEM,
		c.serviceAccountKeyFile: saPEM,
		c.tokenFile:             []byte(tokens),
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return c, nil
}

func newToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

func (c *credentials) restConfig(url, token string) *rest.Config {
	return &rest.Config{
		Host:            url,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.caPEM},
		QPS:             1000,
		Burst:           2000,
	}
}

// writeKubeconfig writes a kubeconfig with the hub as its only (and current) context.
func writeKubeconfig(path, url string, c *credentials, token string) error {
	const name = "addonops-hub"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: url, CertificateAuthorityData: c.caPEM}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: "default"}
	cfg.CurrentContext = name
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return nil
}
