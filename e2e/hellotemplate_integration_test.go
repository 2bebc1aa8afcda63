//go:build integration

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/addonops/addonops/internal/testing/ssapply"
)

const (
	helloAddon     = "hello-template"
	helloPlacement = "default/hello-template-placement"
)

func helloAgentName(cluster string) string { return "hello-template-agent-" + cluster }

// testHelloTemplate applies examples/hello-template, then its upgrade/ overlay.
func testHelloTemplate(t *testing.T, s *suite) {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	mcas := s.recordMCAs(ctx, t, helloAddon)
	cma := s.recordCMA(ctx, t, helloAddon)

	var baseADC string
	for i, step := range []struct{ name, overlay, example string }{
		{"base", "e2e/testdata/hello-template/base", "examples/hello-template"},
		{"upgrade", "e2e/testdata/hello-template/upgrade", "examples/hello-template/upgrade"},
	} {
		completed := false // the step reached its end state, whatever the checks found
		t.Run(step.name, func(t *testing.T) {
			started := time.Now()
			objs, out := s.build(t, step.overlay)
			adc := only(t, objs, "AddOnDeploymentConfig")
			tpl := only(t, objs, "AddOnTemplate")
			expected := readYAML(t, step.example+"/expected/hub.yaml")
			if d := sameObject(adc, only(t, expected, "AddOnDeploymentConfig")); d != "" {
				t.Fatalf("the overlay's AddOnDeploymentConfig differs from the example's expected output:%s", d)
			}
			checkOverlayTemplate(t, tpl, only(t, expected, "AddOnTemplate"))
			if v := customizedVariable(adc, "LOG_LEVEL"); v != "4" {
				t.Fatalf("AddOnDeploymentConfig %s sets LOG_LEVEL=%q, want 4 (README)", adc.GetName(), v)
			}
			if i == 0 {
				baseADC = adc.GetName()
			} else if adc.GetName() != baseADC {
				t.Errorf("the upgrade renamed the config %s -> %s; the README says it keeps its name", baseADC, adc.GetName())
			}

			mcaMark, cmaMark := mcas.Mark(), cma.Mark()
			s.apply(t, objs)
			t.Logf("applied %d objects: template %s, config %s", len(objs), tpl.GetName(), adc.GetName())
			s.placementDecisions(t, "default", "hello-template-placement", decisionGroup{"", clusters})

			success := installSucceed
			want := []string{installing, installSucceed}
			if i > 0 {
				success = upgradeSucceed
				want = []string{installSucceed, upgrading, upgradeSucceed}
			}
			waitRecorded(t, s, mcas, "every cluster applied "+tpl.GetName(), func(m map[string]mcaSnap) string {
				for _, c := range clusters {
					got := m[c]
					if got.AppliedTpl != tpl.GetName() || got.DesiredTpl != tpl.GetName() || got.AppliedADC != adc.GetName() || got.Progressing != success {
						return fmt.Sprintf("%s (want template %s, adc %s, %s)", got, tpl.GetName(), adc.GetName(), success)
					}
				}
				return ""
			})
			waitRecorded(t, s, cma, "the install progression reports "+success, func(m map[string]progSnap) string {
				got := m[helloPlacement]
				if got.Reason != success || got.AppliedTpl != tpl.GetName() || got.GoodTpl != tpl.GetName() {
					return fmt.Sprintf("%s, want %s with template %s applied", got, success, tpl.GetName())
				}
				return ""
			})
			t.Logf("%s deployed after %s", step.name, time.Since(started).Round(100*time.Millisecond))
			completed = true

			start, events := mcas.Since(mcaMark)
			cstart, cevents := cma.Since(cmaMark)
			t.Logf("ManagedClusterAddOn changes:%s", eventLog(events))
			t.Logf("install progression changes:%s", eventLog(cevents))
			for _, c := range clusters {
				if got := reasonsOf(start, events, c, func(m mcaSnap) string { return m.Progressing }); !slices.Equal(got, want) {
					t.Errorf("%s: Progressing reasons %v, want %v", c, got, want)
				}
			}
			got := onlyValues(reasonsOf(cstart, cevents, helloPlacement, func(p progSnap) string { return p.Reason }), seedReasons...)
			if !slices.Equal(got, want) {
				t.Errorf("%s: Progressing reasons %v, want %v", helloPlacement, got, want)
			}

			s.checkHelloAgents(t, out, i > 0)
			if step.name == "base" {
				s.checkRegistration(t)
			}
			checkSuccessOnlyWhenAvailable(t, events)
			waitRecorded(t, s, mcas, "every add-on Available", func(m map[string]mcaSnap) string {
				for _, c := range clusters {
					if m[c].Available != "True/ProbeAvailable" {
						return m[c].String()
					}
				}
				return ""
			})
		})
		if !completed {
			t.Fatalf("%s did not complete; the upgrade builds on it", step.name)
		}
	}
}

// checkHelloAgents compares what each cluster's agent applied with what `addon-template render`
// previews for that cluster from the same build output: the preview a reviewer reads is what lands.
// For cluster1 it also compares with the example's committed preview (expected/cluster1.yaml),
// given the overlay's per-cluster names.
func (s *suite) checkHelloAgents(t *testing.T, hubYAML []byte, upgraded bool) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "hub.yaml")
	if err := os.WriteFile(file, hubYAML, 0o644); err != nil {
		t.Fatal(err)
	}
	example := "examples/hello-template/expected/cluster1.yaml"
	if upgraded {
		example = "examples/hello-template/upgrade/expected/cluster1.yaml"
	}
	committed := readYAML(t, example)
	for _, o := range committed {
		perCluster(o.Object, "-cluster1")
	}

	for _, c := range clusters {
		preview := s.render(t, file, c)
		if c == "cluster1" {
			if len(committed) != len(preview) {
				t.Errorf("preview of the e2e build has %d objects, the committed %s %d", len(preview), example, len(committed))
			}
			preview = append(preview, committed...)
		}
		for _, want := range preview {
			got, err := s.get(want.GroupVersionKind(), want.GetNamespace(), want.GetName())
			if err != nil {
				t.Errorf("%s: %s %s: %v", c, want.GetKind(), ssapply.Name(want), err)
				continue
			}
			if msg := s.appliedBy(got, c); msg != "" {
				t.Errorf("%s: %s %s", c, want.GetKind(), msg)
			}
			if path, ok := contains(toMap(t, got.Object), toMap(t, previewContent(want)), ""); !ok {
				t.Errorf("%s: %s %s on the cluster differs from the preview at %s", c, want.GetKind(), ssapply.Name(want), path)
			}
		}

		// What the README promises, spelled out.
		d, err := s.c.Kube.AppsV1().Deployments(installNamespace).Get(s.ctx, helloAgentName(c), metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s: %v", c, err)
			continue
		}
		args := d.Spec.Template.Spec.Containers[0].Args
		for _, a := range []string{"--cluster-name=" + c, "--v=4", "--hub-kubeconfig=/managed/hub-kubeconfig/kubeconfig"} {
			if !slices.Contains(args, a) {
				t.Errorf("%s: agent args %v lack %s", c, args, a)
			}
		}
		v2 := d.Labels["addon-template-version"] == "v2" && d.Spec.Template.Labels["addon-template-version"] == "v2"
		if v2 != upgraded {
			t.Errorf("%s: Deployment labels %v, pod labels %v; upgraded=%v", c, d.Labels, d.Spec.Template.Labels, upgraded)
		}
	}
}

// render runs `addon-template render --cluster cluster file`.
func (s *suite) render(t *testing.T, file, cluster string) []*unstructured.Unstructured {
	t.Helper()
	cmd := exec.CommandContext(s.ctx, filepath.Join(tools.Bin, "addon-template"), "render", "--cluster", cluster, file)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("addon-template render --cluster %s: %v\n%s", cluster, err, stderr.String())
	}
	objs, err := ssapply.Decode(&stdout)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// previewContent is a preview object without what only the preview carries: its annotations
// (local-config, the preview's cluster and template) and the empty status the typed round trip
// prints.
func previewContent(o *unstructured.Unstructured) map[string]any {
	c := o.DeepCopy()
	ann := c.GetAnnotations()
	for k := range ann {
		if k == "config.kubernetes.io/local-config" || strings.HasPrefix(k, "addonops.io/preview-") {
			delete(ann, k)
		}
	}
	if len(ann) == 0 {
		unstructured.RemoveNestedField(c.Object, "metadata", "annotations")
	} else {
		c.SetAnnotations(ann)
	}
	unstructured.RemoveNestedField(c.Object, "status")
	return c.Object
}

// checkRegistration: the template's KubeClient registration bound the example's ClusterRole in
// every cluster namespace for the agent's user (OCM's names:
// docs/design/addon-template.md#registration).
func (s *suite) checkRegistration(t *testing.T) {
	t.Helper()
	for _, c := range clusters {
		name := "open-cluster-management:" + helloAddon + ":clusterrole:agent"
		user := fmt.Sprintf("system:open-cluster-management:cluster:%s:addon:%s:agent:%s-agent", c, helloAddon, helloAddon)
		s.eventually(t, c+": the agent's hub RoleBinding", func() string {
			rb, err := s.c.Kube.RbacV1().RoleBindings(c).Get(s.ctx, name, metav1.GetOptions{})
			if err != nil {
				return err.Error()
			}
			if rb.RoleRef.Kind != "ClusterRole" || rb.RoleRef.Name != "hello-template-agent-hub" {
				return fmt.Sprintf("roleRef %+v, want ClusterRole hello-template-agent-hub", rb.RoleRef)
			}
			if !slices.ContainsFunc(rb.Subjects, func(s rbacv1.Subject) bool { return s.Kind == "User" && s.Name == user }) {
				return fmt.Sprintf("subjects %+v lack User %s", rb.Subjects, user)
			}
			return ""
		})
	}
}

func hasEnv(env []corev1.EnvVar, name, value string) bool {
	return slices.ContainsFunc(env, func(e corev1.EnvVar) bool { return e.Name == name && e.Value == value })
}
