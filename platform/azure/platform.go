package azure

import (
	"context"
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

// CheckCluster returns nil when the cluster's resource group and the
// virtual network's subnets exist. capwin does not create them yet: they
// are made beforehand (docs/azure.md).
func (p *Platform) CheckCluster(ctx context.Context) error {
	a := p.cluster.Spec.Azure
	if _, err := p.clients.groups.Get(ctx, a.ResourceGroup, nil); err != nil {
		if isNotFound(err) {
			return platform.NewError(platform.ErrNotFound, fmt.Sprintf("Resource group %s does not exist in subscription %s: create it and the virtual network %s (capwin does not create them yet)", a.ResourceGroup, a.SubscriptionID, a.Network.VNetName))
		}
		return classify("reading resource group "+a.ResourceGroup, err)
	}
	for _, s := range a.Network.Subnets {
		if _, err := p.clients.subnets.Get(ctx, a.ResourceGroup, a.Network.VNetName, s.Name, nil); err != nil {
			if isNotFound(err) {
				return platform.NewError(platform.ErrNotFound, fmt.Sprintf("Subnet %s of virtual network %s does not exist in resource group %s: create it (capwin does not create networks yet)", s.Name, a.Network.VNetName, a.ResourceGroup))
			}
			return classify("reading subnet "+s.Name, err)
		}
	}
	return nil
}
