package azuresim

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
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

// defaultOSDiskGB is the size Azure gives a Windows OS disk when the request names none.
const defaultOSDiskGB = 127

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

// keepOnUpdate fills an update PUT of a VM from the existing VM old where
// Azure keeps what is there (secrets GET never returns, read-only
// properties, the OS disk) and refuses the changes Azure refuses.
func keepOnUpdate(vm, old *armcompute.VirtualMachine) *armError {
	if vm.Properties == nil {
		vm.Properties = &armcompute.VirtualMachineProperties{}
	}
	np, op := vm.Properties, old.Properties
	if !strings.EqualFold(deref(vm.Location), deref(old.Location)) {
		return changeNotAllowed("location")
	}
	if !slices.Equal(derefAll(vm.Zones), derefAll(old.Zones)) {
		return changeNotAllowed("zones")
	}
	if np.OSProfile == nil {
		o := clone(*op.OSProfile)
		np.OSProfile = &o
	}
	no, oo := np.OSProfile, op.OSProfile
	for _, f := range []struct {
		name     string
		now, was **string
	}{
		{"computerName", &no.ComputerName, &oo.ComputerName},
		{"adminUsername", &no.AdminUsername, &oo.AdminUsername},
		{"adminPassword", &no.AdminPassword, &oo.AdminPassword},
		{"customData", &no.CustomData, &oo.CustomData},
	} {
		switch {
		case deref(*f.now) == "":
			*f.now = *f.was
		case deref(*f.now) != deref(*f.was):
			return changeNotAllowed(f.name)
		}
	}
	if np.StorageProfile == nil {
		np.StorageProfile = &armcompute.StorageProfile{}
	}
	if np.StorageProfile.ImageReference == nil {
		np.StorageProfile.ImageReference = op.StorageProfile.ImageReference
	} else if imageKey(np.StorageProfile.ImageReference) != imageKey(op.StorageProfile.ImageReference) {
		return changeNotAllowed("imageReference")
	}
	oldDisk := op.StorageProfile.OSDisk
	if d := np.StorageProfile.OSDisk; d != nil && deref(d.Name) != "" && !strings.EqualFold(deref(d.Name), deref(oldDisk.Name)) {
		return changeNotAllowed("osDisk.name")
	}
	disk := clone(*oldDisk)
	if d := np.StorageProfile.OSDisk; d != nil && d.DeleteOption != nil {
		disk.DeleteOption = d.DeleteOption
	}
	np.StorageProfile.OSDisk = &disk
	if np.NetworkProfile == nil || !slices.Equal(nicKeys(np.NetworkProfile), nicKeys(op.NetworkProfile)) {
		return errf(http.StatusConflict, "OperationNotAllowed", "networkProfile",
			"azuresim does not simulate adding or removing network interfaces of an existing VM (Azure requires the VM to be deallocated).")
	}
	np.VMID, np.TimeCreated = op.VMID, op.TimeCreated
	return nil
}

// changeNotAllowed is the 409 Azure answers to an update PUT changing a fixed property.
func changeNotAllowed(prop string) *armError {
	return errf(http.StatusConflict, "PropertyChangeNotAllowed", prop, "Changing property '%s' is not allowed.", prop)
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

// addOSDisk creates the managed OS disk of a new VM and points the VM at
// it; the caller holds c.mu.
func (c *Cloud) addOSDisk(vm *armcompute.VirtualMachine, rg string) *armError {
	sp := vm.Properties.StorageProfile
	if sp.OSDisk == nil {
		sp.OSDisk = &armcompute.OSDisk{}
	}
	d := sp.OSDisk
	if deref(d.Name) == "" {
		d.Name = ptr(fmt.Sprintf("%s_OsDisk_1_%s", deref(vm.Name), newHex(32)))
	}
	id := c.resourceID(rg, typeDisk, deref(d.Name))
	if c.disks[key(id)] != nil {
		return errf(http.StatusConflict, "OperationNotAllowed", "osDisk.name",
			"Disk %s already exists; a new VM cannot create its OS disk under that name.", id)
	}
	if d.DiskSizeGB == nil {
		d.DiskSizeGB = ptr[int32](defaultOSDiskGB)
	}
	if d.ManagedDisk == nil {
		d.ManagedDisk = &armcompute.ManagedDiskParameters{}
	}
	if d.ManagedDisk.StorageAccountType == nil {
		d.ManagedDisk.StorageAccountType = ptr(armcompute.StorageAccountTypesPremiumLRS)
	}
	d.ManagedDisk.ID = ptr(id)
	if d.CreateOption == nil {
		d.CreateOption = ptr(armcompute.DiskCreateOptionTypesFromImage)
	}
	osType := armcompute.OperatingSystemTypesWindows
	if !isWindows(vm) {
		osType = armcompute.OperatingSystemTypesLinux
	}
	d.OSType = &osType
	c.disks[key(id)] = &armcompute.Disk{
		ID:        ptr(id),
		Name:      d.Name,
		Type:      ptr(typeDisk),
		Location:  vm.Location,
		Zones:     vm.Zones,
		ManagedBy: vm.ID,
		SKU:       &armcompute.DiskSKU{Name: ptr(armcompute.DiskStorageAccountTypes(*d.ManagedDisk.StorageAccountType))},
		Properties: &armcompute.DiskProperties{
			CreationData:      &armcompute.CreationData{CreateOption: ptr(armcompute.DiskCreateOptionFromImage)},
			DiskSizeGB:        d.DiskSizeGB,
			OSType:            &osType,
			DiskState:         ptr(armcompute.DiskStateAttached),
			ProvisioningState: ptr("Succeeded"),
			TimeCreated:       ptr(time.Now().UTC()),
			UniqueID:          ptr(newGUID()),
		},
	}
	return nil
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

// getDisk returns a managed disk.
func (c *Cloud) getDisk(_ context.Context, rg, name string, _ *armcompute.DisksClientGetOptions) (azfake.Responder[armcompute.DisksClientGetResponse], azfake.ErrorResponder) {
	var resp azfake.Responder[armcompute.DisksClientGetResponse]
	c.mu.Lock()
	defer c.mu.Unlock()
	g, e := c.group(rg, false)
	if e != nil {
		return resp, errResponder(e)
	}
	d := c.disks[key(c.resourceID(deref(g.Name), typeDisk, name))]
	if d == nil {
		return resp, errResponder(notFound(typeDisk, name, rg))
	}
	resp.SetResponse(http.StatusOK, armcompute.DisksClientGetResponse{Disk: clone(*d)}, nil)
	return resp, errResponder(nil)
}

// listDisks returns the managed disks of a resource group in one page.
func (c *Cloud) listDisks(rg string, _ *armcompute.DisksClientListByResourceGroupOptions) azfake.PagerResponder[armcompute.DisksClientListByResourceGroupResponse] {
	var resp azfake.PagerResponder[armcompute.DisksClientListByResourceGroupResponse]
	c.mu.Lock()
	defer c.mu.Unlock()
	g, e := c.group(rg, false)
	if e != nil {
		resp.AddError(e)
		return resp
	}
	var page armcompute.DisksClientListByResourceGroupResponse
	for _, d := range inGroup(c.disks, key(deref(g.ID))) {
		page.Value = append(page.Value, ptr(clone(*d)))
	}
	resp.AddPage(http.StatusOK, page, nil)
	return resp
}

// deleteDisk deletes a managed disk no VM uses.
func (c *Cloud) deleteDisk(ctx context.Context, rg, name string, _ *armcompute.DisksClientBeginDeleteOptions) (azfake.PollerResponder[armcompute.DisksClientDeleteResponse], azfake.ErrorResponder) {
	var resp azfake.PollerResponder[armcompute.DisksClientDeleteResponse]
	c.mu.Lock()
	defer c.mu.Unlock()
	g, e := c.group(rg, false)
	if e != nil {
		return resp, errResponder(e)
	}
	id := c.resourceID(deref(g.Name), typeDisk, name)
	k := key(id)
	d := c.disks[k]
	if d == nil {
		return deleted[armcompute.DisksClientDeleteResponse](), errResponder(nil)
	}
	if d.ManagedBy != nil {
		return resp, errResponder(errf(http.StatusConflict, "OperationNotAllowed", "",
			"Disk %s is attached to VM %s.", id, deref(d.ManagedBy)))
	}
	c.startDelete(ctx, k, func() { delete(c.disks, k) })
	return lro(c, http.StatusAccepted, armcompute.DisksClientDeleteResponse{}), errResponder(nil)
}

// derefAll returns the strings a slice of pointers points to.
func derefAll(s []*string) []string {
	out := make([]string, 0, len(s))
	for _, p := range s {
		out = append(out, deref(p))
	}
	return out
}

// nicKeys returns the lower-cased NIC IDs of a network profile, sorted.
func nicKeys(np *armcompute.NetworkProfile) []string {
	var out []string
	if np == nil {
		return nil
	}
	for _, ref := range np.NetworkInterfaces {
		out = append(out, key(deref(ref.ID)))
	}
	slices.Sort(out)
	return out
}

// imageKey identifies an image reference for comparison.
func imageKey(r *armcompute.ImageReference) string {
	if r == nil {
		return ""
	}
	return strings.ToLower(strings.Join([]string{deref(r.ID), deref(r.SharedGalleryImageID), deref(r.CommunityGalleryImageID),
		deref(r.Publisher), deref(r.Offer), deref(r.SKU), deref(r.Version)}, "|"))
}

// startVM starts a VM; powerOffVM and deallocateVM stop it. The VM is
// Updating until the operation ends, then Succeeded in its new power state.
func (c *Cloud) startVM(ctx context.Context, rg, name string, _ *armcompute.VirtualMachinesClientBeginStartOptions) (azfake.PollerResponder[armcompute.VirtualMachinesClientStartResponse], azfake.ErrorResponder) {
	return powerVM[armcompute.VirtualMachinesClientStartResponse](ctx, c, rg, name, "running")
}

func (c *Cloud) powerOffVM(ctx context.Context, rg, name string, _ *armcompute.VirtualMachinesClientBeginPowerOffOptions) (azfake.PollerResponder[armcompute.VirtualMachinesClientPowerOffResponse], azfake.ErrorResponder) {
	return powerVM[armcompute.VirtualMachinesClientPowerOffResponse](ctx, c, rg, name, "stopped")
}

func (c *Cloud) deallocateVM(ctx context.Context, rg, name string, _ *armcompute.VirtualMachinesClientBeginDeallocateOptions) (azfake.PollerResponder[armcompute.VirtualMachinesClientDeallocateResponse], azfake.ErrorResponder) {
	return powerVM[armcompute.VirtualMachinesClientDeallocateResponse](ctx, c, rg, name, "deallocated")
}

// vmToChange is the VM name of resource group rg and its key, or the error
// of a change to it: the group or the VM missing, or the VM being deleted.
// The caller holds c.mu.
func (c *Cloud) vmToChange(rg, name string) (*armcompute.VirtualMachine, string, *armError) {
	g, e := c.group(rg, true)
	if e != nil {
		return nil, "", e
	}
	id := c.resourceID(deref(g.Name), typeVM, name)
	k := key(id)
	vm := c.vms[k]
	if vm == nil {
		return nil, "", notFound(typeVM, name, rg)
	}
	if e := c.notDeleting(k, id); e != nil {
		return nil, "", e
	}
	return vm, k, nil
}

func powerVM[T any](ctx context.Context, c *Cloud, rg, name, power string) (azfake.PollerResponder[T], azfake.ErrorResponder) {
	var resp azfake.PollerResponder[T]
	c.mu.Lock()
	defer c.mu.Unlock()
	vm, k, e := c.vmToChange(rg, name)
	if e != nil {
		return resp, errResponder(e)
	}
	if c.pending[k] != 0 {
		return resp, errResponder(errf(http.StatusConflict, "OperationNotAllowed", "", "Operation on VM %s is not allowed while another operation on it is in progress.", name))
	}
	before := powerOf(vm)
	setVMState(vm, "Updating", false)
	setPower(vm, before)
	c.startOp(ctx, k, func() {
		setVMState(vm, "Succeeded", false)
		setPower(vm, power)
	})
	var zero T
	return lro(c, http.StatusAccepted, zero), errResponder(nil)
}

// powerOf is the VM's power state ("running", "stopped", ...), or "".
func powerOf(vm *armcompute.VirtualMachine) string {
	if vm.Properties.InstanceView == nil {
		return ""
	}
	for _, st := range vm.Properties.InstanceView.Statuses {
		if code := deref(st.Code); strings.HasPrefix(code, "PowerState/") {
			return strings.TrimPrefix(code, "PowerState/")
		}
	}
	return ""
}

// setPower sets the VM's PowerState status; "" leaves it without one.
func setPower(vm *armcompute.VirtualMachine, power string) {
	if power == "" {
		return
	}
	display := map[string]string{"running": "VM running", "stopped": "VM stopped", "deallocated": "VM deallocated"}[power]
	iv := vm.Properties.InstanceView
	iv.Statuses = append(iv.Statuses, &armcompute.InstanceViewStatus{
		Code:          ptr("PowerState/" + power),
		DisplayStatus: ptr(display),
		Level:         ptr(armcompute.StatusLevelTypesInfo),
	})
}
