// Package agentrbac gives a test hub the RBAC that OCM's registration controller gives a managed
// cluster's agents on the hub, read from the manifests of the open-cluster-management.io/ocm module
// that tools/ocm pins (the version whose binaries the e2e suite runs), and a client config that acts
// as such an agent. Hostile-cluster tests act through it: whatever an agent can write with exactly
// these rules, a compromised cluster can write.
package agentrbac

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"text/template"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/testing/localhub"
)

const ocmModule = "open-cluster-management.io/ocm"

// rbacDir is where OCM's registration hub controller keeps the per-cluster RBAC it applies.
const rbacDir = "pkg/registration/hub/manifests/rbac"

// The manifests OCM applies for every accepted managed cluster (its registration hub controller's
// managedcluster RBAC): the cluster's own ClusterRole and binding (CSRs, its ManagedCluster), the
// registration agent's role in the cluster namespace (leases, MCAs and their status, events) and
// the work agent's (ManifestWorks and their status, events).
var manifests = []string{
	"managedcluster-clusterrole.yaml",
	"managedcluster-clusterrolebinding.yaml",
	"managedcluster-registration-clusterrole.yaml",
	"managedcluster-registration-rolebinding.yaml",
	"managedcluster-work-clusterrole.yaml",
	"managedcluster-work-rolebinding.yaml",
}

// User is the user name the registration agent of cluster authenticates as on the hub (OCM names it
// system:open-cluster-management:<cluster>:<agent ID>).
func User(cluster string) string { return "system:open-cluster-management:" + cluster + ":agent" }

// Groups are the groups OCM's hub certificate gives a cluster's agents.
func Groups(cluster string) []string {
	return []string{"system:open-cluster-management:" + cluster, "system:open-cluster-management:managed-clusters", "system:authenticated"}
}

// Config returns a copy of admin that acts as cluster's agent (impersonation: the API server
// authorizes every request against the agent's user and groups only).
func Config(admin *rest.Config, cluster string) *rest.Config {
	cfg := rest.CopyConfig(admin)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: User(cluster), Groups: Groups(cluster)}
	return cfg
}

// Clients returns the hub clients acting as cluster's agent.
func Clients(admin *rest.Config, cluster string) (*localhub.Clients, error) {
	c, err := localhub.NewClients(Config(admin, cluster))
	if err != nil {
		return nil, fmt.Errorf("agentrbac: clients for cluster %s's agent: %w", cluster, err)
	}
	return c, nil
}

var dirs sync.Map // repository root -> the ocm module's directory

// ManifestDir returns the directory of OCM's per-cluster RBAC manifests in the ocm module that
// tools/ocm/go.mod pins ($ADDONOPS_OCM_MODULE overrides the module's directory).
func ManifestDir(ctx context.Context) (string, error) {
	if env := os.Getenv("ADDONOPS_OCM_MODULE"); env != "" {
		return filepath.Join(env, rbacDir), nil
	}
	repo, err := localhub.RepoRoot("")
	if err != nil {
		return "", fmt.Errorf("agentrbac: locating the repository: %w", err)
	}
	if d, ok := dirs.Load(repo); ok {
		return d.(string), nil
	}
	tools := filepath.Join(repo, "tools", "ocm")
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", ocmModule)
	cmd.Dir = tools
	// As tools/ocm/ocm.mk builds it: its own module, and one dependency missing from the checksum
	// database (the mk file says which).
	cmd.Env = append(os.Environ(), "GOWORK=off", "GONOSUMDB=sigs.k8s.io/about-api")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("agentrbac: `go list -m %s` in %s: %w: %s (run `make ocm-binaries`, which downloads it, or set $ADDONOPS_OCM_MODULE to its directory)",
			ocmModule, tools, err, strings.TrimSpace(stderr.String()))
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" {
		return "", fmt.Errorf("agentrbac: module %s is not downloaded: run `make ocm-binaries` or `go mod download %s` in %s", ocmModule, ocmModule, tools)
	}
	dir := filepath.Join(mod, rbacDir)
	dirs.Store(repo, dir)
	return dir, nil
}

// Objects renders OCM's per-cluster RBAC for cluster, as OCM's registration controller does for
// a cluster the hub accepted (its templates take the cluster's name, whether it is accepted and
// extra labels; none here).
func Objects(ctx context.Context, cluster string) ([]any, error) {
	dir, err := ManifestDir(ctx)
	if err != nil {
		return nil, err
	}
	var objs []any
	for _, name := range manifests {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("agentrbac: reading OCM's %s: %w", name, err)
		}
		tmpl, err := template.New(name).Parse(string(raw))
		if err != nil {
			return nil, fmt.Errorf("agentrbac: parsing OCM's %s: %w", name, err)
		}
		var buf bytes.Buffer
		if err := tmpl.Execute(&buf, struct {
			ManagedClusterName string
			Accepted           bool
			Labels             map[string]string
		}{cluster, true, nil}); err != nil {
			return nil, fmt.Errorf("agentrbac: rendering OCM's %s: %w", name, err)
		}
		var head metav1.TypeMeta
		if err := yaml.Unmarshal(buf.Bytes(), &head); err != nil {
			return nil, fmt.Errorf("agentrbac: OCM's %s: %w", name, err)
		}
		var obj any
		switch head.Kind {
		case "ClusterRole":
			obj = &rbacv1.ClusterRole{}
		case "ClusterRoleBinding":
			obj = &rbacv1.ClusterRoleBinding{}
		case "RoleBinding":
			obj = &rbacv1.RoleBinding{}
		case "Role":
			obj = &rbacv1.Role{}
		default:
			return nil, fmt.Errorf("agentrbac: OCM's %s holds a %s, which this package does not apply", name, head.Kind)
		}
		if err := yaml.UnmarshalStrict(buf.Bytes(), obj); err != nil {
			return nil, fmt.Errorf("agentrbac: OCM's %s: %w", name, err)
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

// Apply gives cluster's agents OCM's hub RBAC (Objects), creating or replacing each object; the
// cluster's namespace must exist. The work RoleBinding's finalizer is left out: OCM's registration
// controller removes it once the cluster's works are gone, and no such controller runs here, so it
// would keep a test's namespace from ever being deleted.
func Apply(ctx context.Context, kube kubernetes.Interface, cluster string) error {
	objs, err := Objects(ctx, cluster)
	if err != nil {
		return err
	}
	rbac := kube.RbacV1()
	for _, obj := range objs {
		switch o := obj.(type) {
		case *rbacv1.ClusterRole:
			err = upsert(ctx, o, rbac.ClusterRoles().Create, rbac.ClusterRoles().Update, func(ctx context.Context) (*rbacv1.ClusterRole, error) {
				return rbac.ClusterRoles().Get(ctx, o.Name, metav1.GetOptions{})
			})
		case *rbacv1.ClusterRoleBinding:
			err = upsert(ctx, o, rbac.ClusterRoleBindings().Create, rbac.ClusterRoleBindings().Update, func(ctx context.Context) (*rbacv1.ClusterRoleBinding, error) {
				return rbac.ClusterRoleBindings().Get(ctx, o.Name, metav1.GetOptions{})
			})
		case *rbacv1.Role:
			err = upsert(ctx, o, rbac.Roles(o.Namespace).Create, rbac.Roles(o.Namespace).Update, func(ctx context.Context) (*rbacv1.Role, error) {
				return rbac.Roles(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
			})
		case *rbacv1.RoleBinding:
			o.Finalizers = nil
			err = upsert(ctx, o, rbac.RoleBindings(o.Namespace).Create, rbac.RoleBindings(o.Namespace).Update, func(ctx context.Context) (*rbacv1.RoleBinding, error) {
				return rbac.RoleBindings(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
			})
		}
		if err != nil {
			return fmt.Errorf("agentrbac: applying OCM's agent RBAC for cluster %s: %w", cluster, err)
		}
	}
	return nil
}

// upsert creates obj, or replaces the object of its name with it (keeping its resourceVersion).
func upsert[T interface {
	metav1.Object
	*R
}, R any](ctx context.Context, obj T,
	create func(context.Context, T, metav1.CreateOptions) (T, error),
	update func(context.Context, T, metav1.UpdateOptions) (T, error),
	get func(context.Context) (T, error)) error {
	_, err := create(ctx, obj, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("creating %s: %w", obj.GetName(), err)
		}
		return nil
	}
	cur, err := get(ctx)
	if err != nil {
		return fmt.Errorf("reading %s: %w", obj.GetName(), err)
	}
	obj.SetResourceVersion(cur.GetResourceVersion())
	if _, err := update(ctx, obj, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("replacing %s: %w", obj.GetName(), err)
	}
	return nil
}
