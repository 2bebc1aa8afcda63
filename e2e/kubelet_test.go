//go:build integration

package e2e

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
)

// kubelet plays, for the agents' Deployments, what the kubelet and the Deployment controller do on
// a managed cluster (neither runs here): once a Deployment's spec changed, it reports the new
// generation rolled out and every replica ready — unless one of its containers runs an image
// marked bad, whose pods never become ready (a crash-looping agent): then no replica is ready.
// The work agents report that status through status feedback, from which the add-on's health
// (MCA Available) is computed, which gates every rollout.
type kubelet struct {
	mu   sync.Mutex
	bad  []string        // images whose pods never become ready
	held map[string]bool // Deployments held unready whatever their image (see hold)
	// resync sets the status of the named Deployment again.
	resync func(name string)
}

// markBad makes Deployments running image never ready from now on.
func (k *kubelet) markBad(image string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.bad = append(k.bad, image)
}

// hold makes Deployment name report no ready replica at once, whatever it runs, until unhold: a
// test that rolls out a bad version calls it before the cluster is told that version, so the
// status feedback the work agent reports for the new version is never the old one's readiness.
func (k *kubelet) hold(name string) {
	k.mu.Lock()
	if k.held == nil {
		k.held = map[string]bool{}
	}
	changed := !k.held[name]
	k.held[name] = true
	k.mu.Unlock()
	if changed {
		k.resync(name)
	}
}

// unhold ends hold: the Deployment is ready again unless its image is bad.
func (k *kubelet) unhold(name string) {
	k.mu.Lock()
	changed := k.held[name]
	delete(k.held, name)
	k.mu.Unlock()
	if changed {
		k.resync(name)
	}
}

func (k *kubelet) isBad(d *appsv1.Deployment) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.held[d.Name] {
		return true
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if slices.Contains(k.bad, c.Image) {
			return true
		}
	}
	return false
}

// startKubelet runs the simulation on the agents' install namespace until the suite ends.
func (s *suite) startKubelet(t *testing.T) *kubelet {
	t.Helper()
	t.Logf("no kubelet runs: the suite reports the agent Deployments in %s rolled out and ready itself, except for images it marks bad", installNamespace)
	k := &kubelet{}
	factory := informers.NewSharedInformerFactoryWithOptions(s.c.Kube, 0, informers.WithNamespace(installNamespace))
	inf := factory.Apps().V1().Deployments().Informer()
	deps := s.c.Kube.AppsV1().Deployments(installNamespace)
	sync := func(obj any) {
		d, ok := obj.(*appsv1.Deployment)
		if !ok {
			return
		}
		if equality.Semantic.DeepEqual(d.Status, k.statusOf(d)) {
			return
		}
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := deps.Get(s.ctx, d.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Status = k.statusOf(cur)
			_, err = deps.UpdateStatus(s.ctx, cur, metav1.UpdateOptions{})
			return err
		})
		if err != nil && s.ctx.Err() == nil {
			t.Logf("kubelet: setting the status of Deployment %s: %v", d.Name, err)
		}
	}
	k.resync = func(name string) {
		if d, err := deps.Get(s.ctx, name, metav1.GetOptions{}); err == nil {
			sync(d)
		} else if s.ctx.Err() == nil {
			t.Logf("kubelet: reading Deployment %s: %v", name, err)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: sync, UpdateFunc: func(_, cur any) { sync(cur) }}); err != nil {
		t.Fatal(err)
	}
	factory.Start(s.ctx.Done())
	ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("kubelet: the Deployment cache did not sync")
	}
	return k
}

// statusOf is the status the cluster would report for d.
func (k *kubelet) statusOf(d *appsv1.Deployment) appsv1.DeploymentStatus {
	replicas := int32(1)
	if d.Spec.Replicas != nil {
		replicas = *d.Spec.Replicas
	}
	ready := replicas
	if k.isBad(d) {
		ready = 0
	}
	return appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: replicas, UpdatedReplicas: replicas, ReadyReplicas: ready, AvailableReplicas: ready}
}
