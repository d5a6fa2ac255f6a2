package webhooks

import (
	"fmt"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/internal/validate"
)

// validateVSphereNetwork checks a vSphere machine's network devices. The
// guest applies them at first boot from the network metadata (netplan
// version 2: cloud-init on Linux, cloudbase-init on Windows); what it
// cannot apply, or what cannot route, leaves a VM that never joins, with
// nothing to say why but the guest's own log.
func validateVSphereNetwork(devices []infrav1.VSphereNetworkDevice, os infrav1.OSType, path *field.Path, template bool) field.ErrorList {
	var errs field.ErrorList
	addresses := map[netip.Addr]*field.Path{} // across devices: one address, one VM NIC
	for i, d := range devices {
		p := path.Index(i)
		if d.NetworkName == "" {
			errs = append(errs, field.Required(p.Child("networkName"), "the port group or network to connect to"))
		}
		if template && len(d.IPAddrs) > 0 {
			errs = append(errs, field.Forbidden(p.Child("ipAddrs"), "a template cannot set static addresses: every machine made from it would get the same ones"))
		}
		dhcp := d.DHCP4 != nil && *d.DHCP4
		if !dhcp && len(d.IPAddrs) == 0 {
			errs = append(errs, field.Required(p, "set dhcp4: true or static ipAddrs, or the device gets no address"))
		}
		var v4, v6 []netip.Prefix
		unread := false
		for j, a := range d.IPAddrs {
			ap := p.Child("ipAddrs").Index(j)
			prefix, err := staticAddress(a, ap)
			if err != nil {
				errs = append(errs, err)
				unread = true
				continue
			}
			if first, ok := addresses[prefix.Addr()]; ok {
				e := field.Duplicate(ap, a)
				e.Detail = fmt.Sprintf("%s names the address %s already: an address belongs to one network device of one VM", first, prefix.Addr())
				errs = append(errs, e)
			} else {
				addresses[prefix.Addr()] = ap
			}
			if prefix.Addr().Is4() {
				v4 = append(v4, prefix)
			} else {
				v6 = append(v6, prefix)
			}
		}
		if os == infrav1.OSWindows {
			errs = append(errs, windowsAddresses(p, dhcp, v4, v6)...)
		}
		if d.Gateway4 != "" {
			if err := validateGateway4(d, v4, unread, p.Child("gateway4")); err != nil {
				errs = append(errs, err)
			}
		}
		for j, n := range d.Nameservers {
			if err := validateIP(n, p.Child("nameservers").Index(j)); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

// staticAddress reads a static address: an address with its prefix length,
// that a host may have.
func staticAddress(value string, path *field.Path) (netip.Prefix, *field.Error) {
	prefix, err := netip.ParsePrefix(value)
	if err != nil {
		if _, addrErr := netip.ParseAddr(value); addrErr == nil {
			return netip.Prefix{}, field.Invalid(path, value,
				"a static address needs its prefix length, for example 10.0.0.10/24: the guest derives the subnet, and the route to the gateway, from it (cloudbase-init fails on an address without one)")
		}
		_, e := validate.CIDR(value, path)
		return netip.Prefix{}, e
	}
	addr := prefix.Addr()
	if !addr.IsGlobalUnicast() {
		return netip.Prefix{}, field.Invalid(path, value,
			"must be a unicast address the node can be reached at: not loopback, link-local, multicast, broadcast or unspecified")
	}
	if what := reservedInSubnet(prefix); what != "" {
		return netip.Prefix{}, field.Invalid(path, value, fmt.Sprintf(
			"is the %s of %s, which no host may have (RFC 1122 3.2.1.3; Windows refuses it too): use an address inside the subnet", what, prefix.Masked()))
	}
	return prefix, nil
}

// reservedInSubnet says whether addr, in an IPv4 subnet with room for
// hosts, is its network address or its broadcast address, or "".
func reservedInSubnet(prefix netip.Prefix) string {
	addr := prefix.Addr()
	if !addr.Is4() || prefix.Bits() > 30 {
		return "" // /31 point-to-point and /32 host routes have no such addresses (RFC 3021)
	}
	if addr == prefix.Masked().Addr() {
		return "network address"
	}
	b := addr.As4()
	host := uint32(1)<<(32-prefix.Bits()) - 1
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	if v&host == host {
		return "broadcast address"
	}
	return ""
}

// windowsAddresses holds the rules of cloudbase-init, which applies a
// Windows VM's network metadata (cloudbaseinit/osutils/windows.py,
// _set_static_network_config): for each static address it turns DHCP off
// for the address's family on the adapter, deletes the adapter's addresses
// and routes of that family, and adds the address.
func windowsAddresses(path *field.Path, dhcp bool, v4, v6 []netip.Prefix) field.ErrorList {
	var errs field.ErrorList
	for _, family := range []struct {
		name     string
		prefixes []netip.Prefix
	}{{"IPv4", v4}, {"IPv6", v6}} {
		if len(family.prefixes) > 1 {
			errs = append(errs, field.Forbidden(path.Child("ipAddrs"), fmt.Sprintf(
				"a Windows network device takes one static %s address (here %s): cloudbase-init replaces the device's addresses of a family with each one it sets, so only the last would remain",
				family.name, joinPrefixes(family.prefixes))))
		}
	}
	if dhcp && len(v4) > 0 {
		errs = append(errs, field.Forbidden(path.Child("dhcp4"),
			"cloudbase-init turns DHCP off on a Windows network device it gives a static IPv4 address: set dhcp4 false, or remove the IPv4 ipAddrs"))
	}
	return errs
}

// validateGateway4 checks a device's IPv4 default gateway: the guest must
// reach it directly, from one of the device's own IPv4 subnets. unread says
// some of the device's addresses did not parse, which are reported on
// their own.
func validateGateway4(d infrav1.VSphereNetworkDevice, v4 []netip.Prefix, unread bool, path *field.Path) *field.Error {
	gw, err := netip.ParseAddr(d.Gateway4)
	switch {
	case err != nil:
		return field.Invalid(path, d.Gateway4, "must be an IP address")
	case !gw.Is4():
		return field.Invalid(path, d.Gateway4, "gateway4 is the IPv4 gateway: cloud-init and cloudbase-init ignore an IPv6 address here")
	case len(d.IPAddrs) == 0:
		return field.Forbidden(path, "a gateway goes with static ipAddrs")
	case unread:
		return nil
	case len(v4) == 0:
		return field.Invalid(path, d.Gateway4,
			"the device has no static IPv4 address to reach an IPv4 gateway from (its ipAddrs are IPv6): the guest would ignore the gateway")
	}
	for _, p := range v4 {
		if !p.Contains(gw) {
			continue
		}
		if gw == p.Addr() {
			return field.Invalid(path, d.Gateway4, fmt.Sprintf("is the device's own address (%s): the gateway is the router the node sends other networks' traffic to", p))
		}
		if what := reservedInSubnet(netip.PrefixFrom(gw, p.Bits())); what != "" {
			return field.Invalid(path, d.Gateway4, fmt.Sprintf("is the %s of %s, not a router's", what, p.Masked()))
		}
		return nil
	}
	return field.Invalid(path, d.Gateway4, fmt.Sprintf(
		"is not inside the subnet of any of the device's IPv4 addresses (%s): the node could not reach it, and would have no route to other networks",
		joinPrefixes(v4)))
}

func joinPrefixes(prefixes []netip.Prefix) string {
	s := make([]string, len(prefixes))
	for i, p := range prefixes {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}
