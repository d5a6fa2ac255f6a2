package azuresim

import (
	"context"
	"net/http"
	"strings"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources"
	resourcesfake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/fake"
)

// resourceServers wires the resource group fake to the model.
func (c *Cloud) resourceServers() *resourcesfake.ServerFactory {
	return &resourcesfake.ServerFactory{
		Server: resourcesfake.Server{
			NewListByResourceGroupPager: c.listResources,
		},
		ResourceGroupsServer: resourcesfake.ResourceGroupsServer{
			CreateOrUpdate: c.createGroup,
			Get:            c.getGroup,
			CheckExistence: c.checkGroup,
			BeginDelete:    c.deleteGroup,
		},
	}
}

// createGroup creates or updates a resource group; it is synchronous.
func (c *Cloud) createGroup(_ context.Context, name string, p armresources.ResourceGroup, _ *armresources.ResourceGroupsClientCreateOrUpdateOptions) (azfake.Responder[armresources.ResourceGroupsClientCreateOrUpdateResponse], azfake.ErrorResponder) {
	var resp azfake.Responder[armresources.ResourceGroupsClientCreateOrUpdateResponse]
	c.mu.Lock()
	defer c.mu.Unlock()
	if deref(p.Location) == "" {
		return resp, errResponder(errf(http.StatusBadRequest, "LocationRequired", "location", "The location property is required for this definition."))
	}
	status := http.StatusCreated
	if old := c.rgs[strings.ToLower(name)]; old != nil {
		if deref(old.Properties.ProvisioningState) == "Deleting" {
			_, e := c.group(name, true)
			return resp, errResponder(e)
		}
		if !strings.EqualFold(deref(old.Location), deref(p.Location)) {
			return resp, errResponder(errf(http.StatusConflict, "InvalidResourceGroupLocation", "",
				"Invalid resource group location '%s'. The Resource group already exists in location '%s'.", deref(p.Location), deref(old.Location)))
		}
		name = deref(old.Name)
		status = http.StatusOK
	}
	g := clone(p)
	g.ID = ptr(c.groupID(name))
	g.Name = ptr(name)
	g.Type = ptr("Microsoft.Resources/resourceGroups")
	g.Properties = &armresources.ResourceGroupProperties{ProvisioningState: ptr("Succeeded")}
	c.rgs[strings.ToLower(name)] = &g
	resp.SetResponse(status, armresources.ResourceGroupsClientCreateOrUpdateResponse{ResourceGroup: clone(g)}, nil)
	return resp, errResponder(nil)
}

// getGroup returns a resource group or 404 ResourceGroupNotFound.
func (c *Cloud) getGroup(_ context.Context, name string, _ *armresources.ResourceGroupsClientGetOptions) (azfake.Responder[armresources.ResourceGroupsClientGetResponse], azfake.ErrorResponder) {
	var resp azfake.Responder[armresources.ResourceGroupsClientGetResponse]
	c.mu.Lock()
	defer c.mu.Unlock()
	g, e := c.group(name, false)
	if e != nil {
		return resp, errResponder(e)
	}
	resp.SetResponse(http.StatusOK, armresources.ResourceGroupsClientGetResponse{ResourceGroup: clone(*g)}, nil)
	return resp, errResponder(nil)
}

// checkGroup answers 204 when the group exists and 404 when it does not.
func (c *Cloud) checkGroup(_ context.Context, name string, _ *armresources.ResourceGroupsClientCheckExistenceOptions) (azfake.Responder[armresources.ResourceGroupsClientCheckExistenceResponse], azfake.ErrorResponder) {
	var resp azfake.Responder[armresources.ResourceGroupsClientCheckExistenceResponse]
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rgs[strings.ToLower(name)] != nil {
		resp.SetResponse(http.StatusNoContent, armresources.ResourceGroupsClientCheckExistenceResponse{Success: true}, nil)
	} else {
		resp.SetResponse(http.StatusNotFound, armresources.ResourceGroupsClientCheckExistenceResponse{Success: false}, nil)
	}
	return resp, errResponder(nil)
}

// deleteGroup starts deleting a resource group and, when the operation
// ends, every resource in it.
func (c *Cloud) deleteGroup(ctx context.Context, name string, _ *armresources.ResourceGroupsClientBeginDeleteOptions) (azfake.PollerResponder[armresources.ResourceGroupsClientDeleteResponse], azfake.ErrorResponder) {
	var resp azfake.PollerResponder[armresources.ResourceGroupsClientDeleteResponse]
	c.mu.Lock()
	defer c.mu.Unlock()
	g, e := c.group(name, false)
	if e != nil {
		return resp, errResponder(e)
	}
	prefix := key(deref(g.ID)) + "/"
	if e := c.checkGroupDeletable(prefix); e != nil {
		return resp, errResponder(e)
	}
	g.Properties.ProvisioningState = ptr("Deleting")
	c.startDelete(ctx, key(deref(g.ID)), func() {
		for k := range c.vms {
			if strings.HasPrefix(k, prefix) {
				c.removeVM(k)
			}
		}
		dropPrefix(c.vnets, prefix)
		dropPrefix(c.nsgs, prefix)
		dropPrefix(c.rts, prefix)
		dropPrefix(c.lbs, prefix)
		dropPrefix(c.pips, prefix)
		dropPrefix(c.nics, prefix)
		dropPrefix(c.disks, prefix)
		for k := range c.deleting {
			if strings.HasPrefix(k, prefix) {
				delete(c.deleting, k)
			}
		}
		delete(c.rgs, strings.ToLower(deref(g.Name)))
	})
	return lro(c, http.StatusAccepted, armresources.ResourceGroupsClientDeleteResponse{}), errResponder(nil)
}

// checkGroupDeletable refuses to delete a group whose subnets or NICs
// resources outside it still use; the caller holds c.mu.
func (c *Cloud) checkGroupDeletable(prefix string) *armError {
	for k, nic := range c.nics {
		if strings.HasPrefix(k, prefix) {
			if vm := nic.Properties.VirtualMachine; vm != nil && !strings.HasPrefix(key(deref(vm.ID)), prefix) {
				return errf(http.StatusBadRequest, "NicInUse", "", "Network Interface %s is used by existing resource %s. In order to delete the network interface, it must be dissociated from the resource.", deref(nic.ID), deref(vm.ID))
			}
			continue
		}
		for _, sub := range nicSubnets(nic) {
			if strings.HasPrefix(key(sub), prefix) {
				return errf(http.StatusBadRequest, "InUseSubnetCannotBeDeleted", "", "Subnet %s is in use by %s and cannot be deleted.", sub, deref(nic.ID))
			}
		}
	}
	return nil
}

// dropPrefix removes every entry whose key starts with prefix.
func dropPrefix[T any](m map[string]*T, prefix string) {
	for k := range m {
		if strings.HasPrefix(k, prefix) {
			delete(m, k)
		}
	}
}

// listResources lists every resource in a group (its ID, name, type,
// location and tags), as ARM's generic resources API does; subnets are
// not resources of their own there.
func (c *Cloud) listResources(rg string, _ *armresources.ClientListByResourceGroupOptions) azfake.PagerResponder[armresources.ClientListByResourceGroupResponse] {
	var resp azfake.PagerResponder[armresources.ClientListByResourceGroupResponse]
	c.mu.Lock()
	defer c.mu.Unlock()
	g, e := c.group(rg, false)
	if e != nil {
		resp.AddError(e)
		return resp
	}
	prefix := key(deref(g.ID))
	var page armresources.ClientListByResourceGroupResponse
	add := func(id, name, typ, location *string, tags map[string]*string) {
		page.Value = append(page.Value, &armresources.GenericResourceExpanded{ID: id, Name: name, Type: typ, Location: location, Tags: clone(tags)})
	}
	for _, r := range inGroup(c.vnets, prefix) {
		add(r.ID, r.Name, r.Type, r.Location, r.Tags)
	}
	for _, r := range inGroup(c.nsgs, prefix) {
		add(r.ID, r.Name, r.Type, r.Location, r.Tags)
	}
	for _, r := range inGroup(c.rts, prefix) {
		add(r.ID, r.Name, r.Type, r.Location, r.Tags)
	}
	for _, r := range inGroup(c.pips, prefix) {
		add(r.ID, r.Name, r.Type, r.Location, r.Tags)
	}
	for _, r := range inGroup(c.lbs, prefix) {
		add(r.ID, r.Name, r.Type, r.Location, r.Tags)
	}
	for _, r := range inGroup(c.nics, prefix) {
		add(r.ID, r.Name, r.Type, r.Location, r.Tags)
	}
	for _, r := range inGroup(c.vms, prefix) {
		add(r.ID, r.Name, r.Type, r.Location, r.Tags)
	}
	for _, r := range inGroup(c.disks, prefix) {
		add(r.ID, r.Name, r.Type, r.Location, r.Tags)
	}
	resp.AddPage(http.StatusOK, page, nil)
	return resp
}
