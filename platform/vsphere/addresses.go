package vsphere

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/vmware/govmomi/vim25/types"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
)

// guestAddresses are the addresses VMware Tools reports on the VM's own
// network devices (macs), which become the machine's InternalIPs. Left out
// are the adapters the guest made itself (a Windows node's HNS vEthernet
// switches, a Linux bridge: VMware Tools reports them with MACs no device
// has), link-local addresses (fe80::/10, and 169.254.0.0/16, which Windows
// gives an adapter DHCP did not answer), loopback, and the control-plane
// endpoint, which kube-vip adds to the NIC of the control-plane node that
// holds it. Each address is listed once, in the order reported.
func guestAddresses(nics []types.GuestNicInfo, macs []string, controlPlaneHost string) []string {
	var out []string
	for _, nic := range nics {
		if !hasMAC(macs, nic.MacAddress) {
			continue
		}
		for _, a := range nicIPs(nic) {
			ip, err := netip.ParseAddr(a)
			if err != nil || ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsUnspecified() || ip.IsMulticast() {
				continue
			}
			s := ip.Unmap().String()
			if s == controlPlaneHost || slices.Contains(out, s) {
				continue
			}
			out = append(out, s)
		}
	}
	return out
}

// nicIPs are an adapter's addresses: ipConfig's when the tools report it,
// else ipAddress.
func nicIPs(nic types.GuestNicInfo) []string {
	if nic.IpConfig == nil || len(nic.IpConfig.IpAddress) == 0 {
		return nic.IpAddress
	}
	ips := make([]string, 0, len(nic.IpConfig.IpAddress))
	for _, a := range nic.IpConfig.IpAddress {
		ips = append(ips, a.IpAddress)
	}
	return ips
}

func hasMAC(macs []string, mac string) bool {
	return mac != "" && slices.ContainsFunc(macs, func(m string) bool { return strings.EqualFold(m, mac) })
}

// staticNotApplied says which static address the guest did not take: a
// network device with addresses in the spec whose NIC VMware Tools reports
// with addresses, none of them the first one asked for. A guest that has
// not reported yet is not judged.
func staticNotApplied(spec *infrav1.VSphereMachineSpec, nics []types.GuestNicInfo, macs []string) string {
	if spec == nil {
		return ""
	}
	for i, d := range spec.Network {
		if len(d.IPAddrs) == 0 || i >= len(macs) {
			continue
		}
		want, err := netip.ParsePrefix(d.IPAddrs[0])
		if err != nil {
			continue
		}
		var have []string
		for _, nic := range nics {
			if strings.EqualFold(nic.MacAddress, macs[i]) {
				have = append(have, guestAddresses([]types.GuestNicInfo{nic}, macs, "")...)
			}
		}
		if len(have) == 0 || slices.Contains(have, want.Addr().String()) {
			continue
		}
		return fmt.Sprintf("VMware Tools reports %s on network device %d (%s, MAC %s), not its static address %s: the guest did not apply its network metadata (a Windows image needs cloudbase-init 1.1.7 or later, which reads the network from guestinfo)",
			strings.Join(have, ", "), i, d.NetworkName, macs[i], want.Addr())
	}
	return ""
}
