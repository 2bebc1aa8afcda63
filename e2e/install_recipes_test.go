//go:build integration

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/config/configtest"
	"github.com/addonops/addonops/internal/testing/argocd"
	"github.com/addonops/addonops/internal/testing/flux"
	"github.com/addonops/addonops/internal/testing/gitrepo"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/ssapply"
)

// TestInstallRecipes syncs the recipes of docs/guides/deploy-on-a-hub.md for installing the
// controller ("With Argo CD (server-side apply ..." and "With Flux:") with real Argo CD and real
// Flux, each on a hub of its own (no OCM processes: the controller never runs, only its manifests
// are synced). The recipes are read from that page and changed only where a local run must: the
// Git URL (this tree's config/
// committed to the branch main of a repository served over Git's smart HTTP), the image (a local
// name) and, for Flux, the intervals; they follow main, as written, and must sync its commit. It checks that the engine applied exactly what `kustomize build
// config/default` with the deploy-templates component and the image yields, with its own field
// manager; that it reports the install healthy once the controller's Deployment is (no kubelet
// runs: the test writes the status kube-controller-manager's Deployment controller would); and that
// the synced ServiceAccount's RBAC gives the controller what it lists and nothing more.
func TestInstallRecipes(t *testing.T) {
	root := t.TempDir()
	repo, err := gitrepo.New(filepath.Join(root, "git", "addonops"))
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range installDirs {
		if err := repo.CopyTree(filepath.Join(tools.Root, dir), dir); err != nil {
			t.Fatal(err)
		}
	}
	sha, err := repo.Commit("config/ of addonops")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := gitrepo.ServeHTTP(filepath.Join(root, "git"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	url := srv.URL + "/addonops"
	t.Logf("config/ committed as %.12s in %s, served at %s", sha, repo.Dir, url)
	want := expectedInstall(t, repo, filepath.Join(root, "expected"))

	t.Run("ArgoCD", func(t *testing.T) { installWithArgoCD(t, url, sha, want) })
	t.Run("Flux", func(t *testing.T) { installWithFlux(t, url, sha, want) })
}

// installDirs are what config/default with the deploy-templates component reads.
var installDirs = []string{"config/default", "config/rbac", "config/manager", "config/components/deploy-templates"}

const (
	// recipeImage is docs/guides/deploy-on-a-hub.md's placeholder image (REGISTRY/addonops-controller:TAG) made a local
	// name: no registry is reached, nothing pulls it.
	recipeImageName = "localhost/addonops-controller"
	recipeImageTag  = "e2e"
	// controllerImage is the image config/manager names, which the recipes replace.
	controllerImage = "ghcr.io/addonops/addonops-controller"
	// installNS and controllerSA are config/default's namespace and the controller's ServiceAccount.
	installNS    = "addonops-system"
	controllerSA = "addonops-controller"
	// recipeName is the name both recipes give their objects.
	recipeName = "addonops"
	// recipeTimeout bounds each wait for an engine.
	recipeTimeout = 3 * time.Minute
)

// expectedInstall builds what both recipes must sync: config/default of the committed tree, with
// the deploy-templates component and the image set in config/default's kustomization.yaml, which is
// what Argo CD (`kustomize edit add component`, `kustomize edit set image`) and Flux (its generated
// kustomization) do to the path before building it.
func expectedInstall(t *testing.T, repo *gitrepo.Repo, dir string) []*unstructured.Unstructured {
	t.Helper()
	if err := os.CopyFS(filepath.Join(dir, "config"), os.DirFS(filepath.Join(repo.Dir, "config"))); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config", "default", "kustomization.yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var k map[string]any
	if err := yaml.Unmarshal(raw, &k); err != nil {
		t.Fatalf("config/default/kustomization.yaml: %v", err)
	}
	if k["components"] != nil || k["images"] != nil {
		t.Fatalf("config/default/kustomization.yaml sets components or images itself: the test's expectation would not be the recipes'")
	}
	k["components"] = []any{"../components/deploy-templates"}
	k["images"] = []any{map[string]any{"name": controllerImage, "newName": recipeImageName, "newTag": recipeImageTag}}
	out, err := yaml.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	objs, err := configtest.Build(context.Background(), tools.Kustomize, dir, "config/default")
	if err != nil {
		t.Fatal(err)
	}
	d := only(t, objs, "Deployment")
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if len(containers) == 0 || containers[0].(map[string]any)["image"] != recipeImageName+":"+recipeImageTag {
		t.Fatalf("the expected build's Deployment runs %v, want %s:%s", containers, recipeImageName, recipeImageTag)
	}
	var ids []string
	for _, o := range objs {
		ids = append(ids, objectID(o))
	}
	t.Logf("kustomize build config/default + deploy-templates + image: %d objects: %s", len(objs), strings.Join(ids, ", "))
	return objs
}

func objectID(o *unstructured.Unstructured) string {
	return fmt.Sprintf("%s/%s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
}

// recipeHub starts a hub of its own for one engine: TestEndToEnd's shared hub runs its own
// controller, whose objects the recipes would fight over.
func recipeHub(t *testing.T) (*localhub.Hub, context.Context) {
	t.Helper()
	hub := ownHub(t, "an install recipe")
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return hub, ctx
}

// readmeObjects decodes the docs/guides/deploy-on-a-hub.md yaml block holding what.
func readmeObjects(t *testing.T, what string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := ssapply.Decode(bytes.NewReader(readmeYAML(t, "docs/guides/deploy-on-a-hub.md", what)))
	if err != nil {
		t.Fatalf("docs/guides/deploy-on-a-hub.md's block with %q: %v", what, err)
	}
	return objs
}

// applyAsUser server-side applies objs as `kubectl apply --server-side` does.
func applyAsUser(ctx context.Context, t *testing.T, hub *localhub.Hub, objs []*unstructured.Unstructured) {
	t.Helper()
	applier, err := ssapply.New(hub.Clients.Dynamic, hub.Clients.Kube.Discovery(), "kubectl")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := applier.ApplyAll(ctx, objs); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls check every 200ms until it returns "" or recipeTimeout passes, and returns how
// long it took.
func waitFor(ctx context.Context, t *testing.T, what string, check func() string) time.Duration {
	t.Helper()
	return harness.Eventually(t, recipeTimeout, what, check, harness.Every(200*time.Millisecond), harness.Within(ctx), harness.Logged())
}

func installWithArgoCD(t *testing.T, url, sha string, want []*unstructured.Unstructured) {
	hub, ctx := recipeHub(t)
	// The repo server builds kustomize sources with the go.mod's kustomize (the harness puts it on
	// its PATH, as Argo CD's image ships one).
	argo := argocd.ForTest(t, hub, argocd.Options{Kustomize: tools.Kustomize, PluginPath: []string{tools.Bin}})
	t.Logf("Argo CD ready in %s (logs in %s)", argo.StartDuration.Round(time.Millisecond), argo.LogDir)

	objs := readmeObjects(t, "repoURL: https://github.com/addonops/addonops")
	if len(objs) != 1 || objs[0].GetKind() != "Application" {
		t.Fatalf("docs/guides/deploy-on-a-hub.md's Argo CD recipe: want one Application, got %d objects", len(objs))
	}
	app := objs[0]
	images, _, _ := unstructured.NestedStringSlice(app.Object, "spec", "source", "kustomize", "images")
	if len(images) != 1 || !strings.HasPrefix(images[0], controllerImage+"=") {
		t.Fatalf("docs/guides/deploy-on-a-hub.md's Application: kustomize.images %v, want one entry for %s", images, controllerImage)
	}
	// Only what a local run must change: where Git is, which commit, which image.
	must(t, unstructured.SetNestedField(app.Object, url, "spec", "source", "repoURL"))
	// targetRevision stays the recipe's: main, whose head is the commit.
	if rev, _, _ := unstructured.NestedString(app.Object, "spec", "source", "targetRevision"); rev != "main" {
		t.Fatalf("docs/guides/deploy-on-a-hub.md's Application: targetRevision %q, want main (the test's repository has that branch only)", rev)
	}
	must(t, unstructured.SetNestedStringSlice(app.Object, []string{controllerImage + "=" + recipeImageName + ":" + recipeImageTag},
		"spec", "source", "kustomize", "images"))
	applyAsUser(ctx, t, hub, []*unstructured.Unstructured{app})
	t.Logf("applied docs/guides/deploy-on-a-hub.md's Application %s/%s with repoURL %s and image %s:%s (targetRevision main, at %.12s)",
		app.GetNamespace(), app.GetName(), url, recipeImageName, recipeImageTag, sha)

	appState := func() (*argocd.Application, string) {
		a, err := argo.Application(ctx, app.GetName())
		if err != nil {
			return nil, err.Error()
		}
		var conds []string
		for _, c := range a.Status.Conditions {
			conds = append(conds, c.Type+": "+c.Message)
		}
		op := "-"
		if a.Status.Operation != nil {
			op = a.Status.Operation.Phase + " " + a.Status.Operation.Message
		}
		return a, fmt.Sprintf("sync %s at %.12s, health %s %q, last sync %s, conditions %v",
			a.Status.Sync.Status, a.Status.Sync.Revision, a.Status.Health.Status, a.Status.Health.Message, op, conds)
	}
	waitFor(ctx, t, "Argo CD synced the commit", func() string {
		a, state := appState()
		if a == nil || a.Status.Sync.Status != "Synced" || a.Status.Sync.Revision != sha ||
			a.Status.Operation == nil || a.Status.Operation.Phase != "Succeeded" {
			return state
		}
		return ""
	})
	// Nothing reports the Deployment rolled out yet: Argo CD must not call the install Healthy.
	a, state := appState()
	if a.Status.Health.Status != "Progressing" {
		t.Errorf("before the controller's Deployment reports a rollout: %s, want health Progressing", state)
	}
	if dh := resourceHealth(a, "Deployment", installNS, controllerSA); dh != "Progressing" {
		t.Errorf("Argo CD's health of the Deployment before its rollout: %s, want Progressing", dh)
	}
	t.Logf("synced, before the Deployment's rollout: %s", state)

	checkSynced(ctx, t, hub, want, func(m metav1.ManagedFieldsEntry) bool {
		return strings.Contains(m.Manager, "argocd") && m.Operation == metav1.ManagedFieldsOperationApply
	}, "Argo CD's server-side apply")
	for _, o := range want {
		r := a.Resource(o.GetKind(), o.GetNamespace(), o.GetName())
		if r == nil || r.Status != "Synced" {
			t.Errorf("the Application's status.resources: %s is %v, want Synced", objectID(o), r)
		}
	}
	if len(a.Status.Resources) != len(want) {
		t.Errorf("the Application manages %d resources, the build has %d", len(a.Status.Resources), len(want))
	}

	rolloutDeployment(ctx, t, hub)
	waitFor(ctx, t, "Argo CD reports the Application Healthy", func() string {
		a, state := appState()
		if a == nil || a.Status.Health.Status != "Healthy" || a.Status.Sync.Status != "Synced" {
			return state
		}
		return ""
	})
	checkControllerRBAC(ctx, t, hub)

	// kube-controller-manager fills the aggregated ClusterRoles: Argo CD must neither call that a
	// drift nor undo it.
	aggregatedAt := aggregateReadmeRole(ctx, t, hub)
	waitFor(ctx, t, "Argo CD compared the Application after the aggregation", func() string {
		a, state := appState()
		if a == nil || a.Status.ReconciledAt == nil || !a.Status.ReconciledAt.After(aggregatedAt) {
			return fmt.Sprintf("reconciled at %v, aggregation at %s; %s", a.Status.ReconciledAt, aggregatedAt.Format(time.RFC3339Nano), state)
		}
		return ""
	})
	if a, state := appState(); a.Status.Sync.Status != "Synced" || a.Status.Health.Status != "Healthy" {
		t.Errorf("after kube-controller-manager's aggregation: %s, want Synced and Healthy", state)
	}
	checkAggregated(ctx, t, hub)
}

// widgetRole is docs/guides/deploy-on-a-hub.md's example of a ClusterRole aggregated into the controller's
// addonops-controller-configs ("Custom config kinds").
const widgetRole = "addonops-read-widgetconfigs"

// aggregateReadmeRole applies the guide's widgetconfigs ClusterRole as a user would and then
// aggregates the ClusterRoles as kube-controller-manager does (none runs here), which writes rules
// into the synced addonops-controller-configs that Git does not hold. It returns when that was done,
// to the second (Argo CD's timestamps have no finer resolution).
func aggregateReadmeRole(ctx context.Context, t *testing.T, hub *localhub.Hub) time.Time {
	t.Helper()
	objs := readmeObjects(t, "name: "+widgetRole)
	applyAsUser(ctx, t, hub, objs)
	if err := configtest.AggregateClusterRoles(ctx, hub.Clients.Kube); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Truncate(time.Second).Add(time.Second)
	checkAggregated(ctx, t, hub)
	harness.Pass(time.Until(at)) // the time itself: a later change is stamped after at
	return at
}

// checkAggregated checks that the synced addonops-controller-configs holds the guide role's rule
// and that the controller's ServiceAccount may therefore list widgetconfigs.
func checkAggregated(ctx context.Context, t *testing.T, hub *localhub.Hub) {
	t.Helper()
	role, err := hub.Clients.Kube.RbacV1().ClusterRoles().Get(ctx, "addonops-controller-configs", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range role.Rules {
		found = found || slices.Contains(r.Resources, "widgetconfigs")
	}
	if !found {
		t.Errorf("ClusterRole addonops-controller-configs lost the aggregated rule of %s: rules %v", widgetRole, role.Rules)
	}
	cfg, err := configtest.ServiceAccountConfig(ctx, hub, installNS, controllerSA)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	review, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: "list", Group: "widgets.example.com", Resource: "widgetconfigs"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !review.Status.Allowed {
		t.Errorf("ServiceAccount %s/%s may not list widgetconfigs through the aggregated %s: %s", installNS, controllerSA, widgetRole, review.Status.Reason)
	}
}

// resourceHealth is Argo CD's health of one managed resource, "" when it has none.
func resourceHealth(a *argocd.Application, kind, namespace, name string) string {
	r := a.Resource(kind, namespace, name)
	if r == nil || r.Health == nil {
		return ""
	}
	return r.Health.Status
}

// checkSynced checks that every object of want is on the hub with the fields the build gives it
// owned by the engine (a managedFields entry matching engine).
func checkSynced(ctx context.Context, t *testing.T, hub *localhub.Hub, want []*unstructured.Unstructured,
	engine func(metav1.ManagedFieldsEntry) bool, what string) {
	t.Helper()
	groups, err := restmapper.GetAPIGroupResources(hub.Clients.Kube.Discovery())
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	for _, o := range want {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Errorf("%s: %v", objectID(o), err)
			continue
		}
		var ri dynamic.ResourceInterface = hub.Clients.Dynamic.Resource(m.Resource)
		if o.GetNamespace() != "" {
			ri = hub.Clients.Dynamic.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		got, err := ri.Get(ctx, o.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s, built from the recipe's path, is not on the hub: %v", objectID(o), err)
			continue
		}
		var managers []string
		owned := false
		for _, mf := range got.GetManagedFields() {
			managers = append(managers, mf.Manager+"/"+string(mf.Operation))
			owned = owned || engine(mf)
		}
		if !owned {
			t.Errorf("%s: not written by %s (managers %v)", objectID(o), what, managers)
		}
		if got.GetLabels()["app.kubernetes.io/part-of"] != "addonops" {
			t.Errorf("%s: labels %v, want app.kubernetes.io/part-of: addonops (config/default)", objectID(o), got.GetLabels())
		}
	}
	d, err := hub.Clients.Kube.AppsV1().Deployments(installNS).Get(ctx, controllerSA, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if c.Image != recipeImageName+":"+recipeImageTag || !slices.Contains(c.Args, "--deploy-templates") {
		t.Errorf("the synced Deployment runs %s with %v, want %s:%s with --deploy-templates", c.Image, c.Args, recipeImageName, recipeImageTag)
	}
	t.Logf("all %d objects of the build are on the hub, written by %s; the Deployment runs %s %v", len(want), what, c.Image, c.Args)
}

// rolloutDeployment writes the controller Deployment's status as kube-controller-manager's
// Deployment controller does once every replica of its generation is ready (no kubelet or
// controller-manager runs here), and again whenever a sync changes its spec, until the test ends.
func rolloutDeployment(ctx context.Context, t *testing.T, hub *localhub.Hub) {
	t.Helper()
	t.Logf("no kubelet runs: the test reports Deployment %s/%s rolled out and ready itself", installNS, controllerSA)
	deps := hub.Clients.Kube.AppsV1().Deployments(installNS)
	set := func() error {
		d, err := deps.Get(ctx, controllerSA, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Status.ObservedGeneration == d.Generation && d.Status.ReadyReplicas > 0 {
			return nil
		}
		replicas := int32(1)
		if d.Spec.Replicas != nil {
			replicas = *d.Spec.Replicas
		}
		now := metav1.Now()
		d.Status = appsv1.DeploymentStatus{
			ObservedGeneration: d.Generation, Replicas: replicas, UpdatedReplicas: replicas, ReadyReplicas: replicas, AvailableReplicas: replicas,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable",
					Message: "Deployment has minimum availability.", LastUpdateTime: now, LastTransitionTime: now},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable",
					Message: fmt.Sprintf("ReplicaSet %q has successfully progressed.", controllerSA), LastUpdateTime: now, LastTransitionTime: now},
			},
		}
		_, err = deps.UpdateStatus(ctx, d, metav1.UpdateOptions{})
		return err
	}
	if err := set(); err != nil {
		t.Fatalf("writing the status of Deployment %s/%s: %v", installNS, controllerSA, err)
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(500 * time.Millisecond):
			}
			if err := set(); err != nil && ctx.Err() == nil && !apierrors.IsConflict(err) {
				t.Logf("writing the status of Deployment %s/%s: %v", installNS, controllerSA, err)
			}
		}
	}()
}

// checkControllerRBAC checks, with nothing but a token of the synced ServiceAccount, that the RBAC
// the recipe synced lets the controller list what it watches (config/rbac, and the
// deploy-templates component's ClusterRoles) and no more than that (no Secrets cluster-wide).
func checkControllerRBAC(ctx context.Context, t *testing.T, hub *localhub.Hub) {
	t.Helper()
	cfg, err := configtest.ServiceAccountConfig(ctx, hub, installNS, controllerSA)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []schema.GroupVersionResource{
		{Group: "addon.open-cluster-management.io", Version: "v1alpha1", Resource: "clustermanagementaddons"},
		{Group: "addon.open-cluster-management.io", Version: "v1alpha1", Resource: "managedclusteraddons"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	} {
		if _, err := dyn.Resource(r).List(ctx, metav1.ListOptions{}); err != nil {
			t.Errorf("ServiceAccount %s/%s cannot list %s: %v", installNS, controllerSA, r.GroupResource(), err)
		}
	}
	_, err = dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("ServiceAccount %s/%s listing Secrets in every namespace: %v, want forbidden", installNS, controllerSA, err)
	}
	t.Logf("ServiceAccount %s/%s: lists ClusterManagementAddOns, ManagedClusterAddOns and ClusterRoles; refused Secrets cluster-wide", installNS, controllerSA)
}

var gitRepositoryGVR = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}

const (
	// The test's intervals, instead of the recipe's 1h and 10m. The Kustomization's health checks
	// (wait: true) time out after its interval, which is long enough for the test's status write.
	recipeSourceInterval        = "5s"
	recipeKustomizationInterval = "30s"
)

func installWithFlux(t *testing.T, url, sha string, want []*unstructured.Unstructured) {
	hub, ctx := recipeHub(t)
	fx := flux.ForTest(t, hub, flux.Options{})
	t.Logf("Flux ready in %s (logs in %s)", fx.StartDuration.Round(time.Millisecond), fx.Dir)

	objs := readmeObjects(t, "kind: GitRepository")
	var changed []string
	for _, o := range objs {
		switch o.GetKind() {
		case "GitRepository":
			must(t, unstructured.SetNestedField(o.Object, url, "spec", "url"))
			// ref stays the recipe's: branch main, whose head is the commit.
			if ref, _, _ := unstructured.NestedStringMap(o.Object, "spec", "ref"); len(ref) != 1 || ref["branch"] != "main" {
				t.Fatalf("docs/guides/deploy-on-a-hub.md's GitRepository: ref %v, want {branch: main} (the test's repository has that branch only)", ref)
			}
			must(t, unstructured.SetNestedField(o.Object, recipeSourceInterval, "spec", "interval"))
			changed = append(changed, fmt.Sprintf("GitRepository url %s, interval %s (ref {branch: main}, at %.12s)", url, recipeSourceInterval, sha))
		case "Kustomization":
			images, _, _ := unstructured.NestedSlice(o.Object, "spec", "images")
			if len(images) != 1 || images[0].(map[string]any)["name"] != controllerImage {
				t.Fatalf("docs/guides/deploy-on-a-hub.md's Kustomization: images %v, want one entry for %s", images, controllerImage)
			}
			must(t, unstructured.SetNestedSlice(o.Object, []any{map[string]any{"name": controllerImage, "newName": recipeImageName, "newTag": recipeImageTag}},
				"spec", "images"))
			must(t, unstructured.SetNestedField(o.Object, recipeKustomizationInterval, "spec", "interval"))
			changed = append(changed, fmt.Sprintf("Kustomization image %s:%s, interval %s", recipeImageName, recipeImageTag, recipeKustomizationInterval))
		}
	}
	if len(changed) != 2 || len(objs) != 2 {
		t.Fatalf("docs/guides/deploy-on-a-hub.md's Flux recipe: want a GitRepository and a Kustomization, got %d objects", len(objs))
	}
	applyAsUser(ctx, t, hub, objs)
	t.Logf("applied docs/guides/deploy-on-a-hub.md's Flux recipe with %s", strings.Join(changed, "; "))

	get := func(gvr schema.GroupVersionResource) (*unstructured.Unstructured, string) {
		o, err := hub.Clients.Dynamic.Resource(gvr).Namespace(flux.Namespace).Get(ctx, recipeName, metav1.GetOptions{})
		if err != nil {
			return nil, err.Error()
		}
		return o, fluxConditions(o)
	}
	waitFor(ctx, t, "source-controller fetched the commit", func() string {
		o, state := get(gitRepositoryGVR)
		if o == nil {
			return state
		}
		rev, _, _ := unstructured.NestedString(o.Object, "status", "artifact", "revision")
		if !strings.HasSuffix(rev, sha) || !strings.Contains(state, "Ready=True") {
			return fmt.Sprintf("artifact revision %q; %s", rev, state)
		}
		return ""
	})
	// kustomize-controller applies, then waits for the Deployment (wait: true): not Ready until it
	// reports a rollout.
	waitFor(ctx, t, "kustomize-controller applied the build's Deployment", func() string {
		if _, err := hub.Clients.Kube.AppsV1().Deployments(installNS).Get(ctx, controllerSA, metav1.GetOptions{}); err != nil {
			_, state := get(flux.KustomizationGVR)
			return fmt.Sprintf("%v; Kustomization: %s", err, state)
		}
		return ""
	})
	if o, state := get(flux.KustomizationGVR); o == nil || strings.Contains(state, "Ready=True") {
		t.Errorf("the Kustomization before the Deployment reports a rollout: %s, want not Ready (wait: true)", state)
	} else {
		t.Logf("the Kustomization before the Deployment's rollout: %s", state)
	}
	rolloutDeployment(ctx, t, hub)
	waitFor(ctx, t, "the Kustomization is Ready at the commit", func() string {
		o, state := get(flux.KustomizationGVR)
		if o == nil {
			return state
		}
		applied, _, _ := unstructured.NestedString(o.Object, "status", "lastAppliedRevision")
		if !strings.HasSuffix(applied, sha) || !strings.Contains(state, "Ready=True") {
			return fmt.Sprintf("lastAppliedRevision %q; %s", applied, state)
		}
		return ""
	})

	checkSynced(ctx, t, hub, want, func(m metav1.ManagedFieldsEntry) bool {
		return m.Manager == flux.KustomizeManager && m.Operation == metav1.ManagedFieldsOperationApply
	}, "kustomize-controller's server-side apply")
	k, _ := get(flux.KustomizationGVR)
	entries, _, _ := unstructured.NestedSlice(k.Object, "status", "inventory", "entries")
	var inv, wantIDs []string
	for _, e := range entries {
		inv = append(inv, fmt.Sprint(e.(map[string]any)["id"]))
	}
	for _, o := range want {
		wantIDs = append(wantIDs, inventoryID(o))
	}
	slices.Sort(inv)
	slices.Sort(wantIDs)
	if !slices.Equal(inv, wantIDs) {
		t.Errorf("the Kustomization's inventory:\n%s\nwant the build's objects:\n%s", strings.Join(inv, "\n"), strings.Join(wantIDs, "\n"))
	} else {
		t.Logf("the Kustomization's inventory is the build's %d objects", len(inv))
	}
	checkControllerRBAC(ctx, t, hub)

	// kube-controller-manager fills the aggregated ClusterRoles: a reconcile of the Kustomization
	// after that must stay Ready and leave the rules alone.
	aggregateReadmeRole(ctx, t, hub)
	at := time.Now().Format(time.RFC3339Nano)
	if _, err := hub.Clients.Dynamic.Resource(flux.KustomizationGVR).Namespace(flux.Namespace).Patch(ctx, recipeName, types.MergePatchType,
		fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, flux.RequestedAtAnnotation, at), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "kustomize-controller reconciled again after the aggregation", func() string {
		o, state := get(flux.KustomizationGVR)
		if o == nil {
			return state
		}
		handled, _, _ := unstructured.NestedString(o.Object, "status", "lastHandledReconcileAt")
		if handled != at {
			return fmt.Sprintf("lastHandledReconcileAt %q, want %q; %s", handled, at, state)
		}
		return ""
	})
	if _, state := get(flux.KustomizationGVR); !strings.Contains(state, "Ready=True") {
		t.Errorf("the Kustomization after kube-controller-manager's aggregation: %s, want Ready", state)
	}
	checkAggregated(ctx, t, hub)
}

// fluxConditions renders a Flux object's conditions as "Type=Status/Reason: message".
func fluxConditions(o *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	var out []string
	for _, c := range conds {
		m, _ := c.(map[string]any)
		out = append(out, fmt.Sprintf("%v=%v/%v: %v", m["type"], m["status"], m["reason"], m["message"]))
	}
	if len(out) == 0 {
		return "no conditions"
	}
	return strings.Join(out, "; ")
}
