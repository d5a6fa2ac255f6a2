package vsphere

import (
	"testing"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
)

// TestMetadataPublicKeys: the SSH keys are public-keys-data, one string
// with a key a line, the form both cloudbase-init and cloud-init read; a
// machine without keys has no such key.
func TestMetadataPublicKeys(t *testing.T) {
	keys := []string{
		"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILkF1Ms6BeuCAVt6oFYilabd0bpA5fjYB3Op9jIsDcVi alice1@example.com",
		"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICgW+26vf/XewPTWdp6YbAqSKtbPe+fopP/RDiIrSZO0 alice2@example.com",
	}
	m := machine("keys")
	m.SSHAuthorizedKeys = keys
	read := func(m Machine) map[string]any {
		t.Helper()
		data, err := metadata(m, nil, 1)
		if err != nil {
			t.Fatal(err)
		}
		meta := map[string]any{}
		if err := yaml.Unmarshal(data, &meta); err != nil {
			t.Fatal(err)
		}
		return meta
	}
	if got, want := read(m)["public-keys-data"], keys[0]+"\n"+keys[1]; got != want {
		t.Errorf("public-keys-data = %#v, want %#v", got, want)
	}
	if meta := read(machine("nokeys")); meta["public-keys-data"] != nil {
		t.Errorf("a machine without keys has public-keys-data %#v", meta["public-keys-data"])
	}
}

// TestMetadataNetwork: a Windows VM with one network device asking for
// DHCP and nothing else gets no network entry, so that Windows' own DHCP
// applies and the VM can boot before vCenter names its MAC; anything else,
// and every Linux VM (whose interface the entry names eth0), gets an entry
// per device, matched by MAC once the MACs are known.
func TestMetadataNetwork(t *testing.T) {
	dhcp := infrav1.VSphereNetworkDevice{NetworkName: "VM Network", DHCP4: ptr.To(true)}
	tests := []struct {
		name    string
		os      infrav1.OSType
		network []infrav1.VSphereNetworkDevice
		nics    int
		want    bool // a network entry
	}{
		{"one DHCP device", infrav1.OSWindows, []infrav1.VSphereNetworkDevice{dhcp}, 1, false},
		{"Linux, one DHCP device", infrav1.OSLinux, []infrav1.VSphereNetworkDevice{dhcp}, 1, true},
		{"one DHCP device, the VM has two", infrav1.OSWindows, []infrav1.VSphereNetworkDevice{dhcp}, 2, true},
		{"two DHCP devices", infrav1.OSWindows, []infrav1.VSphereNetworkDevice{dhcp, dhcp}, 2, true},
		{"DHCP with nameservers", infrav1.OSWindows, []infrav1.VSphereNetworkDevice{{NetworkName: "VM Network", DHCP4: ptr.To(true), Nameservers: []string{"10.0.0.2"}}}, 1, true},
		{"static", infrav1.OSWindows, []infrav1.VSphereNetworkDevice{{NetworkName: "VM Network", IPAddrs: []string{"10.0.0.21/24"}, Gateway4: "10.0.0.1"}}, 1, true},
		{"dhcp4 false", infrav1.OSWindows, []infrav1.VSphereNetworkDevice{{NetworkName: "VM Network", DHCP4: ptr.To(false)}}, 1, true},
		{"dhcp4 unset", infrav1.OSWindows, []infrav1.VSphereNetworkDevice{{NetworkName: "VM Network"}}, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := machine("net")
			m.OS, m.Spec.Network = tt.os, tt.network
			data, err := metadata(m, nil, tt.nics)
			if err != nil {
				t.Fatal(err)
			}
			meta := map[string]any{}
			if err := yaml.Unmarshal(data, &meta); err != nil {
				t.Fatal(err)
			}
			if _, got := meta["network"]; got != tt.want {
				t.Errorf("network entry: %v, want %v:\n%s", got, tt.want, data)
			}
			if got := guestDefaultNetwork(m, tt.nics); got == tt.want {
				t.Errorf("guestDefaultNetwork = %v, want %v", got, !tt.want)
			}
		})
	}
}
