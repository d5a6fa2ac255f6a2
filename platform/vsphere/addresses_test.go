package vsphere

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/types"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/platform"
)

// What VMware Tools reports of a Windows node on vSphere with its pod
// network up: the VM's NIC (its HNS host adapter carries the NIC's MAC and
// the host address), an HNS switch adapter with a Hyper-V MAC and an APIPA
// address, and link-local IPv6 everywhere.
var windowsGuestNet = []types.GuestNicInfo{
	{MacAddress: "00:50:56:aa:bb:01", DeviceConfigId: 4000, IpAddress: []string{"10.0.0.21", "fe80::1c2d:3e4f:5a6b:7c8d"}},
	{MacAddress: "00:15:5d:01:02:03", DeviceConfigId: -1, IpAddress: []string{"169.254.12.7", "172.29.240.1", "fe80::aa"}},
	{MacAddress: "", DeviceConfigId: -1, IpAddress: []string{"127.0.0.1", "::1"}},
}

func TestGuestAddresses(t *testing.T) {
	macs := []string{"00:50:56:AA:BB:01"} // vCenter's case need not be the tools'
	if got := guestAddresses(windowsGuestNet, macs, ""); !slices.Equal(got, []string{"10.0.0.21"}) {
		t.Errorf("Windows guest: got %v, want only the NIC's routable address", got)
	}

	// The control-plane node holding kube-vip's VIP reports it on its NIC.
	cp := []types.GuestNicInfo{{MacAddress: "00:50:56:aa:bb:02", IpAddress: []string{"10.0.0.10", "10.0.0.5", "10.0.0.5"},
		IpConfig: &types.NetIpConfigInfo{IpAddress: []types.NetIpConfigInfoIpAddress{{IpAddress: "10.0.0.10"}, {IpAddress: "10.0.0.5"}, {IpAddress: "fe80::2"}}}}}
	if got := guestAddresses(cp, []string{"00:50:56:aa:bb:02"}, "10.0.0.5"); !slices.Equal(got, []string{"10.0.0.10"}) {
		t.Errorf("control-plane node: got %v, want its own address without the endpoint", got)
	}
	if got := guestAddresses(cp, nil, ""); len(got) != 0 {
		t.Errorf("no device MACs known: got %v, want none", got)
	}
}

// TestNoMetadataWithoutMACs: a NIC without a MAC address cannot be
// matched, so the network metadata is not written and the VM not powered
// on; the condition says why. (A VM that needs no entry, one DHCP NIC,
// needs no MAC either.)
func TestNoMetadataWithoutMACs(t *testing.T) {
	m := machine("nomac")
	m.Spec.Network = []infrav1.VSphereNetworkDevice{{NetworkName: "VM Network", IPAddrs: []string{"10.0.0.21/24"}, Gateway4: "10.0.0.1"}}
	vm := object.NewVirtualMachine(nil, types.ManagedObjectReference{Type: "VirtualMachine", Value: "vm-1"})
	_, err := (&Session{}).writeNetworkMetadata(t.Context(), vm, &types.VirtualMachineConfigInfo{}, []string{""}, m)
	if !errors.Is(err, platform.ErrInvalid) || !strings.Contains(err.Error(), "network device 0 has no MAC address") {
		t.Fatalf("want an InvalidConfiguration error naming the device without a MAC, got %v", err)
	}
}

func TestStaticNotApplied(t *testing.T) {
	macs := []string{"00:50:56:aa:bb:01"}
	static := &infrav1.VSphereMachineSpec{Network: []infrav1.VSphereNetworkDevice{{NetworkName: "VM Network", IPAddrs: []string{"10.0.0.21/24"}}}}
	if msg := staticNotApplied(static, windowsGuestNet, macs); msg != "" {
		t.Errorf("the static address is there: %q", msg)
	}
	dhcp := []types.GuestNicInfo{{MacAddress: "00:50:56:aa:bb:01", IpAddress: []string{"192.168.4.9", "fe80::1"}}}
	msg := staticNotApplied(static, dhcp, macs)
	for _, want := range []string{"192.168.4.9", "network device 0", "VM Network", "00:50:56:aa:bb:01", "10.0.0.21", "cloudbase-init 1.1.7"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if msg := staticNotApplied(static, nil, macs); msg != "" {
		t.Errorf("a guest that reported nothing yet is not judged: %q", msg)
	}
	linkLocalOnly := []types.GuestNicInfo{{MacAddress: "00:50:56:aa:bb:01", IpAddress: []string{"fe80::1", "169.254.3.3"}}}
	if msg := staticNotApplied(static, linkLocalOnly, macs); msg != "" {
		t.Errorf("an adapter still coming up (link-local only) is not judged: %q", msg)
	}
	dhcpSpec := &infrav1.VSphereMachineSpec{Network: []infrav1.VSphereNetworkDevice{{NetworkName: "VM Network"}}}
	if msg := staticNotApplied(dhcpSpec, dhcp, macs); msg != "" {
		t.Errorf("no static address asked for: %q", msg)
	}
}
