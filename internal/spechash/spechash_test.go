package spechash

import (
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The vectors are OCM's own (test/integration/addon/assertion_test.go), so a drift from OCM's
// algorithm fails here.
func TestOfMatchesOCMVectors(t *testing.T) {
	cases := []struct {
		name, doc, want string
	}{
		{"adc test", `{"apiVersion":"addon.open-cluster-management.io/v1alpha1","kind":"AddOnDeploymentConfig","metadata":{"name":"x","namespace":"y","generation":3},"spec":{"agentInstallNamespace":"open-cluster-management-agent-addon","customizedVariables":[{"name":"test","value":"test"}],"proxyConfig":{}},"status":{"a":1}}`, "ea4e6089e8b2f584c1cd8b86e16a15df3186b30744f433ede7436091c93a4cc7"},
		{"adc test1", `{"spec":{"agentInstallNamespace":"open-cluster-management-agent-addon","customizedVariables":[{"name":"test1","value":"test1"}],"proxyConfig":{}}}`, "b746cc98936955dd2168640f0011a14f2a74be306c747bc8ba829328cc772690"},
		{"adc test2", `{"spec":{"agentInstallNamespace":"open-cluster-management-agent-addon","customizedVariables":[{"name":"test2","value":"test2"}],"proxyConfig":{}}}`, "3e6348b0c0f0a341ce28d0a2f99bc41fc63fb17d947eb5a45284729fbeb63b32"},
		{"adc test3", `{"spec":{"agentInstallNamespace":"open-cluster-management-agent-addon","customizedVariables":[{"name":"test3","value":"test3"}],"proxyConfig":{}}}`, "9b3c6d09731ed254589fa4fc2936e6fb00537de92da5e035183da313eb98d27e"},
		{"no config fields", `{"apiVersion":"v1","kind":"Foo","metadata":{"name":"a"}}`, "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var obj map[string]any
			if err := json.Unmarshal([]byte(tc.doc), &obj); err != nil {
				t.Fatal(err)
			}
			got, err := Of(obj)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("Of() = %s, want %s", got, tc.want)
			}
		})
	}
}

// Formatting, comments, key order and quoting of the YAML source never change the hash.
func TestOfIgnoresFormatting(t *testing.T) {
	a := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata:\n  k: v\n  n: \"1\"\n"
	b := "# comment\nkind: ConfigMap\napiVersion: v1\nmetadata:\n    name: a   # trailing\n    labels: {x: y}\ndata: {n: '1', k: \"v\"}\n"
	ha, hb := mustHashYAML(t, a), mustHashYAML(t, b)
	if ha != hb {
		t.Fatalf("formatting changed the hash: %s vs %s", ha, hb)
	}
	c := strings.Replace(a, "k: v", "k: w", 1)
	if mustHashYAML(t, c) == ha {
		t.Fatal("a content change kept the hash")
	}
}

func TestOfNil(t *testing.T) {
	if _, err := Of(nil); err == nil || err.Error() != "object is nil" {
		t.Fatalf("Of(nil) error = %v", err)
	}
}

func TestSuffix(t *testing.T) {
	cases := []struct {
		hash, want string
		wantErr    bool
	}{
		{"0123456789abcdef", "gh2k456789", false},
		{"eeeeeeeeeeff", "tttttttttt", false},
		{"abc", "", true},
		{"ABCDEF0123456", "", true},
	}
	for _, tc := range cases {
		got, err := Suffix(tc.hash)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("Suffix(%q) = %q, %v; want %q, err=%v", tc.hash, got, err, tc.want, tc.wantErr)
		}
	}
}

func mustHashYAML(t *testing.T, doc string) string {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatal(err)
	}
	h, err := Of(obj)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
