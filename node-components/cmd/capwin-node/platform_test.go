package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/host/sim"
)

// TestStatusShowsThePlatform: status says which platform the firmware
// names and where the user data came from there, and what the machine is
// when it is neither.
func TestStatusShowsThePlatform(t *testing.T) {
	withUUID := func(hw host.Hardware) host.Hardware { hw.UUID = "1F6A2B42-3D4C-019E-8A7B-112233445566"; return hw }
	for _, tc := range []struct {
		hw       host.Hardware
		want     string
		platform string
	}{{
		hw:       withUUID(sim.VMwareVM),
		want:     "Platform:  vsphere (VMware, Inc. VMware7,1, UUID 1F6A2B42-3D4C-019E-8A7B-112233445566); user data from guestinfo.userdata, read through VMware Tools",
		platform: "vsphere",
	}, {
		hw:       sim.AzureVM,
		want:     "Platform:  azure (Microsoft Corporation Virtual Machine); user data from the VM's custom data",
		platform: "azure",
	}, {
		hw:   host.Hardware{Manufacturer: "Microsoft Corporation", Product: "Virtual Machine", ChassisAssetTag: "0000"},
		want: `Platform:  unknown: the machine (manufacturer "Microsoft Corporation", product "Virtual Machine", chassis asset tag "0000") is neither a vSphere nor an Azure VM`,
	}} {
		text, js := runStatus(t, sim.New(sim.Options{Root: t.TempDir(), Hardware: tc.hw}))
		if !strings.Contains(text, tc.want) {
			t.Errorf("status lacks %q:\n%s", tc.want, text)
		}
		var got struct {
			Platform string
			Hardware host.Hardware
		}
		if err := json.Unmarshal(js, &got); err != nil || got.Platform != tc.platform || got.Hardware != tc.hw {
			t.Errorf("status -o json: platform %q, hardware %+v (%v); want %q, %+v", got.Platform, got.Hardware, err, tc.platform, tc.hw)
		}
	}
}
