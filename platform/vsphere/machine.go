package vsphere

import (
	"context"
	"crypto/sha1" //nolint:gosec // names a UUID deterministically, not a security use
	"errors"
	"fmt"
	"time"

	"github.com/vmware/govmomi/vim25/types"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/platform"
)

// Machine is what the vSphere service needs of one HybridMachine.
type Machine struct {
	// Namespace and Name identify the HybridMachine; the VM's instance UUID
	// is derived from them, so the VM is found again without any status.
	Namespace, Name string
	Datacenter      string
	Spec            *infrav1.VSphereMachineSpec
	OS              infrav1.OSType
	ComputerName    string
	// ControlPlaneHost is the cluster's control-plane endpoint host, which
	// is never one of the machine's own addresses.
	ControlPlaneHost string
	// UserData is the bootstrap script, written to guestinfo.userdata.
	UserData []byte
	// SSHAuthorizedKeys go into the metadata as public-keys-data.
	SSHAuthorizedKeys []string
	// Op is the operation an earlier reconcile recorded: its ID is a task
	// (a clone, reconfigure, power-on, power-off or destroy, or, while a
	// machine never provisioned is deleted, a clone of its template that
	// the delete waits for).
	Op infrav1.MachineOperation
	// Provisioned says the VM was made before: if it is gone, it was deleted
	// behind capwin's back and is not made again (its provider ID would change).
	Provisioned bool
	// DeletingSince is when the machine's deletion began. Delete waits for
	// the template's clones queued before it (with a margin for clock
	// skew); later ones cannot be this machine's.
	DeletingSince time.Time

	// lostClone is set by Reconcile when the machine, not provisioned, has
	// no clone known to have ended: no operation was recorded (a restart
	// or a call timeout lost a clone's answer), or its clone found its name
	// taken. A VM found for it may still be being cloned.
	lostClone bool
}

// ErrNotFound is wrapped when a datacenter, template, folder, pool,
// datastore or network named in the spec does not exist.
var ErrNotFound = platform.NewError(platform.ErrNotFound, "not found in vCenter")

// ErrVMGone is returned when a provisioned machine's VM no longer exists.
var ErrVMGone = platform.ErrMachineGone

// ErrTaskFailed is wrapped when a vCenter task failed.
var ErrTaskFailed = platform.NewError(platform.ErrOperationFailed, "vCenter task failed")

// InstanceUUID is the VM instance UUID of a machine: a name-based UUID of its
// namespace and name, so that a VM is found again after a controller restart
// or a clusterctl move, and never cloned twice.
func InstanceUUID(namespace, name string) string {
	h := sha1.Sum([]byte("capwin.io/hybridmachine/" + namespace + "/" + name)) //nolint:gosec
	h[6] = (h[6] & 0x0f) | 0x50                                                // version 5
	h[8] = (h[8] & 0x3f) | 0x80                                                // RFC 4122 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// Reconcile drives the machine's VM one step towards existing and running:
// it clones it (with its guestinfo and powered on) or waits for a task, and
// reports the VM's state. It never waits for a task to finish.
func (s *Session) Reconcile(ctx context.Context, m Machine) (State, error) {
	m.lostClone = !m.Provisioned && m.Op.IsZero()
	if !m.Provisioned && m.Op.Type == infrav1.MachineOperationWaitForCreate {
		// A clone that may have been this machine's, but may be another
		// machine's: its failure is not this machine's to report. Once
		// it ended, the machine's VM is looked for by instance UUID. An
		// error reading the task (vCenter unreachable, a session to
		// renew) is this machine's, as for its own clone's task below.
		st, _, err := s.taskResult(ctx, m.Op)
		if err != nil && !errors.Is(err, ErrTaskFailed) {
			return st, err
		}
		if err == nil && !st.Op.IsZero() {
			return st, nil
		}
		m.Op = infrav1.MachineOperation{}
	}
	if !m.Provisioned && m.Op.Type == infrav1.MachineOperationCreate {
		// The clone's own task says whether it ended, and which VM it
		// made: no search by instance UUID, and no look at a VM vCenter
		// shows before its clone ends. Done once, before a stale VM
		// reference is retried, so that a VM deleted since its clone is
		// looked for again, not taken from the task once more.
		st, made, err := s.taskResult(ctx, m.Op)
		if errors.Is(err, errNameTaken) {
			// Another clone to the name ran first: this machine's own,
			// whose answer was lost, or another VM's. Its VM is looked
			// for by instance UUID, and a clone that may be it waited for.
			m.Op, m.lostClone = infrav1.MachineOperation{}, true
			return retryStale(s, m, func() (State, error) { return s.afterNameTaken(ctx, m, err) })
		}
		if err != nil || !st.Op.IsZero() {
			return st, err
		}
		if ref, ok := made.(types.ManagedObjectReference); ok && ref.Type == "VirtualMachine" {
			s.cache.Store("vm/"+InstanceUUID(m.Namespace, m.Name), ref)
		}
		m.Op = infrav1.MachineOperation{}
	}
	return retryStale(s, m, func() (State, error) { return s.reconcile(ctx, m) })
}

func (s *Session) reconcile(ctx context.Context, m Machine) (State, error) {
	dc, err := s.datacenter(ctx, m.Datacenter)
	if err != nil {
		return State{}, err
	}
	if m.Provisioned && m.Op.IsZero() && len(m.UserData) == 0 {
		// A resync of a machine that runs: one read of the session's VMs
		// answers every machine's.
		if st, ok, err := s.viewed(ctx, m); err != nil || ok {
			return st, err
		}
	}
	vm, err := s.findVM(ctx, dc, m)
	if err != nil {
		return State{}, err
	}
	if vm != nil && !m.Op.IsZero() && !m.Provisioned {
		// vCenter can show a clone's VM before the clone ends: a task still
		// running is waited for, or a power-on, and a delete after it,
		// would race the clone and the clone would leave its VM behind.
		st, err := s.checkTask(ctx, m.Op)
		if err == nil && !st.Op.IsZero() {
			return st, nil
		}
		if err == nil {
			m.Op = infrav1.MachineOperation{} // ended: observe need not look again
		}
	}
	if vm == nil {
		if !m.Op.IsZero() {
			st, err := s.checkTask(ctx, m.Op)
			if err != nil || !st.Op.IsZero() {
				return st, err
			}
			// The clone finished: the VM is there now. If it is not (the clone
			// failed and vCenter has forgotten the task), clone again.
			if vm, err = s.findVM(ctx, dc, m); err != nil {
				return State{}, err
			}
			if vm == nil {
				if m.Provisioned {
					return State{}, ErrVMGone
				}
				return s.clone(ctx, dc, m)
			}
		} else {
			if m.Provisioned {
				return State{}, ErrVMGone
			}
			return s.clone(ctx, dc, m)
		}
	}
	return s.observe(ctx, vm, m)
}

// afterNameTaken goes on from a clone that found its name taken: to the
// machine's VM when there is one (its own earlier clone made it), and
// otherwise as nameTaken says, without cloning again.
func (s *Session) afterNameTaken(ctx context.Context, m Machine, cloneErr error) (State, error) {
	dc, err := s.datacenter(ctx, m.Datacenter)
	if err != nil {
		return State{}, err
	}
	vm, err := s.findVM(ctx, dc, m)
	if err != nil {
		return State{}, err
	}
	if vm != nil {
		return s.observe(ctx, vm, m)
	}
	inv, err := s.inventory(ctx, dc, m.Spec)
	if err != nil {
		return State{}, err
	}
	return s.nameTaken(ctx, inv, m, fmt.Errorf("cloning template %s: %w", m.Spec.Template, cloneErr))
}
