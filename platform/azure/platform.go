package azure

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/platform"
)

// Platform is an Azure HybridCluster's subscription, through the shared
// clients of its credentials.
type Platform struct {
	clients *clientSet
	cluster *infrav1.HybridCluster
}

var _ platform.Platform = &Platform{}

// New returns the platform of an Azure HybridCluster. Nothing is sent to
// Azure until it is used.
func New(clients *Clients, secret *corev1.Secret, hc *infrav1.HybridCluster) (*Platform, error) {
	if hc.Spec.Azure == nil {
		return nil, fmt.Errorf("%w: HybridCluster %s has no spec.azure", platform.ErrInvalid, hc.Name)
	}
	creds, err := CredentialsFrom(secret)
	if err != nil {
		return nil, err
	}
	set, err := clients.get(creds, hc.Spec.Azure.SubscriptionID)
	if err != nil {
		return nil, err
	}
	return &Platform{clients: set, cluster: hc}, nil
}
