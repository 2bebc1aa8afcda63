//go:build integration

package hubcheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/spechash"
	"github.com/addonops/addonops/internal/testing/krmfntest"
	"github.com/addonops/addonops/internal/testing/localhub"
)

// bin holds the freshly built functions.
var bin string

func TestMain(m *testing.M) {
	code := func() int {
		dir, err := os.MkdirTemp("", "hubcheck-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		bin = dir + string(filepath.Separator)
		if err := krmfntest.Build("", bin, "../config-hash", "../addon-template", "../rollout-strategy"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return localhub.RunTests(m)
	}()
	os.Exit(code)
}

const namespace = "hubcheck"

// build runs the functions the way the examples chain them (rollout-strategy, addon-template
// validate, config-hash) on a plain YAML stream and returns the output, or the first failure.
func build(t *testing.T, input string) (string, error) {
	t.Helper()
	validate := filepath.Join(t.TempDir(), "validate.yaml")
	if err := os.WriteFile(validate, []byte("apiVersion: addonops.io/v1alpha1\nkind: AddOnTemplateFunction\nmetadata: {name: v}\nspec: {mode: validate}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	steps := [][]string{{"rollout-strategy"}, {"addon-template", "--config", validate}, {"config-hash"}}
	text := input
	for _, step := range steps {
		cmd := exec.Command(bin+step[0], step[1:]...)
		cmd.Stdin = strings.NewReader(text)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			if _, exited := err.(*exec.ExitError); !exited {
				t.Fatalf("running %s: %v", step[0], err)
			}
			return "", fmt.Errorf("%s: %s", step[0], strings.TrimSpace(errOut.String()))
		}
		text = out.String()
	}
	return text, nil
}

// objects reads a YAML stream the way kubectl does (which refuses duplicate keys, for one).
func objects(text string) ([]*unstructured.Unstructured, error) {
	dec := k8syaml.NewYAMLOrJSONDecoder(strings.NewReader(text), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, err
		}
		if m != nil {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}

var resources = map[string]schema.GroupVersionResource{
	"AddOnDeploymentConfig":  {Group: configref.AddonGroup, Version: "v1alpha1", Resource: "addondeploymentconfigs"},
	"AddOnTemplate":          {Group: configref.AddonGroup, Version: "v1alpha1", Resource: "addontemplates"},
	"ClusterManagementAddOn": {Group: configref.AddonGroup, Version: "v1alpha1", Resource: "clustermanagementaddons"},
	"Placement":              {Group: "cluster.open-cluster-management.io", Version: "v1beta1", Resource: "placements"},
	"Secret":                 {Version: "v1", Resource: "secrets"},
}

// create sends obj to the server as kubectl apply would (strict field validation), for real or
// as a dry run.
func create(ctx context.Context, t *testing.T, h *localhub.Hub, obj *unstructured.Unstructured, dryRun bool) (*unstructured.Unstructured, error) {
	t.Helper()
	gvr, ok := resources[obj.GetKind()]
	if !ok {
		t.Fatalf("no resource for kind %s", obj.GetKind())
	}
	opts := metav1.CreateOptions{FieldValidation: "Strict"}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	ri := h.Clients.Dynamic.Resource(gvr)
	if obj.GetNamespace() != "" {
		return ri.Namespace(obj.GetNamespace()).Create(ctx, obj, opts)
	}
	return ri.Create(ctx, obj, opts)
}

func adc(name, spec string) string {
	return fmt.Sprintf("apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: AddOnDeploymentConfig\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n%s", name, namespace, spec)
}

// template is an AddOnTemplate with one ConfigMap manifest, whose manifestConfigs entry gets
// rules (a conditionRules field) when given.
func template(name, rules string) string {
	t := `apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnTemplate
metadata:
  name: ` + name + `
spec:
  addonName: hubcheck
  agentSpec:
    workload:
      manifests:
      - apiVersion: v1
        kind: ConfigMap
        metadata: {name: hubcheck, namespace: open-cluster-management-agent-addon}
        data: {cluster: "{{CLUSTER_NAME}}"}
`
	if rules != "" {
		t += "    manifestConfigs:\n    - resourceIdentifier: {resource: configmaps, name: hubcheck, namespace: open-cluster-management-agent-addon}\n      " + rules + "\n"
	}
	return t
}

// TestBuildAcceptsWhatTheServerAccepts runs each input through the functions and through the API
// server: both accept it or both refuse it. An accepted input is then created for real, and every
// hashed config's name and content-hash annotation must be the spec hash of what the server stored.
func TestBuildAcceptsWhatTheServerAccepts(t *testing.T) {
	h := localhub.ForTest(t)
	ctx := context.Background()
	if _, err := h.Clients.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	long := strings.Repeat("a", 300)
	cases := []struct {
		name, input string
		accept      bool
	}{
		{"ADC with every field set", adc("full", "  agentInstallNamespace: hello-agent\n  customizedVariables:\n  - {name: LOG_LEVEL, value: debug}\n"), true},
		{"ADC defaulted by the server (no agentInstallNamespace)", adc("defaulted", "  customizedVariables:\n  - {name: LOG_LEVEL, value: info}\n"), true},
		{"ADC with an empty agentInstallNamespace", adc("empty-ns", "  agentInstallNamespace: \"\"\n"), true},
		{"ADC namespace with a line break", adc("newline", "  agentInstallNamespace: \"a\\nkind: Secret\"\n"), false},
		{"ADC namespace with a path", adc("path", "  agentInstallNamespace: ../../x\n"), false},
		{"ADC namespace in upper case", adc("upper", "  agentInstallNamespace: Kube-System\n"), false},
		{"ADC namespace of 300 characters", adc("long", "  agentInstallNamespace: "+long+"\n"), false},
		{"ADC variable value over 1,024 characters", adc("big-value", "  customizedVariables:\n  - {name: X, value: "+strings.Repeat("v", 1025)+"}\n"), false},
		{"ADC variable name that is not an identifier", adc("bad-var", "  customizedVariables:\n  - {name: 1x, value: v}\n"), false},
		{"ADC with an unknown field", adc("unknown", "  agentInstallNamespace: x\n  agentInstallNamespaces: y\n"), false},
		{"ADC with an annotation that is a boolean", adc("bool-annotation", "  agentInstallNamespace: x\n") + "---\n" + strings.Replace(adc("bool-annotation2", "  agentInstallNamespace: x\n"), "metadata:\n", "metadata:\n  annotations: {addonops.io/hash-suffix: true}\n", 1), false},
		{"ADC with a key twice", adc("twice", "  agentInstallNamespace: x\n  agentInstallNamespace: y\n"), false},
		{"ADC named with a space", adc("Hello World", "  agentInstallNamespace: x\n"), false},
		{"Secret config with stringData and no type", "apiVersion: v1\nkind: Secret\nmetadata: {name: token, namespace: " + namespace + ", annotations: {addonops.io/hash-suffix: 'true'}}\nstringData: {token: abc}\ndata: {other: eA==}\n", true},
		{"AddOnTemplate", template("hubcheck-fine", ""), true},
		{"AddOnTemplate with a CEL condition rule without condition", template("hubcheck-cel", `conditionRules: [{type: CEL, condition: "", celExpressions: ["true"]}]`), false},
		{"AddOnTemplate with two condition rules for one condition", template("hubcheck-listmap", `conditionRules: [{type: WellKnownConditions, condition: Available}, {type: CEL, condition: Available, celExpressions: ["true"]}]`), false},
		{"CMA with an unknown install strategy type", "apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: ClusterManagementAddOn\nmetadata: {name: hubcheck-bad-type}\nspec:\n  installStrategy: {type: Sometimes}\n", false},
		{"CMA manual install", "apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: ClusterManagementAddOn\nmetadata: {name: hubcheck-manual}\nspec:\n  installStrategy: {type: Manual}\n", true},
		{"Placement with a spread skew of 0", "apiVersion: cluster.open-cluster-management.io/v1beta1\nkind: Placement\nmetadata: {name: skew, namespace: " + namespace + "}\nspec:\n  spreadPolicy:\n    spreadConstraints: [{topologyKey: zone, topologyKeyType: Label, maxSkew: 0}]\n", false},
		{"Placement with an unknown field", "apiVersion: cluster.open-cluster-management.io/v1beta1\nkind: Placement\nmetadata: {name: rate, namespace: " + namespace + "}\nspec: {decisionStrategy: {}, schedulingPolicy: {}}\n", false},
		{"Placement", "apiVersion: cluster.open-cluster-management.io/v1beta1\nkind: Placement\nmetadata: {name: fine, namespace: " + namespace + "}\nspec: {numberOfClusters: 2}\n", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			objs, serverErr := objects(c.input)
			for _, obj := range objs {
				if _, err := create(ctx, t, h, obj, true); err != nil {
					serverErr = err
				}
			}
			out, buildErr := build(t, c.input)
			if (serverErr == nil) != c.accept {
				t.Fatalf("the API server accepted: %v (error %v), the case says %v: fix the case", serverErr == nil, serverErr, c.accept)
			}
			if (buildErr == nil) != c.accept {
				t.Fatalf("the build accepted: %v (error %v), the API server: %v (error %v)", buildErr == nil, buildErr, serverErr == nil, serverErr)
			}
			if !c.accept {
				return
			}
			built, err := objects(out)
			if err != nil {
				t.Fatalf("the build's output does not read back: %v\n%s", err, out)
			}
			for _, obj := range built {
				stored, err := create(ctx, t, h, obj, false)
				if err != nil {
					t.Fatalf("creating the build's %s %s: %v", obj.GetKind(), obj.GetName(), err)
				}
				want, hashed := obj.GetAnnotations()[configref.ContentHashAnnotation]
				if !hashed {
					continue
				}
				got, err := spechash.Of(stored.Object)
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("%s %s: config-hash named it for content hash %s, but OCM's spec hash of what the server stored is %s:\nbuilt:  %v\nstored: %v",
						obj.GetKind(), obj.GetName(), want, got, obj.Object["spec"], stored.Object["spec"])
				}
			}
		})
	}
}
