package vsphere

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/vmware/govmomi/event"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
)

// Delete powers the VM off and destroys it, one task at a time, and
// returns the task to wait for. It returns gone once no VM is left; a VM
// that is already gone is fine. A machine never provisioned is gone only
// once no clone of its template queued before its deletion still runs: one
// may be its own, whose task was never recorded.
func (s *Session) Delete(ctx context.Context, m Machine) (gone bool, op infrav1.MachineOperation, err error) {
	op, err = retryStale(s, m, func() (infrav1.MachineOperation, error) {
		// gone is the last attempt's, as op and err are.
		g, op, err := s.delete(ctx, m)
		gone = g
		return op, err
	})
	return gone, op, err
}

func (s *Session) delete(ctx context.Context, m Machine) (gone bool, op infrav1.MachineOperation, err error) {
	none := infrav1.MachineOperation{}
	dc, err := s.datacenter(ctx, m.Datacenter)
	if err != nil {
		return false, none, err
	}
	// A task in flight (a clone, a power-off, a destroy) finishes first: a
	// clone that is not visible yet would otherwise be left running.
	if !m.Op.IsZero() {
		st, err := s.checkTask(ctx, m.Op)
		if !st.Op.IsZero() {
			return false, st.Op, nil
		}
		if err != nil && !errors.Is(err, ErrTaskFailed) {
			return false, m.Op, err
		}
		if err != nil {
			// A failed clone left nothing; a failed power-off or destroy is
			// reported, and retried by the caller.
			if vm, ferr := s.findVM(ctx, dc, m); ferr == nil && vm != nil {
				return false, none, err
			}
		}
	}
	vm, err := s.findVM(ctx, dc, m)
	if err != nil {
		return false, none, err
	}
	if vm == nil {
		if m.Provisioned {
			return true, none, nil
		}
		// Never provisioned and no VM: either no clone was asked for, or
		// one was whose answer never came (a call timeout, a restart) and
		// vCenter does not list its VM while it runs. Wait, one at a time
		// (the caller records each as its task), for the clones that may
		// be this machine's (runningClone); its VM, if one was, is then
		// found by its instance UUID and destroyed.
		task, err := s.runningClone(ctx, dc, m)
		if task == "" {
			return err == nil, none, err
		}
		return false, infrav1.MachineOperation{Type: infrav1.MachineOperationWaitForCreate, ID: task}, err
	}
	state, err := vm.PowerState(ctx)
	if err != nil {
		return false, none, fmt.Errorf("reading the power state of VM %s: %w", vm.Reference().Value, err)
	}
	var task *object.Task
	kind := infrav1.MachineOperationDelete
	if state == types.VirtualMachinePowerStatePoweredOn {
		kind = infrav1.MachineOperationPowerOff
		task, err = vm.PowerOff(ctx)
	} else {
		task, err = vm.Destroy(ctx)
	}
	if err != nil {
		return false, none, fmt.Errorf("deleting VM %s: %w", vm.Reference().Value, err)
	}
	return false, infrav1.MachineOperation{Type: kind, ID: task.Reference().Value}, nil
}

// cloneSkew allows for the clocks of vCenter and the API server differing
// when Delete compares a clone's queue time with the deletion's start.
const cloneSkew = 5 * time.Minute

// cloneLookback is how far back Delete looks for a clone vCenter was asked
// to make for the machine: a clone still running after a day is none of a
// machine's.
const cloneLookback = 24 * time.Hour

// maxCloneEvents is the most events one QueryEvents call returns.
const maxCloneEvents = 1000

// runningClone returns the earliest running or queued clone of m's
// template that may be m's own, or "" (and so the machine's VM is gone)
// when there is none. A clone may be m's when vCenter logged a clone of the
// template to m's name (VmBeingClonedEvent) and the clone was queued
// between that and m's deletion. vCenter does not tie the event to its
// task, so the clones of other machines queued in that time are waited for
// too.
func (s *Session) runningClone(ctx context.Context, dc *object.Datacenter, m Machine) (string, error) {
	if m.Spec == nil || m.Spec.Template == "" {
		return "", nil
	}
	tmpls, err := find.NewFinder(s.Client).SetDatacenter(dc).VirtualMachineList(ctx, m.Spec.Template)
	if err != nil {
		if errors.As(err, new(*find.NotFoundError)) {
			return "", nil // no template, no clone of it
		}
		return "", fmt.Errorf("finding template %s: %w", m.Spec.Template, err)
	}
	var earliest *mo.Task
	for _, tmpl := range tmpls {
		asked, since, err := s.cloneAsked(ctx, tmpl.Reference(), m.Name)
		if err != nil {
			return "", fmt.Errorf("reading the clone events of template %s: %w", m.Spec.Template, err)
		}
		if !asked {
			continue
		}
		var o mo.VirtualMachine
		if err := tmpl.Properties(ctx, tmpl.Reference(), []string{"recentTask"}, &o); err != nil {
			return "", fmt.Errorf("reading the recent tasks of template %s: %w", m.Spec.Template, err)
		}
		if len(o.RecentTask) == 0 {
			continue
		}
		var tasks []mo.Task
		if err := property.DefaultCollector(s.Client).Retrieve(ctx, o.RecentTask, []string{"info"}, &tasks); err != nil {
			return "", fmt.Errorf("reading the recent tasks of template %s: %w", m.Spec.Template, err)
		}
		for i := range tasks {
			info := &tasks[i].Info
			if !strings.HasPrefix(info.DescriptionId, "VirtualMachine.clone") ||
				info.State != types.TaskInfoStateRunning && info.State != types.TaskInfoStateQueued ||
				!since.IsZero() && info.QueueTime.Before(since.Add(-cloneSkew)) ||
				!m.DeletingSince.IsZero() && info.QueueTime.After(m.DeletingSince.Add(cloneSkew)) {
				continue
			}
			if earliest == nil || info.QueueTime.Before(earliest.Info.QueueTime) {
				earliest = &tasks[i]
			}
		}
	}
	if earliest == nil {
		return "", nil
	}
	return earliest.Self.Value, nil
}

// cloneAsked reports whether vCenter logged, in the last cloneLookback, a
// clone of the template to the given VM name, and since when. When there
// are too many of the template's clone events to read, it cannot tell and
// says yes, since any time.
func (s *Session) cloneAsked(ctx context.Context, template types.ManagedObjectReference, name string) (bool, time.Time, error) {
	begin := time.Now().Add(-cloneLookback)
	events, err := event.NewManager(s.Client).QueryEvents(ctx, types.EventFilterSpec{
		Entity:      &types.EventFilterSpecByEntity{Entity: template, Recursion: types.EventFilterSpecRecursionOptionSelf},
		EventTypeId: []string{"VmBeingClonedEvent"},
		Time:        &types.EventFilterSpecByTime{BeginTime: &begin},
		MaxCount:    maxCloneEvents,
	})
	if err != nil {
		return false, time.Time{}, err
	}
	if len(events) >= maxCloneEvents {
		return true, time.Time{}, nil
	}
	var since time.Time
	asked := false
	for _, e := range events {
		if c, ok := e.(*types.VmBeingClonedEvent); ok && c.DestName == name {
			if !asked || c.CreatedTime.Before(since) {
				since = c.CreatedTime
			}
			asked = true
		}
	}
	return asked, since, nil
}
