package vsphere

import (
	"testing"

	"sigs.k8s.io/yaml"
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
		data, err := metadata(m, nil)
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
