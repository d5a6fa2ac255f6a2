package azuresim

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"regexp"
	"strings"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
	computefake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7"
	networkfake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources"
	resourcesfake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/fake"
	"k8s.io/utils/ptr"
)

// clone deep-copies a model object through JSON, as the wire would.
func clone[T any](v *T) T {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var out T
	if err := json.Unmarshal(data, &out); err != nil {
		panic(err)
	}
	return out
}

// lro answers a Begin call: Polls polls, then result; end runs when the
// operation ends. c.mu is held.
func lro[T any](c *Cloud, path string, status int, result T, end func()) azfake.PollerResponder[T] {
	var r azfake.PollerResponder[T]
	for range c.o.Polls {
		r.AddNonTerminalResponse(http.StatusOK, nil)
	}
	r.SetTerminalResponse(status, result, nil)
	c.pending[strings.ToLower(path)] = end
	return r
}

// --- Resource groups ---------------------------------------------------

func (c *Cloud) groupServer() resourcesfake.ResourceGroupsServer {
	return resourcesfake.ResourceGroupsServer{
		CreateOrUpdate: func(_ context.Context, name string, g armresources.ResourceGroup, _ *armresources.ResourceGroupsClientCreateOrUpdateOptions) (resp azfake.Responder[armresources.ResourceGroupsClientCreateOrUpdateResponse], errResp azfake.ErrorResponder) {
			c.mu.Lock()
			defer c.mu.Unlock()
			g.ID = ptr.To(fmt.Sprintf("/subscriptions/%s/resourceGroups/%s", c.o.SubscriptionID, name))
			g.Name = ptr.To(name)
			g.Properties = &armresources.ResourceGroupProperties{ProvisioningState: ptr.To("Succeeded")}
			c.groups[key(name)] = &g
			resp.SetResponse(http.StatusOK, armresources.ResourceGroupsClientCreateOrUpdateResponse{ResourceGroup: clone(&g)}, nil)
			return
		},
		Get: func(ctx context.Context, name string, _ *armresources.ResourceGroupsClientGetOptions) (resp azfake.Responder[armresources.ResourceGroupsClientGetResponse], errResp azfake.ErrorResponder) {
			c.mu.Lock()
			defer c.mu.Unlock()
			g := c.groups[key(name)]
			if g == nil {
				errResp = fail(ctx, http.StatusNotFound, "ResourceGroupNotFound", "Resource group '%s' could not be found.", name)
				return
			}
			resp.SetResponse(http.StatusOK, armresources.ResourceGroupsClientGetResponse{ResourceGroup: clone(g)}, nil)
			return
		},
	}
}

// ResourceGroups are the resource groups, by name.
func (c *Cloud) ResourceGroups() []armresources.ResourceGroup {
	c.mu.Lock()
	defer c.mu.Unlock()
	return sorted(c.groups, clone[armresources.ResourceGroup])
}

// --- Virtual networks and subnets --------------------------------------

func (c *Cloud) vnetServer() networkfake.VirtualNetworksServer {
	return networkfake.VirtualNetworksServer{
		BeginCreateOrUpdate: func(ctx context.Context, group, name string, v armnetwork.VirtualNetwork, _ *armnetwork.VirtualNetworksClientBeginCreateOrUpdateOptions) (resp azfake.PollerResponder[armnetwork.VirtualNetworksClientCreateOrUpdateResponse], errResp azfake.ErrorResponder) {
			c.mu.Lock()
			defer c.mu.Unlock()
			if !c.groupExists(group) {
				errResp = fail(ctx, http.StatusNotFound, "ResourceGroupNotFound", "Resource group '%s' could not be found.", group)
				return
			}
			if v.Properties == nil || v.Properties.AddressSpace == nil || len(v.Properties.AddressSpace.AddressPrefixes) == 0 {
				errResp = fail(ctx, http.StatusBadRequest, "InvalidAddressSpace", "Virtual network %s has no address space.", name)
				return
			}
			id := c.id(group, "Microsoft.Network", "virtualNetworks", name)
			v.ID, v.Name = ptr.To(id), ptr.To(name)
			var prefixes []netip.Prefix
			for _, s := range v.Properties.Subnets {
				p, err := netip.ParsePrefix(ptr.Deref(s.Properties.AddressPrefix, ""))
				if err != nil || !within(p, v.Properties.AddressSpace.AddressPrefixes) {
					errResp = fail(ctx, http.StatusBadRequest, "NetcfgInvalidSubnet", "Subnet '%s' is not valid in virtual network '%s'.", ptr.Deref(s.Name, ""), name)
					return
				}
				for _, q := range prefixes {
					if q.Overlaps(p) {
						errResp = fail(ctx, http.StatusBadRequest, "NetcfgSubnetRangesOverlap", "Subnet '%s' overlaps another subnet of '%s'.", ptr.Deref(s.Name, ""), name)
						return
					}
				}
				prefixes = append(prefixes, p)
				s.ID = ptr.To(id + "/subnets/" + ptr.Deref(s.Name, ""))
				s.Properties.ProvisioningState = ptr.To(armnetwork.ProvisioningStateSucceeded)
			}
			v.Properties.ProvisioningState = ptr.To(armnetwork.ProvisioningStateUpdating)
			c.vnets[key(group, name)] = &v
			done := clone(&v)
			done.Properties.ProvisioningState = ptr.To(armnetwork.ProvisioningStateSucceeded)
			resp = lro(c, id, http.StatusOK, armnetwork.VirtualNetworksClientCreateOrUpdateResponse{VirtualNetwork: done}, func() {
				c.mu.Lock()
				defer c.mu.Unlock()
				if v := c.vnets[key(group, name)]; v != nil {
					v.Properties.ProvisioningState = ptr.To(armnetwork.ProvisioningStateSucceeded)
				}
			})
			return
		},
		Get: func(ctx context.Context, group, name string, _ *armnetwork.VirtualNetworksClientGetOptions) (resp azfake.Responder[armnetwork.VirtualNetworksClientGetResponse], errResp azfake.ErrorResponder) {
			c.mu.Lock()
			defer c.mu.Unlock()
			v := c.vnets[key(group, name)]
			if v == nil {
				errResp = fail(ctx, http.StatusNotFound, "ResourceNotFound", "The Resource 'Microsoft.Network/virtualNetworks/%s' under resource group '%s' was not found.", name, group)
				return
			}
			resp.SetResponse(http.StatusOK, armnetwork.VirtualNetworksClientGetResponse{VirtualNetwork: clone(v)}, nil)
			return
		},
	}
}

func within(p netip.Prefix, space []*string) bool {
	for _, s := range space {
		q, err := netip.ParsePrefix(ptr.Deref(s, ""))
		if err == nil && q.Bits() <= p.Bits() && q.Contains(p.Addr()) {
			return true
		}
	}
	return false
}

// subnet finds a subnet by its ID or names; c.mu is held.
func (c *Cloud) subnet(group, vnet, name string) *armnetwork.Subnet {
	v := c.vnets[key(group, vnet)]
	if v == nil {
		return nil
	}
	for _, s := range v.Properties.Subnets {
		if strings.EqualFold(ptr.Deref(s.Name, ""), name) {
			return s
		}
	}
	return nil
}

var subnetID = regexp.MustCompile(`(?i)^/subscriptions/[^/]+/resourceGroups/([^/]+)/providers/Microsoft\.Network/virtualNetworks/([^/]+)/subnets/([^/]+)$`)

func (c *Cloud) subnetServer() networkfake.SubnetsServer {
	return networkfake.SubnetsServer{
		Get: func(ctx context.Context, group, vnet, name string, _ *armnetwork.SubnetsClientGetOptions) (resp azfake.Responder[armnetwork.SubnetsClientGetResponse], errResp azfake.ErrorResponder) {
			c.mu.Lock()
			defer c.mu.Unlock()
			s := c.subnet(group, vnet, name)
			if s == nil {
				errResp = fail(ctx, http.StatusNotFound, "NotFound", "Subnet '%s' of virtual network '%s' was not found.", name, vnet)
				return
			}
			resp.SetResponse(http.StatusOK, armnetwork.SubnetsClientGetResponse{Subnet: clone(s)}, nil)
			return
		},
	}
}

// --- Network interfaces ------------------------------------------------

func (c *Cloud) nicServer() networkfake.InterfacesServer {
	return networkfake.InterfacesServer{
		BeginCreateOrUpdate: func(ctx context.Context, group, name string, nic armnetwork.Interface, _ *armnetwork.InterfacesClientBeginCreateOrUpdateOptions) (resp azfake.PollerResponder[armnetwork.InterfacesClientCreateOrUpdateResponse], errResp azfake.ErrorResponder) {
			c.mu.Lock()
			defer c.mu.Unlock()
			if !c.groupExists(group) {
				errResp = fail(ctx, http.StatusNotFound, "ResourceGroupNotFound", "Resource group '%s' could not be found.", group)
				return
			}
			if nic.Properties == nil || len(nic.Properties.IPConfigurations) == 0 || nic.Properties.IPConfigurations[0].Properties == nil || nic.Properties.IPConfigurations[0].Properties.Subnet == nil {
				errResp = fail(ctx, http.StatusBadRequest, "InvalidRequestFormat", "Network interface %s needs an IP configuration with a subnet.", name)
				return
			}
			id := c.id(group, "Microsoft.Network", "networkInterfaces", name)
			old := c.nics[key(group, name)]
			ipc := nic.Properties.IPConfigurations[0].Properties
			m := subnetID.FindStringSubmatch(ptr.Deref(ipc.Subnet.ID, ""))
			if m == nil || c.subnet(m[1], m[2], m[3]) == nil {
				errResp = fail(ctx, http.StatusBadRequest, "InvalidResourceReference", "Resource %s referenced by resource %s was not found.", ptr.Deref(ipc.Subnet.ID, ""), id)
				return
			}
			nic.ID, nic.Name = ptr.To(id), ptr.To(name)
			if old != nil {
				ipc.PrivateIPAddress = old.Properties.IPConfigurations[0].Properties.PrivateIPAddress
				nic.Properties.VirtualMachine = old.Properties.VirtualMachine
			} else {
				ip, err := c.freeAddress(m[1], m[2], m[3])
				if err != nil {
					errResp = fail(ctx, http.StatusBadRequest, "SubnetIsFull", "Subnet %s has no free address.", m[3])
					return
				}
				ipc.PrivateIPAddress = ptr.To(ip)
			}
			ipc.Subnet.ID = ptr.To(c.id(m[1], "Microsoft.Network", "virtualNetworks", m[2]) + "/subnets/" + m[3])
			nic.Properties.ProvisioningState = ptr.To(armnetwork.ProvisioningStateUpdating)
			c.nics[key(group, name)] = &nic
			done := clone(&nic)
			done.Properties.ProvisioningState = ptr.To(armnetwork.ProvisioningStateSucceeded)
			resp = lro(c, id, http.StatusOK, armnetwork.InterfacesClientCreateOrUpdateResponse{Interface: done}, func() {
				c.mu.Lock()
				defer c.mu.Unlock()
				if n := c.nics[key(group, name)]; n != nil {
					n.Properties.ProvisioningState = ptr.To(armnetwork.ProvisioningStateSucceeded)
				}
			})
			return
		},
		Get: func(ctx context.Context, group, name string, _ *armnetwork.InterfacesClientGetOptions) (resp azfake.Responder[armnetwork.InterfacesClientGetResponse], errResp azfake.ErrorResponder) {
			c.mu.Lock()
			defer c.mu.Unlock()
			n := c.nics[key(group, name)]
			if n == nil {
				errResp = fail(ctx, http.StatusNotFound, "NotFound", "Resource Microsoft.Network/networkInterfaces/%s not found.", name)
				return
			}
			resp.SetResponse(http.StatusOK, armnetwork.InterfacesClientGetResponse{Interface: clone(n)}, nil)
			return
		},
		BeginDelete: func(ctx context.Context, group, name string, _ *armnetwork.InterfacesClientBeginDeleteOptions) (resp azfake.PollerResponder[armnetwork.InterfacesClientDeleteResponse], errResp azfake.ErrorResponder) {
			c.mu.Lock()
			defer c.mu.Unlock()
			id := c.id(group, "Microsoft.Network", "networkInterfaces", name)
			n := c.nics[key(group, name)]
			if n == nil {
				var r azfake.PollerResponder[armnetwork.InterfacesClientDeleteResponse]
				r.SetTerminalResponse(http.StatusNoContent, armnetwork.InterfacesClientDeleteResponse{}, nil)
				return r, errResp
			}
			if n.Properties.VirtualMachine != nil {
				errResp = fail(ctx, http.StatusBadRequest, "NicInUse", "Network Interface %s is used by existing resource %s. In order to delete the network interface, it must be dissociated from the resource.", id, ptr.Deref(n.Properties.VirtualMachine.ID, ""))
				return
			}
			n.Properties.ProvisioningState = ptr.To(armnetwork.ProvisioningStateDeleting)
			resp = lro(c, id, http.StatusOK, armnetwork.InterfacesClientDeleteResponse{}, func() {
				c.mu.Lock()
				defer c.mu.Unlock()
				delete(c.nics, key(group, name))
			})
			return
		},
	}
}

// freeAddress is the subnet's first address no NIC holds, after the four
// Azure reserves at its start and before its last; c.mu is held.
func (c *Cloud) freeAddress(group, vnet, subnet string) (string, error) {
	s := c.subnet(group, vnet, subnet)
	p, err := netip.ParsePrefix(ptr.Deref(s.Properties.AddressPrefix, ""))
	if err != nil {
		return "", err
	}
	used := map[string]bool{}
	for _, n := range c.nics {
		for _, ipc := range n.Properties.IPConfigurations {
			if ipc.Properties != nil && strings.EqualFold(ptr.Deref(ipc.Properties.Subnet.ID, ""), ptr.Deref(s.ID, "")) {
				used[ptr.Deref(ipc.Properties.PrivateIPAddress, "")] = true
			}
		}
	}
	a := p.Masked().Addr()
	for range 4 {
		a = a.Next()
	}
	for ; p.Contains(a) && p.Contains(a.Next()); a = a.Next() {
		if !used[a.String()] {
			return a.String(), nil
		}
	}
	return "", fmt.Errorf("subnet %s is full", subnet)
}

// Interfaces are the network interfaces.
func (c *Cloud) Interfaces() []armnetwork.Interface {
	c.mu.Lock()
	defer c.mu.Unlock()
	return sorted(c.nics, clone[armnetwork.Interface])
}

// --- Disks -------------------------------------------------------------

func (c *Cloud) diskServer() computefake.DisksServer {
	return computefake.DisksServer{
		Get: func(ctx context.Context, group, name string, _ *armcompute.DisksClientGetOptions) (resp azfake.Responder[armcompute.DisksClientGetResponse], errResp azfake.ErrorResponder) {
			c.mu.Lock()
			defer c.mu.Unlock()
			d := c.disks[key(group, name)]
			if d == nil {
				errResp = fail(ctx, http.StatusNotFound, "ResourceNotFound", "The Resource 'Microsoft.Compute/disks/%s' under resource group '%s' was not found.", name, group)
				return
			}
			resp.SetResponse(http.StatusOK, armcompute.DisksClientGetResponse{Disk: clone(d)}, nil)
			return
		},
		BeginDelete: func(ctx context.Context, group, name string, _ *armcompute.DisksClientBeginDeleteOptions) (resp azfake.PollerResponder[armcompute.DisksClientDeleteResponse], errResp azfake.ErrorResponder) {
			c.mu.Lock()
			defer c.mu.Unlock()
			d := c.disks[key(group, name)]
			if d == nil {
				var r azfake.PollerResponder[armcompute.DisksClientDeleteResponse]
				r.SetTerminalResponse(http.StatusNoContent, armcompute.DisksClientDeleteResponse{}, nil)
				return r, errResp
			}
			if d.ManagedBy != nil {
				errResp = fail(ctx, http.StatusConflict, "OperationNotAllowed", "Disk %s is attached to VM %s.", name, *d.ManagedBy)
				return
			}
			resp = lro(c, ptr.Deref(d.ID, ""), http.StatusOK, armcompute.DisksClientDeleteResponse{}, func() {
				c.mu.Lock()
				defer c.mu.Unlock()
				delete(c.disks, key(group, name))
			})
			return
		},
	}
}

// Disks are the managed disks.
func (c *Cloud) Disks() []armcompute.Disk {
	c.mu.Lock()
	defer c.mu.Unlock()
	return sorted(c.disks, clone[armcompute.Disk])
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func guid() string {
	h := randomHex(16)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func decodedLen(customData string) (int, error) {
	b, err := base64.StdEncoding.DecodeString(customData)
	return len(b), err
}
