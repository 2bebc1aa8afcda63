package flux

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/addonops/addonops/internal/testing/ssapply"
)

// The recipe health/README.md documents for Flux: CI pushes the rendered directory of each commit
// as an OCI artifact (`flux push artifact --revision main@sha1:<commit>`, then `flux tag artifact
// ... --tag main`), and RecipeFile's OCIRepository follows the main tag while its Kustomization
// applies the artifact and waits for the rollout with the recipe's health checks.
const (
	// RecipeFile holds the recipe's OCIRepository and Kustomization, from the repository's root.
	RecipeFile = "health/flux/addonops-hub.yaml"
	// SourceRevisionKey is the annotation `flux push artifact --revision` writes, which
	// source-controller copies into the OCIRepository's artifact metadata.
	SourceRevisionKey = "org.opencontainers.image.revision"
	// RequestedAtAnnotation asks Flux for a reconcile now (what `flux reconcile` writes).
	RequestedAtAnnotation = "reconcile.fluxcd.io/requestedAt"
)

var (
	KustomizationGVR = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	OCIRepositoryGVR = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "ocirepositories"}
)

// SourceRevision is the revision the recipe's publish lines give the artifact of commit sha of
// main (`flux push artifact --revision`).
func SourceRevision(sha string) string { return "main@sha1:" + sha }

// Artifact returns what an OCIRepository fetched: its artifact's revision ("main@sha256:...", the
// one the Kustomization reports) and the source revision it was pushed from (SourceRevision of the
// commit); both "" before the first fetch.
func Artifact(oci *unstructured.Unstructured) (revision, source string) {
	md, _, _ := unstructured.NestedStringMap(oci.Object, "status", "artifact", "metadata")
	revision, _, _ = unstructured.NestedString(oci.Object, "status", "artifact", "revision")
	return revision, md[SourceRevisionKey]
}

// RecipeOptions are the intervals a test or the demo sets instead of the recipe's; "" keeps the
// recipe's.
type RecipeOptions struct {
	// SourceInterval is the OCIRepository's polling interval.
	SourceInterval string
	// Interval and RetryInterval are the Kustomization's.
	Interval      string
	RetryInterval string
}

// Recipe is RecipeFile's objects changed only where a test hub must: the OCIRepository follows the
// same path on the local registry, over plain HTTP (insecure: the registry listens on loopback),
// and the intervals of RecipeOptions.
type Recipe struct {
	Objects []*unstructured.Unstructured
	// Name is the OCIRepository's and the Kustomization's, both in Namespace.
	Name string
	// Artifact is the OCI address the OCIRepository follows ("oci://<registry>/<path>"): where CI
	// pushes.
	Artifact string
	// Changes say what was changed, for people.
	Changes []string
}

// field is a field of an object's spec and the value a test sets.
type field struct {
	path  string
	value any
}

// LocalRecipe reads RecipeFile under the repository root and changes it for f's registry. It
// checks the recipe is what health/README.md says: one OCIRepository following an oci://ghcr.io/
// address and one Kustomization that sets a retryInterval, named alike in Namespace.
func (f *Flux) LocalRecipe(root string, o RecipeOptions) (*Recipe, error) {
	data, err := os.ReadFile(filepath.Join(root, RecipeFile))
	if err != nil {
		return nil, fmt.Errorf("reading the Flux recipe: %w", err)
	}
	objs, err := ssapply.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", RecipeFile, err)
	}
	r := &Recipe{Objects: objs}
	kinds := map[string]int{}
	for _, obj := range objs {
		kinds[obj.GetKind()]++
		var fields []field
		switch obj.GetKind() {
		case "OCIRepository":
			url, _, _ := unstructured.NestedString(obj.Object, "spec", "url")
			path, ok := strings.CutPrefix(url, "oci://ghcr.io/")
			if !ok {
				return nil, fmt.Errorf("%s: the OCIRepository follows %q, want an oci://ghcr.io/ address", RecipeFile, url)
			}
			r.Artifact, r.Name = "oci://"+f.Registry+"/"+path, obj.GetName()
			fields = append(fields, field{"url", r.Artifact}, field{"insecure", true})
			change := fmt.Sprintf("OCIRepository url %s (the local registry), insecure: true (plain HTTP on loopback)", r.Artifact)
			if o.SourceInterval != "" {
				fields = append(fields, field{"interval", o.SourceInterval})
				change += ", interval " + o.SourceInterval
			}
			r.Changes = append(r.Changes, change)
		case "Kustomization":
			if _, ok, _ := unstructured.NestedString(obj.Object, "spec", "retryInterval"); !ok {
				return nil, fmt.Errorf("%s: the Kustomization sets no retryInterval (see health/README.md, Flux)", RecipeFile)
			}
			var changed []string
			for _, fv := range []struct{ path, value string }{{"interval", o.Interval}, {"retryInterval", o.RetryInterval}} {
				if fv.value != "" {
					fields = append(fields, field{fv.path, fv.value})
					changed = append(changed, fv.path+" "+fv.value)
				}
			}
			if len(changed) > 0 {
				r.Changes = append(r.Changes, "Kustomization "+strings.Join(changed, ", "))
			}
		}
		for _, fv := range fields {
			if err := unstructured.SetNestedField(obj.Object, fv.value, "spec", fv.path); err != nil {
				return nil, fmt.Errorf("%s: %s spec.%s: %w", RecipeFile, obj.GetKind(), fv.path, err)
			}
		}
	}
	if len(objs) != 2 || kinds["OCIRepository"] != 1 || kinds["Kustomization"] != 1 {
		return nil, fmt.Errorf("%s: want one OCIRepository and one Kustomization, found %d objects", RecipeFile, len(objs))
	}
	for _, obj := range objs {
		if obj.GetName() != r.Name || obj.GetNamespace() != Namespace {
			return nil, fmt.Errorf("%s: want the OCIRepository and the Kustomization named alike in %s, found %s %s/%s",
				RecipeFile, Namespace, obj.GetKind(), obj.GetNamespace(), obj.GetName())
		}
	}
	return r, nil
}

// ApplyRecipe applies the recipe's objects to the hub as a user's `kubectl apply -f RecipeFile`
// does (server-side apply, by fieldManager).
func (f *Flux) ApplyRecipe(ctx context.Context, r *Recipe, fieldManager string) error {
	applier, err := ssapply.New(f.hub.Clients.Dynamic, f.hub.Clients.Kube.Discovery(), fieldManager)
	if err != nil {
		return err
	}
	if _, err := applier.ApplyAll(ctx, r.Objects); err != nil {
		return fmt.Errorf("applying the Flux recipe %s: %w", RecipeFile, err)
	}
	return nil
}

// Command is a command Publish ran: the flux CLI's arguments and how long it took.
type Command struct {
	Args []string
	Took time.Duration
}

// Publish runs the publish lines of the recipe (health/README.md) for commit sha of main, from
// checkout (a checkout of the commit) with the flux CLI: `flux push artifact <artifact>:<sha>
// --path=<path> --source=<source> --revision=<SourceRevision>`, then `flux tag artifact
// <artifact>:<sha> --tag main`, which the OCIRepository follows. It returns the commands it ran.
func (f *Flux) Publish(ctx context.Context, checkout, artifact, path, source, sha string) ([]Command, error) {
	var ran []Command
	for _, args := range [][]string{
		{"push", "artifact", artifact + ":" + sha, "--path=" + path, "--source=" + source, "--revision=" + SourceRevision(sha)},
		{"tag", "artifact", artifact + ":" + sha, "--tag", "main"},
	} {
		start := time.Now()
		cmd := exec.CommandContext(ctx, f.CLI, args...)
		cmd.Dir = checkout
		out, err := cmd.CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("flux %s: %w\n%s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
		ran = append(ran, Command{Args: args, Took: time.Since(start)})
	}
	return ran, nil
}
