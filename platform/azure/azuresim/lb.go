package azuresim

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7"
)

const (
	typePIP = "Microsoft.Network/publicIPAddresses"
	typeLB  = "Microsoft.Network/loadBalancers"
)

// putPublicIP creates or updates a public IP address. A create is given
// an address from 20.0.0.0/8 (the simulation's own pool) at once, as
// Azure gives a Static address; an update keeps it.
func (c *Cloud) putPublicIP(ctx context.Context, rg, name string, p armnetwork.PublicIPAddress, _ *armnetwork.PublicIPAddressesClientBeginCreateOrUpdateOptions) (azfake.PollerResponder[armnetwork.PublicIPAddressesClientCreateOrUpdateResponse], azfake.ErrorResponder) {
	var resp azfake.PollerResponder[armnetwork.PublicIPAddressesClientCreateOrUpdateResponse]
	c.mu.Lock()
	defer c.mu.Unlock()
	g, e := c.group(rg, true)
	if e != nil {
		return resp, errResponder(e)
	}
	if deref(p.Location) == "" {
		return resp, errResponder(locationRequired())
	}
	if e := networkName(name); e != nil {
		return resp, errResponder(e)
	}
	id := c.resourceID(deref(g.Name), typePIP, name)
	k := key(id)
	if e := c.notDeleting(k, id); e != nil {
		return resp, errResponder(e)
	}
	old := c.pips[k]
	ip := clone(p)
	ip.ID, ip.Name, ip.Type = ptr(id), ptr(name), ptr(typePIP)
	if ip.Properties == nil {
		ip.Properties = &armnetwork.PublicIPAddressPropertiesFormat{}
	}
	if old != nil {
		ip.Properties.IPAddress = old.Properties.IPAddress
		ip.Properties.IPConfiguration = old.Properties.IPConfiguration
	} else {
		c.nextPublicIP++
		n := c.nextPublicIP
		ip.Properties.IPAddress = ptr(fmt.Sprintf("20.%d.%d.%d", n>>16&0xff, n>>8&0xff, n&0xff))
		ip.Properties.IPConfiguration = nil
	}
	ip.Properties.ProvisioningState = netUpdating
	c.pips[k] = &ip
	c.startOp(ctx, k, func() {
		if ip := c.pips[k]; ip != nil {
			ip.Properties.ProvisioningState = netSucceeded
		}
	})
	result := clone(ip)
	result.Properties.ProvisioningState = netSucceeded
	return lro(c, createdOr(old == nil), armnetwork.PublicIPAddressesClientCreateOrUpdateResponse{PublicIPAddress: result}), errResponder(nil)
}

// getPublicIP returns a public IP address.
func (c *Cloud) getPublicIP(_ context.Context, rg, name string, _ *armnetwork.PublicIPAddressesClientGetOptions) (azfake.Responder[armnetwork.PublicIPAddressesClientGetResponse], azfake.ErrorResponder) {
	var resp azfake.Responder[armnetwork.PublicIPAddressesClientGetResponse]
	c.mu.Lock()
	defer c.mu.Unlock()
	g, e := c.group(rg, false)
	if e != nil {
		return resp, errResponder(e)
	}
	ip := c.pips[key(c.resourceID(deref(g.Name), typePIP, name))]
	if ip == nil {
		return resp, errResponder(notFound(typePIP, name, rg))
	}
	resp.SetResponse(http.StatusOK, armnetwork.PublicIPAddressesClientGetResponse{PublicIPAddress: clone(*ip)}, nil)
	return resp, errResponder(nil)
}

// deletePublicIP deletes a public IP address no load balancer's frontend
// holds (400 PublicIPAddressCannotBeDeleted, as Azure answers).
func (c *Cloud) deletePublicIP(ctx context.Context, rg, name string, _ *armnetwork.PublicIPAddressesClientBeginDeleteOptions) (azfake.PollerResponder[armnetwork.PublicIPAddressesClientDeleteResponse], azfake.ErrorResponder) {
	var resp azfake.PollerResponder[armnetwork.PublicIPAddressesClientDeleteResponse]
	c.mu.Lock()
	defer c.mu.Unlock()
	g, e := c.group(rg, false)
	if e != nil {
		return resp, errResponder(e)
	}
	id := c.resourceID(deref(g.Name), typePIP, name)
	k := key(id)
	ip := c.pips[k]
	if ip == nil {
		return deleted[armnetwork.PublicIPAddressesClientDeleteResponse](), errResponder(nil)
	}
	if user := ip.Properties.IPConfiguration; user != nil {
		return resp, errResponder(errf(http.StatusBadRequest, "PublicIPAddressCannotBeDeleted", "",
			"Public IP address %s can not be deleted since it is still allocated to resource %s. In order to delete the public IP, disassociate/detach the Public IP address from the resource.", id, deref(user.ID)))
	}
	ip.Properties.ProvisioningState = netDeleting
	c.startDelete(ctx, k, func() { delete(c.pips, k) })
	return lro(c, http.StatusAccepted, armnetwork.PublicIPAddressesClientDeleteResponse{}), errResponder(nil)
}

// putLoadBalancer creates or updates a load balancer. Its frontends must
// name existing public IP addresses or subnets, and its rules, probes and
// outbound rules the load balancer's own frontends, pools and probes.
func (c *Cloud) putLoadBalancer(ctx context.Context, rg, name string, p armnetwork.LoadBalancer, _ *armnetwork.LoadBalancersClientBeginCreateOrUpdateOptions) (azfake.PollerResponder[armnetwork.LoadBalancersClientCreateOrUpdateResponse], azfake.ErrorResponder) {
	var resp azfake.PollerResponder[armnetwork.LoadBalancersClientCreateOrUpdateResponse]
	c.mu.Lock()
	defer c.mu.Unlock()
	g, e := c.group(rg, true)
	if e != nil {
		return resp, errResponder(e)
	}
	if deref(p.Location) == "" {
		return resp, errResponder(locationRequired())
	}
	if e := networkName(name); e != nil {
		return resp, errResponder(e)
	}
	id := c.resourceID(deref(g.Name), typeLB, name)
	k := key(id)
	if e := c.notDeleting(k, id); e != nil {
		return resp, errResponder(e)
	}
	old := c.lbs[k]
	lb := clone(p)
	lb.ID, lb.Name, lb.Type = ptr(id), ptr(name), ptr(typeLB)
	if lb.Properties == nil {
		lb.Properties = &armnetwork.LoadBalancerPropertiesFormat{}
	}
	props := lb.Properties
	own := map[string]bool{} // lower-cased IDs of the load balancer's children
	for _, f := range props.FrontendIPConfigurations {
		f.ID = ptr(id + "/frontendIPConfigurations/" + deref(f.Name))
		own[key(deref(f.ID))] = true
		if f.Properties == nil {
			return resp, errResponder(errf(http.StatusBadRequest, "InvalidRequestFormat", "frontendIPConfigurations", "Frontend IP configuration %s has no properties.", deref(f.ID)))
		}
		switch {
		case f.Properties.PublicIPAddress != nil:
			pk := key(deref(f.Properties.PublicIPAddress.ID))
			ip := c.pips[pk]
			if ip == nil {
				return resp, errResponder(invalidReference(deref(f.Properties.PublicIPAddress.ID), id))
			}
			if lbSKU(lb.SKU) == armnetwork.LoadBalancerSKUNameStandard && pipSKU(ip.SKU) != armnetwork.PublicIPAddressSKUNameStandard {
				return resp, errResponder(errf(http.StatusBadRequest, "PublicIPAndLBSkuDoNotMatch", "",
					"Standard sku load balancer %s cannot reference %s sku publicIP %s.", id, pipSKU(ip.SKU), deref(ip.ID)))
			}
			if u := ip.Properties.IPConfiguration; u != nil && !strings.HasPrefix(key(deref(u.ID)), k+"/") {
				return resp, errResponder(errf(http.StatusBadRequest, "PublicIPAddressInUse", "",
					"Resource %s is referencing public IP address %s that is already allocated to resource %s.", deref(f.ID), deref(ip.ID), deref(u.ID)))
			}
		case f.Properties.Subnet != nil:
			if _, sub := c.subnet(key(deref(f.Properties.Subnet.ID))); sub == nil {
				return resp, errResponder(invalidReference(deref(f.Properties.Subnet.ID), id))
			}
		default:
			return resp, errResponder(errf(http.StatusBadRequest, "InvalidRequestFormat", "frontendIPConfigurations", "Frontend IP configuration %s names neither a public IP address nor a subnet.", deref(f.ID)))
		}
	}
	for _, b := range props.BackendAddressPools {
		b.ID = ptr(id + "/backendAddressPools/" + deref(b.Name))
		own[key(deref(b.ID))] = true
	}
	for _, pr := range props.Probes {
		pr.ID = ptr(id + "/probes/" + deref(pr.Name))
		own[key(deref(pr.ID))] = true
		if pr.Properties == nil || pr.Properties.Protocol == nil || deref(pr.Properties.Port) < 1 || deref(pr.Properties.Port) > 65535 {
			return resp, errResponder(errf(http.StatusBadRequest, "InvalidRequestFormat", "probes", "Probe %s needs a protocol and a port from 1 to 65535.", deref(pr.ID)))
		}
		if p := *pr.Properties.Protocol; p != armnetwork.ProbeProtocolTCP && deref(pr.Properties.RequestPath) == "" {
			return resp, errResponder(errf(http.StatusBadRequest, "InvalidRequestFormat", "requestPath", "Probe %s of protocol %s needs a requestPath.", deref(pr.ID), p))
		}
	}
	outboundFrontends := map[string]bool{}
	for _, r := range props.OutboundRules {
		if r.Properties != nil {
			for _, f := range r.Properties.FrontendIPConfigurations {
				if f != nil {
					outboundFrontends[key(deref(f.ID))] = true
				}
			}
		}
	}
	refs := func(child string, rs ...*armnetwork.SubResource) *armError {
		for _, r := range rs {
			if r != nil && !own[key(deref(r.ID))] {
				return invalidReference(deref(r.ID), child)
			}
		}
		return nil
	}
	for _, r := range props.LoadBalancingRules {
		r.ID = ptr(id + "/loadBalancingRules/" + deref(r.Name))
		if r.Properties == nil || r.Properties.FrontendIPConfiguration == nil {
			return resp, errResponder(errf(http.StatusBadRequest, "InvalidRequestFormat", "loadBalancingRules", "Load balancing rule %s names no frontend IP configuration.", deref(r.ID)))
		}
		if e := refs(deref(r.ID), r.Properties.FrontendIPConfiguration, r.Properties.BackendAddressPool, r.Properties.Probe); e != nil {
			return resp, errResponder(e)
		}
		if r.Properties.Protocol == nil || r.Properties.FrontendPort == nil || r.Properties.BackendPort == nil {
			return resp, errResponder(errf(http.StatusBadRequest, "InvalidRequestFormat", "loadBalancingRules", "Load balancing rule %s needs a protocol, a frontend port and a backend port.", deref(r.ID)))
		}
		if outboundFrontends[key(deref(r.Properties.FrontendIPConfiguration.ID))] && !deref(r.Properties.DisableOutboundSnat) {
			return resp, errResponder(errf(http.StatusBadRequest, "LoadBalancingRuleMustDisableSNATSinceSameFrontendIPConfigurationIsReferencedByOutboundRule", "",
				"Load balancing rule %s must have disableOutboundSnat set to true because its frontend IP configuration %s is also used by an outbound rule.", deref(r.ID), deref(r.Properties.FrontendIPConfiguration.ID)))
		}
	}
	for _, r := range props.OutboundRules {
		r.ID = ptr(id + "/outboundRules/" + deref(r.Name))
		if r.Properties == nil || r.Properties.BackendAddressPool == nil || len(r.Properties.FrontendIPConfigurations) == 0 {
			return resp, errResponder(errf(http.StatusBadRequest, "InvalidRequestFormat", "outboundRules", "Outbound rule %s needs a backend address pool and a frontend IP configuration.", deref(r.ID)))
		}
		if e := refs(deref(r.ID), append(r.Properties.FrontendIPConfigurations, r.Properties.BackendAddressPool)...); e != nil {
			return resp, errResponder(e)
		}
	}
	// A pool a NIC is in cannot go.
	if old != nil {
		for _, b := range old.Properties.BackendAddressPools {
			if !own[key(deref(b.ID))] {
				if user := c.poolUser(key(deref(b.ID))); user != "" {
					return resp, errResponder(errf(http.StatusBadRequest, "InUseBackendAddressPoolCannotBeDeleted", "",
						"Backend address pool %s is in use by %s and cannot be deleted.", deref(b.ID), user))
				}
			}
		}
		for _, f := range old.Properties.FrontendIPConfigurations {
			if f.Properties != nil && f.Properties.PublicIPAddress != nil {
				if ip := c.pips[key(deref(f.Properties.PublicIPAddress.ID))]; ip != nil {
					ip.Properties.IPConfiguration = nil
				}
			}
		}
	}
	for _, f := range props.FrontendIPConfigurations {
		if f.Properties.PublicIPAddress != nil {
			c.pips[key(deref(f.Properties.PublicIPAddress.ID))].Properties.IPConfiguration = &armnetwork.IPConfiguration{ID: f.ID}
		}
	}
	props.ProvisioningState = netUpdating
	if old == nil {
		props.ResourceGUID = ptr(newGUID())
	} else {
		props.ResourceGUID = old.Properties.ResourceGUID
	}
	c.lbs[k] = &lb
	c.startOp(ctx, k, func() {
		if lb := c.lbs[k]; lb != nil {
			lb.Properties.ProvisioningState = netSucceeded
		}
	})
	result := c.withPoolMembers(lb)
	result.Properties.ProvisioningState = netSucceeded
	return lro(c, createdOr(old == nil), armnetwork.LoadBalancersClientCreateOrUpdateResponse{LoadBalancer: result}), errResponder(nil)
}

// getLoadBalancer returns a load balancer, its pools listing the NIC IP
// configurations in them.
func (c *Cloud) getLoadBalancer(_ context.Context, rg, name string, _ *armnetwork.LoadBalancersClientGetOptions) (azfake.Responder[armnetwork.LoadBalancersClientGetResponse], azfake.ErrorResponder) {
	var resp azfake.Responder[armnetwork.LoadBalancersClientGetResponse]
	c.mu.Lock()
	defer c.mu.Unlock()
	g, e := c.group(rg, false)
	if e != nil {
		return resp, errResponder(e)
	}
	lb := c.lbs[key(c.resourceID(deref(g.Name), typeLB, name))]
	if lb == nil {
		return resp, errResponder(notFound(typeLB, name, rg))
	}
	resp.SetResponse(http.StatusOK, armnetwork.LoadBalancersClientGetResponse{LoadBalancer: c.withPoolMembers(*lb)}, nil)
	return resp, errResponder(nil)
}

// deleteLoadBalancer deletes a load balancer whose pools hold no NIC, and
// frees its public IP addresses when the delete ends.
func (c *Cloud) deleteLoadBalancer(ctx context.Context, rg, name string, _ *armnetwork.LoadBalancersClientBeginDeleteOptions) (azfake.PollerResponder[armnetwork.LoadBalancersClientDeleteResponse], azfake.ErrorResponder) {
	var resp azfake.PollerResponder[armnetwork.LoadBalancersClientDeleteResponse]
	c.mu.Lock()
	defer c.mu.Unlock()
	g, e := c.group(rg, false)
	if e != nil {
		return resp, errResponder(e)
	}
	id := c.resourceID(deref(g.Name), typeLB, name)
	k := key(id)
	lb := c.lbs[k]
	if lb == nil {
		return deleted[armnetwork.LoadBalancersClientDeleteResponse](), errResponder(nil)
	}
	for _, b := range lb.Properties.BackendAddressPools {
		if user := c.poolUser(key(deref(b.ID))); user != "" {
			return resp, errResponder(errf(http.StatusBadRequest, "InUseBackendAddressPoolCannotBeDeleted", "",
				"Load balancer %s cannot be deleted: its backend address pool %s is in use by %s.", id, deref(b.ID), user))
		}
	}
	lb.Properties.ProvisioningState = netDeleting
	c.startDelete(ctx, k, func() {
		c.releaseFrontends(c.lbs[k])
		delete(c.lbs, k)
	})
	return lro(c, http.StatusAccepted, armnetwork.LoadBalancersClientDeleteResponse{}), errResponder(nil)
}

// releaseFrontends frees the public IP addresses of lb's frontends; the
// caller holds c.mu.
func (c *Cloud) releaseFrontends(lb *armnetwork.LoadBalancer) {
	if lb == nil {
		return
	}
	for _, f := range lb.Properties.FrontendIPConfigurations {
		if f.Properties != nil && f.Properties.PublicIPAddress != nil {
			if ip := c.pips[key(deref(f.Properties.PublicIPAddress.ID))]; ip != nil {
				ip.Properties.IPConfiguration = nil
			}
		}
	}
}

// poolUser returns the ID of a NIC IP configuration in the backend pool
// with lower-cased ID k, or ""; the caller holds c.mu.
func (c *Cloud) poolUser(k string) string {
	for _, n := range c.nics {
		for _, ipc := range n.Properties.IPConfigurations {
			if ipc.Properties == nil {
				continue
			}
			for _, b := range ipc.Properties.LoadBalancerBackendAddressPools {
				if key(deref(b.ID)) == k {
					return deref(ipc.ID)
				}
			}
		}
	}
	return ""
}

// backendPool reports whether the backend pool with lower-cased ID k
// exists; the caller holds c.mu.
func (c *Cloud) backendPool(k string) bool {
	lbKey, _, ok := strings.Cut(k, "/backendaddresspools/")
	lb := c.lbs[lbKey]
	if !ok || lb == nil {
		return false
	}
	for _, b := range lb.Properties.BackendAddressPools {
		if key(deref(b.ID)) == k {
			return true
		}
	}
	return false
}

// withPoolMembers is a copy of lb whose pools list the NIC IP
// configurations in them, as Azure's read-only backendIPConfigurations
// do; the caller holds c.mu.
func (c *Cloud) withPoolMembers(lb armnetwork.LoadBalancer) armnetwork.LoadBalancer {
	out := clone(lb)
	for _, b := range out.Properties.BackendAddressPools {
		if b.Properties == nil {
			b.Properties = &armnetwork.BackendAddressPoolPropertiesFormat{}
		}
		b.Properties.BackendIPConfigurations = nil
		for _, n := range c.nics {
			for _, ipc := range n.Properties.IPConfigurations {
				if ipc.Properties == nil {
					continue
				}
				for _, ref := range ipc.Properties.LoadBalancerBackendAddressPools {
					if key(deref(ref.ID)) == key(deref(b.ID)) {
						b.Properties.BackendIPConfigurations = append(b.Properties.BackendIPConfigurations, &armnetwork.InterfaceIPConfiguration{ID: ipc.ID})
					}
				}
			}
		}
	}
	return out
}

// lbSKU is a load balancer's SKU; none given is Basic, as Azure takes it.
func lbSKU(s *armnetwork.LoadBalancerSKU) armnetwork.LoadBalancerSKUName {
	if s == nil || s.Name == nil {
		return armnetwork.LoadBalancerSKUNameBasic
	}
	return *s.Name
}

// pipSKU is a public IP address's SKU; none given is Basic.
func pipSKU(s *armnetwork.PublicIPAddressSKU) armnetwork.PublicIPAddressSKUName {
	if s == nil || s.Name == nil {
		return armnetwork.PublicIPAddressSKUNameBasic
	}
	return *s.Name
}

// networkName refuses a network resource name Azure refuses: 1 to 80
// characters.
func networkName(name string) *armError {
	if name == "" || len(name) > 80 {
		return errf(http.StatusBadRequest, "InvalidResourceName", "", "Resource name %s is invalid. The name can be up to 80 characters long.", name)
	}
	return nil
}
