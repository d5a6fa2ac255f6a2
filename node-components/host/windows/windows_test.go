//go:build windows

package windows

// The tests that need Windows' own types (hcn, golang.org/x/sys/windows and
// its svc packages build only for Windows): that the values the untagged
// files name are Windows', and that hns.go's copies to and from hcn's types
// lose nothing. None calls into Windows. The logic they feed is tested on
// any OS by the untagged files' tests.

import (
	"encoding/json"
	"testing"

	"github.com/Microsoft/hnslib/hcn"
	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/mgr"

	"github.com/capwin/capwin/node-components/host"
)

func TestValuesAreWindows(t *testing.T) {
	for name, c := range map[string]struct{ ours, windows uint64 }{
		"SERVICE_BOOT_START":           {scBootStart, windows.SERVICE_BOOT_START},
		"SERVICE_SYSTEM_START":         {scSystemStart, windows.SERVICE_SYSTEM_START},
		"mgr.StartAutomatic":           {scAutoStart, mgr.StartAutomatic},
		"mgr.StartManual":              {scDemandStart, mgr.StartManual},
		"mgr.StartDisabled":            {scDisabled, mgr.StartDisabled},
		"svc.Stopped":                  {scStopped, uint64(svc.Stopped)},
		"svc.StartPending":             {scStartPending, uint64(svc.StartPending)},
		"svc.StopPending":              {scStopPending, uint64(svc.StopPending)},
		"svc.Running":                  {scRunning, uint64(svc.Running)},
		"svc.ContinuePending":          {scContinuePending, uint64(svc.ContinuePending)},
		"svc.PausePending":             {scPausePending, uint64(svc.PausePending)},
		"svc.Paused":                   {scPaused, uint64(svc.Paused)},
		"mgr.ServiceRestart":           {scActionRestart, mgr.ServiceRestart},
		"ERROR_SERVICE_SPECIFIC_ERROR": {errorServiceSpecificError, uint64(windows.ERROR_SERVICE_SPECIFIC_ERROR)},
		"hcn.EnableNonPersistent":      {hnsEnableNonPersistent, uint64(hcn.EnableNonPersistent)},
		"hcn.EndpointFlagsRemote":      {hnsEndpointFlagsRemote, uint64(hcn.EndpointFlagsRemoteEndpoint)},
	} {
		if c.ours != c.windows {
			t.Errorf("%s is %d, the untagged files say %d", name, c.windows, c.ours)
		}
	}
	for name, c := range map[string]struct{ ours, hcn string }{
		"hcn.NetAdapterName":  {hnsPolicyNetAdapterName, string(hcn.NetAdapterName)},
		"hcn.ProviderAddress": {hnsPolicyProviderAddress, string(hcn.ProviderAddress)},
		"hcn.VSID":            {hnsSubnetPolicyVSID, string(hcn.VSID)},
	} {
		if c.ours != c.hcn {
			t.Errorf("%s is %q, the untagged files say %q", name, c.hcn, c.ours)
		}
	}
}

// TestNetworkToHCNOverlay checks the request hcn sends HNS, byte for byte:
// networkRequest's shape (TestNetworkRequestOverlay) with hcn's schema
// version and its empty MacPool, Dns and Health.
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

// TestNetworkRoundTripThroughHCN is TestNetworkRoundTrip through hcn's
// types: what networkToHCN writes, networkFromHCN reads back.
func TestNetworkRoundTripThroughHCN(t *testing.T) {
	for _, n := range []host.Network{
		{Name: "vxlan0", Type: host.Overlay, AddressPrefix: "10.244.3.0/24", Gateway: "10.244.3.1", VSID: 4096},
		{Name: "cbr0", Type: host.L2Bridge, AdapterName: "Ethernet0", AddressPrefix: "10.244.3.0/24", Gateway: "10.244.3.1", NonPersistent: true},
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

// TestEndpointFromHCN checks the copy from hcn's endpoint (see
// TestEndpointFromHNS).
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

// TestFailureOfADLLError: a call into a DLL that fails (windows.DLLError,
// as a missing procedure gives) exits with its Win32 code (see
// TestFailure).
func TestFailureOfADLLError(t *testing.T) {
	if ssec, code := failure(&windows.DLLError{Err: windows.ERROR_FILE_NOT_FOUND}); ssec || code != uint32(windows.ERROR_FILE_NOT_FOUND) {
		t.Errorf("failure = %v, %d", ssec, code)
	}
}
