package vspheresim

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/event"
	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/view"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// VM is what the tests and the simulated guests look at of a VM in
// vCenter.
type VM struct {
	// ID is its managed object ID, which stays while it exists.
	ID   string
	Name string
	// PoweredOn is whether it runs.
	PoweredOn bool
	// InstanceUUID is config.instanceUuid, by which capwin finds a
	// machine's VM; BIOSUUID is config.uuid, its provider ID's. They,
	// GuestID (config.guestId), NumCPUs (config.hardware.numCPU) and
	// ExtraConfig (config.extraConfig's string values: guestinfo) are
	// empty while vCenter has no configuration for the VM.
	InstanceUUID string
	BIOSUUID     string
	GuestID      string
	NumCPUs      int32
	ExtraConfig  map[string]string
	// HostName and IPs are what VMware Tools last reported of the guest
	// (guest.hostName and guest.net's addresses); empty before it has.
	HostName string
	IPs      []string
	// MACs are the MAC addresses of its network devices, in device order.
	MACs []string

	// changeVersion is the config.changeVersion its configuration was
	// read at.
	changeVersion string
}

// VMs lists every VM of the inventory, templates included.
func (v *VCenter) VMs(ctx context.Context) ([]VM, error) {
	w, err := v.Watch(ctx)
	if err != nil {
		return nil, err
	}
	defer w.Close(ctx)
	return w.VMs(ctx)
}

// Watcher reads the inventory's VMs over one session of its own, for a
// poller (the simulated guests) that looks at them often.
type Watcher struct {
	c    *govmomi.Client
	view *view.ContainerView

	mu sync.Mutex
	// configs is each VM's configuration as last read, with the
	// config.changeVersion it was read at.
	configs map[types.ManagedObjectReference]VM
}

// Watch logs in for a Watcher; Close logs out.
func (v *VCenter) Watch(ctx context.Context) (*Watcher, error) {
	c, err := v.Client(ctx)
	if err != nil {
		return nil, err
	}
	cv, err := view.NewManager(c.Client).CreateContainerView(ctx, c.ServiceContent.RootFolder, []string{"VirtualMachine"}, true)
	if err != nil {
		_ = c.Logout(context.WithoutCancel(ctx))
		return nil, err
	}
	return &Watcher{c: c, view: cv, configs: map[types.ManagedObjectReference]VM{}}, nil
}

// Close ends the Watcher's session.
func (w *Watcher) Close(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	_ = w.view.Destroy(ctx)
	_ = w.c.Logout(ctx)
}

// The properties a Watcher reads of every VM each time, and those it reads
// again only when the VM's config.changeVersion or power state moved.
var (
	everyRead  = []string{"name", "runtime.powerState", "config.changeVersion", "guest"}
	configRead = []string{"runtime.powerState", "config.changeVersion", "config.instanceUuid", "config.uuid", "config.guestId", "config.hardware.numCPU", "config.hardware.device", "config.extraConfig"}
)

// VMs lists every VM of the inventory, templates included. Each call reads
// every VM's name, power state, guest and config.changeVersion; a VM's
// configuration (its devices and guestinfo, the bulk of it) is read again
// only when its changeVersion or its power state differs from what they
// were at its last read, so that a poller of hundreds of VMs does not read
// them all each time. vcsim moves changeVersion on a reconfigure, but not
// when a clone's device changes land after the clone is listed: the power
// state catches those, since a clone is off until they have.
func (w *Watcher) VMs(ctx context.Context) ([]VM, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var all []mo.VirtualMachine
	if err := w.view.Retrieve(ctx, []string{"VirtualMachine"}, everyRead, &all); err != nil {
		return nil, err
	}
	var stale []types.ManagedObjectReference
	seen := make(map[types.ManagedObjectReference]bool, len(all))
	for i := range all {
		o := &all[i]
		seen[o.Self] = true
		on := o.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn
		if c, ok := w.configs[o.Self]; !ok || o.Config == nil || o.Config.ChangeVersion == "" || c.changeVersion != o.Config.ChangeVersion || c.PoweredOn != on {
			stale = append(stale, o.Self)
		}
	}
	for ref := range w.configs {
		if !seen[ref] {
			delete(w.configs, ref)
		}
	}
	if len(stale) > 0 {
		if err := w.readConfigs(ctx, stale); err != nil {
			return nil, err
		}
	}
	out := make([]VM, 0, len(all))
	for i := range all {
		o := &all[i]
		vm := w.configs[o.Self]
		vm.ExtraConfig, vm.MACs = maps.Clone(vm.ExtraConfig), slices.Clone(vm.MACs)
		vm.ID, vm.Name, vm.PoweredOn = o.Reference().Value, o.Name, o.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn
		vm.HostName, vm.IPs = guestOf(o)
		out = append(out, vm)
	}
	return out, nil
}

// readConfigs reads the configuration of the VMs refs into w.configs. A VM
// deleted since the list was read is left out: the next read lists it no
// more.
func (w *Watcher) readConfigs(ctx context.Context, refs []types.ManagedObjectReference) error {
	var vms []mo.VirtualMachine
	pc := property.DefaultCollector(w.c.Client)
	if err := pc.Retrieve(ctx, refs, configRead, &vms); err != nil {
		if !isNotFound(err) {
			return err
		}
		// One of them is gone: read them one at a time.
		vms = vms[:0]
		for _, ref := range refs {
			var vm mo.VirtualMachine
			if err := pc.RetrieveOne(ctx, ref, configRead, &vm); err != nil {
				if isNotFound(err) {
					continue
				}
				return err
			}
			vms = append(vms, vm)
		}
	}
	for i := range vms {
		o := &vms[i]
		if o.Config == nil {
			delete(w.configs, o.Self)
			continue
		}
		vm := VM{
			InstanceUUID: o.Config.InstanceUuid, BIOSUUID: o.Config.Uuid, GuestID: o.Config.GuestId,
			NumCPUs: o.Config.Hardware.NumCPU, ExtraConfig: map[string]string{}, changeVersion: o.Config.ChangeVersion,
			PoweredOn: o.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn,
		}
		for _, d := range object.VirtualDeviceList(o.Config.Hardware.Device).SelectByType((*types.VirtualEthernetCard)(nil)) {
			vm.MACs = append(vm.MACs, d.(types.BaseVirtualEthernetCard).GetVirtualEthernetCard().MacAddress)
		}
		for _, e := range o.Config.ExtraConfig {
			if ov := e.GetOptionValue(); ov != nil {
				if s, ok := ov.Value.(string); ok {
					vm.ExtraConfig[ov.Key] = s
				}
			}
		}
		w.configs[o.Self] = vm
	}
	return nil
}

// isNotFound is whether err is vCenter's fault for an object that does not
// exist.
func isNotFound(err error) bool {
	return fault.Is(err, &types.ManagedObjectNotFound{})
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

// CloneRequests counts, by destination name, the clones vCenter was asked
// for (its VmBeingClonedEvents), failed ones included: a machine asked for
// twice shows 2.
func (v *VCenter) CloneRequests(ctx context.Context) (map[string]int, error) {
	out := map[string]int{}
	err := v.with(ctx, func(c *govmomi.Client) error {
		events, err := event.NewManager(c.Client).QueryEvents(ctx, types.EventFilterSpec{
			Entity:      &types.EventFilterSpecByEntity{Entity: c.ServiceContent.RootFolder, Recursion: types.EventFilterSpecRecursionOptionAll},
			EventTypeId: []string{"VmBeingClonedEvent"},
			MaxCount:    1000, // vcsim's most; its default is a page of 10
		})
		if err != nil {
			return err
		}
		for _, e := range events {
			if c, ok := e.(*types.VmBeingClonedEvent); ok {
				out[c.DestName]++
			}
		}
		return nil
	})
	return out, err
}
