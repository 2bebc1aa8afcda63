package manifesthead

// Stand-ins: a manifest's head and the digest of its content, for caches.
//
// The template deployer caches every add-on ManifestWork of every cluster, and needs of their
// manifests only what identifies each (which work holds it, which workloads the health prober
// asks about) and whether its content is the desired one. A manifest's bytes are the larger part
// of a work, and a large add-on's (CRDs, RBAC) can be hundreds of kilobytes per cluster, so the
// cache keeps a stand-in per manifest instead: its head (apiVersion, kind, metadata.name and
// metadata.namespace, spec.replicas) and the SHA-256 of its content (Digest). Read reads a
// stand-in's head as the manifest's. A stand-in must never be written to the API server: a
// writer replaces the manifests whole with the desired ones.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsjson "sigs.k8s.io/json"
)

// DigestField is the top-level field of a stand-in that holds the digest of the manifest it
// stands for. No Kubernetes object has a top-level field with a domain in its name.
const DigestField = "addonops.io/manifest-sha256"

// Digest is the SHA-256 (hex) of a manifest's content as a JSON value: decoded as the API server's
// JSON is (integers kept), without the ignored fields (DropIgnored), and encoded with sorted keys. So two manifests have the same digest exactly
// when they are the same JSON value, whatever their formatting.
func Digest(raw []byte) (string, error) {
	var v map[string]any
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &v); err != nil {
		return "", err
	}
	if v == nil {
		return "", fmt.Errorf("manifest is not a JSON object")
	}
	d, _, err := digestValue(v)
	return d, err
}

// digestValue is Digest of a decoded manifest, and the length of the JSON it hashed. v is left
// as it was.
func digestValue(v map[string]any) (string, int, error) {
	// The ignored fields are taken out for the encoding and put back.
	for _, path := range ignored {
		if old, found, _ := unstructured.NestedFieldNoCopy(v, path...); found {
			unstructured.RemoveNestedField(v, path...)
			defer func() { _ = unstructured.SetNestedField(v, old, path...) }()
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", 0, err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), len(b), nil
}

// ignored are the fields a manifest's content leaves out: metadata.creationTimestamp and
// spec.template.metadata.creationTimestamp, which typed round trips add as null and OCM's applier
// ignores.
var ignored = [][]string{{"metadata", "creationTimestamp"}, {"spec", "template", "metadata", "creationTimestamp"}}

// DropIgnored removes from a decoded manifest the fields Digest leaves out, for comparisons of
// manifests as JSON values that must agree with Digest.
func DropIgnored(v map[string]any) {
	for _, path := range ignored {
		unstructured.RemoveNestedField(v, path...)
	}
}

// StandInValue returns the stand-in of a manifest decoded as an unstructured object (v is not
// changed). ok is false when the manifest is better kept whole: it has no head a stand-in can hold
// as Read reads it (apiVersion, kind and metadata.name strings, metadata.namespace a string when
// set, spec.replicas an integer, a string or null when set), or its content is no larger than its
// stand-in.
func StandInValue(v map[string]any) (map[string]any, bool) {
	apiVersion, ok1 := v["apiVersion"].(string)
	kind, ok2 := v["kind"].(string)
	md, ok3 := v["metadata"].(map[string]any)
	if !ok1 || !ok2 || !ok3 || kind == "" {
		return nil, false
	}
	if _, set := v[DigestField]; set {
		return nil, false // already a stand-in, or a manifest that would read as one
	}
	name, ok := md["name"].(string)
	if !ok {
		return nil, false
	}
	smd := map[string]any{"name": name}
	if ns, set := md["namespace"]; set {
		s, ok := ns.(string)
		if !ok {
			return nil, false
		}
		smd["namespace"] = s
	}
	if (Head{APIVersion: apiVersion, Kind: kind}).GroupVersionKind().Kind == "" {
		return nil, false // an apiVersion that does not parse: Read reports it from the whole manifest
	}
	out := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": smd}
	if spec, ok := v["spec"].(map[string]any); ok {
		if r, set := spec["replicas"]; set {
			switch r.(type) {
			case int64, string, nil:
			default:
				return nil, false // a float would read back as an integer
			}
			out["spec"] = map[string]any{"replicas": r}
		}
	}
	d, size, err := digestValue(v)
	if err != nil {
		return nil, false
	}
	out[DigestField] = d
	if size <= standInSize(out) {
		return nil, false
	}
	return out, true
}

// standInSize is an upper bound of a stand-in's JSON size, without encoding it.
func standInSize(s map[string]any) int {
	n := len(`{"":"","apiVersion":"","kind":"","metadata":{"name":"","namespace":""},"spec":{"replicas":}}`) + len(DigestField) + sha256.Size*2
	n += len(s["apiVersion"].(string)) + len(s["kind"].(string))
	for _, v := range s["metadata"].(map[string]any) {
		n += 2 * len(v.(string)) // escapes at most double a string
	}
	if spec, ok := s["spec"].(map[string]any); ok {
		switch r := spec["replicas"].(type) {
		case string:
			n += 2*len(r) + 2
		default:
			n += 20
		}
	}
	return n
}

// StandIn returns the stand-in of a manifest's JSON, encoded as encoding/json encodes
// StandInValue's map (so a work converted from its unstructured form holds the same bytes). ok is
// false when the manifest is kept whole (StandInValue) or is not a JSON object.
func StandIn(raw []byte) ([]byte, bool) {
	var v map[string]any
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &v); err != nil || v == nil {
		return nil, false
	}
	s, ok := StandInValue(v)
	if !ok {
		return nil, false
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, false
	}
	return b, true
}

// StandInDigest returns the digest a stand-in carries; ok is false for a manifest that is not a
// stand-in.
func StandInDigest(raw []byte) (string, bool) {
	if !bytes.Contains(raw, []byte(DigestField)) {
		return "", false
	}
	var s map[string]json.RawMessage
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	for k := range s {
		switch k {
		case "apiVersion", "kind", "metadata", "spec", DigestField:
		default:
			return "", false // a manifest with more than a stand-in holds
		}
	}
	var d string
	if err := json.Unmarshal(s[DigestField], &d); err != nil || d == "" {
		return "", false
	}
	return d, true
}
