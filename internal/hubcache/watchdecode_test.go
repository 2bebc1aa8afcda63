package hubcache

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// withKind adds apiVersion and kind to an object's JSON, as the API server sends it.
func withKind(t *testing.T, k decodedKind, doc string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	m["apiVersion"], m["kind"] = k.gvk.GroupVersion().String(), k.gvk.Kind
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A watch event's object decoded straight into its Go type is what the informer's transform makes
// of it as an unstructured object (the dynamic client's watch, and still the lists' path): for
// every decoded kind and strip, for objects that decode and for one that does not (the same
// placeholder, and the same DecodeError recorded).
func TestWatchDecodeMatchesTransform(t *testing.T) {
	work := `{"metadata": {"name": "addon-hello-deploy-0", "namespace": "c1", "resourceVersion": "7", "generation": 2,
  "labels": {"open-cluster-management.io/addon-name": "hello"}, "annotations": {"open-cluster-management.io/config-spec-hash": "{}"},
  "managedFields": [{"manager": "m", "operation": "Update", "apiVersion": "work.open-cluster-management.io/v1"}]},
 "spec": {"workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "y"}, "data": {"k": "v"}}]}},
 "status": {"conditions": [{"type": "Applied", "status": "True", "reason": "AppliedManifestWorkComplete", "message": "ok", "lastTransitionTime": "2026-01-02T03:04:05Z", "observedGeneration": 2}],
  "resourceStatus": {"manifests": [{"resourceMeta": {"ordinal": 0, "kind": "ConfigMap", "name": "x"}, "conditions": []}]}}}`
	cluster := `{"metadata": {"name": "c1", "resourceVersion": "3", "annotations": {"open-cluster-management.io/image-registries": "{}"}},
 "spec": {"hubAcceptsClient": true, "leaseDurationSeconds": 60, "managedClusterClientConfigs": [{"url": "https://x", "caBundle": "Y2E="}], "taints": [{"key": "k", "effect": "NoSelect"}]},
 "status": {"conditions": [{"type": "HubAcceptedManagedCluster", "status": "True", "reason": "Accepted", "message": "m", "lastTransitionTime": "2026-01-02T03:04:05Z"},
   {"type": "ManagedClusterConditionAvailable", "status": "True", "reason": "Available", "message": "m", "lastTransitionTime": "2026-01-02T03:04:05Z"}],
  "capacity": {"cpu": "4"}, "version": {"kubernetes": "v1.30.0"}}}`
	// Undecodable: an int32 out of range, in a part the strips keep and in a part they drop.
	badCluster := strings.Replace(cluster, `"leaseDurationSeconds": 60`, `"leaseDurationSeconds": 1099511627776`, 1)
	badWorkStatus := strings.Replace(work, `"observedGeneration": 2`, `"observedGeneration": "two"`, 1)
	badWorkSpec := strings.Replace(work, `"ordinal": 0`, `"ordinal": 4294967296`, 1)
	badResourceCondition := strings.Replace(work, `"conditions": []`, `"conditions": [{"type": "Applied", "status": "True", "observedGeneration": "two"}]`, 1)
	withResourceConditions := strings.Replace(work, `"conditions": []`, `"conditions": [{"type": "Applied", "status": "True", "reason": "AppliedManifestComplete", "message": "Apply manifest complete", "lastTransitionTime": "2026-01-02T03:04:05Z"}]`, 1)
	// A manifest larger than its stand-in (the work's ConfigMap is kept whole), with the creation
	// timestamps the digest ignores, and one without a head a stand-in holds.
	largeManifest := strings.Replace(withResourceConditions, `"data": {"k": "v"}}]}}`,
		`"data": {"k": "`+strings.Repeat("v", 400)+`"}}, {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "y", "creationTimestamp": null},
  "spec": {"replicas": 2, "template": {"metadata": {"creationTimestamp": null}, "spec": {"containers": [{"name": "c", "image": "`+strings.Repeat("i", 300)+`"}]}}}},
  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": null, "data": {"k": "`+strings.Repeat("v", 400)+`"}}]}}`, 1)
	// Over the cache's limits (bound.go): both paths keep the same part.
	oversizedFeedback := strings.Replace(withResourceConditions, `"resourceMeta": {"ordinal": 0, "kind": "ConfigMap", "name": "x"}, "conditions": [`,
		`"resourceMeta": {"ordinal": 0, "kind": "ConfigMap", "name": "x"}, "statusFeedback": {"values": [{"name": "a", "fieldValue": {"type": "Integer", "integer": 1}},
  {"name": "b", "fieldValue": {"type": "String", "string": "`+strings.Repeat("s", 5000)+`"}}]}, "conditions": [`, 1)
	oversizedMCA := strings.Replace(mcaJSON("c1"), `"message": "upgrade completed with no errors."`, `"message": "`+strings.Repeat("m", 5000)+`"`, 1)
	placement := `{"metadata": {"name": "p", "namespace": "default", "resourceVersion": "4"}, "spec": {"decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": "25%"}}}}`
	badPlacement := `{"metadata": {"name": "p", "namespace": "default", "resourceVersion": "5"}, "spec": {"numberOfClusters": 9223372036854775807}}`
	decision := `{"metadata": {"name": "p-decision-1", "namespace": "default", "resourceVersion": "6", "labels": {"cluster.open-cluster-management.io/placement": "p"}},
 "status": {"decisions": [{"clusterName": "c1", "reason": ""}]}}`

	for _, tc := range []struct {
		name  string
		k     decodedKind
		strip stripper
		doc   string
		// undecodable: the object is a placeholder with a DecodeError
		undecodable bool
	}{
		{"MCA", kindMCA, stripper{}, mcaJSON("c1"), false},
		{"MCA over the limits", kindMCA, stripper{}, oversizedMCA, false},
		{"work with stand-ins, feedback over the limits", kindWork, workStandInsStripper, oversizedFeedback, false},
		{"work with manifests", kindWork, stripper{}, work, false},
		{"work stripped", kindWork, workManifestsStripper, work, false},
		{"work stripped, bad manifest status dropped", kindWork, workManifestsStripper, badWorkSpec, false},
		{"work with a bad manifest status", kindWork, stripper{}, badWorkSpec, true},
		{"work with a bad condition", kindWork, workManifestsStripper, badWorkStatus, true},
		{"work for the template reconcilers", kindWork, workResourceConditionsStripper, withResourceConditions, false},
		{"work for the template reconcilers, bad manifest condition dropped", kindWork, workResourceConditionsStripper, badResourceCondition, false},
		{"work with a bad manifest condition", kindWork, stripper{}, badResourceCondition, true},
		{"work for the template reconcilers with a bad condition", kindWork, workResourceConditionsStripper, badWorkStatus, true},
		{"work with stand-ins", kindWork, workStandInsStripper, withResourceConditions, false},
		{"work with stand-ins, a large manifest", kindWork, workStandInsStripper, largeManifest, false},
		{"work with stand-ins, bad manifest condition dropped", kindWork, workStandInsStripper, badResourceCondition, false},
		{"work with stand-ins and a bad condition", kindWork, workStandInsStripper, badWorkStatus, true},
		{"cluster for the health prober", kindCluster, clusterStripper, cluster, false},
		{"cluster without status", kindCluster, clusterStatusStripper, cluster, false},
		{"cluster with a bad spec", kindCluster, clusterStatusStripper, badCluster, true},
		{"placement", kindPlacement, stripper{}, placement, false},
		{"placement out of range", kindPlacement, stripper{}, badPlacement, true},
		{"decision", kindDecision, stripper{}, decision, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := withKind(t, tc.k, tc.doc)
			viaTransform := newTestCache()
			want, err := viaTransform.decode(tc.k, tc.strip.unstructured, nil)(fromJSON(t, tc.k, string(data)))
			if err != nil {
				t.Fatal(err)
			}
			direct := newTestCache()
			d := watchDecoder{c: direct, k: tc.k, strip: tc.strip.typed, transform: direct.decode(tc.k, tc.strip.unstructured, nil)}
			got, _, err := d.Decode(data, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(got, want) {
				t.Errorf("decoded straight:\n%+v\nthrough the transform:\n%+v", got, want)
			}
			if strings.Contains(tc.name, "over the limits") && (len(direct.trimmed.told) != 1 || len(viaTransform.trimmed.told) != 1) {
				t.Errorf("trimmed versions recorded: straight %v, through the transform %v; want one each", direct.trimmed.told, viaTransform.trimmed.told)
			}
			gotErr, wantErr := direct.DecodeError(got.(metav1.Object)), viaTransform.DecodeError(want.(metav1.Object))
			if (gotErr != nil) != tc.undecodable || (wantErr != nil) != tc.undecodable {
				t.Fatalf("DecodeError straight %v, through the transform %v; want one: %v", gotErr, wantErr, tc.undecodable)
			}
			if gotErr != nil && gotErr.Error() != wantErr.Error() {
				t.Errorf("DecodeError straight %q, through the transform %q", gotErr, wantErr)
			}
		})
	}

	// A watch error comes as a Status, which the reflector reads (410 Expired: list again).
	for _, k := range []decodedKind{kindMCA, kindWork, kindCluster} {
		d := watchDecoder{c: newTestCache(), k: k, transform: newTestCache().decode(k, nil, nil)}
		got, _, err := d.Decode([]byte(`{"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": "too old resource version: 1 (2)", "reason": "Expired", "code": 410}`), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		st, ok := got.(*metav1.Status)
		if !ok || st.Code != 410 || st.Reason != metav1.StatusReasonExpired {
			t.Errorf("%s watch error decoded as %T %+v, want the Status", k.gvk.Kind, got, got)
		}
	}
	var _ runtime.Decoder = watchDecoder{}
}

// The envelope decoder slices the object out of the frames the API server writes and leaves every
// other frame to the serializer: both give the same event.
func TestEnvelopeDecoder(t *testing.T) {
	obj := `{"kind":"ManagedCluster","apiVersion":"cluster.open-cluster-management.io/v1","metadata":{"name":"c1","resourceVersion":"3"}}`
	for _, tc := range []struct {
		name, frame string
		sliced      bool // the fast path takes it
	}{
		{"as the API server writes it", `{"type":"MODIFIED","object":` + obj + `}`, true},
		{"with the stream's newline", `{"type":"ADDED","object":` + obj + "}\n", true},
		{"bookmark", `{"type":"BOOKMARK","object":{"kind":"ManagedCluster","apiVersion":"cluster.open-cluster-management.io/v1","metadata":{"resourceVersion":"12"}}}`, true},
		{"error", `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","code":410,"reason":"Expired"}}`, true},
		{"spaces", `{"type": "MODIFIED", "object": ` + obj + `}`, false},
		{"object first", `{"object":` + obj + `,"type":"MODIFIED"}`, false},
		{"a key after the object", `{"type":"MODIFIED","object":` + obj + `,"x":{"y":1}}`, false},
		{"an escape in the type", `{"type":"MOD\u0049FIED","object":` + obj + `}`, false},
		{"an empty object", `{"type":"DELETED","object":{}}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, sliced := splitEnvelope([]byte(tc.frame))
			if sliced != tc.sliced {
				t.Errorf("sliced: %t, want %t", sliced, tc.sliced)
			}
			var got, want metav1.WatchEvent
			res, gvk, err := envelopeDecoder{}.Decode([]byte(tc.frame), nil, &got)
			if err != nil || res != &got || gvk == nil || gvk.Kind != "WatchEvent" {
				t.Fatalf("Decode: %v, %T, %v; want the WatchEvent passed in", err, res, gvk)
			}
			if _, _, err := watchEnvelopes.Decode([]byte(tc.frame), nil, &want); err != nil {
				t.Fatal(err)
			}
			if got.Type != want.Type || !json.Valid(got.Object.Raw) || !bytes.Equal(compact(t, got.Object.Raw), compact(t, want.Object.Raw)) {
				t.Errorf("decoded %s %s, want %s %s", got.Type, got.Object.Raw, want.Type, want.Object.Raw)
			}
		})
	}
}

func compact(t *testing.T, b []byte) []byte {
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}
