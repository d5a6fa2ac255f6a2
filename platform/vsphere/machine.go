package vsphere

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha1" //nolint:gosec // names a UUID deterministically, not a security use
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	"github.com/vmware/govmomi/event"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
	"sigs.k8s.io/yaml"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
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
	// UserData is the bootstrap script, written to guestinfo.userdata.
	UserData []byte
	// TaskRef is the task an earlier reconcile recorded: a clone, power-on,
	// power-off or destroy, or, while a machine never provisioned is
	// deleted, a clone of its template that the delete waits for.
	TaskRef string
	// Provisioned says the VM was made before: if it is gone, it was deleted
	// behind capwin's back and is not made again (its provider ID would change).
	Provisioned bool
	// DeletingSince is when the machine's deletion began. Delete waits for
	// the template's clones queued before it (with a margin for clock
	// skew); later ones cannot be this machine's.
	DeletingSince time.Time
}

// State is what a reconcile found or started.
type State struct {
	// TaskRef is a task still running: record it and come back later.
	TaskRef string
	// Exists is true once the VM exists.
	Exists bool
	// BIOSUUID is the VM's BIOS UUID, the Node's provider ID suffix.
	BIOSUUID  string
	PoweredOn bool
	// Addresses are the guest's IP addresses, once VMware Tools reports them.
	Addresses []string
}

// ProviderID is the provider ID of a VM as the vSphere cloud provider sets it.
func (s State) ProviderID() string {
	if s.BIOSUUID == "" {
		return ""
	}
	return "vsphere://" + s.BIOSUUID
}

// ErrNotFound is wrapped when a template, folder, pool, datastore or network
// named in the spec does not exist.
var ErrNotFound = errors.New("not found in vCenter")

// ErrVMGone is returned when a provisioned machine's VM no longer exists.
var ErrVMGone = errors.New("the VM was deleted outside capwin")

// ErrTaskFailed is wrapped when a clone or power-on task failed.
var ErrTaskFailed = errors.New("vCenter task failed")

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
	st, err := s.reconcile(ctx, m)
	if err != nil && s.stale(err, m) {
		return s.reconcile(ctx, m)
	}
	return st, err
}

func (s *Session) reconcile(ctx context.Context, m Machine) (State, error) {
	dc, err := s.datacenter(ctx, m.Datacenter)
	if err != nil {
		return State{}, err
	}
	vm, err := s.findVM(ctx, dc, m)
	if err != nil {
		return State{}, err
	}
	if vm != nil && m.TaskRef != "" && !m.Provisioned {
		// vCenter can show a clone's VM before the clone ends: a task still
		// running is waited for, or a power-on, and a delete after it,
		// would race the clone and the clone would leave its VM behind.
		if st, err := s.checkTask(ctx, m.TaskRef); err == nil && st.TaskRef != "" {
			return st, nil
		}
	}
	if vm == nil {
		if m.TaskRef != "" {
			st, err := s.checkTask(ctx, m.TaskRef)
			if err != nil || st.TaskRef != "" {
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

func (s *Session) findVM(ctx context.Context, dc *object.Datacenter, m Machine) (*object.VirtualMachine, error) {
	uuid := InstanceUUID(m.Namespace, m.Name)
	// The VM's reference is remembered, so that a resync costs one round
	// trip; a reference that went stale is forgotten and looked up again.
	if ref, ok := s.cache.Load("vm/" + uuid); ok {
		return object.NewVirtualMachine(s.Client, ref.(types.ManagedObjectReference)), nil
	}
	ref, err := object.NewSearchIndex(s.Client).FindByUuid(ctx, dc, uuid, true, types.NewBool(true))
	if err != nil {
		return nil, fmt.Errorf("looking up the VM of %s/%s: %w", m.Namespace, m.Name, err)
	}
	if ref == nil {
		return nil, nil
	}
	s.cache.Store("vm/"+uuid, ref.Reference())
	return object.NewVirtualMachine(s.Client, ref.Reference()), nil
}

func (s *Session) forgetVM(m Machine) {
	s.cache.Delete("vm/" + InstanceUUID(m.Namespace, m.Name))
}

// stale reports whether err says a remembered VM reference no longer
// exists; the VM is then forgotten and looked up again.
func (s *Session) stale(err error, m Machine) bool {
	if isFault[*types.ManagedObjectNotFound](err) {
		s.forgetVM(m)
		return true
	}
	return false
}

// checkTask returns the task's reference while it runs, nothing once it
// succeeded, and ErrTaskFailed with vCenter's message when it failed.
func (s *Session) checkTask(ctx context.Context, ref string) (State, error) {
	var task mo.Task
	moref := types.ManagedObjectReference{Type: "Task", Value: ref}
	if err := property.DefaultCollector(s.Client).RetrieveOne(ctx, moref, []string{"info.state", "info.error", "info.descriptionId"}, &task); err != nil {
		if isFault[*types.ManagedObjectNotFound](err) {
			// vCenter forgets finished tasks after a while: look at the VM.
			return State{}, nil
		}
		return State{}, fmt.Errorf("reading task %s: %w", ref, err)
	}
	switch task.Info.State {
	case types.TaskInfoStateQueued, types.TaskInfoStateRunning:
		return State{TaskRef: ref}, nil
	case types.TaskInfoStateError:
		msg := "unknown error"
		if e := task.Info.Error; e != nil {
			msg = e.LocalizedMessage
			if e.Fault != nil {
				// The fault's type says what went wrong when vCenter gives no message.
				name := reflect.TypeOf(e.Fault).Elem().Name()
				if msg == "" {
					msg = name
				} else {
					msg = name + ": " + msg
				}
			}
		}
		return State{}, fmt.Errorf("%w: %s: %s", ErrTaskFailed, task.Info.DescriptionId, msg)
	}
	return State{}, nil
}

// observe reads the VM's state and powers it on if it is off.
func (s *Session) observe(ctx context.Context, vm *object.VirtualMachine, m Machine) (State, error) {
	var o mo.VirtualMachine
	props := []string{"config.uuid", "runtime.powerState", "guest.net"}
	if hasStatic(m.Spec) {
		props = append(props, "config.hardware.device", "config.extraConfig")
	}
	if err := vm.Properties(ctx, vm.Reference(), props, &o); err != nil {
		return State{}, fmt.Errorf("reading VM %s: %w", vm.Reference().Value, err)
	}
	st := State{Exists: true}
	if o.Config != nil {
		st.BIOSUUID = o.Config.Uuid
	}
	st.PoweredOn = o.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn
	if o.Guest != nil {
		for _, nic := range o.Guest.Net {
			st.Addresses = append(st.Addresses, nic.IpAddress...)
		}
	}
	if !st.PoweredOn {
		if m.TaskRef != "" {
			ts, err := s.checkTask(ctx, m.TaskRef)
			if err != nil || ts.TaskRef != "" {
				st.TaskRef = ts.TaskRef
				return st, err
			}
		}
		if hasStatic(m.Spec) && o.Config != nil {
			task, err := s.writeStaticMetadata(ctx, vm, o.Config, m)
			if err != nil || task != "" {
				st.TaskRef = task
				return st, err
			}
		}
		task, err := vm.PowerOn(ctx)
		if err != nil {
			return st, fmt.Errorf("powering on VM %s: %w", vm.Reference().Value, err)
		}
		st.TaskRef = task.Reference().Value
	}
	return st, nil
}

// clone starts the clone of the machine's template: configured, with its
// guestinfo, and powered on when done.
func (s *Session) clone(ctx context.Context, dc *object.Datacenter, m Machine) (State, error) {
	inv, err := s.inventory(ctx, dc, m.Spec)
	if err != nil {
		return State{}, err
	}
	guestinfo, err := GuestInfo(m, nil)
	if err != nil {
		return State{}, err
	}
	config := &types.VirtualMachineConfigSpec{
		InstanceUuid: InstanceUUID(m.Namespace, m.Name),
		NumCPUs:      m.Spec.NumCPUs,
		MemoryMB:     m.Spec.MemoryMiB,
		ExtraConfig:  guestinfo,
	}
	config.DeviceChange, err = deviceChanges(inv, m.Spec)
	if err != nil {
		return State{}, err
	}
	relocate := types.VirtualMachineRelocateSpec{Pool: types.NewReference(inv.pool)}
	if inv.datastore != nil {
		relocate.Datastore = types.NewReference(*inv.datastore)
	}
	// A machine with static addresses is powered on only once its metadata
	// names its NICs by the MAC addresses vCenter gives them.
	spec := types.VirtualMachineCloneSpec{Location: relocate, Config: config, PowerOn: !hasStatic(m.Spec)}
	if m.Spec.CloneMode == infrav1.LinkedClone {
		spec.Location.DiskMoveType = string(types.VirtualMachineRelocateDiskMoveOptionsCreateNewChildDiskBacking)
		if inv.snapshot == nil {
			s.forgetInventory(dc, m.Spec) // look again next time: a snapshot may be taken
			return State{}, fmt.Errorf("%w: template %s has no snapshot for a LinkedClone", ErrNotFound, m.Spec.Template)
		}
		spec.Snapshot = inv.snapshot
	}
	template := object.NewVirtualMachine(s.Client, inv.template)
	task, err := template.Clone(ctx, object.NewFolder(s.Client, inv.folder), m.Name, spec)
	if err != nil {
		if isFault[*types.DuplicateName](err) {
			// Another VM has the name, or this machine's own clone, whose
			// request was cut short (a restart) before its task was
			// recorded, is still running: the next reconcile finds the
			// latter by instance UUID once it ends.
			return State{}, fmt.Errorf("a VM named %s already exists in the folder without this machine's instance UUID: another VM has the name, or this machine's clone, started before a restart, is still running", m.Name)
		}
		if isFault[*types.ManagedObjectNotFound](err) {
			// The template, folder, pool or datastore was replaced since it was looked up.
			s.forgetInventory(dc, m.Spec)
		}
		return State{}, fmt.Errorf("cloning template %s: %w", m.Spec.Template, err)
	}
	return State{TaskRef: task.Reference().Value}, nil
}

// Delete powers the VM off and destroys it, one task at a time, and
// returns the task to wait for. It returns gone once no VM is left; a VM
// that is already gone is fine. A machine never provisioned is gone only
// once no clone of its template queued before its deletion still runs: one
// may be its own, whose task was never recorded.
func (s *Session) Delete(ctx context.Context, m Machine) (gone bool, taskRef string, err error) {
	gone, taskRef, err = s.delete(ctx, m)
	if err != nil && s.stale(err, m) {
		return s.delete(ctx, m)
	}
	return gone, taskRef, err
}

func (s *Session) delete(ctx context.Context, m Machine) (gone bool, taskRef string, err error) {
	dc, err := s.datacenter(ctx, m.Datacenter)
	if err != nil {
		return false, "", err
	}
	// A task in flight (a clone, a power-off, a destroy) finishes first: a
	// clone that is not visible yet would otherwise be left running.
	if m.TaskRef != "" {
		st, err := s.checkTask(ctx, m.TaskRef)
		if st.TaskRef != "" {
			return false, st.TaskRef, nil
		}
		if err != nil && !errors.Is(err, ErrTaskFailed) {
			return false, m.TaskRef, err
		}
		if err != nil {
			// A failed clone left nothing; a failed power-off or destroy is
			// reported, and retried by the caller.
			if vm, ferr := s.findVM(ctx, dc, m); ferr == nil && vm != nil {
				return false, "", err
			}
		}
	}
	vm, err := s.findVM(ctx, dc, m)
	if err != nil {
		return false, "", err
	}
	if vm == nil {
		if m.Provisioned {
			return true, "", nil
		}
		// Never provisioned and no VM: either no clone was asked for, or
		// one was whose answer never came (a call timeout, a restart) and
		// vCenter does not list its VM while it runs. Wait, one at a time
		// (the caller records each as its task), for the clones that may
		// be this machine's (runningClone); its VM, if one was, is then
		// found by its instance UUID and destroyed.
		task, err := s.runningClone(ctx, dc, m)
		return task == "" && err == nil, task, err
	}
	state, err := vm.PowerState(ctx)
	if err != nil {
		return false, "", fmt.Errorf("reading the power state of VM %s: %w", vm.Reference().Value, err)
	}
	var task *object.Task
	if state == types.VirtualMachinePowerStatePoweredOn {
		task, err = vm.PowerOff(ctx)
	} else {
		task, err = vm.Destroy(ctx)
	}
	if err != nil {
		return false, "", fmt.Errorf("deleting VM %s: %w", vm.Reference().Value, err)
	}
	return false, task.Reference().Value, nil
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

// ClearUserData removes guestinfo.userdata from the VM once the node has
// joined: the bootstrap token in it must not stay readable to anyone with
// read access to the VM.
func (s *Session) ClearUserData(ctx context.Context, m Machine) (taskRef string, err error) {
	taskRef, err = s.clearUserData(ctx, m)
	if err != nil && s.stale(err, m) {
		return s.clearUserData(ctx, m)
	}
	return taskRef, err
}

func (s *Session) clearUserData(ctx context.Context, m Machine) (string, error) {
	dc, err := s.datacenter(ctx, m.Datacenter)
	if err != nil {
		return "", err
	}
	vm, err := s.findVM(ctx, dc, m)
	if err != nil || vm == nil {
		return "", err
	}
	task, err := vm.Reconfigure(ctx, types.VirtualMachineConfigSpec{ExtraConfig: []types.BaseOptionValue{
		&types.OptionValue{Key: "guestinfo.userdata", Value: ""},
		&types.OptionValue{Key: "guestinfo.userdata.encoding", Value: ""},
	}})
	if err != nil {
		return "", fmt.Errorf("clearing the user data of VM %s: %w", vm.Reference().Value, err)
	}
	// Whether it worked is seen through UserDataCleared on a later reconcile.
	return task.Reference().Value, nil
}

// UserDataCleared reports whether the VM no longer carries user data.
func (s *Session) UserDataCleared(ctx context.Context, m Machine) (bool, error) {
	cleared, err := s.userDataCleared(ctx, m)
	if err != nil && s.stale(err, m) {
		return s.userDataCleared(ctx, m)
	}
	return cleared, err
}

func (s *Session) userDataCleared(ctx context.Context, m Machine) (bool, error) {
	dc, err := s.datacenter(ctx, m.Datacenter)
	if err != nil {
		return false, err
	}
	vm, err := s.findVM(ctx, dc, m)
	if err != nil || vm == nil {
		return vm == nil && err == nil, err
	}
	var o mo.VirtualMachine
	if err := vm.Properties(ctx, vm.Reference(), []string{"config.extraConfig"}, &o); err != nil {
		return false, err
	}
	for _, v := range o.Config.ExtraConfig {
		if ov := v.GetOptionValue(); ov.Key == "guestinfo.userdata" && ov.Value != "" {
			return false, nil
		}
	}
	return true, nil
}

// hasStatic reports whether a device of the spec has static addresses.
func hasStatic(spec *infrav1.VSphereMachineSpec) bool {
	for _, d := range spec.Network {
		if len(d.IPAddrs) > 0 {
			return true
		}
	}
	return false
}

// writeStaticMetadata rewrites guestinfo.metadata with the NICs' MAC
// addresses, which the guest matches its static addresses on. It returns the
// reconfigure task, or nothing when the metadata is already right.
func (s *Session) writeStaticMetadata(ctx context.Context, vm *object.VirtualMachine, config *types.VirtualMachineConfigInfo, m Machine) (string, error) {
	var macs []string
	for _, d := range object.VirtualDeviceList(config.Hardware.Device).SelectByType((*types.VirtualEthernetCard)(nil)) {
		macs = append(macs, d.(types.BaseVirtualEthernetCard).GetVirtualEthernetCard().MacAddress)
	}
	want, err := metadata(m, macs)
	if err != nil {
		return "", err
	}
	for _, v := range config.ExtraConfig {
		if ov := v.GetOptionValue(); ov.Key == "guestinfo.metadata" {
			if have, err := gunzipBase64(fmt.Sprint(ov.Value)); err == nil && bytes.Equal(have, want) {
				return "", nil
			}
		}
	}
	values, err := GuestInfo(Machine{Namespace: m.Namespace, Name: m.Name, Spec: m.Spec, ComputerName: m.ComputerName}, macs)
	if err != nil {
		return "", err
	}
	task, err := vm.Reconfigure(ctx, types.VirtualMachineConfigSpec{ExtraConfig: values})
	if err != nil {
		return "", fmt.Errorf("writing the network metadata of VM %s: %w", vm.Reference().Value, err)
	}
	return task.Reference().Value, nil
}

func gunzipBase64(s string) ([]byte, error) {
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

// GuestInfo is the extraConfig that hands the machine its metadata and user
// data: cloudbase-init (Windows) and cloud-init (Linux) read the same
// guestinfo keys. Both are gzip+base64 encoded. macs are the NICs' MAC
// addresses once vCenter has given them, nil before.
func GuestInfo(m Machine, macs []string) ([]types.BaseOptionValue, error) {
	meta, err := metadata(m, macs)
	if err != nil {
		return nil, err
	}
	enc := func(b []byte) (string, error) {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		if _, err := zw.Write(b); err != nil {
			return "", err
		}
		if err := zw.Close(); err != nil {
			return "", err
		}
		return base64.StdEncoding.EncodeToString(buf.Bytes()), nil
	}
	metaEnc, err := enc(meta)
	if err != nil {
		return nil, err
	}
	values := []types.BaseOptionValue{
		&types.OptionValue{Key: "guestinfo.metadata", Value: metaEnc},
		&types.OptionValue{Key: "guestinfo.metadata.encoding", Value: "gzip+base64"},
	}
	if len(m.UserData) > 0 {
		userEnc, err := enc(m.UserData)
		if err != nil {
			return nil, err
		}
		values = append(values,
			&types.OptionValue{Key: "guestinfo.userdata", Value: userEnc},
			&types.OptionValue{Key: "guestinfo.userdata.encoding", Value: "gzip+base64"})
	}
	return values, nil
}

// metadata is the instance metadata: the host name and the network. A NIC
// is matched by its MAC address when it is known.
func metadata(m Machine, macs []string) ([]byte, error) {
	type ethernet struct {
		Match       map[string]string   `json:"match,omitempty"`
		SetName     string              `json:"set-name,omitempty"`
		DHCP4       bool                `json:"dhcp4,omitempty"`
		Addresses   []string            `json:"addresses,omitempty"`
		Gateway4    string              `json:"gateway4,omitempty"`
		Nameservers map[string][]string `json:"nameservers,omitempty"`
	}
	ethernets := map[string]ethernet{}
	for i, d := range m.Spec.Network {
		e := ethernet{DHCP4: d.DHCP4 != nil && *d.DHCP4, Addresses: d.IPAddrs, Gateway4: d.Gateway4}
		if len(d.Nameservers) > 0 {
			e.Nameservers = map[string][]string{"addresses": d.Nameservers}
		}
		if i < len(macs) && macs[i] != "" {
			e.Match = map[string]string{"macaddress": macs[i]}
			e.SetName = fmt.Sprintf("eth%d", i)
		}
		ethernets[fmt.Sprintf("id%d", i)] = e
	}
	return yaml.Marshal(map[string]any{
		"instance-id":    InstanceUUID(m.Namespace, m.Name),
		"local-hostname": m.ComputerName,
		"network":        map[string]any{"version": 2, "ethernets": ethernets},
	})
}

// inventory is what a clone needs, found once per datacenter and spec paths.
type inventory struct {
	template  types.ManagedObjectReference
	snapshot  *types.ManagedObjectReference
	devices   object.VirtualDeviceList
	folder    types.ManagedObjectReference
	pool      types.ManagedObjectReference
	datastore *types.ManagedObjectReference
	networks  []types.BaseVirtualDeviceBackingInfo
}

func (s *Session) datacenter(ctx context.Context, path string) (*object.Datacenter, error) {
	key := "dc/" + path
	if v, ok := s.cache.Load(key); ok {
		return v.(*object.Datacenter), nil
	}
	dc, err := find.NewFinder(s.Client).Datacenter(ctx, path)
	if err != nil {
		return nil, notFound(err, "datacenter %s", path)
	}
	s.cache.Store(key, dc)
	return dc, nil
}

func inventoryKey(dc *object.Datacenter, spec *infrav1.VSphereMachineSpec) string {
	return strings.Join(append([]string{"inv", dc.Reference().Value, spec.Template, spec.Snapshot, spec.Folder, spec.ResourcePool, spec.Datastore}, networkNames(spec)...), "\x00")
}

func (s *Session) forgetInventory(dc *object.Datacenter, spec *infrav1.VSphereMachineSpec) {
	s.cache.Delete(inventoryKey(dc, spec))
}

func (s *Session) inventory(ctx context.Context, dc *object.Datacenter, spec *infrav1.VSphereMachineSpec) (*inventory, error) {
	key := inventoryKey(dc, spec)
	if v, ok := s.cache.Load(key); ok {
		return v.(*inventory), nil
	}
	f := find.NewFinder(s.Client).SetDatacenter(dc)
	inv := &inventory{}
	tmpl, err := f.VirtualMachine(ctx, spec.Template)
	if err != nil {
		return nil, notFound(err, "template %s", spec.Template)
	}
	inv.template = tmpl.Reference()
	var o mo.VirtualMachine
	if err := tmpl.Properties(ctx, tmpl.Reference(), []string{"config.hardware.device", "snapshot"}, &o); err != nil {
		return nil, fmt.Errorf("reading template %s: %w", spec.Template, err)
	}
	inv.devices = object.VirtualDeviceList(o.Config.Hardware.Device)
	if o.Snapshot != nil && o.Snapshot.CurrentSnapshot != nil {
		inv.snapshot = o.Snapshot.CurrentSnapshot
		if spec.Snapshot != "" {
			snap, err := tmpl.FindSnapshot(ctx, spec.Snapshot)
			if err != nil {
				return nil, notFound(err, "snapshot %s of template %s", spec.Snapshot, spec.Template)
			}
			inv.snapshot = snap
		}
	}
	folder, err := f.FolderOrDefault(ctx, spec.Folder)
	if err != nil {
		return nil, notFound(err, "folder %s", spec.Folder)
	}
	inv.folder = folder.Reference()
	pool, err := f.ResourcePoolOrDefault(ctx, spec.ResourcePool)
	if err != nil {
		return nil, notFound(err, "resource pool %s", spec.ResourcePool)
	}
	inv.pool = pool.Reference()
	if spec.Datastore != "" {
		ds, err := f.Datastore(ctx, spec.Datastore)
		if err != nil {
			return nil, notFound(err, "datastore %s", spec.Datastore)
		}
		r := ds.Reference()
		inv.datastore = &r
	}
	for _, d := range spec.Network {
		n, err := f.Network(ctx, d.NetworkName)
		if err != nil {
			return nil, notFound(err, "network %s", d.NetworkName)
		}
		backing, err := n.EthernetCardBackingInfo(ctx)
		if err != nil {
			return nil, fmt.Errorf("network %s: %w", d.NetworkName, err)
		}
		inv.networks = append(inv.networks, backing)
	}
	s.cache.Store(key, inv)
	return inv, nil
}

func networkNames(spec *infrav1.VSphereMachineSpec) []string {
	var names []string
	for _, d := range spec.Network {
		names = append(names, d.NetworkName)
	}
	return names
}

// deviceChanges points the template's NICs at the spec's networks (adding
// NICs where the template has fewer) and grows the first disk.
func deviceChanges(inv *inventory, spec *infrav1.VSphereMachineSpec) ([]types.BaseVirtualDeviceConfigSpec, error) {
	var changes []types.BaseVirtualDeviceConfigSpec
	nics := inv.devices.SelectByType((*types.VirtualEthernetCard)(nil))
	for i, backing := range inv.networks {
		if i < len(nics) {
			// The template's devices are cached and shared: edit a copy.
			dev := reflect.New(reflect.TypeOf(nics[i]).Elem())
			dev.Elem().Set(reflect.ValueOf(nics[i]).Elem())
			edited := dev.Interface().(types.BaseVirtualDevice)
			edited.(types.BaseVirtualEthernetCard).GetVirtualEthernetCard().Backing = backing
			changes = append(changes, &types.VirtualDeviceConfigSpec{Operation: types.VirtualDeviceConfigSpecOperationEdit, Device: edited})
			continue
		}
		dev, err := object.EthernetCardTypes().CreateEthernetCard("vmxnet3", backing)
		if err != nil {
			return nil, err
		}
		changes = append(changes, &types.VirtualDeviceConfigSpec{Operation: types.VirtualDeviceConfigSpecOperationAdd, Device: dev})
	}
	if spec.DiskGiB > 0 {
		disks := inv.devices.SelectByType((*types.VirtualDisk)(nil))
		if len(disks) == 0 {
			return nil, fmt.Errorf("%w: template %s has no disk to resize", ErrNotFound, spec.Template)
		}
		disk := disks[0].(*types.VirtualDisk)
		want := int64(spec.DiskGiB) * 1024 * 1024 * 1024
		if disk.CapacityInBytes > want {
			return nil, fmt.Errorf("diskGiB %d is smaller than template %s's disk (%d GiB): a disk can only grow", spec.DiskGiB, spec.Template, disk.CapacityInBytes>>30)
		}
		grown := *disk
		grown.CapacityInBytes = want
		grown.CapacityInKB = want / 1024
		changes = append(changes, &types.VirtualDeviceConfigSpec{Operation: types.VirtualDeviceConfigSpecOperationEdit, Device: &grown})
	}
	return changes, nil
}

func notFound(err error, format string, args ...any) error {
	var nf *find.NotFoundError
	if errors.As(err, &nf) {
		return fmt.Errorf("%w: %s", ErrNotFound, fmt.Sprintf(format, args...))
	}
	return fmt.Errorf("finding %s: %w", fmt.Sprintf(format, args...), err)
}
