package vspheresim

import (
	"context"
	"reflect"
	"time"

	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/view"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// VM is what the tests look at of a VM in vCenter.
type VM struct {
	Name string
	// InstanceUUID is config.instanceUuid, by which capwin finds a
	// machine's VM. It, GuestID (config.guestId) and NumCPUs
	// (config.hardware.numCPU) are empty while vCenter has no
	// configuration for the VM.
	InstanceUUID string
	GuestID      string
	NumCPUs      int32
}

// VMs lists every VM of the inventory, templates included.
func (v *VCenter) VMs(ctx context.Context) ([]VM, error) {
	var all []mo.VirtualMachine
	err := v.with(ctx, func(c *govmomi.Client) error {
		cv, err := view.NewManager(c.Client).CreateContainerView(ctx, c.ServiceContent.RootFolder, []string{"VirtualMachine"}, true)
		if err != nil {
			return err
		}
		defer func() { _ = cv.Destroy(context.WithoutCancel(ctx)) }()
		return cv.Retrieve(ctx, []string{"VirtualMachine"}, []string{"name", "config.instanceUuid", "config.guestId", "config.hardware.numCPU"}, &all)
	})
	if err != nil {
		return nil, err
	}
	out := make([]VM, 0, len(all))
	for _, o := range all {
		vm := VM{Name: o.Name}
		if o.Config != nil {
			vm.InstanceUUID = o.Config.InstanceUuid
			vm.GuestID = o.Config.GuestId
			vm.NumCPUs = o.Config.Hardware.NumCPU
		}
		out = append(out, vm)
	}
	return out, nil
}

// Task is what the tests look at of a task in vCenter's recent tasks.
type Task struct {
	Key string
	// DescriptionID names what the task does; vcsim's clones are
	// VirtualMachine.cloneVm.
	DescriptionID string
	QueueTime     time.Time
	// State is queued, running, success or error.
	State string
	// Fault is the type of a failed task's fault (DuplicateName, ...),
	// empty when it failed without one; Message is its message.
	Fault, Message string
}

// Running is whether the task is queued or running.
func (t Task) Running() bool {
	return t.State == string(types.TaskInfoStateQueued) || t.State == string(types.TaskInfoStateRunning)
}

// RecentTasks lists vCenter's recent tasks. A task vCenter forgets while
// they are read is left out.
func (v *VCenter) RecentTasks(ctx context.Context) ([]Task, error) {
	var out []Task
	err := v.with(ctx, func(c *govmomi.Client) error {
		var tm mo.TaskManager
		if err := c.RetrieveOne(ctx, *c.ServiceContent.TaskManager, []string{"recentTask"}, &tm); err != nil {
			return err
		}
		for _, ref := range tm.RecentTask {
			var task mo.Task
			if err := c.RetrieveOne(ctx, ref, []string{"info"}, &task); err != nil {
				continue
			}
			t := Task{Key: task.Info.Key, DescriptionID: task.Info.DescriptionId, QueueTime: task.Info.QueueTime, State: string(task.Info.State)}
			if e := task.Info.Error; e != nil {
				t.Message = e.LocalizedMessage
				if e.Fault != nil {
					t.Fault = reflect.Indirect(reflect.ValueOf(e.Fault)).Type().Name()
				}
			}
			out = append(out, t)
		}
		return nil
	})
	return out, err
}

// SessionUserAgents returns the user agent of each session vCenter holds,
// the one this call opens included.
func (v *VCenter) SessionUserAgents(ctx context.Context) ([]string, error) {
	var sm mo.SessionManager
	err := v.with(ctx, func(c *govmomi.Client) error {
		return c.RetrieveOne(ctx, *c.ServiceContent.SessionManager, []string{"sessionList"}, &sm)
	})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(sm.SessionList))
	for _, us := range sm.SessionList {
		out = append(out, us.UserAgent)
	}
	return out, nil
}
