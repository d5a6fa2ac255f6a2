package vsphere

import (
	"context"
	"fmt"
	"reflect"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/platform"
)

// clone starts the clone of the machine's template: configured, with its
// user data, and powered on by the clone when its metadata is complete
// before vCenter gives its NICs their MACs (a Windows machine with one DHCP
// NIC: guestDefaultNetwork), off otherwise.
func (s *Session) clone(ctx context.Context, dc *object.Datacenter, m Machine) (State, error) {
	inv, err := s.inventory(ctx, dc, m.Spec)
	if err != nil {
		return State{}, err
	}
	// The NICs the clone will have: the template's, and one more for each
	// network the spec names beyond them (deviceChanges).
	nics := max(len(inv.devices.SelectByType((*types.VirtualEthernetCard)(nil))), len(m.Spec.Network))
	guestinfo, err := GuestInfo(m, nil, nics)
	if err != nil {
		return State{}, err
	}
	config := &types.VirtualMachineConfigSpec{
		InstanceUuid: InstanceUUID(m.Namespace, m.Name),
		NumCPUs:      m.Spec.NumCPUs,
		MemoryMB:     m.Spec.MemoryMiB,
		ExtraConfig:  guestinfo,
		// The vSphere CSI driver finds a volume's disk in the guest by its
		// UUID, which the guest sees only with disk.EnableUUID.
		Flags: &types.VirtualMachineFlagInfo{DiskUuidEnabled: types.NewBool(true)},
		// A template's vApp properties make cloud-init read the OVF
		// datasource and ignore guestinfo: the clone has none.
		VAppConfigRemoved: types.NewBool(true),
	}
	config.DeviceChange, err = deviceChanges(inv, m.Spec)
	if err != nil {
		return State{}, err
	}
	relocate := types.VirtualMachineRelocateSpec{Pool: types.NewReference(inv.pool)}
	if inv.datastore != nil {
		relocate.Datastore = types.NewReference(*inv.datastore)
	}
	// A Windows guest whose own default network is the spec's needs
	// nothing it cannot be given now, and the clone powers it on. Any other stays
	// off: it is powered on only once its network metadata names each NIC
	// by the MAC address vCenter gives it (see observe), since cloud-init
	// and cloudbase-init configure only the NICs an entry matches.
	spec := types.VirtualMachineCloneSpec{Location: relocate, Config: config, PowerOn: guestDefaultNetwork(m, nics)}
	if m.Spec.CloneMode == infrav1.LinkedClone {
		spec.Location.DiskMoveType = string(types.VirtualMachineRelocateDiskMoveOptionsCreateNewChildDiskBacking)
		if inv.snapshot == nil {
			s.forgetInventory(dc, m.Spec) // look again next time: a snapshot may be taken
			return State{}, fmt.Errorf("%w: template %s has no snapshot for a LinkedClone", ErrNotFound, m.Spec.Template)
		}
		spec.Snapshot = inv.snapshot
	}
	if _, taken := s.cache.Load(takenKey(inv, m)); taken {
		// Another VM had the name: while it still has, the clone is not
		// asked for again (it would be refused again), so the machine's
		// retries read the name instead.
		ref, other, err := s.nameHolder(ctx, inv, m)
		switch {
		case err != nil:
			return State{}, err
		case other != "":
			return State{}, fmt.Errorf("%w (%w): VM %s in the folder has the name %s and instance UUID %s, not this machine's", platform.ErrOperationFailed, errNameTaken, ref.Value, m.Name, other)
		case ref != nil:
			s.cache.Delete(takenKey(inv, m))
			return s.observe(ctx, object.NewVirtualMachine(s.Client, *ref), m)
		}
		s.cache.Delete(takenKey(inv, m))
	}
	template := object.NewVirtualMachine(s.Client, inv.template)
	task, err := template.Clone(ctx, object.NewFolder(s.Client, inv.folder), m.Name, spec)
	if err != nil {
		if isFault[*types.DuplicateName](err) {
			return s.nameTaken(ctx, inv, m, fmt.Errorf("cloning template %s: %w: %w", m.Spec.Template, errNameTaken, err))
		}
		if isFault[*types.ManagedObjectNotFound](err) {
			// The template, folder, pool or datastore was replaced since it was looked up.
			s.forgetInventory(dc, m.Spec)
		}
		return State{}, fmt.Errorf("cloning template %s: %w", m.Spec.Template, err)
	}
	return State{Op: infrav1.MachineOperation{Type: infrav1.MachineOperationCreate, ID: task.Reference().Value}}, nil
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
			return nil, fmt.Errorf("%w: diskGiB %d is smaller than template %s's disk (%d GiB): a disk can only grow", platform.ErrInvalid, spec.DiskGiB, spec.Template, disk.CapacityInBytes>>30)
		}
		grown := *disk
		grown.CapacityInBytes = want
		grown.CapacityInKB = want / 1024
		changes = append(changes, &types.VirtualDeviceConfigSpec{Operation: types.VirtualDeviceConfigSpecOperationEdit, Device: &grown})
	}
	return changes, nil
}

// nameTaken goes on from a clone refused because a VM of the machine's
// name is in its folder (cloneErr). The VM holding the name is looked at:
// one with another instance UUID is another VM's, and the machine fails at
// once (OperationFailed), without waiting or cloning again; one with the
// machine's own is its VM, made by a clone whose answer was lost. When
// vCenter lists no VM of that name yet, a clone to it still runs: one that
// may be the machine's own is waited for (WaitForCreate).
func (s *Session) nameTaken(ctx context.Context, inv *inventory, m Machine, cloneErr error) (State, error) {
	ref, other, err := s.nameHolder(ctx, inv, m)
	if err != nil {
		return State{}, err
	}
	if other != "" {
		// Cloning again would be refused the same way: the next clone of
		// the machine looks at the name first (clone).
		s.cache.Store(takenKey(inv, m), true)
		return State{}, fmt.Errorf("%w (%w): VM %s in the folder has the name %s and instance UUID %s, not this machine's (%w)", platform.ErrOperationFailed, errNameTaken, ref.Value, m.Name, other, cloneErr)
	}
	if ref != nil {
		return s.observe(ctx, object.NewVirtualMachine(s.Client, *ref), m)
	}
	if st, waiting, err := s.waitForLostClone(ctx, m); waiting || err != nil {
		return st, err
	}
	return State{}, fmt.Errorf("%w: %w; no clone to that name runs", platform.ErrOperationFailed, cloneErr)
}

// nameHolder looks at the VM of the machine's name in its folder: it
// returns its reference when it is the machine's (its instance UUID; it is
// then remembered as the machine's VM), or the instance UUID of another
// VM's; nothing when vCenter lists none (or one not complete yet).
func (s *Session) nameHolder(ctx context.Context, inv *inventory, m Machine) (*types.ManagedObjectReference, string, error) {
	found, err := object.NewSearchIndex(s.Client).FindChild(ctx, object.NewFolder(s.Client, inv.folder), m.Name)
	if err != nil {
		return nil, "", fmt.Errorf("looking up the VM named %s: %w", m.Name, err)
	}
	if found == nil || found.Reference().Type != "VirtualMachine" {
		return nil, "", nil
	}
	ref := found.Reference()
	var o mo.VirtualMachine
	if err := s.read(ctx, ref, []string{"config.instanceUuid"}, &o); err != nil {
		return nil, "", fmt.Errorf("reading the VM named %s: %w", m.Name, err)
	}
	uuid := InstanceUUID(m.Namespace, m.Name)
	switch {
	case o.Config == nil || o.Config.InstanceUuid == "":
		return nil, "", nil
	case o.Config.InstanceUuid == uuid:
		s.cache.Store("vm/"+uuid, ref)
		return &ref, "", nil
	}
	return &ref, o.Config.InstanceUuid, nil
}

// takenKey names, in the session's cache, a machine's name found held by
// another VM in the machine's folder.
func takenKey(inv *inventory, m Machine) string {
	return "taken/" + inv.folder.Value + "/" + m.Name
}

// waitForLostClone returns, as an operation to wait for (WaitForCreate), a
// running clone of the machine's template that may be its own
// (runningClone), and waiting true; nothing when there is none.
func (s *Session) waitForLostClone(ctx context.Context, m Machine) (State, bool, error) {
	dc, err := s.datacenter(ctx, m.Datacenter)
	if err != nil {
		return State{}, false, err
	}
	task, err := s.runningClone(ctx, dc, m)
	if err != nil || task == "" {
		return State{}, false, err
	}
	return State{Op: infrav1.MachineOperation{Type: infrav1.MachineOperationWaitForCreate, ID: task}}, true, nil
}
