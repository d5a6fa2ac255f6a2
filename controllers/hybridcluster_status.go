package controllers

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"sigs.k8s.io/cluster-api/util/conditions"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/platform"
)

func setPlatformAvailable(hc *infrav1.HybridCluster, c metav1.Condition) {
	c.Type = infrav1.HybridClusterPlatformAvailableCondition
	conditions.Set(hc, c)
}

func setInfrastructureProvisioned(hc *infrav1.HybridCluster, c metav1.Condition) {
	c.Type = infrav1.HybridClusterInfrastructureProvisionedCondition
	conditions.Set(hc, c)
}

func waitingForMachines(n int) metav1.Condition {
	return notYet(infrav1.HybridClusterDeletingReason, fmt.Sprintf("Waiting for %d HybridMachines to delete their VMs", n))
}

// clusterErrorOutcome maps what checking the cluster's platform returned
// (nil: it can be used) to its PlatformAvailable condition and retry.
func clusterErrorOutcome(err error) errorOutcome {
	if err == nil {
		return errorOutcome{condition: &metav1.Condition{Status: metav1.ConditionTrue, Reason: infrav1.HybridClusterPlatformAvailableReason}}
	}
	retry := ctrl.Result{RequeueAfter: platform.RetryAfter(err)}
	reasons := []struct {
		kind   error
		reason string
		retry  bool
	}{
		{platform.ErrNotSupported, infrav1.HybridClusterPlatformNotSupportedReason, false},
		// Retried: what is invalid may be outside Kubernetes (a
		// resource of the same name on the platform), fixed without an
		// event.
		{platform.ErrInvalid, infrav1.HybridClusterInvalidReason, true},
		{platform.ErrIdentityNotAllowed, infrav1.HybridClusterIdentityNotAllowedReason, true},
		{platform.ErrCredentialsNotFound, infrav1.HybridClusterCredentialsNotFoundReason, true},
		{platform.ErrAuthentication, infrav1.HybridClusterBadCredentialsReason, true},
		{platform.ErrNotFound, infrav1.HybridClusterNotFoundReason, true},
		{platform.ErrUnavailable, infrav1.HybridClusterUnreachableReason, true},
	}
	if o, ok := sessionExpired(err); ok {
		return o
	}
	for _, k := range reasons {
		if errors.Is(err, k.kind) {
			c := notYet(k.reason, err.Error())
			o := errorOutcome{condition: &c}
			if k.retry {
				o.result = retry
			}
			return o
		}
	}
	return errorOutcome{err: err}
}
