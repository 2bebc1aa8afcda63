package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/addonops/addonops/internal/krmfn"
	"github.com/addonops/addonops/internal/spechash"
)

// transform runs the function on plain YAML with an optional functionConfig and returns the output,
// the results (as "severity: message" lines) and the exit code.
func transform(t *testing.T, input, config string) (string, []string, int) {
	t.Helper()
	var cfg *yaml.RNode
	if config != "" {
		cfg = yaml.MustParse(config)
	}
	var out, errw bytes.Buffer
	var stream *krmfn.Stream
	code := krmfn.ExecuteStream("config-hash", krmfn.Input{Stdin: strings.NewReader(input), FunctionConfig: cfg}, func(s *krmfn.Stream) (krmfn.Transform, error) {
		stream = s
		return process(s)
	}, &out, &errw)
	var results framework.Results
	if stream != nil {
		results = stream.Results
	}
	var lines []string
	for _, r := range results {
		lines = append(lines, string(r.Severity)+": "+r.Message)
	}
	return out.String(), lines, code
}

func mustHash(t *testing.T, doc string) string {
	t.Helper()
	h, err := contentHash(yaml.MustParse(doc))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// The hash is OCM's spec hash of what the API server receives: the vector is OCM's own.
func TestContentHashIsOCMSpecHash(t *testing.T) {
	adc := `apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnDeploymentConfig
metadata:
  name: x
  namespace: y
  annotations: {addonops.io/base-name: x}
spec:
  agentInstallNamespace: open-cluster-management-agent-addon
  customizedVariables:
  - name: test
    value: test
  proxyConfig: {}
status: {anything: 1}
`
	if got := mustHash(t, adc); got != "ea4e6089e8b2f584c1cd8b86e16a15df3186b30744f433ede7436091c93a4cc7" {
		t.Fatalf("hash = %s, want OCM's ea4e6089…", got)
	}
}

func TestContentHashIgnoresFormatting(t *testing.T) {
	base := `apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnDeploymentConfig
metadata:
  name: a
  namespace: ns
spec:
  agentInstallNamespace: agents
  nodePlacement:
    nodeSelector:
      role: infra
  customizedVariables:
  - name: LOG_LEVEL
    value: "2"
  - name: SINCE
    value: "2024-01-01"
`
	same := map[string]string{
		"comments": `# head comment
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnDeploymentConfig
metadata:
  name: a # trailing
  namespace: ns
spec:
  # about the namespace
  agentInstallNamespace: agents
  nodePlacement:
    nodeSelector:
      role: infra
  customizedVariables:
  - name: LOG_LEVEL
    value: "2" # two
  - name: SINCE
    value: "2024-01-01"
`,
		"key order, flow style, indentation, quoting": `kind: AddOnDeploymentConfig
spec:
    customizedVariables: [{value: '2', name: LOG_LEVEL}, {name: "SINCE", value: '2024-01-01'}]
    nodePlacement: {nodeSelector: {"role": 'infra'}}
    agentInstallNamespace: "agents"
metadata: {namespace: ns, name: a}
apiVersion: addon.open-cluster-management.io/v1alpha1
`,
		"metadata and status": strings.Replace(base, "  namespace: ns\n", "  namespace: other\n  labels: {a: b}\n  annotations: {x: y}\n", 1) + "status:\n  x: 1\n",
		"apiVersion":          strings.Replace(base, "v1alpha1", "v1beta1", 1),
	}
	want := mustHash(t, base)
	for name, doc := range same {
		if got := mustHash(t, doc); got != want {
			t.Errorf("%s changed the hash: %s, want %s", name, got, want)
		}
	}
	different := map[string]string{
		"value":          strings.Replace(base, "role: infra", "role: worker", 1),
		"string vs int":  strings.Replace(base, `value: "2"`, `value: 2`, 1),
		"list order":     strings.Replace(strings.Replace(base, "LOG_LEVEL", "TMP", 1), "SINCE", "LOG_LEVEL", 1),
		"top-level data": base + "data: {k: v}\n",
	}
	for name, doc := range different {
		if got := mustHash(t, doc); got == want {
			t.Errorf("a %s change kept the hash", name)
		}
	}
}

// kubectl and Argo CD read YAML with sigs.k8s.io/yaml: an unquoted date stays the same string, so
// quoting it must not change the hash.
func TestContentHashReadsYAMLLikeKubectl(t *testing.T) {
	a := mustHash(t, "kind: X\nspec: {since: 2024-01-01}\n")
	b := mustHash(t, "kind: X\nspec: {since: '2024-01-01'}\n")
	if a != b {
		t.Fatalf("quoting a date changed the hash: %s vs %s", a, b)
	}
}

func TestIsSuffixed(t *testing.T) {
	cases := []struct {
		name, base string
		want       bool
	}{
		{"hello-5d7b6k8mf9", "hello", true},
		{"hello", "hello", false},
		{"hello-5d7b6k8mf", "hello", false},   // 9 characters
		{"hello-5d7b6k8mf99", "hello", false}, // 11
		{"hello-5d7b6k8mf1", "hello", false},  // 1 is never in a suffix
		{"hello-x-5d7b6k8mf9", "hello", false},
		{"hi-hello-5d7b6k8mf9", "hello", false},
		{"a-b-gggggggggg", "a-b", true},
	}
	for _, tc := range cases {
		if got := isSuffixed(tc.name, tc.base); got != tc.want {
			t.Errorf("isSuffixed(%q, %q) = %t", tc.name, tc.base, got)
		}
	}
	// Every suffix spechash makes is recognised.
	for _, h := range []string{"0123456789abcdef", "fedcba9876543210", "eeeeeeeeee", "3333333333"} {
		s, err := spechash.Suffix(h)
		if err != nil {
			t.Fatal(err)
		}
		if !isSuffixed("x-"+s, "x") {
			t.Errorf("suffix %q of %s not recognised", s, h)
		}
	}
}

func TestParseConfig(t *testing.T) {
	cases := []struct {
		name, config, wantErr string
		check                 func(t *testing.T, s settings)
	}{
		{name: "none", check: func(t *testing.T, s settings) {
			if !s.pruneProtection || len(s.hashKinds) != 0 {
				t.Fatalf("defaults = %+v", s)
			}
		}},
		{name: "typed, every field", config: `apiVersion: addonops.io/v1alpha1
kind: ConfigHash
metadata:
  name: x
  annotations: {config.kubernetes.io/function: "exec: {path: x}", config.kubernetes.io/local-config: "true"}
spec:
  kinds: [{group: example.com, kind: Widget}, {group: "", kind: ConfigMap}]
  resources: [{group: example.com, kind: Widget, resource: widgets, scope: Cluster}]
  nameLimits: [{group: example.com, kind: Widget, maxLength: 63}]
  pruneProtection: false
`, check: func(t *testing.T, s settings) {
			if s.pruneProtection || !s.hashKinds[groupKind{"example.com", "Widget"}] || !s.hashKinds[groupKind{"", "ConfigMap"}] ||
				len(s.resources) != 1 || s.resources[0].Namespaced || s.nameLimits[groupKind{"example.com", "Widget"}] != 63 {
				t.Fatalf("settings = %+v", s)
			}
		}},
		{name: "empty spec", config: "apiVersion: addonops.io/v1alpha1\nkind: ConfigHash\nmetadata: {name: x}\n"},
		{name: "ConfigMap", config: `apiVersion: v1
kind: ConfigMap
metadata: {name: x}
data:
  pruneProtection: "false"
  kinds: |
    - {group: example.com, kind: Widget}
  nameLimits: ""
`, check: func(t *testing.T, s settings) {
			if s.pruneProtection || !s.hashKinds[groupKind{"example.com", "Widget"}] {
				t.Fatalf("settings = %+v", s)
			}
		}},
		{name: "unknown spec field", config: "apiVersion: addonops.io/v1alpha1\nkind: ConfigHash\nspec: {pruneProtecton: false}\n",
			wantErr: `functionConfig spec: unknown field "pruneProtecton" (known fields: kinds, nameLimits, pruneProtection, resources, strict)`},
		{name: "unknown nested field", config: "apiVersion: addonops.io/v1alpha1\nkind: ConfigHash\nspec: {resources: [{group: a, kind: B, plural: bs}]}\n",
			wantErr: `functionConfig spec.resources[0]: unknown field "plural" (known fields: group, kind, resource, scope)`},
		{name: "unknown top-level field", config: "apiVersion: addonops.io/v1alpha1\nkind: ConfigHash\nkinds: []\n",
			wantErr: `functionConfig ConfigHash: unknown field "kinds" (known fields: apiVersion, kind, metadata, spec)`},
		{name: "unknown ConfigMap key", config: "apiVersion: v1\nkind: ConfigMap\ndata: {prune: 'false'}\n",
			wantErr: `functionConfig data: unknown field "prune"`},
		{name: "wrong type", config: "apiVersion: addonops.io/v1alpha1\nkind: ConfigHash\nspec: {pruneProtection: maybe}\n",
			wantErr: "cannot unmarshal string"},
		{name: "not a list", config: "apiVersion: addonops.io/v1alpha1\nkind: ConfigHash\nspec: {kinds: {group: a}}\n",
			wantErr: "functionConfig spec.kinds: must be a list"},
		{name: "group missing", config: "apiVersion: addonops.io/v1alpha1\nkind: ConfigHash\nspec: {kinds: [{kind: Widget}]}\n",
			wantErr: `functionConfig spec.kinds[0]: group is required (write group: "" for the core API group)`},
		{name: "bad scope", config: "apiVersion: addonops.io/v1alpha1\nkind: ConfigHash\nspec: {resources: [{group: a, kind: B, resource: bs, scope: namespaced}]}\n",
			wantErr: `scope must be Namespaced or Cluster, got "namespaced"`},
		{name: "resource missing", config: "apiVersion: addonops.io/v1alpha1\nkind: ConfigHash\nspec: {resources: [{group: a, kind: Bee, scope: Cluster}]}\n",
			wantErr: "resource is required: the lowercase plural, e.g. bees"},
		{name: "limit too small", config: "apiVersion: addonops.io/v1alpha1\nkind: ConfigHash\nspec: {nameLimits: [{group: a, kind: B, maxLength: 11}]}\n",
			wantErr: "maxLength must be between 12 and 253, got 11"},
		{name: "other kind", config: "apiVersion: fn.kpt.dev/v1alpha1\nkind: SetNamespace\n",
			wantErr: "functionConfig must be addonops.io/v1alpha1 ConfigHash or v1 ConfigMap, got fn.kpt.dev/v1alpha1 SetNamespace"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var fc *yaml.RNode
			if tc.config != "" {
				fc = yaml.MustParse(tc.config)
			}
			s, err := parseConfig(fc)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.check != nil {
				tc.check(t, s)
			}
		})
	}
}

func TestOptionLists(t *testing.T) {
	add := []struct{ opts, want string }{
		{"", "IgnoreExtraneous"},
		{" , ", "IgnoreExtraneous"},
		{"ServerSideDiff=true", "ServerSideDiff=true,IgnoreExtraneous"},
		{"ServerSideDiff=true, ", "ServerSideDiff=true,IgnoreExtraneous"},
		{"IgnoreExtraneous", "IgnoreExtraneous"},
		{"A=1, IgnoreExtraneous ,B=2", "A=1, IgnoreExtraneous ,B=2"},
	}
	for _, c := range add {
		if got := addOption(c.opts, "IgnoreExtraneous"); got != c.want {
			t.Errorf("addOption(%q) = %q, want %q", c.opts, got, c.want)
		}
	}
	remove := []struct{ opts, want string }{
		{"Prune=false", ""},
		{"Prune=confirm", "Prune=confirm"},
		{"ServerSideApply=true, Prune=false,Validate=false", "ServerSideApply=true,Validate=false"},
		{"Prune=false, Validate=false", "Validate=false"},
		{"Validate=false,Prune=false", "Validate=false"},
		{"Validate=false", "Validate=false"},
	}
	for _, c := range remove {
		if got := removeOption(c.opts, "Prune=false"); got != c.want {
			t.Errorf("removeOption(%q) = %q, want %q", c.opts, got, c.want)
		}
	}
}

func TestQuoteYAML11Booleans(t *testing.T) {
	obj := yaml.MustParse(`apiVersion: v1
kind: X
metadata: {name: yes, labels: {on: off}}
spec:
  a: yes
  b: [on, 'off', "N", true, yess, !!str no]
  Y: 1
`)
	found := quoteYAML11Booleans(obj)
	want := []yaml11Boolean{{"spec.a", "yes"}, {"spec.b[0]", "on"}, {"spec.Y (a key)", "Y"}}
	if !slices.Equal(found, want) {
		t.Errorf("found %v, want %v", found, want)
	}
	wantOut := `apiVersion: v1
kind: X
metadata: {name: yes, labels: {on: off}}
spec:
  a: "yes"
  b: ["on", 'off', "N", true, yess, !!str no]
  "Y": 1
`
	if got := obj.MustString(); got != wantOut {
		t.Errorf("output:\n%s\nwant:\n%s", got, wantOut)
	}
	// Quoted, the words hash like the strings kustomize hands the function.
	plain, err := contentHash(obj)
	if err != nil {
		t.Fatal(err)
	}
	quoted, err := contentHash(yaml.MustParse("apiVersion: v1\nkind: X\nmetadata: {name: x}\nspec: {a: \"yes\", b: [\"on\", \"off\", \"N\", true, yess, \"no\"], \"Y\": 1}\n"))
	if err != nil || plain != quoted {
		t.Errorf("hash %s, want %s (%v)", plain, quoted, err)
	}
}

// contentHash is OCM's spec hash of the object as written, without defaults (the tests' view of
// the content): every top-level field but apiVersion,
// kind, metadata and status.
func contentHash(node *yaml.RNode) (string, error) {
	obj, err := jsonObject(node)
	if err != nil {
		return "", err
	}
	return spechash.Of(obj)
}
