package azure

import (
	"context"
	"fmt"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7"
	"k8s.io/utils/ptr"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/platform"
)

func (p *Platform) nsgResource(name string, role infrav1.AzureSubnetRole) shared {
	return shared{
		kind: "security group", name: name, path: "networkSecurityGroups/" + name,
		get: func(ctx context.Context) (*found, error) {
			r, err := p.clients.nsgs.Get(ctx, p.group(), name, nil)
			if isNotFound(err) {
				return nil, nil
			}
			if err != nil {
				return nil, classify("reading security group "+name, err)
			}
			return &found{state: netState(r.Properties, func(x *armnetwork.SecurityGroupPropertiesFormat) *armnetwork.ProvisioningState {
				return x.ProvisioningState
			}), tags: r.Tags}, nil
		},
		create: func(ctx context.Context) (string, error) {
			poller, err := p.clients.nsgs.BeginCreateOrUpdate(ctx, p.group(), name, p.nsgParams(role), nil)
			return begun(ctx, "creating security group "+name, poller, err)
		},
		remove: func(ctx context.Context) (string, error) {
			poller, err := p.clients.nsgs.BeginDelete(ctx, p.group(), name, nil)
			return begun(ctx, "deleting security group "+name, poller, err)
		},
		resume: func(ctx context.Context, typ infrav1.ClusterOperationType, token string) (bool, string, error) {
			if typ == infrav1.ClusterOperationDelete {
				poller, err := p.clients.nsgs.BeginDelete(ctx, p.group(), name, &armnetwork.SecurityGroupsClientBeginDeleteOptions{ResumeToken: token})
				return pollToken(ctx, "deleting security group "+name, token, poller, err)
			}
			poller, err := p.clients.nsgs.BeginCreateOrUpdate(ctx, p.group(), name, armnetwork.SecurityGroup{}, &armnetwork.SecurityGroupsClientBeginCreateOrUpdateOptions{ResumeToken: token})
			return pollToken(ctx, "creating security group "+name, token, poller, err)
		},
	}
}

// nsgParams is a role's security group: Azure's default rules (traffic
// inside the virtual network and from its load balancers is allowed,
// from the internet denied) and, on the control plane, the API server's
// port from anywhere, which the public load balancer forwards.
func (p *Platform) nsgParams(role infrav1.AzureSubnetRole) armnetwork.SecurityGroup {
	g := armnetwork.SecurityGroup{Location: ptr.To(p.cluster.Spec.Azure.Location), Tags: p.clusterTags(), Properties: &armnetwork.SecurityGroupPropertiesFormat{}}
	if role == infrav1.SubnetControlPlane {
		g.Properties.SecurityRules = []*armnetwork.SecurityRule{{
			Name: ptr.To("allow-apiserver"),
			Properties: &armnetwork.SecurityRulePropertiesFormat{
				Description:              ptr.To("The Kubernetes API server"),
				Priority:                 ptr.To[int32](100),
				Direction:                ptr.To(armnetwork.SecurityRuleDirectionInbound),
				Access:                   ptr.To(armnetwork.SecurityRuleAccessAllow),
				Protocol:                 ptr.To(armnetwork.SecurityRuleProtocolTCP),
				SourceAddressPrefix:      ptr.To("*"),
				SourcePortRange:          ptr.To("*"),
				DestinationAddressPrefix: ptr.To("*"),
				DestinationPortRange:     ptr.To(fmt.Sprint(APIServerPort)),
			},
		}}
	}
	return g
}

func (p *Platform) routeTableResource(name string) shared {
	return shared{
		kind: "route table", name: name, path: "routeTables/" + name,
		get: func(ctx context.Context) (*found, error) {
			r, err := p.clients.routes.Get(ctx, p.group(), name, nil)
			if isNotFound(err) {
				return nil, nil
			}
			if err != nil {
				return nil, classify("reading route table "+name, err)
			}
			return &found{state: netState(r.Properties, func(x *armnetwork.RouteTablePropertiesFormat) *armnetwork.ProvisioningState {
				return x.ProvisioningState
			}), tags: r.Tags}, nil
		},
		create: func(ctx context.Context) (string, error) {
			// Empty: the routes of l2bridge pod networks are the cloud
			// provider's or the CNI's to add.
			params := armnetwork.RouteTable{Location: ptr.To(p.cluster.Spec.Azure.Location), Tags: p.clusterTags(), Properties: &armnetwork.RouteTablePropertiesFormat{}}
			poller, err := p.clients.routes.BeginCreateOrUpdate(ctx, p.group(), name, params, nil)
			return begun(ctx, "creating route table "+name, poller, err)
		},
		remove: func(ctx context.Context) (string, error) {
			poller, err := p.clients.routes.BeginDelete(ctx, p.group(), name, nil)
			return begun(ctx, "deleting route table "+name, poller, err)
		},
		resume: func(ctx context.Context, typ infrav1.ClusterOperationType, token string) (bool, string, error) {
			if typ == infrav1.ClusterOperationDelete {
				poller, err := p.clients.routes.BeginDelete(ctx, p.group(), name, &armnetwork.RouteTablesClientBeginDeleteOptions{ResumeToken: token})
				return pollToken(ctx, "deleting route table "+name, token, poller, err)
			}
			poller, err := p.clients.routes.BeginCreateOrUpdate(ctx, p.group(), name, armnetwork.RouteTable{}, &armnetwork.RouteTablesClientBeginCreateOrUpdateOptions{ResumeToken: token})
			return pollToken(ctx, "creating route table "+name, token, poller, err)
		},
	}
}

func vnetPath(name string) string { return "virtualNetworks/" + name }

func (p *Platform) vnetResource(n infrav1.AzureNetworkSpec) shared {
	name := n.VNetName
	return shared{
		kind: "virtual network", name: name, path: vnetPath(name), byoAllowed: true,
		get: func(ctx context.Context) (*found, error) {
			r, err := p.clients.vnets.Get(ctx, p.group(), name, nil)
			if isNotFound(err) {
				return nil, nil
			}
			if err != nil {
				return nil, classify("reading virtual network "+name, err)
			}
			return &found{state: netState(r.Properties, func(x *armnetwork.VirtualNetworkPropertiesFormat) *armnetwork.ProvisioningState {
				return x.ProvisioningState
			}), tags: r.Tags}, nil
		},
		create: func(ctx context.Context) (string, error) {
			params := armnetwork.VirtualNetwork{
				Location: ptr.To(p.cluster.Spec.Azure.Location),
				Tags:     p.clusterTags(),
				Properties: &armnetwork.VirtualNetworkPropertiesFormat{
					AddressSpace: &armnetwork.AddressSpace{AddressPrefixes: toPtrs(n.CIDRBlocks)},
				},
			}
			for _, s := range n.Subnets {
				params.Properties.Subnets = append(params.Properties.Subnets, p.subnetParams(s))
			}
			poller, err := p.clients.vnets.BeginCreateOrUpdate(ctx, p.group(), name, params, nil)
			return begun(ctx, "creating virtual network "+name, poller, err)
		},
		remove: func(ctx context.Context) (string, error) {
			poller, err := p.clients.vnets.BeginDelete(ctx, p.group(), name, nil)
			return begun(ctx, "deleting virtual network "+name, poller, err)
		},
		resume: func(ctx context.Context, typ infrav1.ClusterOperationType, token string) (bool, string, error) {
			if typ == infrav1.ClusterOperationDelete {
				poller, err := p.clients.vnets.BeginDelete(ctx, p.group(), name, &armnetwork.VirtualNetworksClientBeginDeleteOptions{ResumeToken: token})
				return pollToken(ctx, "deleting virtual network "+name, token, poller, err)
			}
			poller, err := p.clients.vnets.BeginCreateOrUpdate(ctx, p.group(), name, armnetwork.VirtualNetwork{}, &armnetwork.VirtualNetworksClientBeginCreateOrUpdateOptions{ResumeToken: token})
			return pollToken(ctx, "creating virtual network "+name, token, poller, err)
		},
	}
}

// subnetParams is a subnet of a network capwin makes: its role's security
// group, and the route table on Node subnets.
func (p *Platform) subnetParams(s infrav1.AzureSubnet) *armnetwork.Subnet {
	names := p.names()
	sub := &armnetwork.Subnet{
		Name: ptr.To(s.Name),
		Properties: &armnetwork.SubnetPropertiesFormat{
			AddressPrefix:        ptr.To(s.CIDRBlock),
			NetworkSecurityGroup: &armnetwork.SecurityGroup{ID: ptr.To(p.resourceID("networkSecurityGroups", names.nsg[s.Role]))},
			// Workers have no public address and sit behind no load
			// balancer: Azure's default outbound access is their way to
			// the API server's public address and to image registries.
			// Said, not left to the API version's default, which newer
			// versions turn off.
			DefaultOutboundAccess: ptr.To(true),
		},
	}
	if s.Role == infrav1.SubnetNode {
		sub.Properties.RouteTable = &armnetwork.RouteTable{ID: ptr.To(p.resourceID("routeTables", names.routeTable))}
	}
	return sub
}

// resourceID is the ID of a network resource in the cluster's group.
func (p *Platform) resourceID(typ, name string) string {
	a := p.cluster.Spec.Azure
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/%s/%s", a.SubscriptionID, a.ResourceGroup, typ, name)
}

// subnetOf is the spec's subnet a recorded operation's resource names.
func (p *Platform) subnetOf(resource string) (infrav1.AzureSubnet, bool) {
	for _, s := range p.cluster.Spec.Azure.Network.Subnets {
		if strings.EqualFold(resource, vnetPath(p.cluster.Spec.Azure.Network.VNetName)+"/subnets/"+s.Name) {
			return s, true
		}
	}
	return infrav1.AzureSubnet{}, false
}

// vnetExistsUnowned reports whether the virtual network exists without
// the cluster's tag: made beforehand, and used as it is.
func (p *Platform) vnetExistsUnowned(ctx context.Context) (bool, error) {
	f, err := p.vnetResource(p.cluster.Spec.Azure.Network).get(ctx)
	if err != nil || f == nil {
		return false, err
	}
	return !p.ownedByCluster(f.tags), nil
}

// checkSubnets returns ErrNotFound naming a subnet of the spec that a
// virtual network made beforehand lacks.
func (p *Platform) checkSubnets(ctx context.Context) error {
	n := p.cluster.Spec.Azure.Network
	for _, s := range n.Subnets {
		if _, err := p.clients.subnets.Get(ctx, p.group(), n.VNetName, s.Name, nil); err != nil {
			if isNotFound(err) {
				return platform.NewError(platform.ErrNotFound, fmt.Sprintf("Subnet %s does not exist in virtual network %s of resource group %s, which capwin did not create: create the subnet, or delete the network and let capwin make it", s.Name, n.VNetName, p.group()))
			}
			return classify("reading subnet "+s.Name, err)
		}
	}
	return nil
}

// ensureSubnets adds the spec's subnets that a network capwin made lacks
// (the network was made with them; one deleted since is made again).
func (p *Platform) ensureSubnets(ctx context.Context) (platform.ClusterState, error) {
	n := p.cluster.Spec.Azure.Network
	for _, s := range n.Subnets {
		_, err := p.clients.subnets.Get(ctx, p.group(), n.VNetName, s.Name, nil)
		if err == nil {
			continue
		}
		if !isNotFound(err) {
			return platform.ClusterState{}, classify("reading subnet "+s.Name, err)
		}
		poller, err := p.clients.subnets.BeginCreateOrUpdate(ctx, p.group(), n.VNetName, s.Name, *p.subnetParams(s), nil)
		token, err := begun(ctx, "creating subnet "+s.Name, poller, err)
		if err != nil {
			return platform.ClusterState{}, err
		}
		if token == "" {
			// Made at once: on to the next.
			continue
		}
		return platform.ClusterState{
			Operation: infrav1.ClusterOperation{Type: infrav1.ClusterOperationCreate, Resource: vnetPath(n.VNetName) + "/subnets/" + s.Name, ID: token},
			Waiting:   "Creating subnet " + s.Name,
		}, nil
	}
	return platform.ClusterState{}, nil
}

func toPtrs(in []string) []*string {
	out := make([]*string, len(in))
	for i := range in {
		out[i] = ptr.To(in[i])
	}
	return out
}
