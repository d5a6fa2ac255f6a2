package windows

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/capwin/capwin/node-components/host"
)

func TestNetworkRequestOverlay(t *testing.T) {
	n := host.Network{Name: "External", Type: host.Overlay, AdapterName: "Ethernet0",
		AddressPrefix: "192.168.255.0/30", Gateway: "192.168.255.1", VSID: 9999, ID: "ignored", ManagementIP: "ignored"}
	got, err := networkRequest(n)
	if err != nil {
		t.Fatal(err)
	}
	// hcn sends this with its schema version and empty MacPool, Dns and
	// Health (windows_test.go's TestNetworkToHCNOverlay).
	want := hnsNetwork{
		Name: "External", Type: "Overlay",
		Policies: []hnsPolicy{{Type: "NetAdapterName", Settings: json.RawMessage(`{"NetworkAdapterName":"Ethernet0"}`)}},
		Ipams: []hnsIpam{{Type: "Static", Subnets: []hnsSubnet{{
			IPAddressPrefix: "192.168.255.0/30",
			Policies:        []json.RawMessage{json.RawMessage(`{"Type":"VSID","Settings":{"IsolationId":9999}}`)},
			Routes:          []hnsRoute{{NextHop: "192.168.255.1", DestinationPrefix: "0.0.0.0/0"}},
		}}}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("request (-want +got):\n%s", d)
	}
}

func TestNetworkRequestL2Bridge(t *testing.T) {
	n := host.Network{Name: "cbr0", Type: host.L2Bridge, AddressPrefix: "10.244.3.0/24", Gateway: "10.244.3.1", NonPersistent: true}
	got, err := networkRequest(n)
	if err != nil {
		t.Fatal(err)
	}
	// No adapter named: no policy, HNS picks the adapter. No VSID.
	want := hnsNetwork{
		Name: "cbr0", Type: "L2Bridge", Flags: hnsEnableNonPersistent,
		Ipams: []hnsIpam{{Type: "Static", Subnets: []hnsSubnet{{
			IPAddressPrefix: "10.244.3.0/24",
			Routes:          []hnsRoute{{NextHop: "10.244.3.1", DestinationPrefix: "0.0.0.0/0"}},
		}}}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("request (-want +got):\n%s", d)
	}
}

func TestNetworkRequestRefusesWhatHostRefuses(t *testing.T) {
	for name, n := range map[string]host.Network{
		"gateway outside":   {Name: "n", Type: host.L2Bridge, AddressPrefix: "10.0.0.0/24", Gateway: "10.0.1.1"},
		"overlay sans VSID": {Name: "n", Type: host.Overlay, AddressPrefix: "10.0.0.0/24", Gateway: "10.0.0.1"},
		"NAT":               {Name: "n", Type: "NAT", AddressPrefix: "10.0.0.0/24", Gateway: "10.0.0.1"},
	} {
		if got, err := networkRequest(n); err == nil {
			t.Errorf("%s: request %+v, want an error", name, got)
		}
	}
}

func TestNetworkRoundTrip(t *testing.T) {
	for _, n := range []host.Network{
		{Name: "vxlan0", Type: host.Overlay, AddressPrefix: "10.244.3.0/24", Gateway: "10.244.3.1", VSID: 4096},
		{Name: "cbr0", Type: host.L2Bridge, AdapterName: "Ethernet0", AddressPrefix: "10.244.3.0/24", Gateway: "10.244.3.1", NonPersistent: true},
	} {
		h, err := networkRequest(n)
		if err != nil {
			t.Fatal(err)
		}
		// As HNS would answer: with an id and the host's provider address.
		h.ID = "B6A7D0C8-1A2B-4C3D-8E9F-0123456789AB"
		h.Policies = append(h.Policies, hnsPolicy{Type: "ProviderAddress", Settings: json.RawMessage(`{"ProviderAddress":"10.0.0.17"}`)})
		want := n
		want.ID, want.ManagementIP = h.ID, "10.0.0.17"
		if got := networkFromHNS(h); got != want {
			t.Errorf("networkFromHNS(networkRequest(%+v)) = %+v", n, got)
		}
	}
}

func TestNetworkFromHNSSkipsWhatItCannotRead(t *testing.T) {
	h := hnsNetwork{
		ID: "id", Name: "nat", Type: "NAT",
		Policies: []hnsPolicy{{Type: "NetAdapterName", Settings: json.RawMessage(`"not an object"`)}},
		Ipams: []hnsIpam{{Type: "Static"}, {Type: "Static", Subnets: []hnsSubnet{{
			IPAddressPrefix: "172.16.0.0/16",
			Policies:        []json.RawMessage{json.RawMessage(`{"Type":"VLAN","Settings":{"IsolationId":7}}`), json.RawMessage(`garbage`)},
			Routes:          []hnsRoute{{NextHop: "172.16.0.9", DestinationPrefix: "172.17.0.0/16"}, {NextHop: "172.16.0.1", DestinationPrefix: "0.0.0.0/0"}},
		}}}},
	}
	want := host.Network{ID: "id", Name: "nat", Type: "NAT", AddressPrefix: "172.16.0.0/16", Gateway: "172.16.0.1"}
	if got := networkFromHNS(h); got != want {
		t.Errorf("networkFromHNS = %+v, want %+v", got, want)
	}
}

func TestSubnetVSID(t *testing.T) {
	s := hnsSubnet{Policies: []json.RawMessage{
		json.RawMessage(`{"Type":"VLAN","Settings":{"IsolationId":7}}`),
		json.RawMessage(`{"Type":"VSID","Settings":"unreadable"}`),
		json.RawMessage(`{"Type":"VSID","Settings":{"IsolationId":5000}}`),
	}}
	if got := subnetVSID(s); got != 5000 {
		t.Errorf("subnetVSID = %d, want the first readable VSID policy's, 5000", got)
	}
	if got := subnetVSID(hnsSubnet{}); got != 0 {
		t.Errorf("subnetVSID without policies = %d", got)
	}
}

func TestEndpointFromHNS(t *testing.T) {
	e := hnsEndpoint{ID: "e", Name: "remote", NetworkID: "n", Flags: hnsEndpointFlagsRemote, IPAddresses: []string{"10.244.4.0", "10.244.4.1"}}
	want := host.Endpoint{ID: "e", Name: "remote", NetworkID: "n", IPAddress: "10.244.4.0", Remote: true}
	if got := endpointFromHNS(e); got != want {
		t.Errorf("endpointFromHNS = %+v, want %+v", got, want)
	}
	if got := endpointFromHNS(hnsEndpoint{ID: "l"}); got.Remote || got.IPAddress != "" {
		t.Errorf("local endpoint without address = %+v", got)
	}
}
