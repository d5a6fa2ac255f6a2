package azuresim

import (
	"context"
	"net/http"
	"net/netip"
	"sort"
	"strings"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7"
	networkfake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7/fake"
)

// Resource types of the network provider, as they appear in IDs.
const (
	typeVNet  = "Microsoft.Network/virtualNetworks"
	typeNSG   = "Microsoft.Network/networkSecurityGroups"
	typeRT    = "Microsoft.Network/routeTables"
	typeNIC   = "Microsoft.Network/networkInterfaces"
	typeSubnt = "Microsoft.Network/virtualNetworks/subnets"
)

// The network resource provider reports "Updating" while a create or an
// update runs, and "Deleting" while a delete runs.
var (
	netUpdating  = ptr(armnetwork.ProvisioningStateUpdating)
	netSucceeded = ptr(armnetwork.ProvisioningStateSucceeded)
	netDeleting  = ptr(armnetwork.ProvisioningStateDeleting)
)

// networkServers wires the network fakes to the model.
func (c *Cloud) networkServers() *networkfake.ServerFactory {
	return &networkfake.ServerFactory{
		VirtualNetworksServer: networkfake.VirtualNetworksServer{
			BeginCreateOrUpdate: c.putVNet,
			Get:                 c.getVNet,
			BeginDelete:         c.deleteVNet,
		},
		SubnetsServer: networkfake.SubnetsServer{
			BeginCreateOrUpdate: c.putSubnet,
			Get:                 c.getSubnet,
			BeginDelete:         c.deleteSubnet,
		},
		SecurityGroupsServer: networkfake.SecurityGroupsServer{
			BeginCreateOrUpdate: c.putNSG,
			Get:                 c.getNSG,
			BeginDelete:         c.deleteNSG,
		},
		RouteTablesServer: networkfake.RouteTablesServer{
			BeginCreateOrUpdate: c.putRouteTable,
			Get:                 c.getRouteTable,
			BeginDelete:         c.deleteRouteTable,
		},
		PublicIPAddressesServer: networkfake.PublicIPAddressesServer{
			BeginCreateOrUpdate: c.putPublicIP,
			Get:                 c.getPublicIP,
			BeginDelete:         c.deletePublicIP,
		},
		LoadBalancersServer: networkfake.LoadBalancersServer{
			BeginCreateOrUpdate: c.putLoadBalancer,
			Get:                 c.getLoadBalancer,
			BeginDelete:         c.deleteLoadBalancer,
		},
		InterfacesServer: networkfake.InterfacesServer{
			BeginCreateOrUpdate: c.putNIC,
			Get:                 c.getNIC,
			BeginDelete:         c.deleteNIC,
			NewListPager:        c.listNICs,
		},
	}
}

// ---- virtual networks and subnets ----

// putVNet creates or updates a virtual network with its inline subnets.
func (c *Cloud) putVNet(ctx context.Context, rg, name string, p armnetwork.VirtualNetwork, _ *armnetwork.VirtualNetworksClientBeginCreateOrUpdateOptions) (azfake.PollerResponder[armnetwork.VirtualNetworksClientCreateOrUpdateResponse], azfake.ErrorResponder) {
	var resp azfake.PollerResponder[armnetwork.VirtualNetworksClientCreateOrUpdateResponse]
	c.mu.Lock()
	defer c.mu.Unlock()
	g, e := c.group(rg, true)
	if e != nil {
		return resp, errResponder(e)
	}
	if deref(p.Location) == "" {
		return resp, errResponder(locationRequired())
	}
	id := c.resourceID(deref(g.Name), typeVNet, name)
	k := key(id)
	old := c.vnets[k]
	if e := c.notDeleting(k, id); e != nil {
		return resp, errResponder(e)
	}
	v := clone(p)
	v.ID, v.Name, v.Type = ptr(id), ptr(name), ptr(typeVNet)
	if v.Properties == nil {
		v.Properties = &armnetwork.VirtualNetworkPropertiesFormat{}
	}
	for _, s := range v.Properties.Subnets {
		if s.Properties == nil {
			s.Properties = &armnetwork.SubnetPropertiesFormat{}
		}
		s.ID, s.Type = ptr(id+"/subnets/"+deref(s.Name)), ptr(typeSubnt)
		s.Properties.IPConfigurations = nil
		s.Properties.ProvisioningState = netUpdating
	}
	if e := c.checkSubnets(&v, old); e != nil {
		return resp, errResponder(e)
	}
	v.Properties.ProvisioningState = netUpdating
	c.vnets[k] = &v
	c.startOp(ctx, k, func() {
		if v := c.vnets[k]; v != nil {
			v.Properties.ProvisioningState = netSucceeded
			for _, s := range v.Properties.Subnets {
				s.Properties.ProvisioningState = netSucceeded
			}
		}
	})
	result := c.vnetView(&v)
	result.Properties.ProvisioningState = netSucceeded
	for _, s := range result.Properties.Subnets {
		s.Properties.ProvisioningState = netSucceeded
	}
	return lro(c, createdOr(old == nil), armnetwork.VirtualNetworksClientCreateOrUpdateResponse{VirtualNetwork: result}), errResponder(nil)
}

// getVNet returns a virtual network, its subnets listing the NIC IP
// configurations that use them.
func (c *Cloud) getVNet(_ context.Context, rg, name string, _ *armnetwork.VirtualNetworksClientGetOptions) (azfake.Responder[armnetwork.VirtualNetworksClientGetResponse], azfake.ErrorResponder) {
	var resp azfake.Responder[armnetwork.VirtualNetworksClientGetResponse]
	c.mu.Lock()
	defer c.mu.Unlock()
	g, e := c.group(rg, false)
	if e != nil {
		return resp, errResponder(e)
	}
	v := c.vnets[key(c.resourceID(deref(g.Name), typeVNet, name))]
	if v == nil {
		return resp, errResponder(notFound(typeVNet, name, rg))
	}
	resp.SetResponse(http.StatusOK, armnetwork.VirtualNetworksClientGetResponse{VirtualNetwork: c.vnetView(v)}, nil)
	return resp, errResponder(nil)
}

// deleteVNet deletes a virtual network none of whose subnets is in use.
func (c *Cloud) deleteVNet(ctx context.Context, rg, name string, _ *armnetwork.VirtualNetworksClientBeginDeleteOptions) (azfake.PollerResponder[armnetwork.VirtualNetworksClientDeleteResponse], azfake.ErrorResponder) {
	var resp azfake.PollerResponder[armnetwork.VirtualNetworksClientDeleteResponse]
	c.mu.Lock()
	defer c.mu.Unlock()
	g, e := c.group(rg, false)
	if e != nil {
		return resp, errResponder(e)
	}
	k := key(c.resourceID(deref(g.Name), typeVNet, name))
	v := c.vnets[k]
	if v == nil {
		return deleted[armnetwork.VirtualNetworksClientDeleteResponse](), errResponder(nil)
	}
	for _, s := range v.Properties.Subnets {
		if e := c.subnetDeletable(deref(s.ID)); e != nil {
			return resp, errResponder(e)
		}
	}
	v.Properties.ProvisioningState = netDeleting
	c.startDelete(ctx, k, func() { delete(c.vnets, k) })
	return lro(c, http.StatusAccepted, armnetwork.VirtualNetworksClientDeleteResponse{}), errResponder(nil)
}

// putSubnet creates or updates one subnet of an existing virtual network.
func (c *Cloud) putSubnet(ctx context.Context, rg, vnetName, name string, p armnetwork.Subnet, _ *armnetwork.SubnetsClientBeginCreateOrUpdateOptions) (azfake.PollerResponder[armnetwork.SubnetsClientCreateOrUpdateResponse], azfake.ErrorResponder) {
	var resp azfake.PollerResponder[armnetwork.SubnetsClientCreateOrUpdateResponse]
	c.mu.Lock()
	defer c.mu.Unlock()
	g, e := c.group(rg, true)
	if e != nil {
		return resp, errResponder(e)
	}
	vk := key(c.resourceID(deref(g.Name), typeVNet, vnetName))
	v := c.vnets[vk]
	if v == nil {
		return resp, errResponder(notFound(typeVNet, vnetName, rg))
	}
	if e := c.notDeleting(vk, deref(v.ID)); e != nil {
		return resp, errResponder(e)
	}
	s := clone(p)
	s.ID, s.Name, s.Type = ptr(deref(v.ID)+"/subnets/"+name), ptr(name), ptr(typeSubnt)
	if s.Properties == nil {
		s.Properties = &armnetwork.SubnetPropertiesFormat{}
	}
	s.Properties.IPConfigurations = nil
	s.Properties.ProvisioningState = netUpdating
	sk := key(deref(s.ID))
	if e := c.notDeleting(sk, deref(s.ID)); e != nil {
		return resp, errResponder(e)
	}

	// Check the whole network as it would be with this subnet put in.
	next := clone(*v)
	existed := false
	for i, old := range next.Properties.Subnets {
		if strings.EqualFold(deref(old.Name), name) {
			next.Properties.Subnets[i] = &s
			existed = true
		}
	}
	if !existed {
		next.Properties.Subnets = append(next.Properties.Subnets, &s)
	}
	if e := c.checkSubnets(&next, v); e != nil {
		return resp, errResponder(e)
	}
	c.vnets[vk] = &next
	c.startOp(ctx, sk, func() {
		if _, s := c.subnet(sk); s != nil {
			s.Properties.ProvisioningState = netSucceeded
		}
	})
	result := c.subnetView(&s)
	result.Properties.ProvisioningState = netSucceeded
	return lro(c, createdOr(!existed), armnetwork.SubnetsClientCreateOrUpdateResponse{Subnet: result}), errResponder(nil)
}

// getSubnet returns one subnet.
func (c *Cloud) getSubnet(_ context.Context, rg, vnetName, name string, _ *armnetwork.SubnetsClientGetOptions) (azfake.Responder[armnetwork.SubnetsClientGetResponse], azfake.ErrorResponder) {
	var resp azfake.Responder[armnetwork.SubnetsClientGetResponse]
	c.mu.Lock()
	defer c.mu.Unlock()
	g, e := c.group(rg, false)
	if e != nil {
		return resp, errResponder(e)
	}
	id := c.resourceID(deref(g.Name), typeVNet, vnetName) + "/subnets/" + name
	_, s := c.subnet(key(id))
	if s == nil {
		return resp, errResponder(errf(http.StatusNotFound, "NotFound", "", "Resource %s not found.", id))
	}
	resp.SetResponse(http.StatusOK, armnetwork.SubnetsClientGetResponse{Subnet: c.subnetView(s)}, nil)
	return resp, errResponder(nil)
}

// deleteSubnet deletes a subnet no NIC uses.
func (c *Cloud) deleteSubnet(ctx context.Context, rg, vnetName, name string, _ *armnetwork.SubnetsClientBeginDeleteOptions) (azfake.PollerResponder[armnetwork.SubnetsClientDeleteResponse], azfake.ErrorResponder) {
	var resp azfake.PollerResponder[armnetwork.SubnetsClientDeleteResponse]
	c.mu.Lock()
	defer c.mu.Unlock()
	g, e := c.group(rg, false)
	if e != nil {
		return resp, errResponder(e)
	}
	sk := key(c.resourceID(deref(g.Name), typeVNet, vnetName) + "/subnets/" + name)
	_, s := c.subnet(sk)
	if s == nil {
		return deleted[armnetwork.SubnetsClientDeleteResponse](), errResponder(nil)
	}
	if e := c.subnetDeletable(deref(s.ID)); e != nil {
		return resp, errResponder(e)
	}
	s.Properties.ProvisioningState = netDeleting
	c.startDelete(ctx, sk, func() {
		v, _ := c.subnet(sk)
		if v == nil {
			return
		}
		kept := v.Properties.Subnets[:0]
		for _, s := range v.Properties.Subnets {
			if key(deref(s.ID)) != sk {
				kept = append(kept, s)
			}
		}
		v.Properties.Subnets = kept
	})
	return lro(c, http.StatusAccepted, armnetwork.SubnetsClientDeleteResponse{}), errResponder(nil)
}

// checkSubnets applies Azure's rules to the subnets of v, the network as
// a write would leave it; old is the network before the write, or nil.
// The caller holds c.mu.
func (c *Cloud) checkSubnets(v *armnetwork.VirtualNetwork, old *armnetwork.VirtualNetwork) *armError {
	var space []netip.Prefix
	if as := v.Properties.AddressSpace; as != nil {
		for _, s := range as.AddressPrefixes {
			p, e := parsePrefix(deref(s), deref(v.ID))
			if e != nil {
				return e
			}
			space = append(space, p)
		}
	}
	if len(space) == 0 {
		return errf(http.StatusBadRequest, "InvalidRequestFormat", "addressSpace",
			"Virtual network %s must have at least one address prefix in addressSpace.addressPrefixes.", deref(v.ID))
	}
	type placed struct {
		id string
		p  netip.Prefix
	}
	var seen []placed
	names := map[string]bool{}
	for _, s := range v.Properties.Subnets {
		id := deref(s.ID)
		if deref(s.Name) == "" {
			return errf(http.StatusBadRequest, "InvalidRequestFormat", "subnets", "Every subnet of %s must have a name.", deref(v.ID))
		}
		if names[strings.ToLower(deref(s.Name))] {
			return errf(http.StatusBadRequest, "InvalidRequestFormat", "subnets", "Subnet %s appears twice in %s.", deref(s.Name), deref(v.ID))
		}
		names[strings.ToLower(deref(s.Name))] = true
		prefixes := subnetPrefixes(s)
		if len(prefixes) == 0 {
			return errf(http.StatusBadRequest, "NetcfgInvalidSubnet", "", "Subnet '%s' is not valid in virtual network '%s': it has no address prefix.", deref(s.Name), deref(v.Name))
		}
		for _, raw := range prefixes {
			p, e := parsePrefix(raw, id)
			if e != nil {
				return e
			}
			inside := false
			for _, sp := range space {
				if sp.Bits() <= p.Bits() && sp.Contains(p.Addr()) {
					inside = true
				}
			}
			if !inside || (p.Addr().Is4() && p.Bits() > 29) {
				return errf(http.StatusBadRequest, "NetcfgInvalidSubnet", "", "Subnet '%s' is not valid in virtual network '%s': %s must lie inside the address space and be /29 or larger.", deref(s.Name), deref(v.Name), raw)
			}
			for _, o := range seen {
				if o.p.Overlaps(p) {
					return errf(http.StatusBadRequest, "NetcfgSubnetRangesOverlap", "", "Subnet '%s' is not valid because its IP address range overlaps with that of an existing subnet in virtual network '%s'.", deref(s.Name), deref(v.Name))
				}
			}
			seen = append(seen, placed{id, p})
		}
		if nsg := s.Properties.NetworkSecurityGroup; nsg != nil && c.nsgs[key(deref(nsg.ID))] == nil {
			return invalidReference(deref(nsg.ID), id)
		}
		if rt := s.Properties.RouteTable; rt != nil && c.rts[key(deref(rt.ID))] == nil {
			return invalidReference(deref(rt.ID), id)
		}
	}
	if old == nil {
		return nil
	}
	// A subnet that NICs use can neither go away nor change its range.
	for _, os := range old.Properties.Subnets {
		users := c.subnetUsers(key(deref(os.ID)))
		if len(users) == 0 {
			continue
		}
		var now *armnetwork.Subnet
		for _, s := range v.Properties.Subnets {
			if strings.EqualFold(deref(s.Name), deref(os.Name)) {
				now = s
			}
		}
		if now == nil {
			return errf(http.StatusBadRequest, "InUseSubnetCannotBeDeleted", "", "Subnet %s is in use by %s and cannot be deleted. In order to delete the subnet, delete all the resources within the subnet.", deref(os.Name), users[0])
		}
		if strings.Join(subnetPrefixes(now), ",") != strings.Join(subnetPrefixes(os), ",") {
			return errf(http.StatusBadRequest, "InUseSubnetCannotBeUpdated", "", "Subnet %s is in use by %s and its address prefix cannot be changed.", deref(os.Name), users[0])
		}
	}
	return nil
}

// subnetDeletable refuses to delete a subnet that NICs use; the caller holds c.mu.
func (c *Cloud) subnetDeletable(id string) *armError {
	if users := c.subnetUsers(key(id)); len(users) > 0 {
		return errf(http.StatusBadRequest, "InUseSubnetCannotBeDeleted", "", "Subnet %s is in use by %s and cannot be deleted. In order to delete the subnet, delete all the resources within the subnet.", id, users[0])
	}
	return nil
}

// subnet finds a subnet by its lower-cased ID, with its network; the caller holds c.mu.
func (c *Cloud) subnet(k string) (*armnetwork.VirtualNetwork, *armnetwork.Subnet) {
	i := strings.LastIndex(k, "/subnets/")
	if i < 0 {
		return nil, nil
	}
	v := c.vnets[k[:i]]
	if v == nil {
		return nil, nil
	}
	for _, s := range v.Properties.Subnets {
		if key(deref(s.ID)) == k {
			return v, s
		}
	}
	return v, nil
}

// subnetUsers lists the IDs of the NIC IP configurations in the subnet
// with lower-cased ID k, sorted; the caller holds c.mu.
func (c *Cloud) subnetUsers(k string) []string {
	var out []string
	for _, nic := range c.nics {
		for _, ipc := range nic.Properties.IPConfigurations {
			if ipc.Properties != nil && ipc.Properties.Subnet != nil && key(deref(ipc.Properties.Subnet.ID)) == k {
				out = append(out, deref(ipc.ID))
			}
		}
	}
	sort.Strings(out)
	return out
}

// vnetView is the network as GET shows it; the caller holds c.mu.
func (c *Cloud) vnetView(v *armnetwork.VirtualNetwork) armnetwork.VirtualNetwork {
	out := clone(*v)
	for i, s := range out.Properties.Subnets {
		view := c.subnetView(s)
		out.Properties.Subnets[i] = &view
	}
	return out
}

// subnetView is the subnet as GET shows it, with the IP configurations
// that use it; the caller holds c.mu.
func (c *Cloud) subnetView(s *armnetwork.Subnet) armnetwork.Subnet {
	out := clone(*s)
	out.Properties.IPConfigurations = nil
	for _, id := range c.subnetUsers(key(deref(s.ID))) {
		out.Properties.IPConfigurations = append(out.Properties.IPConfigurations, &armnetwork.IPConfiguration{ID: ptr(id)})
	}
	return out
}

// subnetPrefixes returns addressPrefix and addressPrefixes of a subnet.
func subnetPrefixes(s *armnetwork.Subnet) []string {
	var out []string
	if s.Properties == nil {
		return nil
	}
	if p := deref(s.Properties.AddressPrefix); p != "" {
		out = append(out, p)
	}
	for _, p := range s.Properties.AddressPrefixes {
		out = append(out, deref(p))
	}
	return out
}

// parsePrefix parses a CIDR prefix the way Azure accepts it: the address
// must be the first of its range.
func parsePrefix(s, owner string) (netip.Prefix, *armError) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return p, errf(http.StatusBadRequest, "InvalidAddressPrefixFormat", "", "Address prefix %q of resource %s is not a valid CIDR prefix.", s, owner)
	}
	if p != p.Masked() {
		return p, errf(http.StatusBadRequest, "InvalidCIDRNotation", "", "The address prefix %s in resource %s has an invalid CIDR notation. For the given prefix length, the address prefix should be %s.", s, owner, p.Masked())
	}
	return p, nil
}

// invalidReference is the 400 Azure answers when a referenced resource is
// missing or in another region.
func invalidReference(ref, by string) *armError {
	return errf(http.StatusBadRequest, "InvalidResourceReference", "",
		"Resource %s referenced by resource %s was not found. Please make sure that the referenced resource exists, and that both resources are in the same region.", ref, by)
}

// locationRequired is the 400 for a create without a location.
func locationRequired() *armError {
	return errf(http.StatusBadRequest, "LocationRequired", "location", "The location property is required for this definition.")
}

// notDeleting refuses a write to a resource being deleted; the caller holds c.mu.
func (c *Cloud) notDeleting(k, id string) *armError {
	if c.deleting[k] {
		return errf(http.StatusConflict, "OperationNotAllowed", "", "Resource %s is being deleted; no other operation is allowed on it.", id)
	}
	return nil
}

// createdOr is 201 for a create and 200 for an update.
func createdOr(created bool) int {
	if created {
		return http.StatusCreated
	}
	return http.StatusOK
}
