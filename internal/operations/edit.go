package operations

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"

	"github.com/addonops/addonops/internal/canary"
)

// Edit is what a request does to one annotation: its new value (nil removes it), what it did, and
// what to say instead when the annotation already said so.
type Edit struct {
	Value     *string
	Did, Noop string
}

// Outcome is what `addonops` prints after Annotator.Write wrote edit (changed) or found the
// annotation key of add-on addon already said so: "<addon>: <what it did>", then
// "  <key>: <value>" ("(not set)" without the annotation). The demo prints the same lines.
func Outcome(addon, key string, edit Edit, changed bool) string {
	did, value := edit.Did, "(not set)"
	if !changed {
		did = edit.Noop
	}
	if edit.Value != nil {
		value = *edit.Value
	}
	return fmt.Sprintf("%s: %s\n  %s: %s\n", addon, did, key, value)
}

// PausePlacement is pausing placement k of add-on addon, given its pause annotation (raw, present:
// set at all). An annotation that does not parse is refused: the controller pauses every placement
// then, and a request naming one placement cannot know what was meant.
func PausePlacement(addon, raw string, present bool, k canary.PlacementKey) (Edit, error) {
	all, keys, err := readPause(addon, raw, present)
	if err != nil {
		return Edit{}, err
	}
	noop := fmt.Sprintf("placement %s was already paused; nothing changed", k)
	switch {
	case all:
		return Edit{Value: &raw, Noop: fmt.Sprintf(`placement %s was already paused (every placement is, "*"); nothing changed`, k)}, nil
	case keys[k]:
		return Edit{Value: &raw, Noop: noop}, nil
	}
	keys[k] = true
	v := FormatPause(false, keys)
	return Edit{Value: &v, Did: fmt.Sprintf("paused placement %s", k), Noop: noop}, nil
}

// ResumePlacement is resuming placement k of add-on addon, given its pause annotation and its
// install placements: k leaves the list (the annotation goes when nothing is left), and "*" becomes
// the other install placements.
func ResumePlacement(addon, raw string, present bool, k canary.PlacementKey, install []canary.PlacementKey) (Edit, error) {
	all, keys, err := readPause(addon, raw, present)
	if err != nil {
		return Edit{}, err
	}
	noop := fmt.Sprintf("placement %s was not paused; nothing changed", k)
	switch {
	case !present:
		return Edit{Noop: noop}, nil
	case all:
		rest := map[canary.PlacementKey]bool{}
		for _, o := range install {
			if o != k {
				rest[o] = true
			}
		}
		if len(rest) == 0 {
			return Edit{Did: fmt.Sprintf(`resumed placement %s, the only install placement (every placement was paused, "*")`, k)}, nil
		}
		v := FormatPause(false, rest)
		return Edit{Value: &v, Did: fmt.Sprintf(`resumed placement %s; every placement was paused ("*"), so the pause now names the other install placements`, k)}, nil
	case !keys[k]:
		return Edit{Value: &raw, Noop: noop}, nil
	}
	delete(keys, k)
	did := fmt.Sprintf("resumed placement %s", k)
	if len(keys) == 0 {
		return Edit{Did: did + "; no placement is paused any more"}, nil
	}
	v := FormatPause(false, keys)
	return Edit{Value: &v, Did: did}, nil
}

func readPause(addon, raw string, present bool) (all bool, keys map[canary.PlacementKey]bool, err error) {
	keys = map[canary.PlacementKey]bool{}
	if !present {
		return false, keys, nil
	}
	all, list, err := ParsePause(raw)
	if err != nil {
		return false, nil, fmt.Errorf("annotation %s of ClusterManagementAddOn %s does not parse (%v), so the controller pauses every placement; "+
			"fix it, or pause or resume every placement (without --placement), and run the command again", PauseAnnotation, addon, err)
	}
	for _, k := range list {
		keys[k] = true
	}
	return all, keys, nil
}

// Annotator writes one annotation of a ClusterManagementAddOn as `kubectl annotate` does: a JSON
// merge patch of that key of metadata.annotations with FieldManager, so every other field and its
// manager (Argo CD's or Flux's server-side apply) keeps its own. The patch carries the
// resourceVersion read, so a concurrent change of the add-on (a person, the controller's status)
// makes the server refuse it and the edit starts again from the new object. The `addonops` CLI and
// the demo write through it.
type Annotator struct {
	Client       addonclient.Interface
	FieldManager string
	// Get reads the add-on; nil reads it with Client.
	Get func(ctx context.Context, addon string) (*addonv1alpha1.ClusterManagementAddOn, error)
}

// conflictBackoff bounds the retries of an edit the add-on's status writes keep refusing.
var conflictBackoff = wait.Backoff{Steps: 20, Duration: 20 * time.Millisecond, Factor: 1.5, Jitter: 0.1, Cap: time.Second}

// Write reads the add-on, lets decide compute the annotation's edit from it, and writes it unless
// the annotation already says so (changed false; the edit's Value is then the current value). It
// returns the add-on as last read.
func (a Annotator) Write(ctx context.Context, addon, key string, decide func(*addonv1alpha1.ClusterManagementAddOn) (Edit, error)) (obj *addonv1alpha1.ClusterManagementAddOn, edit Edit, changed bool, err error) {
	get := a.Get
	if get == nil {
		get = func(ctx context.Context, addon string) (*addonv1alpha1.ClusterManagementAddOn, error) {
			return a.Client.AddonV1alpha1().ClusterManagementAddOns().Get(ctx, addon, metav1.GetOptions{})
		}
	}
	err = retry.RetryOnConflict(conflictBackoff, func() error {
		if obj, err = get(ctx, addon); err != nil {
			return err
		}
		old, had := obj.Annotations[key]
		if edit, err = decide(obj); err != nil {
			return err
		}
		if edit.Value == nil && !had || edit.Value != nil && had && *edit.Value == old {
			changed, edit.Value = false, nil
			if had {
				edit.Value = &old
			}
			return nil
		}
		changed = true
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"resourceVersion": obj.ResourceVersion,
			"annotations":     map[string]*string{key: edit.Value},
		}})
		if err != nil {
			return err
		}
		_, err = a.Client.AddonV1alpha1().ClusterManagementAddOns().Patch(ctx, addon, types.MergePatchType, patch,
			metav1.PatchOptions{FieldManager: a.FieldManager})
		if err != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("writing annotation %s on ClusterManagementAddOn %s: %w", key, addon, err)
		}
		return err
	})
	if apierrors.IsConflict(err) {
		err = fmt.Errorf("writing annotation %s on ClusterManagementAddOn %s: it kept changing under the command (%v); run it again", key, addon, err)
	}
	return obj, edit, changed, err
}
