package cni

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/containernetworking/plugins/plugins/ipam/host-local/backend/disk"

	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/layout"
)

// host-local IPAM's store (the CNI plugins' own disk backend) on the node:
// flannel's pods get their addresses from it, and the addresses the node
// itself uses on the pod network are reserved in it.

// sourceVIPOwner is the ID under which the source VIP is reserved in
// host-local's store, where a pod's container ID would be.
const (
	sourceVIPOwner  = "capwin-kube-proxy-source-vip"
	sourceVIPIfName = "sourcevip"
)

// reserveSourceVIP reserves an address of subnet in host-local IPAM's store
// for the CNI network, where the CNI plugin allocates pod addresses: the
// plugin then never hands it to a pod. The same reservation is returned on
// every call.
func reserveSourceVIP(fsys host.FS, cniNetwork, subnet string) (string, error) {
	prefix, err := netip.ParsePrefix(subnet)
	if err != nil || !prefix.Addr().Is4() {
		return "", fmt.Errorf("the overlay network's subnet %q is not an IPv4 CIDR", subnet)
	}
	store, done, err := lockStore(fsys, cniNetwork)
	if err != nil {
		return "", err
	}
	defer done()
	for _, ip := range store.GetByID(sourceVIPOwner, sourceVIPIfName) {
		if a, ok := netip.AddrFromSlice(ip.To4()); ok && prefix.Contains(a) {
			return a.String(), nil
		}
	}
	// The first address is the network, the second the gateway (flannel's
	// x.x.x.1): host-local starts at the third, and so does this.
	a := prefix.Masked().Addr().Next().Next()
	for ; prefix.Contains(a); a = a.Next() {
		if !prefix.Contains(a.Next()) {
			break // the broadcast address
		}
		ok, err := store.Reserve(sourceVIPOwner, sourceVIPIfName, net.IP(a.AsSlice()), "0")
		if err != nil {
			return "", fmt.Errorf("reserving %s in host-local's store: %w", a, err)
		}
		if ok {
			return a.String(), nil
		}
	}
	return "", fmt.Errorf("no free address in %s for kube-proxy's source VIP", subnet)
}

// lockStore opens and locks host-local IPAM's store of the CNI network;
// done unlocks and closes it.
func lockStore(fsys host.FS, cniNetwork string) (store *disk.Store, done func(), err error) {
	dir, err := fsys.OSPath(layout.CNIDataDir)
	if err != nil {
		return nil, nil, err
	}
	store, err = disk.New(cniNetwork, dir)
	if err != nil {
		return nil, nil, fmt.Errorf("opening host-local's store %s\\%s: %w", layout.CNIDataDir, cniNetwork, err)
	}
	if err := store.Lock(); err != nil {
		_ = store.Close()
		return nil, nil, fmt.Errorf("locking host-local's store: %w", err)
	}
	return store, func() { _ = store.Unlock(); _ = store.Close() }, nil
}

// bridgeEndpointOwner is the ID under which flannel's host endpoint
// address on an l2bridge network is reserved in host-local's store.
const (
	bridgeEndpointOwner  = "capwin-flannel-host-endpoint"
	bridgeEndpointIfName = "hostep"
)

// reserveBridgeEndpoint keeps the address of flannel's host endpoint on
// the l2bridge network (cbr0_ep, the subnet's x.x.x.2: flannel's host-gw
// backend gives it that address and win-bridge uses it as the pods'
// gateway) from host-local, which starts allocating at x.x.x.2: without
// the reservation the node's first pod would get the host endpoint's
// address. A pod that holds it already is an error that names it.
func reserveBridgeEndpoint(fsys host.FS, cniNetwork, subnet string) (string, error) {
	prefix, err := netip.ParsePrefix(subnet)
	if err != nil || !prefix.Addr().Is4() || prefix.Bits() > 30 {
		return "", fmt.Errorf("the l2bridge network's subnet %q is not an IPv4 CIDR with room for a host endpoint", subnet)
	}
	store, done, err := lockStore(fsys, cniNetwork)
	if err != nil {
		return "", err
	}
	defer done()
	a := prefix.Masked().Addr().Next().Next()
	for _, ip := range store.GetByID(bridgeEndpointOwner, bridgeEndpointIfName) {
		if b, ok := netip.AddrFromSlice(ip.To4()); ok && b == a {
			return a.String(), nil
		}
	}
	ok, err := store.Reserve(bridgeEndpointOwner, bridgeEndpointIfName, net.IP(a.AsSlice()), "0")
	if err != nil {
		return "", fmt.Errorf("reserving %s in host-local's store: %w", a, err)
	}
	if !ok {
		return "", fmt.Errorf("%s, flannel's host endpoint on the l2bridge network, is already given to a pod in host-local's store (%s\\%s): delete that pod and run join again", a, layout.CNIDataDir, cniNetwork)
	}
	return a.String(), nil
}
