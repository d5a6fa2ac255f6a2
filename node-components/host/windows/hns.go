//go:build windows

package windows

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/Microsoft/hnslib/hcn"

	"github.com/capwin/capwin/node-components/host"
)

// managementIPWait bounds how long CreateNetwork waits for HNS to report the
// host's address on a new network: HNS fills it in once the new virtual
// switch has taken over the adapter, a moment after the network is created.
const managementIPWait = 10 * time.Second

// listAttempts is how often Networks and Endpoints list again when an object
// disappears while they list: hcn lists the ids, then reads each object.
const listAttempts = 3

// hns is the Host Networking Service, through its v2 (HCN) API.
type hns struct{}

var _ host.HNS = hns{}

// Networks lists the HNS networks.
func (hns) Networks(context.Context) ([]host.Network, error) {
	nets, err := listRetrying(hcn.ListNetworks)
	if err != nil {
		return nil, fmt.Errorf("listing HNS networks: %w", err)
	}
	out := make([]host.Network, 0, len(nets))
	for i := range nets {
		out = append(out, networkFromHCN(&nets[i]))
	}
	return out, nil
}

// CreateNetwork creates an Overlay or L2Bridge network with one static
// subnet and returns it as HNS reports it, once HNS reports the host's
// address on it (or after managementIPWait).
func (hns) CreateNetwork(ctx context.Context, n host.Network) (host.Network, error) {
	req, err := networkToHCN(n)
	if err != nil {
		return host.Network{}, fmt.Errorf("creating HNS network %s: %w", n.Name, err)
	}
	if err := hcn.V2ApiSupported(); err != nil {
		return host.Network{}, fmt.Errorf("creating HNS network %s: %w", n.Name, err)
	}
	created, err := req.Create()
	if err != nil {
		return host.Network{}, fmt.Errorf("creating HNS network %s: %w", n.Name, err)
	}
	result := networkFromHCN(created)
	ctx, cancel := context.WithTimeout(ctx, managementIPWait)
	defer cancel()
	// Best effort: the network exists, and a caller that needs the
	// management IP can read it with Networks later.
	_ = poll(ctx, func() (bool, error) {
		if result.ManagementIP != "" {
			return true, nil
		}
		// A failed read leaves the network as created, and tries again.
		if got, err := hcn.GetNetworkByID(created.Id); err == nil {
			result = networkFromHCN(got)
		}
		return result.ManagementIP != "", nil
	})
	return result, nil
}

// DeleteNetwork deletes a network; a missing one is host.ErrNotExist.
func (hns) DeleteNetwork(_ context.Context, id string) error {
	return deleteObject("network", id, (&hcn.HostComputeNetwork{Id: id}).Delete,
		hcn.ListNetworks, func(n hcn.HostComputeNetwork) string { return n.Id })
}

// Endpoints lists the HNS endpoints of all networks.
func (hns) Endpoints(context.Context) ([]host.Endpoint, error) {
	eps, err := listRetrying(hcn.ListEndpoints)
	if err != nil {
		return nil, fmt.Errorf("listing HNS endpoints: %w", err)
	}
	out := make([]host.Endpoint, 0, len(eps))
	for i := range eps {
		out = append(out, endpointFromHCN(&eps[i]))
	}
	return out, nil
}

// DeleteEndpoint deletes an endpoint; a missing one is host.ErrNotExist.
func (hns) DeleteEndpoint(_ context.Context, id string) error {
	return deleteObject("endpoint", id, (&hcn.HostComputeEndpoint{Id: id}).Delete,
		hcn.ListEndpoints, func(e hcn.HostComputeEndpoint) string { return e.Id })
}

// deleteObject deletes the HNS object id of a kind (network, endpoint) with
// del; a missing one is host.ErrNotExist. hcn's errors for a missing object
// vary, so when del fails the objects are listed to tell.
func deleteObject[T any](kind, id string, del func() error, list func() ([]T, error), idOf func(T) string) error {
	if !isGUID(id) {
		return fmt.Errorf("deleting HNS %s %q: not an HNS id: %w", kind, id, host.ErrNotExist)
	}
	err := del()
	if err == nil {
		return nil
	}
	if isNotFound(err) || !exists(list, idOf, id) {
		return fmt.Errorf("deleting HNS %s %s: %w", kind, id, host.ErrNotExist)
	}
	return fmt.Errorf("deleting HNS %s %s: %w", kind, id, err)
}

// isNotFound reports whether an hcn error says the object does not exist.
func isNotFound(err error) bool {
	return hcn.IsNotFoundError(err) || hcn.IsElementNotFoundError(err) ||
		hcn.IsNetworkNotFoundError(err) || hcn.IsEndpointNotFoundError(err)
}

// listRetrying lists again when an object disappeared while hcn listed.
func listRetrying[T any](list func() ([]T, error)) ([]T, error) {
	var err error
	for range listAttempts {
		var items []T
		items, err = list()
		if err == nil || !isNotFound(err) {
			return items, err
		}
	}
	return nil, err
}

// exists reports whether an object with id is listed; when listing fails it
// says yes, so that the caller reports its own error rather than a
// not-found.
func exists[T any](list func() ([]T, error), idOf func(T) string, id string) bool {
	items, err := listRetrying(list)
	if err != nil {
		return true
	}
	for _, it := range items {
		if strings.EqualFold(idOf(it), id) {
			return true
		}
	}
	return false
}

// networkToHCN is the HCN v2 request for a network: one static subnet with a
// default route through the gateway (hcn refuses a subnet without one), a
// VSID subnet policy for an overlay network, a NetAdapterName policy when
// the adapter is named (HNS picks one otherwise). ID and ManagementIP are
// HNS's to fill in and are not sent.
func networkToHCN(n host.Network) (*hcn.HostComputeNetwork, error) {
	prefix, gateway, err := host.CheckNetwork(n)
	if err != nil {
		return nil, err
	}
	subnet := hcn.Subnet{
		IpAddressPrefix: prefix.String(),
		Routes:          []hcn.Route{{NextHop: gateway.String(), DestinationPrefix: "0.0.0.0/0"}},
	}
	if n.Type == host.Overlay {
		subnet.Policies = []json.RawMessage{mustJSON(hcn.SubnetPolicy{
			Type:     hcn.VSID,
			Settings: mustJSON(hcn.VsidPolicySetting{IsolationId: n.VSID}),
		})}
	}
	network := &hcn.HostComputeNetwork{
		Name:          n.Name,
		Type:          hcn.NetworkType(n.Type),
		Ipams:         []hcn.Ipam{{Type: "Static", Subnets: []hcn.Subnet{subnet}}},
		SchemaVersion: hcn.V2SchemaVersion(),
	}
	if n.NonPersistent {
		network.Flags |= hcn.EnableNonPersistent
	}
	if n.AdapterName != "" {
		network.Policies = append(network.Policies, hcn.NetworkPolicy{
			Type:     hcn.NetAdapterName,
			Settings: mustJSON(hcn.NetAdapterNameNetworkPolicySetting{NetworkAdapterName: n.AdapterName}),
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

// networkFromHCN reads a network as HNS reports it: its first subnet, that
// subnet's default route and VSID policy, and the adapter and host address
// policies. A policy it cannot parse is skipped: the network is still
// listed.
func networkFromHCN(h *hcn.HostComputeNetwork) host.Network {
	n := host.Network{ID: h.Id, Name: h.Name, Type: host.NetworkType(h.Type), NonPersistent: h.Flags&hcn.EnableNonPersistent != 0}
	for _, p := range h.Policies {
		switch p.Type {
		case hcn.NetAdapterName:
			var s hcn.NetAdapterNameNetworkPolicySetting
			if json.Unmarshal(p.Settings, &s) == nil {
				n.AdapterName = s.NetworkAdapterName
			}
		case hcn.ProviderAddress:
			// HCN v2 has no ManagementIP field: the host's address on the
			// network is its provider address policy (flannel reads it the
			// same way).
			var s hcn.ProviderAddressEndpointPolicySetting
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
		n.AddressPrefix = subnet.IpAddressPrefix
		for _, r := range subnet.Routes {
			if r.DestinationPrefix == "0.0.0.0/0" {
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
func subnetVSID(s hcn.Subnet) uint32 {
	for _, raw := range s.Policies {
		var p hcn.SubnetPolicy
		if json.Unmarshal(raw, &p) != nil || p.Type != hcn.VSID {
			continue
		}
		var v hcn.VsidPolicySetting
		if json.Unmarshal(p.Settings, &v) == nil {
			return v.IsolationId
		}
	}
	return 0
}

// endpointFromHCN reads an endpoint: its first IP address, and whether it
// stands for an address on another host.
func endpointFromHCN(e *hcn.HostComputeEndpoint) host.Endpoint {
	ep := host.Endpoint{
		ID:        e.Id,
		Name:      e.Name,
		NetworkID: e.HostComputeNetwork,
		Remote:    e.Flags&hcn.EndpointFlagsRemoteEndpoint != 0,
	}
	if len(e.IpConfigurations) > 0 {
		ep.IPAddress = e.IpConfigurations[0].IpAddress
	}
	return ep
}
