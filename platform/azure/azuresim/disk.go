package azuresim

import (
	"context"
	"fmt"
	"net/http"
	"time"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
)

// defaultOSDiskGB is the size Azure gives a Windows OS disk when the request names none.
const defaultOSDiskGB = 127

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
