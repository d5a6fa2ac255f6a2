package azuresim

import (
	"context"
	"encoding/binary"
	"net/http"
	"net/netip"
	"sort"
	"strings"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7"
)

// putNIC creates or updates a network interface, giving each IP
// configuration an address from its subnet.
func (c *Cloud) putNIC(ctx context.Context, rg, name string, p armnetwork.Interface, _ *armnetwork.InterfacesClientBeginCreateOrUpdateOptions) (azfake.PollerResponder[armnetwork.InterfacesClientCreateOrUpdateResponse], azfake.ErrorResponder) {
	var resp azfake.PollerResponder[armnetwork.InterfacesClientCreateOrUpdateResponse]
	c.mu.Lock()
	defer c.mu.Unlock()
	g, e := c.group(rg, true)
	if e != nil {
		return resp, errResponder(e)
	}
	if deref(p.Location) == "" {
		return resp, errResponder(locationRequired())
	}
	id := c.resourceID(deref(g.Name), typeNIC, name)
	k := key(id)
	if e := c.notDeleting(k, id); e != nil {
		return resp, errResponder(e)
	}
	old := c.nics[k]
	n := clone(p)
	n.ID, n.Name, n.Type = ptr(id), ptr(name), ptr(typeNIC)
	if n.Properties == nil || len(n.Properties.IPConfigurations) == 0 {
		return resp, errResponder(errf(http.StatusBadRequest, "InvalidRequestFormat", "ipConfigurations",
			"Network interface %s must have one or more IP configurations.", id))
	}
	if nsg := n.Properties.NetworkSecurityGroup; nsg != nil && c.nsgs[key(deref(nsg.ID))] == nil {
		return resp, errResponder(invalidReference(deref(nsg.ID), id))
	}
	if e := c.assignAddresses(&n, old); e != nil {
		return resp, errResponder(e)
	}
	// Read-only properties come from the model, not from the request.
	n.Properties.VirtualMachine, n.Properties.MacAddress, n.Properties.Primary = nil, nil, nil
	if old != nil {
		n.Properties.VirtualMachine = old.Properties.VirtualMachine
		n.Properties.MacAddress = old.Properties.MacAddress
		n.Properties.Primary = old.Properties.Primary
		n.Properties.ResourceGUID = old.Properties.ResourceGUID
	} else {
		n.Properties.ResourceGUID = ptr(newGUID())
	}
	setNICState(&n, netUpdating)
	c.nics[k] = &n
	c.startOp(ctx, k, func() {
		if n := c.nics[k]; n != nil {
			setNICState(n, netSucceeded)
		}
	})
	result := clone(n)
	setNICState(&result, netSucceeded)
	return lro(c, createdOr(old == nil), armnetwork.InterfacesClientCreateOrUpdateResponse{Interface: result}), errResponder(nil)
}

// assignAddresses checks the subnet of each IP configuration of n and
// gives it a private address: the static one asked for, the one it had
// before on the same subnet, or the lowest free one. The caller holds c.mu.
func (c *Cloud) assignAddresses(n *armnetwork.Interface, old *armnetwork.Interface) *armError {
	id := deref(n.ID)
	taken := map[string]map[netip.Addr]bool{} // lower subnet ID → addresses in use
	used := func(sk string) map[netip.Addr]bool {
		if taken[sk] == nil {
			taken[sk] = c.subnetAddresses(sk, key(id))
		}
		return taken[sk]
	}
	names := map[string]bool{}
	for i, ipc := range n.Properties.IPConfigurations {
		if deref(ipc.Name) == "" || names[strings.ToLower(deref(ipc.Name))] {
			return errf(http.StatusBadRequest, "InvalidRequestFormat", "ipConfigurations",
				"Every IP configuration of network interface %s needs a name of its own.", id)
		}
		names[strings.ToLower(deref(ipc.Name))] = true
		ipc.ID = ptr(id + "/ipConfigurations/" + deref(ipc.Name))
		ipc.Type = ptr("Microsoft.Network/networkInterfaces/ipConfigurations")
		if ipc.Properties == nil || ipc.Properties.Subnet == nil || deref(ipc.Properties.Subnet.ID) == "" {
			return errf(http.StatusBadRequest, "InvalidRequestFormat", "subnet",
				"IP configuration %s of network interface %s must name a subnet.", deref(ipc.Name), id)
		}
		for _, b := range ipc.Properties.LoadBalancerBackendAddressPools {
			if b == nil || !c.backendPool(key(deref(b.ID))) {
				return invalidReference(deref(b.ID), deref(ipc.ID))
			}
		}
		subnetID := deref(ipc.Properties.Subnet.ID)
		sk := key(subnetID)
		v, s := c.subnet(sk)
		if s == nil || c.deleting[sk] || !strings.EqualFold(deref(v.Location), deref(n.Location)) {
			return invalidReference(subnetID, deref(ipc.ID))
		}
		prefix, ok := firstIPv4(s)
		if !ok {
			return errf(http.StatusBadRequest, "InvalidRequestFormat", "subnet", "Subnet %s has no IPv4 address prefix.", subnetID)
		}
		if len(n.Properties.IPConfigurations) == 1 {
			ipc.Properties.Primary = ptr(true)
		} else if ipc.Properties.Primary == nil {
			ipc.Properties.Primary = ptr(i == 0)
		}
		ipc.Properties.PrivateIPAddressVersion = ptr(armnetwork.IPVersionIPv4)
		inUse := used(sk)
		var addr netip.Addr
		if deref(ipc.Properties.PrivateIPAllocationMethod) == armnetwork.IPAllocationMethodStatic {
			a, err := netip.ParseAddr(deref(ipc.Properties.PrivateIPAddress))
			switch {
			case err != nil || !prefix.Contains(a):
				return errf(http.StatusBadRequest, "PrivateIPAddressNotInSubnet", "",
					"IP configuration %s has private IP address %s which does not belong to the range %s of subnet %s.", deref(ipc.ID), deref(ipc.Properties.PrivateIPAddress), prefix, subnetID)
			case reserved(prefix, a):
				return errf(http.StatusBadRequest, "PrivateIPAddressInReservedRange", "",
					"Private static IP address %s falls within reserved IP range of subnet prefix %s.", a, prefix)
			case inUse[a]:
				return errf(http.StatusBadRequest, "PrivateIPAddressInUse", "",
					"IP configuration %s is using the private IP address %s which is already allocated to another resource.", deref(ipc.ID), a)
			}
			addr = a
		} else {
			ipc.Properties.PrivateIPAllocationMethod = ptr(armnetwork.IPAllocationMethodDynamic)
			if a, ok := previousAddress(old, deref(ipc.Name), sk); ok && prefix.Contains(a) && !inUse[a] {
				addr = a
			} else if a, ok := lowestFree(prefix, inUse); ok {
				addr = a
			} else {
				return errf(http.StatusBadRequest, "SubnetIsFull", "",
					"Subnet %s with address prefix %s does not have enough capacity for 1 IP addresses.", subnetID, prefix)
			}
		}
		inUse[addr] = true
		ipc.Properties.PrivateIPAddress = ptr(addr.String())
	}
	return nil
}

// getNIC returns a network interface.
func (c *Cloud) getNIC(_ context.Context, rg, name string, _ *armnetwork.InterfacesClientGetOptions) (azfake.Responder[armnetwork.InterfacesClientGetResponse], azfake.ErrorResponder) {
	var resp azfake.Responder[armnetwork.InterfacesClientGetResponse]
	c.mu.Lock()
	defer c.mu.Unlock()
	g, e := c.group(rg, false)
	if e != nil {
		return resp, errResponder(e)
	}
	n := c.nics[key(c.resourceID(deref(g.Name), typeNIC, name))]
	if n == nil {
		return resp, errResponder(notFound(typeNIC, name, rg))
	}
	resp.SetResponse(http.StatusOK, armnetwork.InterfacesClientGetResponse{Interface: clone(*n)}, nil)
	return resp, errResponder(nil)
}

// listNICs returns the network interfaces of a resource group,
// listPageSize to a page.
func (c *Cloud) listNICs(rg string, _ *armnetwork.InterfacesClientListOptions) azfake.PagerResponder[armnetwork.InterfacesClientListResponse] {
	var resp azfake.PagerResponder[armnetwork.InterfacesClientListResponse]
	c.mu.Lock()
	defer c.mu.Unlock()
	g, e := c.group(rg, false)
	if e != nil {
		resp.AddError(e)
		return resp
	}
	var all []*armnetwork.Interface
	for _, n := range inGroup(c.nics, key(deref(g.ID))) {
		all = append(all, ptr(clone(*n)))
	}
	for _, chunk := range pages(all) {
		resp.AddPage(http.StatusOK, armnetwork.InterfacesClientListResponse{InterfaceListResult: armnetwork.InterfaceListResult{Value: chunk}}, nil)
	}
	return resp
}

// deleteNIC deletes a network interface no VM uses.
func (c *Cloud) deleteNIC(ctx context.Context, rg, name string, _ *armnetwork.InterfacesClientBeginDeleteOptions) (azfake.PollerResponder[armnetwork.InterfacesClientDeleteResponse], azfake.ErrorResponder) {
	var resp azfake.PollerResponder[armnetwork.InterfacesClientDeleteResponse]
	c.mu.Lock()
	defer c.mu.Unlock()
	g, e := c.group(rg, false)
	if e != nil {
		return resp, errResponder(e)
	}
	k := key(c.resourceID(deref(g.Name), typeNIC, name))
	n := c.nics[k]
	if n == nil {
		return deleted[armnetwork.InterfacesClientDeleteResponse](), errResponder(nil)
	}
	if vm := n.Properties.VirtualMachine; vm != nil {
		return resp, errResponder(errf(http.StatusBadRequest, "NicInUse", "",
			"Network Interface %s is used by existing resource %s. In order to delete the network interface, it must be dissociated from the resource.", deref(n.ID), deref(vm.ID)))
	}
	setNICState(n, netDeleting)
	c.startDelete(ctx, k, func() { delete(c.nics, k) })
	return lro(c, http.StatusAccepted, armnetwork.InterfacesClientDeleteResponse{}), errResponder(nil)
}

// setNICState sets the provisioning state of a NIC and its IP configurations.
func setNICState(n *armnetwork.Interface, s *armnetwork.ProvisioningState) {
	n.Properties.ProvisioningState = s
	for _, ipc := range n.Properties.IPConfigurations {
		ipc.Properties.ProvisioningState = s
	}
}

// nicSubnets lists the subnet IDs a NIC's IP configurations use.
func nicSubnets(n *armnetwork.Interface) []string {
	var out []string
	for _, ipc := range n.Properties.IPConfigurations {
		if ipc.Properties != nil && ipc.Properties.Subnet != nil {
			out = append(out, deref(ipc.Properties.Subnet.ID))
		}
	}
	return out
}

// subnetAddresses returns the private addresses in use in the subnet with
// lower-cased ID sk by NICs other than the one with lower-cased ID except;
// the caller holds c.mu.
func (c *Cloud) subnetAddresses(sk, except string) map[netip.Addr]bool {
	out := map[netip.Addr]bool{}
	for k, n := range c.nics {
		if k == except {
			continue
		}
		for _, ipc := range n.Properties.IPConfigurations {
			if ipc.Properties.Subnet != nil && key(deref(ipc.Properties.Subnet.ID)) == sk {
				if a, err := netip.ParseAddr(deref(ipc.Properties.PrivateIPAddress)); err == nil {
					out[a] = true
				}
			}
		}
	}
	return out
}

// previousAddress is the address the IP configuration named name of old
// had in the subnet with lower-cased ID sk.
func previousAddress(old *armnetwork.Interface, name, sk string) (netip.Addr, bool) {
	if old == nil {
		return netip.Addr{}, false
	}
	for _, ipc := range old.Properties.IPConfigurations {
		if strings.EqualFold(deref(ipc.Name), name) && ipc.Properties.Subnet != nil && key(deref(ipc.Properties.Subnet.ID)) == sk {
			a, err := netip.ParseAddr(deref(ipc.Properties.PrivateIPAddress))
			return a, err == nil
		}
	}
	return netip.Addr{}, false
}

// firstIPv4 returns the first IPv4 prefix of a subnet.
func firstIPv4(s *armnetwork.Subnet) (netip.Prefix, bool) {
	for _, raw := range subnetPrefixes(s) {
		if p, err := netip.ParsePrefix(raw); err == nil && p.Addr().Is4() {
			return p.Masked(), true
		}
	}
	return netip.Prefix{}, false
}

// reserved reports whether Azure keeps a for itself: the first four
// addresses of a subnet (network, gateway, two for DNS) and the last
// (broadcast).
func reserved(p netip.Prefix, a netip.Addr) bool {
	first, last := bounds(p)
	n := v4(a)
	return n < first+4 || n == last
}

// lowestFree returns the lowest address of p that is neither reserved nor in use.
func lowestFree(p netip.Prefix, inUse map[netip.Addr]bool) (netip.Addr, bool) {
	first, last := bounds(p)
	for n := first + 4; n < last; n++ {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], n)
		a := netip.AddrFrom4(b)
		if !inUse[a] {
			return a, true
		}
	}
	return netip.Addr{}, false
}

// bounds returns the first and last IPv4 address of p as numbers.
func bounds(p netip.Prefix) (uint32, uint32) {
	first := v4(p.Masked().Addr())
	return first, first | (1<<(32-p.Bits()) - 1)
}

func v4(a netip.Addr) uint32 {
	b := a.As4()
	return binary.BigEndian.Uint32(b[:])
}

// inGroup returns the values of m whose key lies under the resource group
// with lower-cased ID gk, sorted by key.
func inGroup[T any](m map[string]*T, gk string) []*T {
	var keys []string
	for k := range m {
		if strings.HasPrefix(k, gk+"/") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	out := make([]*T, 0, len(keys))
	for _, k := range keys {
		out = append(out, m[k])
	}
	return out
}

// listPageSize is how many resources a page of a list holds, so that a
// client follows nextLink as it must with ARM, whose pages are of its own
// size.
const listPageSize = 50

// pages splits a list into pages of listPageSize; an empty list is one
// empty page.
func pages[T any](all []*T) [][]*T {
	out := [][]*T{}
	for len(all) > listPageSize {
		out = append(out, all[:listPageSize])
		all = all[listPageSize:]
	}
	return append(out, all)
}
