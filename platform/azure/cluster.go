package azure

import (
	"context"
	"fmt"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/platform"
)

// APIServerPort is the port the API server's load balancer forwards, and
// the port of the endpoint capwin sets.
const APIServerPort = 6443

// Names inside the API server's load balancer.
const (
	lbFrontend = "apiserver"
	lbPool     = "controlplane"
	lbProbe    = "apiserver"
	lbRule     = "apiserver"
	lbOutbound = "controlplane-outbound"
)

// clusterNames are the names of the resources capwin makes for a cluster,
// derived from the HybridCluster's name.
type clusterNames struct {
	nsg        map[infrav1.AzureSubnetRole]string
	routeTable string
	publicIP   string
	lb         string
}

func (p *Platform) names() clusterNames {
	n := p.cluster.Name
	return clusterNames{
		nsg: map[infrav1.AzureSubnetRole]string{
			infrav1.SubnetControlPlane: n + "-controlplane-nsg",
			infrav1.SubnetNode:         n + "-node-nsg",
		},
		routeTable: n + "-node-routetable",
		publicIP:   n + "-apiserver-pip",
		lb:         n + "-apiserver-lb",
	}
}

// clusterKey is the value of ClusterTag on the cluster's resources: the
// Cluster's namespace and name, as on its machines' resources.
func (p *Platform) clusterKey() string {
	name := p.cluster.Labels[clusterv1.ClusterNameLabel]
	if name == "" {
		name = p.cluster.Name
	}
	return p.cluster.Namespace + "/" + name
}

func (p *Platform) clusterTags() map[string]*string {
	return map[string]*string{ClusterTag: ptr.To(p.clusterKey())}
}

// ownedByCluster reports whether capwin made a resource for this cluster.
func (p *Platform) ownedByCluster(tags map[string]*string) bool {
	return ptr.Deref(tags[ClusterTag], "") == p.clusterKey()
}

func (p *Platform) publicLB() bool {
	return p.cluster.Spec.Azure.APIServerLoadBalancer != infrav1.APIServerLoadBalancerNone
}

// shared is one of the cluster's shared resources, as EnsureCluster and
// DeleteCluster drive it.
type shared struct {
	kind, name string
	// path is the resource's type and name, as recorded in
	// status.operation.resource.
	path string
	// get reads the resource: nil when it does not exist.
	get func(ctx context.Context) (*found, error)
	// create begins making it; the token of the operation, or "" when it
	// ended already.
	create func(ctx context.Context) (string, error)
	// remove begins deleting it.
	remove func(ctx context.Context) (string, error)
	// resume polls a recorded operation once.
	resume func(ctx context.Context, typ infrav1.ClusterOperationType, token string) (bool, string, error)
	// byoAllowed: a resource of this name that capwin did not make is
	// used as it is (the resource group, the virtual network); for the
	// others it is a name clash.
	byoAllowed bool
}

// found is what a shared resource's read tells.
type found struct {
	state string
	tags  map[string]*string
}

func (s shared) String() string { return s.kind + " " + s.name }

// resources are the cluster's shared resources in the order they are
// made; they are deleted in the reverse order.
func (p *Platform) resources() []shared {
	a := p.cluster.Spec.Azure
	names := p.names()
	out := []shared{p.groupResource()}
	for _, role := range []infrav1.AzureSubnetRole{infrav1.SubnetControlPlane, infrav1.SubnetNode} {
		out = append(out, p.nsgResource(names.nsg[role], role))
	}
	out = append(out, p.routeTableResource(names.routeTable), p.vnetResource(a.Network))
	if p.publicLB() {
		out = append(out, p.publicIPResource(names.publicIP), p.lbResource(names))
	}
	return out
}

// EnsureCluster makes what the cluster's machines need, one operation per
// call: the resource group, then (unless the virtual network exists
// without capwin's tag) a security group per subnet role, the Node
// subnets' route table and the virtual network with its subnets, then the
// API server's public IP address and load balancer. It reports the
// endpoint of that load balancer once its address is known, and, once
// machines can be made, spec.azure.zones as failure domains.
func (p *Platform) EnsureCluster(ctx context.Context) (platform.ClusterState, error) {
	st, err := p.ensureCluster(ctx)
	if err == nil && st.Ready() {
		for _, zone := range p.cluster.Spec.Azure.Zones {
			st.FailureDomains = append(st.FailureDomains, clusterv1.FailureDomain{Name: zone, ControlPlane: ptr.To(true)})
		}
	}
	return st, err
}

func (p *Platform) ensureCluster(ctx context.Context) (platform.ClusterState, error) {
	all := p.resources()
	if op := p.cluster.Status.Operation; !op.IsZero() {
		done, next, err := p.resumeShared(ctx, all, op)
		if err != nil || !done {
			return platform.ClusterState{Operation: next, Waiting: describe(next, all)}, err
		}
	}
	// A virtual network made beforehand is used as it is: it needs none
	// of the security groups and route table of a network capwin makes.
	byoNetwork, err := p.vnetExistsUnowned(ctx)
	if err != nil {
		return platform.ClusterState{}, err
	}
	for _, r := range all {
		if byoNetwork && r.byoNetworkPart() {
			continue
		}
		f, err := r.get(ctx)
		if err != nil {
			return platform.ClusterState{}, err
		}
		if f != nil && !p.ownedByCluster(f.tags) {
			if !r.byoAllowed {
				return platform.ClusterState{}, fmt.Errorf("%w: %s exists in resource group %s and was not made for Cluster %s (tag %s): delete or rename it, or name the HybridCluster otherwise", platform.ErrInvalid, r, p.group(), p.clusterKey(), ClusterTag)
			}
			if f.state != "" && f.state != "Succeeded" {
				return platform.ClusterState{Waiting: fmt.Sprintf("%s is in provisioning state %s", r, f.state)}, nil
			}
			continue
		}
		switch {
		case f == nil, f.state == "Failed":
			// A resource whose last write failed is written again, as
			// ARM allows.
			token, err := r.create(ctx)
			if err != nil {
				return platform.ClusterState{}, err
			}
			if token != "" {
				op := infrav1.ClusterOperation{Type: infrav1.ClusterOperationCreate, Resource: r.path, ID: token}
				return platform.ClusterState{Operation: op, Waiting: describe(op, all)}, nil
			}
		case f.state != "Succeeded":
			return platform.ClusterState{Waiting: fmt.Sprintf("%s is in provisioning state %s", r, f.state)}, nil
		}
		if r.kind == "virtual network" {
			if st, err := p.ensureSubnets(ctx); err != nil || !st.Ready() {
				return st, err
			}
		}
	}
	if byoNetwork {
		if err := p.checkSubnets(ctx); err != nil {
			return platform.ClusterState{}, err
		}
	}
	if !p.publicLB() {
		return platform.ClusterState{}, nil
	}
	ip, err := p.clients.publicIPs.Get(ctx, p.group(), p.names().publicIP, nil)
	if err != nil {
		return platform.ClusterState{}, classify("reading public IP address "+p.names().publicIP, err)
	}
	addr := ""
	if ip.Properties != nil {
		addr = ptr.Deref(ip.Properties.IPAddress, "")
	}
	if addr == "" {
		return platform.ClusterState{Waiting: fmt.Sprintf("public IP address %s has no address yet", p.names().publicIP)}, nil
	}
	ep := clusterv1.APIEndpoint{Host: addr, Port: APIServerPort}
	if set := p.cluster.Spec.ControlPlaneEndpoint; set.IsValid() && set != ep {
		return platform.ClusterState{}, fmt.Errorf("%w: spec.controlPlaneEndpoint is %s:%d, but the API server's load balancer %s that capwin made answers at %s:%d: with spec.azure.apiServerLoadBalancer Public, leave the endpoint empty for capwin to set", platform.ErrInvalid, set.Host, set.Port, p.names().lb, ep.Host, ep.Port)
	}
	return platform.ClusterState{ControlPlaneEndpoint: ep}, nil
}

// byoNetworkPart reports whether r is made only with a network capwin
// makes.
func (r shared) byoNetworkPart() bool {
	return r.kind == "security group" || r.kind == "route table" || r.kind == "virtual network"
}

// DeleteCluster deletes what capwin made for the cluster, one operation
// per call: the resource group when capwin made it (with everything in
// it), else the load balancer, the public IP address, the virtual
// network, the route table and the security groups that carry the
// cluster's tag. Resources without it are left alone.
func (p *Platform) DeleteCluster(ctx context.Context) (bool, infrav1.ClusterOperation, error) {
	all := p.resources()
	if op := p.cluster.Status.Operation; !op.IsZero() {
		done, next, err := p.resumeShared(ctx, all, op)
		if !done && err == nil {
			return false, next, nil
		}
		if err != nil && (!isOperationFailed(err) || op.Type == infrav1.ClusterOperationDelete) {
			// A delete Azure failed says why, and is tried again
			// after the retry.
			return false, next, err
		}
		// A failed create is deleted like any other resource.
	}
	g, err := all[0].get(ctx)
	if err != nil {
		return false, infrav1.ClusterOperation{}, err
	}
	if g == nil {
		return true, infrav1.ClusterOperation{}, nil
	}
	order := all[1:]
	if p.ownedByCluster(g.tags) {
		other, err := p.otherClustersResource(ctx)
		if err != nil {
			return false, infrav1.ClusterOperation{}, err
		}
		if other == "" {
			// Everything in the group capwin made goes with it.
			order = all[:1]
		}
		// Else the group holds another cluster's resources: this
		// cluster's own are deleted one by one, and the group is kept.
	}
	for i := len(order) - 1; i >= 0; i-- {
		r := order[i]
		f, err := r.get(ctx)
		if err != nil {
			return false, infrav1.ClusterOperation{}, err
		}
		if f == nil || !p.ownedByCluster(f.tags) {
			continue
		}
		if f.state == "Deleting" {
			return false, infrav1.ClusterOperation{}, waitFor(r.kind, r.name, f.state)
		}
		token, err := r.remove(ctx)
		if err != nil {
			return false, infrav1.ClusterOperation{}, err
		}
		if token != "" {
			return false, infrav1.ClusterOperation{Type: infrav1.ClusterOperationDelete, Resource: r.path, ID: token}, nil
		}
	}
	return true, infrav1.ClusterOperation{}, nil
}

// otherClustersResource returns the ID of a resource in the cluster's
// resource group that carries another cluster's tag, or "".
func (p *Platform) otherClustersResource(ctx context.Context) (string, error) {
	pager := p.clients.resources.NewListByResourceGroupPager(p.group(), nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return "", classify("listing the resources of resource group "+p.group(), err)
		}
		for _, r := range page.Value {
			if r == nil {
				continue
			}
			if c := ptr.Deref(r.Tags[ClusterTag], ""); c != "" && c != p.clusterKey() {
				return ptr.Deref(r.ID, ""), nil
			}
		}
	}
	return "", nil
}

// resumeShared polls the recorded operation once.
func (p *Platform) resumeShared(ctx context.Context, all []shared, op infrav1.ClusterOperation) (bool, infrav1.ClusterOperation, error) {
	for _, r := range all {
		if strings.EqualFold(r.path, op.Resource) {
			done, token, err := r.resume(ctx, op.Type, op.ID)
			return done, withToken(op, token), err
		}
	}
	if s, ok := p.subnetOf(op.Resource); ok {
		poller, err := p.clients.subnets.BeginCreateOrUpdate(ctx, p.group(), p.cluster.Spec.Azure.Network.VNetName, s.Name, armnetwork.Subnet{}, &armnetwork.SubnetsClientBeginCreateOrUpdateOptions{ResumeToken: op.ID})
		done, token, err := pollToken(ctx, "creating subnet "+s.Name, op.ID, poller, err)
		return done, withToken(op, token), err
	}
	// A resource this spec no longer names: looked at afresh.
	return true, infrav1.ClusterOperation{}, nil
}

// withToken is op with its resume token replaced, or no operation when
// the token is "" (the operation ended).
func withToken(op infrav1.ClusterOperation, token string) infrav1.ClusterOperation {
	if token == "" {
		return infrav1.ClusterOperation{}
	}
	op.ID = token
	return op
}

// describe says what a recorded operation does, for the condition.
func describe(op infrav1.ClusterOperation, all []shared) string {
	if op.IsZero() {
		return ""
	}
	what := op.Resource
	for _, r := range all {
		if strings.EqualFold(r.path, op.Resource) {
			what = r.String()
		}
	}
	if op.Type == infrav1.ClusterOperationDelete {
		return "Deleting " + what
	}
	return "Creating " + what
}

// begun adapts a Begin call to shared.create and shared.remove.
func begun[T any](ctx context.Context, what string, poller *runtime.Poller[T], err error) (string, error) {
	if err != nil {
		return "", classify(what, err)
	}
	return startedToken(ctx, what, poller)
}

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

func (p *Platform) publicIPResource(name string) shared {
	return shared{
		kind: "public IP address", name: name, path: "publicIPAddresses/" + name,
		get: func(ctx context.Context) (*found, error) {
			r, err := p.clients.publicIPs.Get(ctx, p.group(), name, nil)
			if isNotFound(err) {
				return nil, nil
			}
			if err != nil {
				return nil, classify("reading public IP address "+name, err)
			}
			return &found{state: netState(r.Properties, func(x *armnetwork.PublicIPAddressPropertiesFormat) *armnetwork.ProvisioningState {
				return x.ProvisioningState
			}), tags: r.Tags}, nil
		},
		create: func(ctx context.Context) (string, error) {
			params := armnetwork.PublicIPAddress{
				Location: ptr.To(p.cluster.Spec.Azure.Location),
				Tags:     p.clusterTags(),
				SKU:      &armnetwork.PublicIPAddressSKU{Name: ptr.To(armnetwork.PublicIPAddressSKUNameStandard), Tier: ptr.To(armnetwork.PublicIPAddressSKUTierRegional)},
				Properties: &armnetwork.PublicIPAddressPropertiesFormat{
					PublicIPAllocationMethod: ptr.To(armnetwork.IPAllocationMethodStatic),
					PublicIPAddressVersion:   ptr.To(armnetwork.IPVersionIPv4),
				},
			}
			poller, err := p.clients.publicIPs.BeginCreateOrUpdate(ctx, p.group(), name, params, nil)
			return begun(ctx, "creating public IP address "+name, poller, err)
		},
		remove: func(ctx context.Context) (string, error) {
			poller, err := p.clients.publicIPs.BeginDelete(ctx, p.group(), name, nil)
			return begun(ctx, "deleting public IP address "+name, poller, err)
		},
		resume: func(ctx context.Context, typ infrav1.ClusterOperationType, token string) (bool, string, error) {
			if typ == infrav1.ClusterOperationDelete {
				poller, err := p.clients.publicIPs.BeginDelete(ctx, p.group(), name, &armnetwork.PublicIPAddressesClientBeginDeleteOptions{ResumeToken: token})
				return pollToken(ctx, "deleting public IP address "+name, token, poller, err)
			}
			poller, err := p.clients.publicIPs.BeginCreateOrUpdate(ctx, p.group(), name, armnetwork.PublicIPAddress{}, &armnetwork.PublicIPAddressesClientBeginCreateOrUpdateOptions{ResumeToken: token})
			return pollToken(ctx, "creating public IP address "+name, token, poller, err)
		},
	}
}

func (p *Platform) lbResource(names clusterNames) shared {
	name := names.lb
	return shared{
		kind: "load balancer", name: name, path: "loadBalancers/" + name,
		get: func(ctx context.Context) (*found, error) {
			r, err := p.clients.lbs.Get(ctx, p.group(), name, nil)
			if isNotFound(err) {
				return nil, nil
			}
			if err != nil {
				return nil, classify("reading load balancer "+name, err)
			}
			return &found{state: netState(r.Properties, func(x *armnetwork.LoadBalancerPropertiesFormat) *armnetwork.ProvisioningState {
				return x.ProvisioningState
			}), tags: r.Tags}, nil
		},
		create: func(ctx context.Context) (string, error) {
			poller, err := p.clients.lbs.BeginCreateOrUpdate(ctx, p.group(), name, p.lbParams(names), nil)
			return begun(ctx, "creating load balancer "+name, poller, err)
		},
		remove: func(ctx context.Context) (string, error) {
			poller, err := p.clients.lbs.BeginDelete(ctx, p.group(), name, nil)
			return begun(ctx, "deleting load balancer "+name, poller, err)
		},
		resume: func(ctx context.Context, typ infrav1.ClusterOperationType, token string) (bool, string, error) {
			if typ == infrav1.ClusterOperationDelete {
				poller, err := p.clients.lbs.BeginDelete(ctx, p.group(), name, &armnetwork.LoadBalancersClientBeginDeleteOptions{ResumeToken: token})
				return pollToken(ctx, "deleting load balancer "+name, token, poller, err)
			}
			poller, err := p.clients.lbs.BeginCreateOrUpdate(ctx, p.group(), name, armnetwork.LoadBalancer{}, &armnetwork.LoadBalancersClientBeginCreateOrUpdateOptions{ResumeToken: token})
			return pollToken(ctx, "creating load balancer "+name, token, poller, err)
		},
	}
}

// lbParams is the API server's Standard public load balancer: port 6443
// of the public address to port 6443 of the control-plane machines whose
// API server answers /readyz, and an outbound rule through the same
// address, since a machine behind a Standard public load balancer has no
// other way out.
func (p *Platform) lbParams(names clusterNames) armnetwork.LoadBalancer {
	lbID := p.resourceID("loadBalancers", names.lb)
	frontend := &armnetwork.SubResource{ID: ptr.To(lbID + "/frontendIPConfigurations/" + lbFrontend)}
	pool := &armnetwork.SubResource{ID: ptr.To(p.backendPoolID())}
	return armnetwork.LoadBalancer{
		Location: ptr.To(p.cluster.Spec.Azure.Location),
		Tags:     p.clusterTags(),
		SKU:      &armnetwork.LoadBalancerSKU{Name: ptr.To(armnetwork.LoadBalancerSKUNameStandard), Tier: ptr.To(armnetwork.LoadBalancerSKUTierRegional)},
		Properties: &armnetwork.LoadBalancerPropertiesFormat{
			FrontendIPConfigurations: []*armnetwork.FrontendIPConfiguration{{
				Name:       ptr.To(lbFrontend),
				Properties: &armnetwork.FrontendIPConfigurationPropertiesFormat{PublicIPAddress: &armnetwork.PublicIPAddress{ID: ptr.To(p.resourceID("publicIPAddresses", names.publicIP))}},
			}},
			BackendAddressPools: []*armnetwork.BackendAddressPool{{Name: ptr.To(lbPool)}},
			Probes: []*armnetwork.Probe{{
				Name: ptr.To(lbProbe),
				// /readyz, not an open port: a joining control plane's
				// API server listens before it can answer.
				Properties: &armnetwork.ProbePropertiesFormat{
					Protocol:          ptr.To(armnetwork.ProbeProtocolHTTPS),
					Port:              ptr.To[int32](APIServerPort),
					RequestPath:       ptr.To("/readyz"),
					IntervalInSeconds: ptr.To[int32](15),
					NumberOfProbes:    ptr.To[int32](1),
				},
			}},
			LoadBalancingRules: []*armnetwork.LoadBalancingRule{{
				Name: ptr.To(lbRule),
				Properties: &armnetwork.LoadBalancingRulePropertiesFormat{
					Protocol:                ptr.To(armnetwork.TransportProtocolTCP),
					FrontendPort:            ptr.To[int32](APIServerPort),
					BackendPort:             ptr.To[int32](APIServerPort),
					FrontendIPConfiguration: frontend,
					BackendAddressPool:      pool,
					Probe:                   &armnetwork.SubResource{ID: ptr.To(lbID + "/probes/" + lbProbe)},
					IdleTimeoutInMinutes:    ptr.To[int32](4),
					DisableOutboundSnat:     ptr.To(true),
					// A watch or exec idle past the timeout is reset, not
					// left hanging.
					EnableTCPReset: ptr.To(true),
				},
			}},
			OutboundRules: []*armnetwork.OutboundRule{{
				Name: ptr.To(lbOutbound),
				Properties: &armnetwork.OutboundRulePropertiesFormat{
					Protocol:                 ptr.To(armnetwork.LoadBalancerOutboundRuleProtocolAll),
					EnableTCPReset:           ptr.To(true),
					FrontendIPConfigurations: []*armnetwork.SubResource{frontend},
					BackendAddressPool:       pool,
				},
			}},
		},
	}
}

// backendPoolID is the ID of the API server load balancer's pool, which
// control-plane machines' network interfaces join.
func (p *Platform) backendPoolID() string {
	return p.resourceID("loadBalancers", p.names().lb) + "/backendAddressPools/" + lbPool
}

// netState is the provisioning state of a network resource's properties.
func netState[T any](props *T, state func(*T) *armnetwork.ProvisioningState) string {
	if props == nil {
		return ""
	}
	return string(ptr.Deref(state(props), ""))
}

func toPtrs(in []string) []*string {
	out := make([]*string, len(in))
	for i := range in {
		out[i] = ptr.To(in[i])
	}
	return out
}
