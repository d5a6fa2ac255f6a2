//go:build windows

package windows

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/Microsoft/hnslib/hcn"
	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/mgr"

	"github.com/capwin/capwin/node-components/host"
)

func TestNetworkToHCNOverlay(t *testing.T) {
	n := host.Network{Name: "External", Type: host.Overlay, AdapterName: "Ethernet0",
		AddressPrefix: "192.168.255.0/30", Gateway: "192.168.255.1", VSID: 9999, ID: "ignored", ManagementIP: "ignored"}
	h, err := networkToHCN(n)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"Name":"External","Type":"Overlay",` +
		`"Policies":[{"Type":"NetAdapterName","Settings":{"NetworkAdapterName":"Ethernet0"}}],` +
		`"MacPool":{},"Dns":{},` +
		`"Ipams":[{"Type":"Static","Subnets":[{"IpAddressPrefix":"192.168.255.0/30",` +
		`"Policies":[{"Type":"VSID","Settings":{"IsolationId":9999}}],` +
		`"Routes":[{"NextHop":"192.168.255.1","DestinationPrefix":"0.0.0.0/0"}]}]}],` +
		`"Health":{"Extra":{}},"SchemaVersion":{"Major":2,"Minor":0}}`
	if string(got) != want {
		t.Errorf("request\n%s\nwant\n%s", got, want)
	}
}

func TestNetworkRoundTrip(t *testing.T) {
	for _, n := range []host.Network{
		{Name: "vxlan0", Type: host.Overlay, AddressPrefix: "10.244.3.0/24", Gateway: "10.244.3.1", VSID: 4096},
		{Name: "cbr0", Type: host.L2Bridge, AdapterName: "Ethernet0", AddressPrefix: "10.244.3.0/24", Gateway: "10.244.3.1"},
	} {
		h, err := networkToHCN(n)
		if err != nil {
			t.Fatal(err)
		}
		// As HNS would answer: with an id and the host's provider address.
		h.Id = "B6A7D0C8-1A2B-4C3D-8E9F-0123456789AB"
		h.Policies = append(h.Policies, hcn.NetworkPolicy{Type: hcn.ProviderAddress, Settings: json.RawMessage(`{"ProviderAddress":"10.0.0.17"}`)})
		want := n
		want.ID, want.ManagementIP = h.Id, "10.0.0.17"
		if got := networkFromHCN(h); got != want {
			t.Errorf("networkFromHCN(networkToHCN(%+v)) = %+v", n, got)
		}
	}
}

func TestNetworkFromHCNSkipsWhatItCannotRead(t *testing.T) {
	h := &hcn.HostComputeNetwork{
		Id: "id", Name: "nat", Type: hcn.NAT,
		Policies: []hcn.NetworkPolicy{{Type: hcn.NetAdapterName, Settings: json.RawMessage(`"not an object"`)}},
		Ipams: []hcn.Ipam{{Type: "Static"}, {Type: "Static", Subnets: []hcn.Subnet{{
			IpAddressPrefix: "172.16.0.0/16",
			Policies:        []json.RawMessage{json.RawMessage(`{"Type":"VLAN","Settings":{"IsolationId":7}}`), json.RawMessage(`garbage`)},
			Routes:          []hcn.Route{{NextHop: "172.16.0.9", DestinationPrefix: "172.17.0.0/16"}, {NextHop: "172.16.0.1", DestinationPrefix: "0.0.0.0/0"}},
		}}}},
	}
	want := host.Network{ID: "id", Name: "nat", Type: "NAT", AddressPrefix: "172.16.0.0/16", Gateway: "172.16.0.1"}
	if got := networkFromHCN(h); got != want {
		t.Errorf("networkFromHCN = %+v, want %+v", got, want)
	}
}

func TestEndpointFromHCN(t *testing.T) {
	e := &hcn.HostComputeEndpoint{Id: "e", Name: "remote", HostComputeNetwork: "n", Flags: hcn.EndpointFlagsRemoteEndpoint,
		IpConfigurations: []hcn.IpConfig{{IpAddress: "10.244.4.0", PrefixLength: 32}}}
	want := host.Endpoint{ID: "e", Name: "remote", NetworkID: "n", IPAddress: "10.244.4.0", Remote: true}
	if got := endpointFromHCN(e); got != want {
		t.Errorf("endpointFromHCN = %+v, want %+v", got, want)
	}
	if got := endpointFromHCN(&hcn.HostComputeEndpoint{Id: "l"}); got.Remote || got.IPAddress != "" {
		t.Errorf("local endpoint without address = %+v", got)
	}
}

func TestStartTypes(t *testing.T) {
	for _, st := range []host.StartType{host.StartAutomatic, host.StartManual, host.StartDisabled} {
		if got := startType(scStartType(st)); got != st {
			t.Errorf("%s round-trips to %s", st, got)
		}
	}
	if got := startType(windows.SERVICE_BOOT_START); got == host.StartAutomatic || got == host.StartManual || got == host.StartDisabled {
		t.Errorf("boot start reads as %s", got)
	}
}

func TestServiceState(t *testing.T) {
	for s, want := range map[svc.State]host.ServiceState{
		svc.Stopped: host.ServiceStopped, svc.StartPending: host.ServiceStarting,
		svc.Running: host.ServiceRunning, svc.StopPending: host.ServiceStopping, svc.Paused: "Paused",
	} {
		if got := serviceState(s); got != want {
			t.Errorf("serviceState(%d) = %s, want %s", s, got, want)
		}
	}
}

func TestRecoveryActions(t *testing.T) {
	delays := []time.Duration{10 * time.Second, time.Minute}
	actions := recoveryActions(delays)
	if want := []mgr.RecoveryAction{{Type: mgr.ServiceRestart, Delay: 10 * time.Second}, {Type: mgr.ServiceRestart, Delay: time.Minute}}; !reflect.DeepEqual(actions, want) {
		t.Errorf("recoveryActions = %+v", actions)
	}
	actions = append(actions, mgr.RecoveryAction{Type: mgr.NoAction})
	if got := restartDelays(actions); !slices.Equal(got, delays) {
		t.Errorf("restartDelays = %v", got)
	}
	if got := restartDelays(nil); got != nil {
		t.Errorf("restartDelays(nil) = %v", got)
	}
}

func TestExitError(t *testing.T) {
	err := exitError(svc.Status{Win32ExitCode: uint32(windows.ERROR_SERVICE_SPECIFIC_ERROR), ServiceSpecificExitCode: 3})
	if err.Error() != "service-specific exit code 3 (0x3)" {
		t.Errorf("exitError = %v", err)
	}
	err = exitError(svc.Status{Win32ExitCode: uint32(windows.ERROR_FILE_NOT_FOUND)})
	if !errors.Is(err, windows.ERROR_FILE_NOT_FOUND) {
		t.Errorf("exitError = %v, does not wrap ERROR_FILE_NOT_FOUND", err)
	}
}

func TestFailure(t *testing.T) {
	if ssec, code := failure(&windows.DLLError{Err: windows.ERROR_FILE_NOT_FOUND}); ssec || code != uint32(windows.ERROR_FILE_NOT_FOUND) {
		t.Errorf("failure = %v, %d", ssec, code)
	}
	if ssec, code := failure(errors.New("no")); !ssec || code != 1 {
		t.Errorf("failure = %v, %d", ssec, code)
	}
}
