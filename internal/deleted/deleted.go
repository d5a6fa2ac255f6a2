// Package deleted tells a reconcile's final patch of an object that the
// object is gone from a failure to write it.
package deleted

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// IgnoreGone returns nil when err, the error of patching obj, only says
// that obj is not found while obj is being deleted with no finalizer left:
// the reconcile removed the last finalizer (now or in an earlier reconcile
// the cache had not shown yet) and the API server deleted the object, which
// is what was wanted. Any other error is returned as it is.
func IgnoreGone(obj client.Object, err error) error {
	if err == nil || obj.GetDeletionTimestamp().IsZero() || len(obj.GetFinalizers()) > 0 {
		return err
	}
	if onlyNotFound(err) {
		return nil
	}
	return err
}

func onlyNotFound(err error) bool {
	var agg kerrors.Aggregate
	if errors.As(err, &agg) {
		for _, e := range agg.Errors() {
			if !onlyNotFound(e) {
				return false
			}
		}
		return len(agg.Errors()) > 0
	}
	return apierrors.IsNotFound(err)
}
