// Package spechash computes the content hash of an add-on config exactly the way OCM does.
//
// OCM (addon-framework pkg/utils.GetSpecHash) hashes every top-level field of a config object except
// apiVersion, kind, metadata and status, serialised with Go's encoding/json (sorted map keys, compact,
// HTML-escaped) and digested with sha256, written as 64 lowercase hex characters. The build-time
// config-hash function and the run-time controller both call this package, so a name suffix derived at
// build time and a spec hash computed from the API server agree on what "the same content" means.
package spechash

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

// excluded are the top-level keys that never contribute to a config's content.
var excluded = map[string]bool{"apiVersion": true, "kind": true, "metadata": true, "status": true}

// Of returns OCM's spec hash of obj, an object in its unstructured form (the map an
// unstructured.Unstructured holds, or a decoded YAML/JSON document).
func Of(obj map[string]any) (string, error) {
	if obj == nil {
		return "", errors.New("object is nil")
	}
	b, err := json.Marshal(Content(obj))
	if err != nil {
		return "", fmt.Errorf("encoding config content as JSON: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// Content is what of obj the spec hash covers: every top-level field but apiVersion, kind,
// metadata and status (a shallow copy).
func Content(obj map[string]any) map[string]any {
	content := make(map[string]any, len(obj))
	for k, v := range obj {
		if !excluded[k] {
			content[k] = v
		}
	}
	return content
}

// SuffixLen is the length of the name suffix derived from a hash.
const SuffixLen = 10

// Suffix turns a hex hash into the short DNS-safe name suffix kustomize uses for generated
// ConfigMaps (sigs.k8s.io/kustomize/api/hasher's unexported encode): the first 10 hex digits with
// 0,1,3,a,e replaced so the suffix never spells words and never starts with a digit-only look.
// Reusing kustomize's encoding keeps suffixes familiar to kustomize users.
func Suffix(hash string) (string, error) {
	if len(hash) < SuffixLen {
		return "", fmt.Errorf("hash %q is shorter than %d characters", hash, SuffixLen)
	}
	enc := []byte(hash[:SuffixLen])
	for i, c := range enc {
		switch c {
		case '0':
			enc[i] = 'g'
		case '1':
			enc[i] = 'h'
		case '3':
			enc[i] = 'k'
		case 'a':
			enc[i] = 'm'
		case 'e':
			enc[i] = 't'
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return "", fmt.Errorf("hash %q is not lowercase hex", hash)
			}
		}
	}
	return string(enc), nil
}

// Short is the abbreviated form of a hash shown to people (status command, logs).
func Short(hash string) string {
	if len(hash) > 8 {
		return hash[:8]
	}
	return hash
}
