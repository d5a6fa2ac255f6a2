package sim

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/capwin/capwin/internal/userdata"
	"github.com/capwin/capwin/platform/vsphere/vspheresim"
)

// metadata is what the guest reads of guestinfo.metadata: its host name
// and its network configuration (cloud-init's network config version 2).
type metadata struct {
	LocalHostname string `json:"local-hostname"`
	// Network is nil when the metadata has no network key.
	Network *struct {
		Ethernets map[string]ethernet `json:"ethernets"`
	} `json:"network"`
}

type ethernet struct {
	Match struct {
		MACAddress string `json:"macaddress"`
		Name       string `json:"name"`
	} `json:"match"`
	DHCP4     bool     `json:"dhcp4"`
	Addresses []string `json:"addresses"`
}

func readMetadata(extra map[string]string) (*metadata, error) {
	data, err := decodeGuestinfo(extra, "guestinfo.metadata")
	if err != nil {
		return nil, err
	}
	meta := &metadata{}
	if err := yaml.Unmarshal(data, meta); err != nil {
		return nil, fmt.Errorf("guestinfo.metadata: %w", err)
	}
	if meta.LocalHostname == "" {
		return nil, errors.New("guestinfo.metadata has no local-hostname")
	}
	return meta, nil
}

// The name the guest's kernel gives the VM's first network device: a
// vmxnet3 NIC on its PCIe slot for Linux, Ethernet0 for Windows.
const (
	linuxNIC   = "ens192"
	windowsNIC = "Ethernet0"
)

// address is the IPv4 address the guest's first network device gets from
// the network configuration, as the guest's software applies it.
//
// cloud-init (Linux) configures an interface only when an entry matches
// it: by its match block (MAC address or name), or by the entry's key when
// it has no match block. The configuration replaces the image's, so a NIC
// no entry matches gets no address at all and the machine never becomes a
// node.
//
// cloudbase-init (Windows; 1.1.7 or later reads the network from
// guestinfo, entries without nameservers included) applies an entry only to the adapter with the entry's MAC
// address; an adapter it does not configure keeps Windows' default, DHCP.
//
// Metadata without a network key leaves each to its default: cloud-init's
// VMware datasource applies its fallback configuration, DHCP on the first
// NIC (the VM's only one here), and Windows keeps DHCP.
//
// DHCP addresses come from the simulated network's server (192.168.0.0/16,
// in order).
func (g *Guests) address(vm *vspheresim.VM, meta *metadata) (string, error) {
	if len(vm.MACs) == 0 {
		return "", errors.New("the VM has no network device")
	}
	mac := vm.MACs[0]
	if meta.Network == nil {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.lease(), nil
	}
	ids := make([]string, 0, len(meta.Network.Ethernets))
	for id := range meta.Network.Ethernets {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var e *ethernet
	for _, id := range ids {
		c := meta.Network.Ethernets[id]
		if isWindows(vm) {
			if strings.EqualFold(c.Match.MACAddress, mac) {
				e = &c
				break
			}
			continue
		}
		switch {
		case c.Match.MACAddress != "" || c.Match.Name != "":
			if (c.Match.MACAddress == "" || strings.EqualFold(c.Match.MACAddress, mac)) && (c.Match.Name == "" || c.Match.Name == linuxNIC) {
				e = &c
			}
		case id == linuxNIC:
			e = &c
		}
		if e != nil {
			break
		}
	}
	if e == nil && !isWindows(vm) {
		return "", fmt.Errorf("cloud-init: no entry of the network configuration (%s) matches network device %s (MAC %s): it gets no address", strings.Join(ids, ", "), linuxNIC, mac)
	}
	if e != nil && len(e.Addresses) > 0 {
		ip, _, err := net.ParseCIDR(e.Addresses[0])
		if err != nil {
			return "", fmt.Errorf("guestinfo.metadata: address %q: %w", e.Addresses[0], err)
		}
		return ip.String(), nil
	}
	if e != nil && !e.DHCP4 {
		return "", fmt.Errorf("guestinfo.metadata: the entry for network device %s (MAC %s) has neither addresses nor dhcp4", linuxNIC, mac)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.lease(), nil
}

// lease is the simulated DHCP server's next address; g.mu is held.
func (g *Guests) lease() string {
	g.leases++
	return fmt.Sprintf("192.168.%d.%d", g.leases/250, g.leases%250+2)
}

// decodeGuestinfo returns a guestinfo key's value, decoded as its .encoding
// key says.
func decodeGuestinfo(extra map[string]string, key string) ([]byte, error) {
	v := extra[key]
	switch enc := extra[key+".encoding"]; enc {
	case "":
		return []byte(v), nil
	case "base64", "b64":
		return base64.StdEncoding.DecodeString(v)
	case "gzip+base64", "gz+b64":
		data, err := userdata.DecodeGzipBase64(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		return data, nil
	default:
		return nil, fmt.Errorf("%s.encoding %q is not one cloud-init or cloudbase-init reads", key, enc)
	}
}
