// Package factory picks a HybridCluster's platform implementation from its
// spec. Adding a platform is a package under platform/ and a case here.
package factory

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/platform"
	"github.com/capwin/capwin/platform/azure"
	"github.com/capwin/capwin/platform/vsphere"
)

// Factory holds each platform's shared clients (vCenter sessions) and
// resolves a HybridCluster's credentials.
type Factory struct {
	// Client reads HybridClusterIdentities, Namespaces and Secrets.
	Client client.Reader
	// ControllerNamespace holds the Secrets of HybridClusterIdentities.
	ControllerNamespace string
	// VSphere is the vCenter session cache, one session per server and
	// credentials.
	VSphere *vsphere.Sessions
	// Azure is the ARM client cache, one set of clients per login and
	// subscription.
	Azure *azure.Clients
}

var _ platform.Factory = &Factory{}

// New returns a Factory with empty session caches.
func New(c client.Reader, controllerNamespace string) *Factory {
	return &Factory{Client: c, ControllerNamespace: controllerNamespace, VSphere: vsphere.NewSessions(), Azure: azure.NewClients(azure.Options{})}
}

// For returns the platform the HybridCluster's spec names, logged in.
func (f *Factory) For(ctx context.Context, hc *infrav1.HybridCluster) (platform.Platform, error) {
	switch hc.Spec.Platform() {
	case infrav1.PlatformVSphere:
		secret, err := platform.CredentialsSecret(ctx, f.Client, f.ControllerNamespace, hc)
		if err != nil {
			return nil, err
		}
		creds, err := vsphere.CredentialsFrom(secret, hc.Spec.VSphere)
		if err != nil {
			return nil, err
		}
		p, err := vsphere.New(ctx, f.VSphere, creds, hc)
		if err != nil {
			return nil, err
		}
		return p, nil
	case infrav1.PlatformAzure:
		secret, err := platform.CredentialsSecret(ctx, f.Client, f.ControllerNamespace, hc)
		if err != nil {
			return nil, err
		}
		return azure.New(f.Azure, secret, hc)
	}
	return nil, fmt.Errorf("%w: HybridCluster %s sets neither spec.vsphere nor spec.azure", platform.ErrInvalid, hc.Name)
}

// Supports reports whether For implements the platform.
func (f *Factory) Supports(name string) bool {
	return name == infrav1.PlatformVSphere || name == infrav1.PlatformAzure
}

// MakesClusterResources reports that Azure makes the cluster's resource group,
// network and load balancer; vSphere makes nothing of the cluster's own.
func (f *Factory) MakesClusterResources(hc *infrav1.HybridCluster) bool {
	return hc.Spec.Azure != nil
}

// Start runs the platforms' background work until ctx ends: it logs out of
// idle vCenter sessions, and of all of them at the end.
func (f *Factory) Start(ctx context.Context) error {
	return f.VSphere.Start(logr.NewContext(ctx, logr.FromContextOrDiscard(ctx).WithName("vcenter-sessions")))
}
