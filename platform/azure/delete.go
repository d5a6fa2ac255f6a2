package azure

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/utils/ptr"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/platform"
)

// DeleteMachine deletes the machine's VM, then its network interface and
// OS disk if they outlived it, one operation per call; gone once none of
// them is left. A create still running is waited for first. Resources
// that carry another machine's tag are left alone.
func (p *Platform) DeleteMachine(ctx context.Context, m *platform.Machine) (bool, infrav1.MachineOperation, error) {
	hm := m.HybridMachine
	if hm.Spec.Azure == nil {
		return false, infrav1.MachineOperation{}, fmt.Errorf("%w: spec.azure must be set: a HybridMachine is on its HybridCluster's platform, Azure", platform.ErrInvalid)
	}
	n := namesOf(m.ComputerName)
	done, next, err := true, infrav1.MachineOperation{}, error(nil)
	if op := hm.Status.Operation; !op.IsZero() {
		done, _, next, err = p.resume(ctx, n, op)
	}
	if !done && err == nil {
		return false, next, nil
	}
	if err != nil && !isOperationFailed(err) {
		return false, next, err
	}
	// A failed create or start is deleted like any other; a failed delete
	// is tried again below.

	vm, err := p.getVM(ctx, n)
	if err != nil {
		return false, infrav1.MachineOperation{}, err
	}
	if vm != nil && ownedBy("VM", n.vm, vm.Tags, hm) == nil {
		if ptr.Deref(vm.Properties.ProvisioningState, "") == "Deleting" {
			return false, infrav1.MachineOperation{}, waitFor("VM", n.vm, "Deleting")
		}
		poller, err := p.clients.vms.BeginDelete(ctx, p.group(), n.vm, nil)
		if err != nil {
			return false, infrav1.MachineOperation{}, classify("deleting VM "+n.vm, err)
		}
		if op, err := started(ctx, infrav1.MachineOperationDelete, poller); err != nil || !op.IsZero() {
			return false, op, err
		}
	}

	nic, err := p.getNIC(ctx, n)
	if err != nil {
		return false, infrav1.MachineOperation{}, err
	}
	if nic != nil && ownedBy("Network interface", n.nic, nic.Tags, hm) == nil {
		poller, err := p.clients.interfaces.BeginDelete(ctx, p.group(), n.nic, nil)
		if err != nil {
			return false, infrav1.MachineOperation{}, classify("deleting network interface "+n.nic, err)
		}
		if op, err := started(ctx, infrav1.MachineOperationDeleteNetworkInterface, poller); err != nil || !op.IsZero() {
			return false, op, err
		}
	}

	disk, err := p.clients.disks.Get(ctx, p.group(), n.disk, nil)
	switch {
	case isNotFound(err):
	case err != nil:
		return false, infrav1.MachineOperation{}, classify("reading disk "+n.disk, err)
	case disk.ManagedBy == nil && (ownedBy("Disk", n.disk, disk.Tags, hm) == nil || disk.Tags[OwnerTag] == nil):
		// Azure gives an OS disk made from the VM's osDisk no tags of
		// its own: a disk with the machine's name that no VM holds is
		// the machine's (a disk another machine's VM holds is its own).
		poller, err := p.clients.disks.BeginDelete(ctx, p.group(), n.disk, nil)
		if err != nil {
			return false, infrav1.MachineOperation{}, classify("deleting disk "+n.disk, err)
		}
		if op, err := started(ctx, infrav1.MachineOperationDeleteDisk, poller); err != nil || !op.IsZero() {
			return false, op, err
		}
	}
	return true, infrav1.MachineOperation{}, nil
}

func isOperationFailed(err error) bool { return errors.Is(err, platform.ErrOperationFailed) }
