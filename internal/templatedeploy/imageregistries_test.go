//go:build integration

package templatedeploy_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/render"
	"github.com/addonops/addonops/internal/testing/localhub"
)

// setImageRegistries sets (or, with "", removes) a ManagedCluster's image-registries annotation.
func (e *env) setImageRegistries(cluster, value string) {
	e.t.Helper()
	api := e.c.Cluster.ClusterV1().ManagedClusters()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		mc, err := api.Get(e.ctx, cluster, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if value == "" {
			if _, ok := mc.Annotations[render.ImageRegistriesAnnotation]; !ok {
				return nil
			}
			delete(mc.Annotations, render.ImageRegistriesAnnotation)
		} else {
			if mc.Annotations == nil {
				mc.Annotations = map[string]string{}
			}
			mc.Annotations[render.ImageRegistriesAnnotation] = value
		}
		_, err = api.Update(e.ctx, mc, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		e.t.Fatalf("setting the image-registries annotation of %s: %v", cluster, err)
	}
}

// registries is the annotation value, in the shape OCM reads: one mirror for source.
func registries(source, mirror string) string {
	b, _ := json.Marshal(map[string]any{"registries": []map[string]string{{"mirror": mirror, "source": source}}})
	return string(b)
}

// agentImage is the image of the agent Deployment in a cluster's deploy work, with the work's
// resourceVersion; "" when there is no work or Deployment yet.
func (e *env) agentImage(cluster string) (image, resourceVersion string) {
	w := e.work(cluster, "addon-"+e.addon+"-deploy-0")
	if w == nil {
		return "", ""
	}
	for _, m := range w.Spec.Workload.Manifests {
		var d appsv1.Deployment
		if json.Unmarshal(m.Raw, &d) == nil && d.Kind == "Deployment" && len(d.Spec.Template.Spec.Containers) > 0 {
			return d.Spec.Template.Spec.Containers[0].Image, w.ResourceVersion
		}
	}
	return "", w.ResourceVersion
}

// TestImageRegistriesAnnotation: under --deploy-templates the ManagedCluster's
// open-cluster-management.io/image-registries annotation is rendered into that cluster's work
// only; changing it re-renders the work at once (it is not a config: no rollout, the MCA's
// desired configs and the work's config-spec-hash stay as they are), as OCM's template manager
// does (AgentDeployTriggerClusterFilter), and removing it restores the template's image.
func TestImageRegistriesAnnotation(t *testing.T) {
	const (
		addon    = "imgreg"
		c1, c2   = "imgreg1", "imgreg2"
		original = "quay.io/example/agent:v1"
	)
	e := newEnv(t, addon, envOptions{})
	for _, c := range []string{c1, c2} {
		if _, err := localhub.EnsureManagedCluster(e.ctx, e.c, c, nil); err != nil {
			t.Fatal(err)
		}
		e.setImageRegistries(c, "") // a previous run (-count) may have left it
	}
	t.Cleanup(func() { e.setImageRegistries(c1, "") })
	e.setImageRegistries(c1, registries("quay.io/example", "mirror.example.com/example"))
	e.apply(fmt.Sprintf(`apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnTemplate
metadata: {name: imgreg-v1}
spec:
  addonName: %[1]s
  agentSpec:
    workload:
      manifests:
      - apiVersion: apps/v1
        kind: Deployment
        metadata: {name: %[1]s-agent, namespace: default}
        spec:
          replicas: 1
          selector: {matchLabels: {app: %[1]s}}
          template:
            metadata: {labels: {app: %[1]s}}
            spec:
              containers: [{name: agent, image: %[2]q}]
`, addon, original))
	e.cleanup(c1, c2)
	e.cma("imgreg-v1", "")
	e.mca(c1)
	e.mca(c2)

	expectImage := func(timeout time.Duration, cluster, want string) time.Duration {
		t.Helper()
		return e.waitFor(timeout, cluster+" work with image "+want, func() string {
			if got, _ := e.agentImage(cluster); got != want {
				return fmt.Sprintf("image %q; MCA Configured %s, ManifestApplied %s", got, condition(e.getMCA(cluster), "Configured"),
					condition(e.getMCA(cluster), "ManifestApplied"))
			}
			return ""
		})
	}
	expectImage(time.Minute, c1, "mirror.example.com/example/agent:v1")
	expectImage(time.Minute, c2, original)

	// What the rollout knows of cluster1 before the annotation changes.
	type snapshot struct {
		Desired    []addonv1alpha1.ConfigReference
		Configured metav1.ConditionStatus
		Hashes     map[string]string
	}
	snap := func(cluster string) snapshot {
		m := e.getMCA(cluster)
		s := snapshot{Desired: m.Status.ConfigReferences, Hashes: configHashes(e.work(cluster, "addon-"+addon+"-deploy-0"))}
		for i := range s.Desired {
			// Written when the work's configs are applied; the rest says what the cluster runs.
			s.Desired[i].LastAppliedConfig = nil
		}
		if c := meta.FindStatusCondition(m.Status.Conditions, "Configured"); c != nil {
			s.Configured = c.Status
		}
		return s
	}
	before := snap(c1)
	if before.Configured != metav1.ConditionTrue || len(before.Hashes) != 1 {
		t.Fatalf("cluster1 before the change: %+v", before)
	}
	_, rv2 := e.agentImage(c2)

	// Another mirror: re-rendered at once, not paced as a config change.
	e.setImageRegistries(c1, registries("quay.io/example", "mirror2.example.com/mirrored"))
	took := expectImage(15*time.Second, c1, "mirror2.example.com/mirrored/agent:v1")
	t.Logf("cluster1's work re-rendered %v after the annotation changed", took.Round(time.Millisecond))
	if diff := cmp.Diff(before, snap(c1)); diff != "" {
		t.Errorf("an annotation change moved cluster1's configs (-before +after):\n%s", diff)
	}

	// Removed: the template's own image again.
	e.setImageRegistries(c1, "")
	expectImage(15*time.Second, c1, original)
	if diff := cmp.Diff(before, snap(c1)); diff != "" {
		t.Errorf("removing the annotation moved cluster1's configs (-before +after):\n%s", diff)
	}

	// cluster2 never had the annotation: its work was not written again.
	if img, rv := e.agentImage(c2); img != original || rv != rv2 {
		t.Errorf("cluster2's work: image %q resourceVersion %s -> %s, want %q unchanged", img, rv2, rv, original)
	}
}
