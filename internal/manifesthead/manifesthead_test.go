package manifesthead

import (
	"reflect"
	"testing"
)

// Read says what the unstructured decoding says of every manifest, and reads the usual ones
// without it.
func TestReadMatchesUnstructured(t *testing.T) {
	for _, tc := range []struct {
		name string
		raw  string
		// fast: the manifest is read without the unstructured decoding.
		fast bool
	}{
		{"deployment", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a","namespace":"ns","labels":{"x":"y"}},"spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"c"}]}}}}`, true},
		{"zero replicas", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a","namespace":"ns"},"spec":{"replicas":0}}`, true},
		{"float replicas", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a"},"spec":{"replicas":0.0}}`, true},
		{"null replicas", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a"},"spec":{"replicas":null}}`, true},
		{"string replicas", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a"},"spec":{"replicas":"0"}}`, true},
		{"no spec", `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"sa","namespace":"ns"}}`, true},
		{"cluster-scoped", `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"r"},"rules":[]}`, true},
		{"null metadata", `{"apiVersion":"v1","kind":"ConfigMap","metadata":null}`, true},
		{"no apiVersion", `{"kind":"Deployment","metadata":{"name":"a"}}`, true},
		{"keys in another case", `{"apiVersion":"apps/v1","kind":"Deployment","Metadata":{"name":"a"},"metadata":{"Name":"b","namespace":"ns"},"spec":{"Replicas":0}}`, true},
		{"list kind", `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}]}`, true},
		// Read falls back to the unstructured decoding.
		{"name of another type", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":7,"namespace":"ns"}}`, false},
		{"metadata of another type", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":"a"}`, false},
		{"spec of another type", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a"},"spec":[1]}`, false},
		{"apiVersion of another type", `{"apiVersion":1,"kind":"Deployment","metadata":{"name":"a"}}`, false},
		{"kind of another type", `{"apiVersion":"v1","kind":{},"metadata":{"name":"a"}}`, false},
		{"apiVersion that does not parse", `{"apiVersion":"a/b/c","kind":"Deployment","metadata":{"name":"a"}}`, false},
		{"no kind", `{"apiVersion":"v1","metadata":{"name":"a"}}`, false},
		{"not an object", `[{"kind":"Deployment"}]`, false},
		{"invalid JSON", `{"kind":"Deployment"`, false},
		{"empty", ``, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, gotErr := Read([]byte(tc.raw))
			want, wantErr := readUnstructured([]byte(tc.raw))
			if !reflect.DeepEqual(got, want) || (gotErr == nil) != (wantErr == nil) {
				t.Errorf("Read = %#v, %v; the unstructured decoding gives %#v, %v", got, gotErr, want, wantErr)
			}
			if got.GroupVersionKind() != want.GroupVersionKind() {
				t.Errorf("GroupVersionKind = %v, want %v", got.GroupVersionKind(), want.GroupVersionKind())
			}
			_, fast := readHead([]byte(tc.raw))
			if fast != tc.fast {
				t.Errorf("read without the unstructured decoding: %v, want %v", fast, tc.fast)
			}
		})
	}
}

func TestGroupVersionKind(t *testing.T) {
	for _, tc := range []struct {
		h    Head
		want string
	}{
		{Head{APIVersion: "apps/v1", Kind: "Deployment"}, "apps/v1, Kind=Deployment"},
		{Head{APIVersion: "v1", Kind: "ServiceAccount"}, "/v1, Kind=ServiceAccount"},
		{Head{APIVersion: "a/b/c", Kind: "Deployment"}, "/, Kind="},
	} {
		if got := tc.h.GroupVersionKind().String(); got != tc.want {
			t.Errorf("%+v: GroupVersionKind = %q, want %q", tc.h, got, tc.want)
		}
	}
}
