package azuresim

import (
	"context"
	"fmt"
	"net/http"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7"
)

// putNSG creates or updates a network security group.
func (c *Cloud) putNSG(ctx context.Context, rg, name string, p armnetwork.SecurityGroup, _ *armnetwork.SecurityGroupsClientBeginCreateOrUpdateOptions) (azfake.PollerResponder[armnetwork.SecurityGroupsClientCreateOrUpdateResponse], azfake.ErrorResponder) {
	var resp azfake.PollerResponder[armnetwork.SecurityGroupsClientCreateOrUpdateResponse]
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
	id := c.resourceID(deref(g.Name), typeNSG, name)
	k := key(id)
	if e := c.notDeleting(k, id); e != nil {
		return resp, errResponder(e)
	}
	old := c.nsgs[k]
	n := clone(p)
	n.ID, n.Name, n.Type = ptr(id), ptr(name), ptr(typeNSG)
	if n.Properties == nil {
		n.Properties = &armnetwork.SecurityGroupPropertiesFormat{}
	}
	priorities := map[string]bool{}
	for _, r := range n.Properties.SecurityRules {
		r.ID = ptr(id + "/securityRules/" + deref(r.Name))
		if r.Properties == nil || r.Properties.Direction == nil || r.Properties.Access == nil || r.Properties.Protocol == nil {
			return resp, errResponder(errf(http.StatusBadRequest, "InvalidRequestFormat", "securityRules", "Security rule %s needs a direction, an access and a protocol.", deref(r.ID)))
		}
		prio := deref(r.Properties.Priority)
		if prio < 100 || prio > 4096 {
			return resp, errResponder(errf(http.StatusBadRequest, "SecurityRuleInvalidPriority", "", "Security rule %s has invalid priority %d. Value provided: %d Allowed range 100-4096.", deref(r.ID), prio, prio))
		}
		dp := string(*r.Properties.Direction) + "/" + fmt.Sprint(prio)
		if priorities[dp] {
			return resp, errResponder(errf(http.StatusBadRequest, "SecurityRuleConflict", "", "Security rule %s conflicts with another rule of priority %d and direction %s.", deref(r.ID), prio, *r.Properties.Direction))
		}
		priorities[dp] = true
	}
	n.Properties.ProvisioningState = netUpdating
	c.nsgs[k] = &n
	c.startOp(ctx, k, func() {
		if n := c.nsgs[k]; n != nil {
			n.Properties.ProvisioningState = netSucceeded
		}
	})
	result := clone(n)
	result.Properties.ProvisioningState = netSucceeded
	return lro(c, createdOr(old == nil), armnetwork.SecurityGroupsClientCreateOrUpdateResponse{SecurityGroup: result}), errResponder(nil)
}

// getNSG returns a network security group.
func (c *Cloud) getNSG(_ context.Context, rg, name string, _ *armnetwork.SecurityGroupsClientGetOptions) (azfake.Responder[armnetwork.SecurityGroupsClientGetResponse], azfake.ErrorResponder) {
	var resp azfake.Responder[armnetwork.SecurityGroupsClientGetResponse]
	c.mu.Lock()
	defer c.mu.Unlock()
	g, e := c.group(rg, false)
	if e != nil {
		return resp, errResponder(e)
	}
	n := c.nsgs[key(c.resourceID(deref(g.Name), typeNSG, name))]
	if n == nil {
		return resp, errResponder(notFound(typeNSG, name, rg))
	}
	resp.SetResponse(http.StatusOK, armnetwork.SecurityGroupsClientGetResponse{SecurityGroup: clone(*n)}, nil)
	return resp, errResponder(nil)
}

// deleteNSG deletes a network security group no subnet or NIC refers to.
func (c *Cloud) deleteNSG(ctx context.Context, rg, name string, _ *armnetwork.SecurityGroupsClientBeginDeleteOptions) (azfake.PollerResponder[armnetwork.SecurityGroupsClientDeleteResponse], azfake.ErrorResponder) {
	var resp azfake.PollerResponder[armnetwork.SecurityGroupsClientDeleteResponse]
	c.mu.Lock()
	defer c.mu.Unlock()
	g, e := c.group(rg, false)
	if e != nil {
		return resp, errResponder(e)
	}
	id := c.resourceID(deref(g.Name), typeNSG, name)
	k := key(id)
	n := c.nsgs[k]
	if n == nil {
		return deleted[armnetwork.SecurityGroupsClientDeleteResponse](), errResponder(nil)
	}
	if user := c.nsgUser(k); user != "" {
		return resp, errResponder(errf(http.StatusBadRequest, "InUseNetworkSecurityGroupCannotBeDeleted", "",
			"Network security group %s cannot be deleted because it is in use by the following resources: %s.", id, user))
	}
	n.Properties.ProvisioningState = netDeleting
	c.startDelete(ctx, k, func() { delete(c.nsgs, k) })
	return lro(c, http.StatusAccepted, armnetwork.SecurityGroupsClientDeleteResponse{}), errResponder(nil)
}

// nsgUser returns the ID of a subnet or NIC that refers to the security
// group with lower-cased ID k, or ""; the caller holds c.mu.
func (c *Cloud) nsgUser(k string) string {
	for _, v := range c.vnets {
		for _, s := range v.Properties.Subnets {
			if s.Properties.NetworkSecurityGroup != nil && key(deref(s.Properties.NetworkSecurityGroup.ID)) == k {
				return deref(s.ID)
			}
		}
	}
	for _, n := range c.nics {
		if n.Properties.NetworkSecurityGroup != nil && key(deref(n.Properties.NetworkSecurityGroup.ID)) == k {
			return deref(n.ID)
		}
	}
	return ""
}

// putRouteTable creates or updates a route table.
func (c *Cloud) putRouteTable(ctx context.Context, rg, name string, p armnetwork.RouteTable, _ *armnetwork.RouteTablesClientBeginCreateOrUpdateOptions) (azfake.PollerResponder[armnetwork.RouteTablesClientCreateOrUpdateResponse], azfake.ErrorResponder) {
	var resp azfake.PollerResponder[armnetwork.RouteTablesClientCreateOrUpdateResponse]
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
	id := c.resourceID(deref(g.Name), typeRT, name)
	k := key(id)
	if e := c.notDeleting(k, id); e != nil {
		return resp, errResponder(e)
	}
	old := c.rts[k]
	t := clone(p)
	t.ID, t.Name, t.Type = ptr(id), ptr(name), ptr(typeRT)
	if t.Properties == nil {
		t.Properties = &armnetwork.RouteTablePropertiesFormat{}
	}
	for _, r := range t.Properties.Routes {
		r.ID = ptr(id + "/routes/" + deref(r.Name))
	}
	t.Properties.ProvisioningState = netUpdating
	c.rts[k] = &t
	c.startOp(ctx, k, func() {
		if t := c.rts[k]; t != nil {
			t.Properties.ProvisioningState = netSucceeded
		}
	})
	result := clone(t)
	result.Properties.ProvisioningState = netSucceeded
	return lro(c, createdOr(old == nil), armnetwork.RouteTablesClientCreateOrUpdateResponse{RouteTable: result}), errResponder(nil)
}

// getRouteTable returns a route table.
func (c *Cloud) getRouteTable(_ context.Context, rg, name string, _ *armnetwork.RouteTablesClientGetOptions) (azfake.Responder[armnetwork.RouteTablesClientGetResponse], azfake.ErrorResponder) {
	var resp azfake.Responder[armnetwork.RouteTablesClientGetResponse]
	c.mu.Lock()
	defer c.mu.Unlock()
	g, e := c.group(rg, false)
	if e != nil {
		return resp, errResponder(e)
	}
	t := c.rts[key(c.resourceID(deref(g.Name), typeRT, name))]
	if t == nil {
		return resp, errResponder(notFound(typeRT, name, rg))
	}
	resp.SetResponse(http.StatusOK, armnetwork.RouteTablesClientGetResponse{RouteTable: clone(*t)}, nil)
	return resp, errResponder(nil)
}

// deleteRouteTable deletes a route table no subnet refers to.
func (c *Cloud) deleteRouteTable(ctx context.Context, rg, name string, _ *armnetwork.RouteTablesClientBeginDeleteOptions) (azfake.PollerResponder[armnetwork.RouteTablesClientDeleteResponse], azfake.ErrorResponder) {
	var resp azfake.PollerResponder[armnetwork.RouteTablesClientDeleteResponse]
	c.mu.Lock()
	defer c.mu.Unlock()
	g, e := c.group(rg, false)
	if e != nil {
		return resp, errResponder(e)
	}
	id := c.resourceID(deref(g.Name), typeRT, name)
	k := key(id)
	t := c.rts[k]
	if t == nil {
		return deleted[armnetwork.RouteTablesClientDeleteResponse](), errResponder(nil)
	}
	for _, v := range c.vnets {
		for _, s := range v.Properties.Subnets {
			if s.Properties.RouteTable != nil && key(deref(s.Properties.RouteTable.ID)) == k {
				return resp, errResponder(errf(http.StatusBadRequest, "InUseRouteTableCannotBeDeleted", "",
					"Route table %s is in use by subnet %s and cannot be deleted.", id, deref(s.ID)))
			}
		}
	}
	t.Properties.ProvisioningState = netDeleting
	c.startDelete(ctx, k, func() { delete(c.rts, k) })
	return lro(c, http.StatusAccepted, armnetwork.RouteTablesClientDeleteResponse{}), errResponder(nil)
}
