package vsphere

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/view"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/capwin/capwin/platform"
	"github.com/capwin/capwin/platform/sharedread"
)

// viewTTL is how long a read of a datacenter's VMs answers the resyncs of
// its running machines. The manager resyncs every machine at once (every
// ten minutes by default), so one read serves them all. A VM powered off
// or deleted outside capwin in the viewTTL before a resync is seen at the
// next one.
const viewTTL = 30 * time.Second

// viewReadTimeout bounds a read of a datacenter, which reconciles that did
// not start it wait for.
const viewReadTimeout = time.Minute

// viewProperties are the properties a read of a datacenter asks of each VM.
var viewProperties = []string{"config.instanceUuid", "config.uuid", "config.hardware.device", "runtime.powerState", "guest.net"}

// dcView is one read of a datacenter: what viewed needs of its VMs, by
// instance UUID.
type dcView struct {
	vms map[string]vmFacts
}

// vmFacts are what a read says of a VM.
type vmFacts struct {
	biosUUID  string
	poweredOn bool
	// macs are the MACs of the VM's network devices, in device order.
	macs []string
	// nics are the guest's adapters on those devices, with their
	// addresses only.
	nics []types.GuestNicInfo
}

func newViews() *sharedread.Reads[*dcView] {
	return sharedread.New[*dcView](viewTTL, viewReadTimeout)
}

// readDatacenter reads every VM of dc through one container view, kept for
// the session's life: one round trip (more for a datacenter of thousands
// of VMs, which vCenter pages).
func (s *Session) readDatacenter(dc *object.Datacenter) func(context.Context) (*dcView, error) {
	return func(ctx context.Context) (*dcView, error) {
		var vms []mo.VirtualMachine
		err := s.retrieveThroughView(ctx, dc, &vms)
		if err != nil && isFault[*types.ManagedObjectNotFound](err) {
			// The view is gone (vCenter drops a session's views with
			// it): make another.
			s.cache.Delete(viewKey(dc))
			err = s.retrieveThroughView(ctx, dc, &vms)
		}
		if err != nil {
			return nil, fmt.Errorf("reading the VMs of datacenter %s: %w", dc.InventoryPath, err)
		}
		v := &dcView{vms: make(map[string]vmFacts, len(vms))}
		for _, vm := range vms {
			if vm.Config == nil || vm.Config.InstanceUuid == "" {
				continue
			}
			f := vmFacts{
				biosUUID:  vm.Config.Uuid,
				poweredOn: vm.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn,
				macs:      nicMACs(vm.Config.Hardware.Device),
			}
			if vm.Guest != nil {
				for _, nic := range vm.Guest.Net {
					if !hasMAC(f.macs, nic.MacAddress) {
						continue
					}
					slim := types.GuestNicInfo{MacAddress: nic.MacAddress, IpAddress: nic.IpAddress}
					if nic.IpConfig != nil {
						slim.IpConfig = &types.NetIpConfigInfo{IpAddress: nic.IpConfig.IpAddress}
					}
					f.nics = append(f.nics, slim)
				}
			}
			v.vms[vm.Config.InstanceUuid] = f
		}
		return v, nil
	}
}

func viewKey(dc *object.Datacenter) string { return "view/" + dc.Reference().Value }

// retrieveThroughView reads viewProperties of every VM in dc into dst
// through the session's container view of dc, made on first use.
func (s *Session) retrieveThroughView(ctx context.Context, dc *object.Datacenter, dst *[]mo.VirtualMachine) error {
	var cv *view.ContainerView
	if v, ok := s.cache.Load(viewKey(dc)); ok {
		cv = v.(*view.ContainerView)
	} else {
		var err error
		cv, err = view.NewManager(s.Client).CreateContainerView(ctx, dc.Reference(), []string{"VirtualMachine"}, true)
		if err != nil {
			return err
		}
		s.cache.Store(viewKey(dc), cv)
	}
	return cv.Retrieve(ctx, []string{"VirtualMachine"}, viewProperties, dst)
}

// viewed reports a provisioned machine's state from its datacenter's
// shared read when that read shows it well: its VM there and powered on,
// with an address on its own network devices. Anything else (not there,
// off, no address yet) is not ok, and the VM is read on its own, so that
// nothing is done on an old read.
func (s *Session) viewed(ctx context.Context, dc *object.Datacenter, m Machine) (State, bool, error) {
	v, err := s.views.Get(ctx, dc.Reference().Value, s.readDatacenter(dc))
	if errors.Is(err, platform.ErrUnavailable) || isFault[*types.NotAuthenticated](err) {
		// vCenter is not answering, or the session ended: a read per
		// machine would only add to it, or fail the same way.
		return State{}, false, err
	}
	if err != nil {
		// A read vCenter refused: the machines' own reads answer.
		return State{}, false, nil
	}
	f, ok := v.vms[InstanceUUID(m.Namespace, m.Name)]
	if !ok || !f.poweredOn || f.biosUUID == "" {
		return State{}, false, nil
	}
	addresses := guestAddresses(f.nics, f.macs, m.ControlPlaneHost)
	if len(addresses) == 0 {
		return State{}, false, nil
	}
	return State{
		Exists:            true,
		BIOSUUID:          f.biosUUID,
		PoweredOn:         true,
		Addresses:         addresses,
		NetworkNotApplied: staticNotApplied(m.Spec, f.nics, f.macs),
	}, true, nil
}
