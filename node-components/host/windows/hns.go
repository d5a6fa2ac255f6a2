//go:build windows

package windows

import (
	"context"
	"fmt"
	"time"

	"github.com/Microsoft/hnslib/hcn"

	"github.com/capwin/capwin/node-components/host"
)

// managementIPWait bounds how long CreateNetwork waits for HNS to report the
// host's address on a new network: HNS fills it in once the new virtual
// switch has taken over the adapter, a moment after the network is created.
const managementIPWait = 10 * time.Second

// hns is the Host Networking Service, through its v2 (HCN) API.
type hns struct{}

var _ host.HNS = hns{}

// Networks lists the HNS networks.
func (hns) Networks(context.Context) ([]host.Network, error) {
	nets, err := listRetrying(hcn.ListNetworks, isNotFound)
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
		hcn.ListNetworks, func(n hcn.HostComputeNetwork) string { return n.Id }, isNotFound)
}

// Endpoints lists the HNS endpoints of all networks.
func (hns) Endpoints(context.Context) ([]host.Endpoint, error) {
	eps, err := listRetrying(hcn.ListEndpoints, isNotFound)
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
		hcn.ListEndpoints, func(e hcn.HostComputeEndpoint) string { return e.Id }, isNotFound)
}

// isNotFound reports whether an hcn error says the object does not exist.
func isNotFound(err error) bool {
	return hcn.IsNotFoundError(err) || hcn.IsElementNotFoundError(err) ||
		hcn.IsNetworkNotFoundError(err) || hcn.IsEndpointNotFoundError(err)
}

// networkToHCN is networkRequest (see there) as hcn's request, in HCN's v2
// schema.
func networkToHCN(n host.Network) (*hcn.HostComputeNetwork, error) {
	r, err := networkRequest(n)
	if err != nil {
		return nil, err
	}
	network := &hcn.HostComputeNetwork{
		Name:          r.Name,
		Type:          hcn.NetworkType(r.Type),
		Flags:         hcn.NetworkFlags(r.Flags),
		SchemaVersion: hcn.V2SchemaVersion(),
	}
	for _, p := range r.Policies {
		network.Policies = append(network.Policies, hcn.NetworkPolicy{Type: hcn.NetworkPolicyType(p.Type), Settings: p.Settings})
	}
	for _, ipam := range r.Ipams {
		h := hcn.Ipam{Type: ipam.Type}
		for _, s := range ipam.Subnets {
			subnet := hcn.Subnet{IpAddressPrefix: s.IPAddressPrefix, Policies: s.Policies}
			for _, route := range s.Routes {
				subnet.Routes = append(subnet.Routes, hcn.Route{NextHop: route.NextHop, DestinationPrefix: route.DestinationPrefix})
			}
			h.Subnets = append(h.Subnets, subnet)
		}
		network.Ipams = append(network.Ipams, h)
	}
	return network, nil
}

// networkFromHCN reads a network as hcn reports it (see networkFromHNS).
func networkFromHCN(h *hcn.HostComputeNetwork) host.Network {
	n := hnsNetwork{ID: h.Id, Name: h.Name, Type: string(h.Type), Flags: uint32(h.Flags)}
	for _, p := range h.Policies {
		n.Policies = append(n.Policies, hnsPolicy{Type: string(p.Type), Settings: p.Settings})
	}
	for _, ipam := range h.Ipams {
		i := hnsIpam{Type: ipam.Type}
		for _, s := range ipam.Subnets {
			subnet := hnsSubnet{IPAddressPrefix: s.IpAddressPrefix, Policies: s.Policies}
			for _, route := range s.Routes {
				subnet.Routes = append(subnet.Routes, hnsRoute{NextHop: route.NextHop, DestinationPrefix: route.DestinationPrefix})
			}
			i.Subnets = append(i.Subnets, subnet)
		}
		n.Ipams = append(n.Ipams, i)
	}
	return networkFromHNS(n)
}

// endpointFromHCN reads an endpoint as hcn reports it (see
// endpointFromHNS).
func endpointFromHCN(e *hcn.HostComputeEndpoint) host.Endpoint {
	ep := hnsEndpoint{ID: e.Id, Name: e.Name, NetworkID: e.HostComputeNetwork, Flags: uint32(e.Flags)}
	for _, c := range e.IpConfigurations {
		ep.IPAddresses = append(ep.IPAddresses, c.IpAddress)
	}
	return endpointFromHNS(ep)
}
