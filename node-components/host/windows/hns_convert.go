package windows

// The HNS request shapes and conversions of this file make no Windows call,
// so they build, and are tested, on any OS. hcn's types build only for
// Windows: the types here hold what capwin writes and reads of them, and
// hns.go copies them to and from hcn's, field for field. windows_test.go
// checks that the values named here are hcn's and that the request hcn
// sends is the one these shapes describe.

import (
	"encoding/json"
	"fmt"

	"github.com/capwin/capwin/node-components/host"
)

// The HCN v2 values capwin writes or reads (hcn.NetAdapterName,
// hcn.ProviderAddress, hcn.VSID, hcn.EnableNonPersistent,
// hcn.EndpointFlagsRemoteEndpoint).
const (
	hnsPolicyNetAdapterName  = "NetAdapterName"
	hnsPolicyProviderAddress = "ProviderAddress"
	hnsSubnetPolicyVSID      = "VSID"
	hnsEnableNonPersistent   = 8
	hnsEndpointFlagsRemote   = 1
	// hnsDefaultRoute is the destination of a subnet's default route.
	hnsDefaultRoute = "0.0.0.0/0"
)

// hnsNetwork is what capwin writes and reads of an HNS network
// (hcn.HostComputeNetwork).
type hnsNetwork struct {
	ID       string
	Name     string
	Type     string
	Flags    uint32
	Policies []hnsPolicy
	Ipams    []hnsIpam
}

// hnsPolicy is a network policy (hcn.NetworkPolicy): its type and its
// settings as JSON.
type hnsPolicy struct {
	Type     string
	Settings json.RawMessage
}

// hnsIpam is an address space of a network (hcn.Ipam).
type hnsIpam struct {
	Type    string
	Subnets []hnsSubnet
}

// hnsSubnet is a subnet of an address space (hcn.Subnet); its policies are
// JSON, each an hnsSubnetPolicy.
type hnsSubnet struct {
	IPAddressPrefix string
	Policies        []json.RawMessage
	Routes          []hnsRoute
}

// hnsRoute is a subnet's route (hcn.Route).
type hnsRoute struct {
	NextHop           string
	DestinationPrefix string
}

// hnsEndpoint is what capwin reads of an HNS endpoint
// (hcn.HostComputeEndpoint).
type hnsEndpoint struct {
	ID        string
	Name      string
	NetworkID string
	Flags     uint32
	// IPAddresses are the addresses of its IP configurations, in order.
	IPAddresses []string
}

// The JSON of the policies and settings capwin writes or reads, as hcn's
// types marshal them (hcn.SubnetPolicy, hcn.VsidPolicySetting,
// hcn.NetAdapterNameNetworkPolicySetting,
// hcn.ProviderAddressEndpointPolicySetting).
type (
	hnsSubnetPolicy struct {
		Type     string
		Settings json.RawMessage `json:",omitempty"`
	}
	hnsVSIDSetting struct {
		IsolationID uint32 `json:"IsolationId"`
	}
	hnsAdapterSetting struct {
		NetworkAdapterName string `json:",omitempty"`
	}
	hnsProviderAddressSetting struct {
		ProviderAddress string `json:",omitempty"`
	}
)

// networkRequest is the HCN v2 request for a network: one static subnet
// with a default route through the gateway (hcn refuses a subnet without
// one), a VSID subnet policy for an overlay network, a NetAdapterName
// policy when the adapter is named (HNS picks one otherwise). ID and
// ManagementIP are HNS's to fill in and are not sent.
func networkRequest(n host.Network) (hnsNetwork, error) {
	prefix, gateway, err := host.CheckNetwork(n)
	if err != nil {
		return hnsNetwork{}, err
	}
	subnet := hnsSubnet{
		IPAddressPrefix: prefix.String(),
		Routes:          []hnsRoute{{NextHop: gateway.String(), DestinationPrefix: hnsDefaultRoute}},
	}
	if n.Type == host.Overlay {
		subnet.Policies = []json.RawMessage{mustJSON(hnsSubnetPolicy{
			Type:     hnsSubnetPolicyVSID,
			Settings: mustJSON(hnsVSIDSetting{IsolationID: n.VSID}),
		})}
	}
	network := hnsNetwork{
		Name:  n.Name,
		Type:  string(n.Type),
		Ipams: []hnsIpam{{Type: "Static", Subnets: []hnsSubnet{subnet}}},
	}
	if n.NonPersistent {
		network.Flags |= hnsEnableNonPersistent
	}
	if n.AdapterName != "" {
		network.Policies = append(network.Policies, hnsPolicy{
			Type:     hnsPolicyNetAdapterName,
			Settings: mustJSON(hnsAdapterSetting{NetworkAdapterName: n.AdapterName}),
		})
	}
	return network, nil
}

// mustJSON marshals a policy or its settings: structs of strings, numbers
// and raw JSON this package made, which always marshal.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("marshalling %T: %v", v, err))
	}
	return b
}

// networkFromHNS reads a network as HNS reports it: its first subnet, that
// subnet's default route and VSID policy, and the adapter and host address
// policies. A policy it cannot parse is skipped: the network is still
// listed.
func networkFromHNS(h hnsNetwork) host.Network {
	n := host.Network{ID: h.ID, Name: h.Name, Type: host.NetworkType(h.Type), NonPersistent: h.Flags&hnsEnableNonPersistent != 0}
	for _, p := range h.Policies {
		switch p.Type {
		case hnsPolicyNetAdapterName:
			var s hnsAdapterSetting
			if json.Unmarshal(p.Settings, &s) == nil {
				n.AdapterName = s.NetworkAdapterName
			}
		case hnsPolicyProviderAddress:
			// HCN v2 has no ManagementIP field: the host's address on the
			// network is its provider address policy (flannel reads it the
			// same way).
			var s hnsProviderAddressSetting
			if json.Unmarshal(p.Settings, &s) == nil {
				n.ManagementIP = s.ProviderAddress
			}
		}
	}
	for _, ipam := range h.Ipams {
		if len(ipam.Subnets) == 0 {
			continue
		}
		subnet := ipam.Subnets[0]
		n.AddressPrefix = subnet.IPAddressPrefix
		for _, r := range subnet.Routes {
			if r.DestinationPrefix == hnsDefaultRoute {
				n.Gateway = r.NextHop
				break
			}
		}
		n.VSID = subnetVSID(subnet)
		break
	}
	return n
}

// subnetVSID is the isolation id of a subnet's VSID policy, 0 without one.
func subnetVSID(s hnsSubnet) uint32 {
	for _, raw := range s.Policies {
		var p hnsSubnetPolicy
		if json.Unmarshal(raw, &p) != nil || p.Type != hnsSubnetPolicyVSID {
			continue
		}
		var v hnsVSIDSetting
		if json.Unmarshal(p.Settings, &v) == nil {
			return v.IsolationID
		}
	}
	return 0
}

// endpointFromHNS reads an endpoint: its first IP address, and whether it
// stands for an address on another host.
func endpointFromHNS(e hnsEndpoint) host.Endpoint {
	ep := host.Endpoint{
		ID:        e.ID,
		Name:      e.Name,
		NetworkID: e.NetworkID,
		Remote:    e.Flags&hnsEndpointFlagsRemote != 0,
	}
	if len(e.IPAddresses) > 0 {
		ep.IPAddress = e.IPAddresses[0]
	}
	return ep
}
