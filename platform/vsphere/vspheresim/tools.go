package vspheresim

import (
	"errors"
	"fmt"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// GuestNIC is one network adapter as VMware Tools reports it in guest.net.
type GuestNIC struct {
	// IPs are its addresses.
	IPs []string
	// Virtual is an adapter the guest made that has no virtual device
	// behind it (a Windows HNS vEthernet switch, a Linux bridge): VMware
	// Tools reports it with deviceConfigId -1.
	Virtual bool
	// Network is the port group of its device; empty for a virtual one.
	Network string
	// MAC is a virtual adapter's own MAC address (Hyper-V gives HNS
	// adapters 00:15:5d:...); a device's adapter reports its device's.
	MAC string
}

// ReportGuest does what VMware Tools does in a booted guest: it tells
// vCenter the guest's host name and its adapters' addresses (guest.hostName,
// guest.ipAddress, guest.net, and the tools' running status). The first
// non-virtual NIC is the VM's first network device; vCenter knows nothing
// else of the guest until the tools report.
//
// vcsim has no VMware Tools; this writes into its inventory directly, and
// property collectors see the change as they would a real report.
func (v *VCenter) ReportGuest(vmID, hostName string, nics []GuestNIC) error {
	reg := v.Model.Map()
	ref := types.ManagedObjectReference{Type: "VirtualMachine", Value: vmID}
	obj, ok := reg.Get(ref).(*simulator.VirtualMachine)
	if !ok {
		return fmt.Errorf("no VM %s in vCenter", vmID)
	}
	ctx := v.Model.Service.Context
	var err error
	ctx.WithLock(obj, func() { err = reportGuest(ctx, obj, hostName, nics) })
	return err
}

func reportGuest(ctx *simulator.Context, vm *simulator.VirtualMachine, hostName string, nics []GuestNIC) error {
	var devices []types.GuestNicInfo
	for _, n := range vm.Guest.Net {
		if n.DeviceConfigId != -1 {
			devices = append(devices, n)
		}
	}
	var net []types.GuestNicInfo
	primary := ""
	for _, n := range nics {
		info := types.GuestNicInfo{IpAddress: n.IPs, Connected: true, DeviceConfigId: -1, MacAddress: n.MAC}
		if !n.Virtual {
			if len(devices) == 0 {
				return errors.New("the guest reports more network devices than the VM has")
			}
			info.MacAddress, info.DeviceConfigId, info.Network = devices[0].MacAddress, devices[0].DeviceConfigId, n.Network
			devices = devices[1:]
			if primary == "" && len(n.IPs) > 0 {
				primary = n.IPs[0]
			}
		}
		net = append(net, info)
	}
	running := string(types.VirtualMachineToolsRunningStatusGuestToolsRunning)
	ctx.Update(vm, []types.PropertyChange{
		{Name: "guest.hostName", Val: hostName},
		{Name: "guest.ipAddress", Val: primary},
		{Name: "guest.net", Val: net},
		{Name: "guest.toolsRunningStatus", Val: running},
		{Name: "summary.guest.hostName", Val: hostName},
		{Name: "summary.guest.ipAddress", Val: primary},
		{Name: "summary.guest.toolsRunningStatus", Val: running},
	})
	return nil
}

// guestOf is the guest information vCenter has of a VM.
func guestOf(o *mo.VirtualMachine) (hostName string, ips []string) {
	if o.Guest == nil {
		return "", nil
	}
	for _, n := range o.Guest.Net {
		ips = append(ips, n.IpAddress...)
	}
	return o.Guest.HostName, ips
}
