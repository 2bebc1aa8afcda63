package ssapply_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/ssapply"
)

func TestMain(m *testing.M) { os.Exit(localhub.RunTests(m)) }

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string // kind/name of each object
		err      string
	}{
		{name: "empty", in: "", want: nil},
		{name: "documents, empty ones skipped", in: "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: ns1}\n---\n---\n" +
			"apiVersion: v1\nkind: Namespace\nmetadata: {name: ns1}\n", want: []string{"ConfigMap/ns1/a", "Namespace/ns1"}},
		{name: "json", in: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"j"}}`, want: []string{"Namespace/j"}},
		{name: "no kind", in: "apiVersion: v1\nkind: Namespace\nmetadata: {name: ns1}\n---\napiVersion: v1\nmetadata: {name: x}\n",
			err: "document 2 is not a Kubernetes object"},
		{name: "no name", in: "apiVersion: v1\nkind: Namespace\nmetadata: {}\n", err: "document 1 is not a Kubernetes object"},
		{name: "bad yaml", in: "apiVersion: v1\nkind: [\n", err: "document 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := ssapply.Decode(strings.NewReader(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range objs {
				got = append(got, o.GetKind()+"/"+ssapply.Name(o))
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNewNeedsFieldManager(t *testing.T) {
	if _, err := ssapply.New(nil, nil, ""); err == nil || !strings.Contains(err.Error(), "field manager") {
		t.Errorf("error %v, want one about the field manager", err)
	}
}

// DecodeFile reads a file of the repository by its path from the root, and an absolute path as
// is; its errors name the file.
func TestDecodeFile(t *testing.T) {
	objs, err := ssapply.DecodeFile("kustomize-rollout-examples/04-rollback/expected/hub.yaml")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
	}
	if kinds["ClusterManagementAddOn"] != 1 || kinds["AddOnDeploymentConfig"] == 0 {
		t.Errorf("kinds %v, want the example's ClusterManagementAddOn and its AddOnDeploymentConfig", kinds)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("kind: Foo\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ssapply.DecodeFile(bad); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "document 1") {
		t.Errorf("DecodeFile(%s): %v, want an error naming the file and the document", bad, err)
	}
	if _, err := ssapply.DecodeFile("no/such/file.yaml"); err == nil || !strings.Contains(err.Error(), filepath.FromSlash("no/such/file.yaml")) {
		t.Errorf("DecodeFile of a missing file: %v, want an error naming it", err)
	}
}
