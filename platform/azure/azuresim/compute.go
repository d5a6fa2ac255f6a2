package azuresim

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
	computefake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7"
)

// Resource types of the compute provider, as they appear in IDs.
const (
	typeVM   = "Microsoft.Compute/virtualMachines"
	typeDisk = "Microsoft.Compute/disks"
)

// computeServers wires the compute fakes to the model.
func (c *Cloud) computeServers() *computefake.ServerFactory {
	return &computefake.ServerFactory{
		VirtualMachinesServer: computefake.VirtualMachinesServer{
			BeginCreateOrUpdate: c.putVM,
			BeginUpdate:         c.patchVM,
			Get:                 c.getVM,
			BeginDelete:         c.deleteVM,
			NewListPager:        c.listVMs,
			BeginStart:          c.startVM,
			BeginPowerOff:       c.powerOffVM,
			BeginDeallocate:     c.deallocateVM,
		},
		DisksServer: computefake.DisksServer{
			Get:                         c.getDisk,
			BeginDelete:                 c.deleteDisk,
			NewListByResourceGroupPager: c.listDisks,
		},
	}
}

// putVM creates a VM, with its OS disk, or updates an existing one.
func (c *Cloud) putVM(ctx context.Context, rg, name string, p armcompute.VirtualMachine, o *armcompute.VirtualMachinesClientBeginCreateOrUpdateOptions) (azfake.PollerResponder[armcompute.VirtualMachinesClientCreateOrUpdateResponse], azfake.ErrorResponder) {
	var resp azfake.PollerResponder[armcompute.VirtualMachinesClientCreateOrUpdateResponse]
	c.mu.Lock()
	defer c.mu.Unlock()
	g, e := c.group(rg, true)
	if e != nil {
		return resp, errResponder(e)
	}
	id := c.resourceID(deref(g.Name), typeVM, name)
	k := key(id)
	if e := c.notDeleting(k, id); e != nil {
		return resp, errResponder(e)
	}
	old := c.vms[k]
	if old != nil && o != nil && deref(o.IfNoneMatch) == "*" {
		// ARM's answer to a create that must not overwrite.
		return resp, errResponder(errf(http.StatusPreconditionFailed, "PreconditionFailed", "", "The resource %s already exists and If-None-Match is *.", id))
	}
	vm := clone(p)
	vm.ID, vm.Name, vm.Type = ptr(id), ptr(name), ptr(typeVM)
	if old != nil {
		if e := keepOnUpdate(&vm, old); e != nil {
			return resp, errResponder(e)
		}
	}
	if e := checkVM(&vm); e != nil {
		return resp, errResponder(e)
	}
	nics, e := c.vmNICs(&vm)
	if e != nil {
		return resp, errResponder(e)
	}
	if old == nil {
		if e := c.addOSDisk(&vm, deref(g.Name)); e != nil {
			return resp, errResponder(e)
		}
		vm.Properties.VMID = ptr(newGUID())
		vm.Properties.TimeCreated = ptr(time.Now().UTC())
	}
	for _, n := range nics {
		n.Properties.VirtualMachine = &armnetwork.SubResource{ID: ptr(id)}
	}
	state := "Updating"
	if old == nil {
		state = "Creating"
	}
	setVMState(&vm, state, old != nil)
	c.vms[k] = &vm
	c.startOp(ctx, k, func() {
		vm := c.vms[k]
		if vm == nil {
			return
		}
		setVMState(vm, "Succeeded", true)
		c.assignMACs(vm)
		if old == nil {
			for _, f := range c.created {
				go f(clone(*vm))
			}
		}
	})
	result := vmView(&vm, false)
	result.Properties.ProvisioningState = ptr("Succeeded")
	return lro(c, createdOr(old == nil), armcompute.VirtualMachinesClientCreateOrUpdateResponse{VirtualMachine: result}), errResponder(nil)
}

// vmNICs returns the NICs a VM refers to, after checking that each exists,
// lies in the VM's location and is not used by another VM; the caller holds c.mu.
func (c *Cloud) vmNICs(vm *armcompute.VirtualMachine) ([]*armnetwork.Interface, *armError) {
	var out []*armnetwork.Interface
	refs := vm.Properties.NetworkProfile.NetworkInterfaces
	primaries := 0
	for _, ref := range refs {
		nk := key(deref(ref.ID))
		n := c.nics[nk]
		if n == nil || c.deleting[nk] {
			return nil, errf(http.StatusBadRequest, "NotFound", "networkInterfaces", "Resource %s not found.", deref(ref.ID))
		}
		if !strings.EqualFold(deref(n.Location), deref(vm.Location)) {
			return nil, invalidReference(deref(ref.ID), deref(vm.ID))
		}
		if user := n.Properties.VirtualMachine; user != nil && key(deref(user.ID)) != key(deref(vm.ID)) {
			return nil, errf(http.StatusBadRequest, "NicInUse", "networkInterfaces",
				"Network Interface %s is used by existing resource %s. In order to use it with a different resource, it must be dissociated from the resource.", deref(n.ID), deref(user.ID))
		}
		if ref.Properties != nil && deref(ref.Properties.Primary) {
			primaries++
		}
		out = append(out, n)
	}
	if len(refs) > 1 && primaries != 1 {
		return nil, invalidParameter("networkInterfaces", "Virtual machine %s has %d network interfaces: exactly one of them must be marked primary.", deref(vm.ID), len(refs))
	}
	return out, nil
}

// assignMACs gives each NIC of a running VM a MAC address, as Azure does
// when the VM starts; the caller holds c.mu.
func (c *Cloud) assignMACs(vm *armcompute.VirtualMachine) {
	for _, ref := range vm.Properties.NetworkProfile.NetworkInterfaces {
		n := c.nics[key(deref(ref.ID))]
		if n == nil {
			continue
		}
		if n.Properties.MacAddress == nil {
			n.Properties.MacAddress = ptr(strings.ToUpper("00-0D-3A-" + newHex(2) + "-" + newHex(2) + "-" + newHex(2)))
		}
		n.Properties.Primary = ptr(len(vm.Properties.NetworkProfile.NetworkInterfaces) == 1 ||
			(ref.Properties != nil && deref(ref.Properties.Primary)))
	}
}

// setVMState sets a VM's provisioning state and the matching instance view
// statuses; running says whether the VM has been created and runs.
func setVMState(vm *armcompute.VirtualMachine, state string, running bool) {
	vm.Properties.ProvisioningState = ptr(state)
	statuses := []*armcompute.InstanceViewStatus{{
		Code:          ptr("ProvisioningState/" + strings.ToLower(state)),
		DisplayStatus: ptr("Provisioning " + strings.ToLower(state)),
		Level:         ptr(armcompute.StatusLevelTypesInfo),
	}}
	if running {
		statuses = append(statuses, &armcompute.InstanceViewStatus{
			Code:          ptr("PowerState/running"),
			DisplayStatus: ptr("VM running"),
			Level:         ptr(armcompute.StatusLevelTypesInfo),
		})
	}
	if vm.Properties.InstanceView == nil {
		vm.Properties.InstanceView = &armcompute.VirtualMachineInstanceView{}
	}
	vm.Properties.InstanceView.Statuses = statuses
	if vm.Properties.OSProfile != nil {
		vm.Properties.InstanceView.ComputerName = vm.Properties.OSProfile.ComputerName
	}
}

// vmView is a VM as the API shows it: without the admin password and the
// custom data, and with the instance view only when asked for.
func vmView(vm *armcompute.VirtualMachine, instanceView bool) armcompute.VirtualMachine {
	out := clone(*vm)
	if os := out.Properties.OSProfile; os != nil {
		os.AdminPassword, os.CustomData = nil, nil
	}
	if !instanceView {
		out.Properties.InstanceView = nil
	}
	return out
}

// patchVM applies a PATCH to a VM; only tags and properties.userData are simulated.
func (c *Cloud) patchVM(ctx context.Context, rg, name string, p armcompute.VirtualMachineUpdate, _ *armcompute.VirtualMachinesClientBeginUpdateOptions) (azfake.PollerResponder[armcompute.VirtualMachinesClientUpdateResponse], azfake.ErrorResponder) {
	var resp azfake.PollerResponder[armcompute.VirtualMachinesClientUpdateResponse]
	c.mu.Lock()
	defer c.mu.Unlock()
	vm, k, e := c.vmToChange(rg, name)
	if e != nil {
		return resp, errResponder(e)
	}
	var userData *string
	if p.Properties != nil {
		rest := *p.Properties
		userData, rest.UserData = rest.UserData, nil
		if b, _ := json.Marshal(rest); string(b) != "{}" || p.Identity != nil || p.Plan != nil || p.Zones != nil {
			return resp, errResponder(invalidParameter("properties", "azuresim simulates a PATCH of a virtual machine's tags and properties.userData only."))
		}
		if e := checkBase64("userData", deref(userData)); e != nil {
			return resp, errResponder(e)
		}
	}
	if p.Tags != nil {
		vm.Tags = p.Tags
	}
	if userData != nil {
		vm.Properties.UserData = userData
	}
	setVMState(vm, "Updating", true)
	c.startOp(ctx, k, func() {
		if vm := c.vms[k]; vm != nil {
			setVMState(vm, "Succeeded", true)
		}
	})
	result := vmView(vm, false)
	result.Properties.ProvisioningState = ptr("Succeeded")
	return lro(c, http.StatusOK, armcompute.VirtualMachinesClientUpdateResponse{VirtualMachine: result}), errResponder(nil)
}

// getVM returns a VM, with its instance view when expand=instanceView.
func (c *Cloud) getVM(_ context.Context, rg, name string, o *armcompute.VirtualMachinesClientGetOptions) (azfake.Responder[armcompute.VirtualMachinesClientGetResponse], azfake.ErrorResponder) {
	var resp azfake.Responder[armcompute.VirtualMachinesClientGetResponse]
	c.mu.Lock()
	defer c.mu.Unlock()
	g, e := c.group(rg, false)
	if e != nil {
		return resp, errResponder(e)
	}
	vm := c.vms[key(c.resourceID(deref(g.Name), typeVM, name))]
	if vm == nil {
		return resp, errResponder(notFound(typeVM, name, rg))
	}
	expand := o != nil && o.Expand != nil && strings.EqualFold(string(*o.Expand), string(armcompute.InstanceViewTypesInstanceView))
	resp.SetResponse(http.StatusOK, armcompute.VirtualMachinesClientGetResponse{VirtualMachine: vmView(vm, expand)}, nil)
	return resp, errResponder(nil)
}

// listVMs returns the VMs of a resource group, listPageSize to a page,
// with their instance views when expand=instanceView.
func (c *Cloud) listVMs(rg string, o *armcompute.VirtualMachinesClientListOptions) azfake.PagerResponder[armcompute.VirtualMachinesClientListResponse] {
	var resp azfake.PagerResponder[armcompute.VirtualMachinesClientListResponse]
	c.mu.Lock()
	defer c.mu.Unlock()
	g, e := c.group(rg, false)
	if e != nil {
		resp.AddError(e)
		return resp
	}
	expand := o != nil && o.Expand != nil && strings.EqualFold(string(*o.Expand), string(armcompute.ExpandTypeForListVMsInstanceView))
	var all []*armcompute.VirtualMachine
	for _, vm := range inGroup(c.vms, key(deref(g.ID))) {
		all = append(all, ptr(vmView(vm, expand)))
	}
	for _, chunk := range pages(all) {
		resp.AddPage(http.StatusOK, armcompute.VirtualMachinesClientListResponse{VirtualMachineListResult: armcompute.VirtualMachineListResult{Value: chunk}}, nil)
	}
	return resp
}

// deleteVM deletes a VM and, per their deleteOption, its OS disk and NICs.
func (c *Cloud) deleteVM(ctx context.Context, rg, name string, _ *armcompute.VirtualMachinesClientBeginDeleteOptions) (azfake.PollerResponder[armcompute.VirtualMachinesClientDeleteResponse], azfake.ErrorResponder) {
	var resp azfake.PollerResponder[armcompute.VirtualMachinesClientDeleteResponse]
	c.mu.Lock()
	defer c.mu.Unlock()
	g, e := c.group(rg, false)
	if e != nil {
		return resp, errResponder(e)
	}
	k := key(c.resourceID(deref(g.Name), typeVM, name))
	vm := c.vms[k]
	if vm == nil {
		return deleted[armcompute.VirtualMachinesClientDeleteResponse](), errResponder(nil)
	}
	setVMState(vm, "Deleting", deref(vm.Properties.ProvisioningState) != "Creating")
	c.startDelete(ctx, k, func() { c.removeVM(k) })
	return lro(c, http.StatusAccepted, armcompute.VirtualMachinesClientDeleteResponse{}), errResponder(nil)
}

// removeVM removes a VM from the model. Its OS disk and each NIC go too
// when their deleteOption is Delete; otherwise they stay, detached. The
// caller holds c.mu.
func (c *Cloud) removeVM(k string) {
	vm := c.vms[k]
	if vm == nil {
		return
	}
	delete(c.vms, k)
	if d := vm.Properties.StorageProfile.OSDisk; d != nil && d.ManagedDisk != nil {
		dk := key(deref(d.ManagedDisk.ID))
		if deref(d.DeleteOption) == armcompute.DiskDeleteOptionTypesDelete {
			delete(c.disks, dk)
		} else if disk := c.disks[dk]; disk != nil {
			disk.ManagedBy = nil
			disk.Properties.DiskState = ptr(armcompute.DiskStateUnattached)
		}
	}
	for _, ref := range vm.Properties.NetworkProfile.NetworkInterfaces {
		nk := key(deref(ref.ID))
		n := c.nics[nk]
		if n == nil {
			continue
		}
		if ref.Properties != nil && deref(ref.Properties.DeleteOption) == armcompute.DeleteOptionsDelete {
			delete(c.nics, nk)
			delete(c.deleting, nk)
			continue
		}
		if n.Properties.VirtualMachine != nil && key(deref(n.Properties.VirtualMachine.ID)) == k {
			n.Properties.VirtualMachine = nil
		}
	}
}
