//go:build integration

package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/hubcache"
	"github.com/addonops/addonops/internal/rolloutplan"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/localhub"
)

// A config kind the controller's identity may not list: the add-on says so (progression message,
// one ConfigurationForbidden event), other add-ons go on, and granting the permission later lets it
// proceed. The controller runs as a ServiceAccount with RBAC, not as the hub's admin.
func TestConfigKindForbidden(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	other := newEnv(t, envOptions{})
	ctx := e.ctx
	group := e.name + ".example.io"
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "foos"}
	fooCRD(t, e, gvr)

	// The controller's identity: everything it needs but foos.
	kube := e.c.Kube
	sa := "controller"
	if _, err := kube.CoreV1().ServiceAccounts(e.name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bind := func(role string, rules ...rbacv1.PolicyRule) {
		t.Helper()
		name := e.name + "-" + role
		if _, err := kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: e.name, Name: sa}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
			_ = kube.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	bind("base", rbacv1.PolicyRule{
		APIGroups: []string{"", "addon.open-cluster-management.io", "cluster.open-cluster-management.io", "work.open-cluster-management.io"},
		Resources: []string{"*"}, Verbs: []string{"*"},
	})
	tok, err := kube.CoreV1().ServiceAccounts(e.name).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo(int64(3600))},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &rest.Config{Host: e.hub.URL, BearerToken: tok.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: e.hub.Config.CAData}, QPS: 500, Burst: 1000}

	// The forbidden add-on: a Foo config. The other one: an AddOnDeploymentConfig.
	foo := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/v1", "kind": "Foo",
		"metadata": map[string]any{"namespace": e.name, "name": "x"},
		"spec":     map[string]any{"version": "1"},
	}}
	if _, err := e.c.Dynamic.Resource(gvr).Namespace(e.name).Create(ctx, foo, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.ensureClusters("c1")
	e.placement("p", [][]string{{"c1"}})
	fooRef := addonv1alpha1.ConfigGroupResource{Group: group, Resource: "foos"}
	e.cma(nil)
	e.updateCMA(func(cma *addonv1alpha1.ClusterManagementAddOn) {
		cma.Spec.SupportedConfigs = []addonv1alpha1.ConfigMeta{{ConfigGroupResource: fooRef}}
		cma.Spec.InstallStrategy.Placements = []addonv1alpha1.PlacementStrategy{{
			PlacementRef:    addonv1alpha1.PlacementRef{Namespace: e.name, Name: "p"},
			Configs:         []addonv1alpha1.AddOnConfig{{ConfigGroupResource: fooRef, ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: e.name, Name: "x"}}},
			RolloutStrategy: allStrategy,
		}}
	})
	other.ensureClusters("c1")
	other.placement("p", [][]string{{"c1"}})
	other.adc("v1", "1")
	other.cma(nil, install{placement: "p", config: "v1", strategy: allStrategy})

	c, err := New(cfg, Options{Coalesce: 50 * time.Millisecond, Only: []string{e.name, other.name}})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- c.Run(klog.NewContext(runCtx, ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(2)))))
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller: %v", err)
		}
	})

	// The other add-on is not held up.
	other.waitInstalled(30*time.Second, "v1", "c1")

	wantMsg := `forbidden: the controller may not list foos.` + group + ` (group "` + group + `", resource "foos"); grant list and watch on it, e.g. by labelling a ClusterRole addonops.io/aggregate-to-controller: "true"`
	e.waitFor(30*time.Second, "the progression to name the missing permission", func() bool {
		cond := e.rec.progression(e.name, "p")
		return cond != nil && strings.Contains(cond.Message, "config foos."+group+" "+e.name+"/x: "+wantMsg)
	})
	cond := e.rec.progression(e.name, "p")
	t.Logf("progression: %s %s", cond.Reason, cond.Message)
	if cond.Reason != addonstatus.ReasonConfigurationForbidden {
		t.Errorf("progression reason %s, want %s", cond.Reason, addonstatus.ReasonConfigurationForbidden)
	}
	e.waitEvent(30*time.Second, EventReasonConfigurationForbidden, wantMsg)

	// The lookup error is typed.
	_, lerr := c.hub.Configs.Lookup(configref.Ref{GroupResource: configref.GroupResource{Group: group, Resource: "foos"}, Namespace: e.name, Name: "x"})
	var ferr *hubcache.ForbiddenError
	if !errors.As(lerr, &ferr) || ferr.Verb != "list" || ferr.Group != group || ferr.Resource != "foos" {
		t.Errorf("lookup error %v (%T): want a *ForbiddenError for list %s foos", lerr, lerr, group)
	}

	// Once per problem, not per retry: the informer retries with backoff (0.8 s, 1.6 s, 3.2 s, ...).
	harness.Consistently(t, 8*time.Second, "each ConfigurationForbidden event once", func() string {
		for _, ev := range forbiddenEvents(t, e) {
			if ev.Count > 1 {
				return fmt.Sprintf("event repeated %d times: %s", ev.Count, ev.Message)
			}
		}
		return ""
	}, harness.Every(500*time.Millisecond))
	// Two events, each once: the config kind's (for every add-on referencing it) and the waiting
	// placement's (its progression entered ConfigurationForbidden).
	onceEach := func(when string) {
		t.Helper()
		evs := forbiddenEvents(t, e)
		kind, placement := 0, 0
		for _, ev := range evs {
			switch {
			case ev.Count != 1:
				t.Errorf("%s: event repeated %d times: %s", when, ev.Count, ev.Message)
			case strings.HasPrefix(ev.Message, "config kind "+wantMsg):
				kind++
			case strings.HasPrefix(ev.Message, "placement "+e.name+"/p: placement "+e.name+"/p waits for its configs:") && strings.Contains(ev.Message, wantMsg):
				placement++
			default:
				t.Errorf("%s: unexpected event %s", when, ev.Message)
			}
		}
		if kind != 1 || placement != 1 {
			t.Errorf("%s: want one config-kind and one placement ConfigurationForbidden event, got %d and %d: %+v", when, kind, placement, evs)
		}
	}
	onceEach("while forbidden")
	if e.rec.mca(e.cluster("c1")) != nil && len(rolloutplan.Desired(e.rec.mca(e.cluster("c1")))) > 0 {
		t.Errorf("the cluster was told to run a config nobody could hash: %s", state(e.rec.mca(e.cluster("c1"))))
	}

	// Granting the permission lets the add-on proceed, with no further event.
	granted := time.Now()
	bind("foos", rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{"foos"}, Verbs: []string{"get", "list", "watch"}})
	e.waitInstalled(60*time.Second, "x", "c1")
	t.Logf("installed %s after the permission was granted", time.Since(granted).Round(time.Millisecond))
	if cond := e.rec.progression(e.name, "p"); cond == nil || cond.Reason != addonstatus.ReasonInstallSucceed {
		e.waitProgression(10*time.Second, "p", addonstatus.ReasonInstallSucceed, "")
	}
	onceEach("after the grant")
}

func forbiddenEvents(t *testing.T, e *env) []corev1.Event {
	t.Helper()
	evs, err := e.c.Kube.CoreV1().Events("").List(e.ctx, metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.name": e.name, "involvedObject.kind": "ClusterManagementAddOn", "reason": EventReasonConfigurationForbidden}.String(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return evs.Items
}

// fooCRD installs a namespaced CRD for gvr (kind Foo) and waits until it is served.
func fooCRD(t *testing.T, e *env, gvr schema.GroupVersionResource) {
	t.Helper()
	name := gvr.Resource + "." + gvr.Group
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"group": gvr.Group, "scope": "Namespaced",
			"names": map[string]any{"plural": gvr.Resource, "singular": "foo", "kind": "Foo", "listKind": "FooList"},
			"versions": []any{map[string]any{"name": gvr.Version, "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}},
	}}
	if err := localhub.ApplyCRDs(e.ctx, e.c, "addonops-test", []*unstructured.Unstructured{crd}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.c.APIExtensions.ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

func ptrTo[T any](v T) *T { return &v }
