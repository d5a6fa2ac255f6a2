package vsphere

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/platform"
)

// State is what a reconcile found or started.
type State struct {
	// Op is an operation still running: record it and come back later.
	Op infrav1.MachineOperation
	// Exists is true once the VM exists.
	Exists bool
	// BIOSUUID is the VM's BIOS UUID, the Node's provider ID suffix.
	BIOSUUID  string
	PoweredOn bool
	// Addresses are the guest's IP addresses on the VM's own NICs, once
	// VMware Tools reports them (see guestAddresses).
	Addresses []string
	// NetworkNotApplied says why the guest's addresses are not the static
	// ones its spec asks for; empty when they are, or none are asked for.
	NetworkNotApplied string
	// UserDataStale is true when the VM runs with guestinfo.userdata other
	// than the Machine's UserData; only looked at when UserData is given.
	UserDataStale bool
}

// ProviderID is the provider ID of a VM as the vSphere cloud provider sets it.
func (s State) ProviderID() string {
	if s.BIOSUUID == "" {
		return ""
	}
	return "vsphere://" + s.BIOSUUID
}

// guest sets what VMware Tools reports of the guest's adapters on the VM's
// own network devices (macs): the addresses, and whether they are the
// static ones the spec asks for.
func (st *State) guest(nics []types.GuestNicInfo, macs []string, m Machine) {
	st.Addresses = guestAddresses(nics, macs, m.ControlPlaneHost)
	st.NetworkNotApplied = staticNotApplied(m.Spec, nics, macs)
}

// errNameTaken is wrapped when a clone failed because a VM of its name
// exists in its folder.
var errNameTaken = errors.New("the VM's name is taken")

// observe reads the VM's state and powers it on if it is off: a machine not
// yet provisioned only once its network metadata names its NICs by MAC, and
// once no clone that may have made it still runs.
func (s *Session) observe(ctx context.Context, vm *object.VirtualMachine, m Machine) (State, error) {
	var o mo.VirtualMachine
	props := []string{"config.uuid", "config.changeVersion", "config.hardware.device", "runtime.powerState", "guest.net"}
	if !m.Provisioned || len(m.UserData) > 0 {
		props = append(props, "config.extraConfig")
	}
	if err := s.read(ctx, vm.Reference(), props, &o); err != nil {
		return State{}, fmt.Errorf("reading VM %s: %w", vm.Reference().Value, err)
	}
	st := State{Exists: true}
	var macs []string
	if o.Config != nil {
		st.BIOSUUID = o.Config.Uuid
		macs = nicMACs(o.Config.Hardware.Device)
		s.remember(vm.Reference(), devices{macs: macs, changeVersion: o.Config.ChangeVersion})
	}
	st.PoweredOn = o.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn
	if st.PoweredOn && o.Config != nil && len(m.UserData) > 0 {
		st.UserDataStale = !guestInfoHolds(o.Config.ExtraConfig, "guestinfo.userdata", m.UserData)
	}
	if o.Guest != nil {
		st.guest(o.Guest.Net, macs, m)
	}
	if !st.PoweredOn {
		if m.lostClone && !m.Provisioned {
			// Found without the clone that made it known to have ended:
			// vCenter may list a clone's VM while the clone still runs,
			// and refuses to change or power on a VM being cloned.
			if st, waiting, err := s.waitForLostClone(ctx, m); waiting || err != nil {
				return st, err
			}
		}
		if !m.Op.IsZero() {
			ts, err := s.checkTask(ctx, m.Op)
			if err != nil || !ts.Op.IsZero() {
				st.Op = ts.Op
				return st, err
			}
		}
		if !m.Provisioned && o.Config != nil {
			task, err := s.writeNetworkMetadata(ctx, vm, o.Config, macs, m)
			if err != nil || task != "" {
				st.Op = infrav1.MachineOperation{Type: infrav1.MachineOperationConfigure, ID: task}
				return st, err
			}
		}
		task, err := vm.PowerOn(ctx)
		if err != nil {
			return st, fmt.Errorf("powering on VM %s: %w", vm.Reference().Value, err)
		}
		st.Op = infrav1.MachineOperation{Type: infrav1.MachineOperationPowerOn, ID: task.Reference().Value}
	}
	return st, nil
}

// checkTask returns the operation while its task runs, nothing once it
// succeeded, and ErrTaskFailed with vCenter's message when it failed.
func (s *Session) checkTask(ctx context.Context, op infrav1.MachineOperation) (State, error) {
	st, _, err := s.taskResult(ctx, op)
	return st, err
}

// taskResult is checkTask that also returns the result of a task that
// succeeded (a clone's is its VM); nil when vCenter has forgotten the task.
func (s *Session) taskResult(ctx context.Context, op infrav1.MachineOperation) (State, types.AnyType, error) {
	ref := op.ID
	var task mo.Task
	moref := types.ManagedObjectReference{Type: "Task", Value: ref}
	if err := s.read(ctx, moref, []string{"info.state", "info.error", "info.descriptionId", "info.result"}, &task); err != nil {
		if isFault[*types.ManagedObjectNotFound](err) {
			// vCenter forgets finished tasks after a while: look at the VM.
			return State{}, nil, nil
		}
		return State{}, nil, fmt.Errorf("reading task %s: %w", ref, err)
	}
	switch task.Info.State {
	case types.TaskInfoStateQueued, types.TaskInfoStateRunning:
		return State{Op: op}, nil, nil
	case types.TaskInfoStateError:
		return State{}, nil, taskError(task.Info.DescriptionId, task.Info.Error)
	}
	return State{}, task.Info.Result, nil
}

// taskError is the error of a failed task: ErrTaskFailed with the fault's
// type and vCenter's message, and ErrInsufficientCapacity too when the
// fault says the host, cluster or datastore lacks room.
func taskError(description string, e *types.LocalizedMethodFault) error {
	msg := "unknown error"
	var capacity, nameTaken bool
	if e != nil {
		msg = e.LocalizedMessage
		if e.Fault != nil {
			// The fault's type says what went wrong when vCenter gives no message.
			name := reflect.TypeOf(e.Fault).Elem().Name()
			if msg == "" {
				msg = name
			} else {
				msg = name + ": " + msg
			}
			switch e.Fault.(type) {
			case types.BaseInsufficientResourcesFault, *types.NoDiskSpace:
				capacity = true
			case *types.DuplicateName:
				nameTaken = true
			}
		}
	}
	if capacity {
		return fmt.Errorf("%w (%w): %s: %s", ErrTaskFailed, platform.ErrInsufficientCapacity, description, msg)
	}
	if nameTaken {
		return fmt.Errorf("%w (%w): %s: %s", ErrTaskFailed, errNameTaken, description, msg)
	}
	return fmt.Errorf("%w: %s: %s", ErrTaskFailed, description, msg)
}
