package controllers

import (
	"errors"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/platform"
)

func TestClusterErrorOutcome(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		status   metav1.ConditionStatus // "" for no condition
		reason   string
		requeue  time.Duration
		returned bool
	}{
		{"available", nil, metav1.ConditionTrue, infrav1.HybridClusterPlatformAvailableReason, 0, false},
		{"azure in this build", platform.NewError(platform.ErrNotSupported, "no Azure controller yet"), metav1.ConditionFalse, infrav1.HybridClusterPlatformNotSupportedReason, 0, false},
		{"name clash on the platform", fmt.Errorf("%w: security group x exists", platform.ErrInvalid), metav1.ConditionFalse, infrav1.HybridClusterInvalidReason, platform.DefaultRetry, false},
		{"identity not allowed", fmt.Errorf("%w: x", platform.ErrIdentityNotAllowed), metav1.ConditionFalse, infrav1.HybridClusterIdentityNotAllowedReason, platform.DefaultRetry, false},
		{"no secret", fmt.Errorf("%w: Secret x", platform.ErrCredentialsNotFound), metav1.ConditionFalse, infrav1.HybridClusterCredentialsNotFoundReason, platform.DefaultRetry, false},
		{"login refused", platform.NewError(platform.ErrAuthentication, "vCenter login failed"), metav1.ConditionFalse, infrav1.HybridClusterBadCredentialsReason, platform.DefaultRetry, false},
		{"no datacenter", platform.NewError(platform.ErrNotFound, "Datacenter DC9 does not exist on vc"), metav1.ConditionFalse, infrav1.HybridClusterNotFoundReason, platform.DefaultRetry, false},
		{"unreachable", platform.NewError(platform.ErrUnavailable, "cannot connect to vCenter"), metav1.ConditionFalse, infrav1.HybridClusterUnreachableReason, platform.DefaultRetry, false},
		{"session expired", platform.WithRetryAfter(platform.ErrSessionExpired, time.Second), "", "", time.Second, false},
		{"anything else", errors.New("boom"), "", "", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := clusterErrorOutcome(tt.err)
			switch {
			case tt.status == "" && o.condition != nil:
				t.Errorf("set %+v, want no condition", o.condition)
			case tt.status == "":
			case o.condition == nil || o.condition.Status != tt.status || o.condition.Reason != tt.reason:
				t.Errorf("condition %+v, want %s %s", o.condition, tt.status, tt.reason)
			case tt.err != nil && o.condition.Message != tt.err.Error():
				t.Errorf("message %q, want the platform's %q", o.condition.Message, tt.err.Error())
			}
			if o.result.RequeueAfter != tt.requeue {
				t.Errorf("requeue after %v, want %v", o.result.RequeueAfter, tt.requeue)
			}
			if (o.err != nil) != tt.returned {
				t.Errorf("returned %v, want returned=%v", o.err, tt.returned)
			}
		})
	}
}
