package sim

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/capwin/capwin/platform/vsphere/vspheresim"
)

// TestGuestAppliesNetworkAsItsSoftwareDoes: the simulated guests configure
// their network device only from an entry their real software would apply
// to it.
func TestGuestAppliesNetworkAsItsSoftwareDoes(t *testing.T) {
	const mac = "00:50:56:9a:00:01"
	linux := &vspheresim.VM{GuestID: "ubuntu64Guest", MACs: []string{mac}}
	windows := &vspheresim.VM{GuestID: "windows2019srvNext_64Guest", MACs: []string{mac}}
	tests := []struct {
		name    string
		vm      *vspheresim.VM
		network string
		want    string // the address, or the error's text
	}{
		{"linux: an entry without match names an interface id0", linux, `{id0: {dhcp4: true}}`, "no entry of the network configuration (id0) matches network device ens192"},
		{"linux: matched by MAC, DHCP", linux, `{id0: {match: {macaddress: "00:50:56:9A:00:01"}, set-name: eth0, dhcp4: true}}`, "192.168.0.3"},
		{"linux: matched by MAC, static", linux, `{id0: {match: {macaddress: "` + mac + `"}, addresses: [10.0.0.21/24]}}`, "10.0.0.21"},
		{"linux: another MAC", linux, `{id0: {match: {macaddress: "00:50:56:9a:00:02"}, dhcp4: true}}`, "gets no address"},
		{"linux: the interface's own name", linux, `{ens192: {dhcp4: true}}`, "192.168.0.3"},
		{"windows: static matched by MAC", windows, `{id0: {match: {macaddress: "` + mac + `"}, addresses: [10.0.0.22/24]}}`, "10.0.0.22"},
		{"windows: static without a MAC stays on DHCP", windows, `{id0: {addresses: [10.0.0.22/24]}}`, "192.168.0.3"},
		{"linux: no network key, cloud-init's fallback DHCP", linux, "", "192.168.0.3"},
		{"windows: no network key, DHCP", windows, "", "192.168.0.3"},
		{"linux: a network key with no entry configures nothing", linux, `{}`, "no entry of the network configuration () matches"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			meta := &metadata{}
			doc := "local-hostname: n1\nnetwork: {version: 2, ethernets: " + tt.network + "}"
			if tt.network == "" {
				doc = "local-hostname: n1"
			}
			if err := yaml.Unmarshal([]byte(doc), meta); err != nil {
				t.Fatal(err)
			}
			g := &Guests{}
			got, err := g.address(tt.vm, meta)
			if err != nil {
				got = err.Error()
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
