package azuresim

import (
	"context"
	"net/http"
	"strings"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
)

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
