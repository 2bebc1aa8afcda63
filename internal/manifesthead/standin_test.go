package manifesthead

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	sigsjson "sigs.k8s.io/json"
)

// A stand-in reads as the manifest it stands for, carries its digest, and is the same bytes
// whether made from the manifest's JSON or from its unstructured form; a manifest without a head
// a stand-in can hold is kept whole.
func TestStandIn(t *testing.T) {
	for _, tc := range []struct {
		name string
		raw  string
		// whole: no stand-in is made.
		whole bool
		// small: the manifest is not padded to more than a stand-in's size.
		small bool
	}{
		{"deployment", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a","namespace":"ns","labels":{"x":"y"}},"spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"c"}]}}}}`, false, false},
		{"zero replicas", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a","namespace":"ns"},"spec":{"replicas":0}}`, false, false},
		{"float replicas", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a"},"spec":{"replicas":0.5}}`, true, false},
		{"no larger than its stand-in", `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"sa","namespace":"ns"}}`, true, true},
		{"null replicas", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a"},"spec":{"replicas":null}}`, false, false},
		{"string replicas", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a"},"spec":{"replicas":"0"}}`, false, false},
		{"no spec", `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"sa","namespace":"ns"}}`, false, false},
		{"cluster-scoped", `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"r"},"rules":[]}`, false, false},
		{"keys in another case", `{"apiVersion":"apps/v1","kind":"Deployment","Metadata":{"name":"a"},"metadata":{"Name":"b","name":"c","namespace":"ns"},"spec":{"Replicas":0}}`, false, false},
		{"null metadata", `{"apiVersion":"v1","kind":"ConfigMap","metadata":null}`, true, false},
		{"no name", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"ns"}}`, true, false},
		{"no apiVersion", `{"kind":"Deployment","metadata":{"name":"a"}}`, true, false},
		{"name of another type", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":7,"namespace":"ns"}}`, true, false},
		{"namespace of another type", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a","namespace":7}}`, true, false},
		{"apiVersion that does not parse", `{"apiVersion":"a/b/c","kind":"Deployment","metadata":{"name":"a"}}`, true, false},
		{"no kind", `{"apiVersion":"v1","metadata":{"name":"a"}}`, true, false},
		{"a field named like the digest", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"addonops.io/manifest-sha256":"x"}`, true, false},
		{"not an object", `[{"kind":"Deployment"}]`, true, false},
		{"invalid JSON", `{"kind":"Deployment"`, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.small && strings.HasPrefix(tc.raw, "{") && strings.HasSuffix(tc.raw, "}") {
				// Larger than a stand-in, which has some 180 bytes.
				tc.raw = tc.raw[:len(tc.raw)-1] + `,"zpad":"` + strings.Repeat("p", 300) + `"}`
			}
			s, ok := StandIn([]byte(tc.raw))
			if ok == tc.whole {
				t.Fatalf("stand-in made: %v, want %v (%s)", ok, !tc.whole, s)
			}
			if tc.whole {
				if _, isStandIn := StandInDigest([]byte(tc.raw)); isStandIn {
					t.Fatal("a whole manifest reads as a stand-in")
				}
				return
			}
			want, wantErr := Read([]byte(tc.raw))
			got, gotErr := Read(s)
			if !reflect.DeepEqual(got, want) || (gotErr == nil) != (wantErr == nil) {
				t.Errorf("stand-in %s reads as %+v (%v), the manifest as %+v (%v)", s, got, gotErr, want, wantErr)
			}
			d, err := Digest([]byte(tc.raw))
			if err != nil {
				t.Fatal(err)
			}
			if sd, ok := StandInDigest(s); !ok || sd != d {
				t.Errorf("stand-in %s carries digest %q (%v), want %q", s, sd, ok, d)
			}
			if len(s) >= len(tc.raw) {
				t.Errorf("stand-in %d bytes for a manifest of %d", len(s), len(tc.raw))
			}
			// From the unstructured form (hubcache's transform): the same bytes once encoded.
			var v map[string]any
			if err := sigsjson.UnmarshalCaseSensitivePreserveInts([]byte(tc.raw), &v); err != nil {
				t.Fatal(err)
			}
			before, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			sv, ok := StandInValue(v)
			if !ok {
				t.Fatal("no stand-in from the unstructured form")
			}
			if after, _ := json.Marshal(v); string(after) != string(before) {
				t.Errorf("StandInValue changed the manifest:\n%s\nto\n%s", before, after)
			}
			b, err := json.Marshal(sv)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != string(s) {
				t.Errorf("from the unstructured form %s, from JSON %s", b, s)
			}
		})
	}
}

// Digest is of the JSON value: formatting, key order, the creation timestamps typed round trips
// add and the spelling of a number do not count; any change of content does.
func TestDigest(t *testing.T) {
	base := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a","namespace":"ns"},"spec":{"replicas":1,"template":{"metadata":{"labels":{"app":"a"}},"spec":{"containers":[{"name":"c","args":["--v=2"]}]}}}}`
	d0, err := Digest([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		raw  string
		same bool
	}{
		{"formatting and key order", "{ \"kind\": \"Deployment\", \"apiVersion\": \"apps/v1\",\n \"spec\": {\"template\": {\"spec\": {\"containers\": [{\"args\": [\"--v=2\"], \"name\": \"c\"}]}, \"metadata\": {\"labels\": {\"app\": \"a\"}}}, \"replicas\": 1},\n \"metadata\": {\"namespace\": \"ns\", \"name\": \"a\"}}\n", true},
		{"creation timestamps", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a","namespace":"ns","creationTimestamp":null},"spec":{"replicas":1,"template":{"metadata":{"creationTimestamp":null,"labels":{"app":"a"}},"spec":{"containers":[{"name":"c","args":["--v=2"]}]}}}}`, true},
		{"a number spelled 1.0", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a","namespace":"ns"},"spec":{"replicas":1.0,"template":{"metadata":{"labels":{"app":"a"}},"spec":{"containers":[{"name":"c","args":["--v=2"]}]}}}}`, true},
		{"an argument changed", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a","namespace":"ns"},"spec":{"replicas":1,"template":{"metadata":{"labels":{"app":"a"}},"spec":{"containers":[{"name":"c","args":["--v=4"]}]}}}}`, false},
		{"replicas changed", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a","namespace":"ns"},"spec":{"replicas":2,"template":{"metadata":{"labels":{"app":"a"}},"spec":{"containers":[{"name":"c","args":["--v=2"]}]}}}}`, false},
		{"a label added", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a","namespace":"ns","labels":{"x":"y"}},"spec":{"replicas":1,"template":{"metadata":{"labels":{"app":"a"}},"spec":{"containers":[{"name":"c","args":["--v=2"]}]}}}}`, false},
		{"a field null rather than absent", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a","namespace":"ns"},"spec":{"paused":null,"replicas":1,"template":{"metadata":{"labels":{"app":"a"}},"spec":{"containers":[{"name":"c","args":["--v=2"]}]}}}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Digest([]byte(tc.raw))
			if err != nil {
				t.Fatal(err)
			}
			if (d == d0) != tc.same {
				t.Errorf("digest equal: %v, want %v", d == d0, tc.same)
			}
		})
	}
	for _, bad := range []string{`[1]`, `null`, `{"a":`} {
		if _, err := Digest([]byte(bad)); err == nil {
			t.Errorf("Digest(%s): no error", bad)
		}
	}
	// A manifest with more than a stand-in holds is not read as one, whatever it carries.
	if _, ok := StandInDigest([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{},"addonops.io/manifest-sha256":"x"}`)); ok {
		t.Error("a manifest with data read as a stand-in")
	}
}
