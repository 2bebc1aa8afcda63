package hubcache

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/render"
)

// typedLimit bounds the typed configs kept: far more versions than a hub renders at once (each
// add-on renders one or two template versions and a handful of deployment configs at a time).
const typedLimit = 256

// typedConfigs converts cached AddOnTemplates and AddOnDeploymentConfigs to their Go types, and
// compiles templates, once per object version (UID and resourceVersion): every cluster of an
// add-on renders the same template, and its deployer and registration look at it on every event
// of every cluster. Converting and compiling it again each time was a quarter of the controller's
// CPU in `make bench-controller` at 1,000 clusters. What it returns is shared: read it, never
// change it.
type typedConfigs struct {
	mu        sync.Mutex
	templates map[string]*typedTemplate
	adcs      map[string]*typedADC
}

type typedTemplate struct {
	t        *addonv1alpha1.AddOnTemplate
	err      error // decoding
	renderer *render.Renderer
	compile  error
	// namespace is the template's part of its agent install namespace
	// (render.TemplateInstallNamespace decodes its manifests: registration asks on every sync).
	namespace string
}

type typedADC struct {
	adc *addonv1alpha1.AddOnDeploymentConfig
	err error
}

func newTypedConfigs() *typedConfigs {
	return &typedConfigs{templates: map[string]*typedTemplate{}, adcs: map[string]*typedADC{}}
}

func versionKey(u *unstructured.Unstructured) string {
	return string(u.GetUID()) + "@" + u.GetResourceVersion()
}

// template and adc convert u, once per version; a nil c (a Desired built by hand) converts it each
// time.
func (c *typedConfigs) template(u *unstructured.Unstructured) *typedTemplate {
	return memoVersion(c, func(c *typedConfigs) map[string]*typedTemplate { return c.templates }, u, func() *typedTemplate {
		t := &typedTemplate{t: &addonv1alpha1.AddOnTemplate{}}
		if t.err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, t.t); t.err == nil {
			t.renderer, t.compile = render.Compile(t.t)
			t.namespace = render.TemplateInstallNamespace(t.t)
		}
		return t
	})
}

func (c *typedConfigs) adc(u *unstructured.Unstructured) *typedADC {
	return memoVersion(c, func(c *typedConfigs) map[string]*typedADC { return c.adcs }, u, func() *typedADC {
		a := &typedADC{adc: &addonv1alpha1.AddOnDeploymentConfig{}}
		a.err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, a.adc)
		return a
	})
}

// memoVersion returns what c's map holds for u's version, or builds it (under c.mu: two syncs of
// one version convert it once), starting the map over when it holds typedLimit versions.
func memoVersion[T any](c *typedConfigs, mapOf func(*typedConfigs) map[string]T, u *unstructured.Unstructured, build func() T) T {
	if c == nil {
		return build()
	}
	key := versionKey(u)
	c.mu.Lock()
	defer c.mu.Unlock()
	m := mapOf(c)
	if v, ok := m[key]; ok {
		return v
	}
	v := build()
	if len(m) >= typedLimit {
		clear(m)
	}
	m[key] = v
	return v
}

// Renderer returns the desired template compiled for rendering (render.Compile), once per
// template version. It is shared: Render is safe for concurrent use.
func (d Desired) Renderer() (*render.Renderer, error) {
	if d.Template == nil || d.Template.Object == nil {
		return nil, fmt.Errorf("no AddOnTemplate to render")
	}
	t := d.typed.template(d.Template.Object)
	if t.err != nil {
		return nil, fmt.Errorf("decoding %s: %w", d.Template.Ref, t.err)
	}
	return t.renderer, t.compile
}

// InstallNamespace is the agent install namespace of the desired template and deployment configs
// (render.AgentInstallNamespace, with the first deployment config), the template's part once per
// template version.
func (d Desired) InstallNamespace() (string, error) {
	if d.Template == nil || d.Template.Object == nil {
		return "", fmt.Errorf("no AddOnTemplate")
	}
	t := d.typed.template(d.Template.Object)
	if t.err != nil {
		return "", fmt.Errorf("decoding %s: %w", d.Template.Ref, t.err)
	}
	_, adcs, err := d.Typed()
	if err != nil {
		return "", err
	}
	var adc *addonv1alpha1.AddOnDeploymentConfig
	if len(adcs) > 0 {
		adc = adcs[0]
	}
	return render.InstallNamespaceWith(t.namespace, adc), nil
}
