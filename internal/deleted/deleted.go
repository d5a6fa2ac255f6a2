// Package deleted answers whether an object a reconcile just finished with
// is gone.
package deleted

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Gone is whether obj, being deleted and with no finalizer left, no longer
// exists. A reconcile that removed the last finalizer then fails to patch
// the object's status with NotFound, which is not an error.
func Gone(ctx context.Context, c client.Client, obj client.Object) bool {
	if obj.GetDeletionTimestamp().IsZero() || len(obj.GetFinalizers()) > 0 {
		return false
	}
	err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
	return apierrors.IsNotFound(err)
}
