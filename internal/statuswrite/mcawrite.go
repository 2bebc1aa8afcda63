// Package statuswrite writes a ManagedClusterAddOn's status and finalizers for reconcilers that own
// only part of them.
//
// Several writers share one MCA status: the rollout controller (desired configs, Configured,
// Progressing), the deployer (ManifestApplied, HookManifestCompleted), registration (registrations,
// namespace, RegistrationApplied) and health (Available). Each computes its part from the object it
// read and writes with the object's resourceVersion; on a conflict it reads the live object and
// applies its change to that again, so no writer ever overwrites another's fields with a stale copy.
package statuswrite

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
)

// Status applies change to a copy of mca's status and writes it when it differs. change must be a
// pure function of the MCA it is given: after a conflict it is applied again to the live object.
// It returns the MCA as written (or mca itself when nothing changed), or nil when the MCA is gone.
func Status(ctx context.Context, client addonclient.Interface, mca *addonv1alpha1.ManagedClusterAddOn,
	change func(*addonv1alpha1.ManagedClusterAddOn)) (*addonv1alpha1.ManagedClusterAddOn, error) {
	out, _, err := status(ctx, client, mca, change)
	return out, err
}

// status is Status that also returns the versions the write replaced: mca's, and every live
// version read after a conflict (none when nothing was written).
func status(ctx context.Context, client addonclient.Interface, mca *addonv1alpha1.ManagedClusterAddOn,
	change func(*addonv1alpha1.ManagedClusterAddOn)) (*addonv1alpha1.ManagedClusterAddOn, []string, error) {
	api := client.AddonV1alpha1().ManagedClusterAddOns(mca.Namespace)
	cur := mca
	var out *addonv1alpha1.ManagedClusterAddOn
	var replaced []string
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		next := cur.DeepCopy()
		change(next)
		if equality.Semantic.DeepEqual(cur.Status, next.Status) {
			out = cur
			return nil
		}
		replaced = append(replaced, cur.ResourceVersion)
		res, err := api.UpdateStatus(ctx, next, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			live, getErr := api.Get(ctx, mca.Name, metav1.GetOptions{})
			if getErr != nil {
				return getErr
			}
			cur = live
			return err
		}
		out = res
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("writing the status of ManagedClusterAddOn %s/%s: %w", mca.Namespace, mca.Name, err)
	}
	if out == cur {
		return out, nil, nil // nothing written (a refused write may have come first)
	}
	return out, replaced, nil
}

// Finalizers adds and removes finalizers with a full update (as OCM does), retrying on conflict
// with the live object. It returns the MCA as written, mca when nothing changed, or nil when the
// MCA is gone (removing the last finalizer of a deleted MCA lets it go).
func Finalizers(ctx context.Context, client addonclient.Interface, mca *addonv1alpha1.ManagedClusterAddOn,
	add []string, remove []string) (*addonv1alpha1.ManagedClusterAddOn, error) {
	out, _, err := finalizers(ctx, client, mca, add, remove)
	return out, err
}

// finalizers is Finalizers that also returns the versions the write replaced (as status).
func finalizers(ctx context.Context, client addonclient.Interface, mca *addonv1alpha1.ManagedClusterAddOn,
	add []string, remove []string) (*addonv1alpha1.ManagedClusterAddOn, []string, error) {
	api := client.AddonV1alpha1().ManagedClusterAddOns(mca.Namespace)
	cur := mca
	var out *addonv1alpha1.ManagedClusterAddOn
	var replaced []string
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fins := EditFinalizers(cur.Finalizers, add, remove)
		if equality.Semantic.DeepEqual(fins, cur.Finalizers) {
			out = cur
			return nil
		}
		next := cur.DeepCopy()
		next.Finalizers = fins
		replaced = append(replaced, cur.ResourceVersion)
		res, err := api.Update(ctx, next, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			live, getErr := api.Get(ctx, mca.Name, metav1.GetOptions{})
			if getErr != nil {
				return getErr
			}
			cur = live
			return err
		}
		out = res
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("updating the finalizers of ManagedClusterAddOn %s/%s: %w", mca.Namespace, mca.Name, err)
	}
	if out == cur {
		replaced = nil // nothing written
	}
	if out != nil && out.DeletionTimestamp != nil && len(out.Finalizers) == 0 {
		return nil, nil, nil
	}
	return out, replaced, nil
}

// EditFinalizers returns fins with add appended (when missing) and remove dropped, keeping order;
// it returns fins itself when nothing changes.
func EditFinalizers(fins, add, remove []string) []string {
	drop := map[string]bool{}
	for _, r := range remove {
		drop[r] = true
	}
	var out []string
	changed := false
	have := map[string]bool{}
	for _, f := range fins {
		if drop[f] {
			changed = true
			continue
		}
		have[f] = true
		out = append(out, f)
	}
	for _, a := range add {
		if !have[a] && !drop[a] {
			have[a] = true
			out = append(out, a)
			changed = true
		}
	}
	if !changed {
		return fins
	}
	return out
}
