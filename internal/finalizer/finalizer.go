// Package finalizer adds and removes capwin's finalizers, and moves objects
// from a finalizer's legacy name (one without a path, which the API server
// warns about) to its current one.
package finalizer

import (
	"context"
	"fmt"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// Ensure makes o, unless it is being deleted, carry finalizer and none of
// its legacy names, in one patch: an object written by an earlier capwin
// gets the current name and loses the legacy one together, so it is never
// without a finalizer. It reports whether it patched, as Cluster API's
// finalizers.EnsureFinalizer does; the patch's own event brings the next
// reconcile.
//
// An object being deleted is left as it is: no finalizer can be added to
// it, and Remove lets it go whichever name it carries.
func Ensure(ctx context.Context, c client.Client, o client.Object, finalizer string, legacy ...string) (patched bool, err error) {
	if !o.GetDeletionTimestamp().IsZero() {
		return false, nil
	}
	original := o.DeepCopyObject().(client.Object)
	added := controllerutil.AddFinalizer(o, finalizer)
	migrated := false
	for _, name := range legacy {
		if controllerutil.RemoveFinalizer(o, name) {
			migrated = true
		}
	}
	if !added && !migrated {
		return false, nil
	}
	// A merge patch sends the whole list of finalizers. Adding one is
	// patched as Cluster API adds its own; replacing one is done only
	// on the version of the object it was read from, so that a finalizer
	// another writer added meanwhile is not dropped with the legacy name.
	p := client.MergeFrom(original)
	if migrated {
		p = client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{})
	}
	if err := c.Patch(ctx, o, p); err != nil {
		if migrated {
			return false, fmt.Errorf("replacing finalizer %s with %s: %w", strings.Join(legacy, ", "), finalizer, err)
		}
		return false, fmt.Errorf("adding finalizer %s: %w", finalizer, err)
	}
	return true, nil
}

// Remove removes finalizer and its legacy names from o; the caller writes
// o. An object deleted before it was migrated carries only a legacy name,
// and must go all the same once cleaned up.
func Remove(o client.Object, finalizer string, legacy ...string) {
	controllerutil.RemoveFinalizer(o, finalizer)
	for _, name := range legacy {
		controllerutil.RemoveFinalizer(o, name)
	}
}
