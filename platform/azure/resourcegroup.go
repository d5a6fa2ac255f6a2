package azure

import (
	"context"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources"
	"k8s.io/utils/ptr"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
)

func (p *Platform) groupResource() shared {
	a := p.cluster.Spec.Azure
	return shared{
		kind: "resource group", name: a.ResourceGroup, path: "resourceGroups/" + a.ResourceGroup, byoAllowed: true,
		get: func(ctx context.Context) (*found, error) {
			g, err := p.clients.groups.Get(ctx, a.ResourceGroup, nil)
			if isNotFound(err) {
				return nil, nil
			}
			if err != nil {
				return nil, classify("reading resource group "+a.ResourceGroup, err)
			}
			f := &found{tags: g.Tags}
			if g.Properties != nil {
				f.state = ptr.Deref(g.Properties.ProvisioningState, "")
			}
			return f, nil
		},
		create: func(ctx context.Context) (string, error) {
			// A resource group is made at once, not by a long-running
			// operation.
			_, err := p.clients.groups.CreateOrUpdate(ctx, a.ResourceGroup, armresources.ResourceGroup{Location: ptr.To(a.Location), Tags: p.clusterTags()}, nil)
			return "", classify("creating resource group "+a.ResourceGroup, err)
		},
		remove: func(ctx context.Context) (string, error) {
			poller, err := p.clients.groups.BeginDelete(ctx, a.ResourceGroup, nil)
			return begun(ctx, "deleting resource group "+a.ResourceGroup, poller, err)
		},
		resume: func(ctx context.Context, typ infrav1.ClusterOperationType, token string) (bool, string, error) {
			poller, err := p.clients.groups.BeginDelete(ctx, a.ResourceGroup, &armresources.ResourceGroupsClientBeginDeleteOptions{ResumeToken: token})
			return pollToken(ctx, "deleting resource group "+a.ResourceGroup, token, poller, err)
		},
	}
}
