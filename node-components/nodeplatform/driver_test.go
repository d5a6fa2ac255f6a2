package nodeplatform

import (
	"strings"
	"testing"

	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/host/sim"
)

func TestDetect(t *testing.T) {
	for _, c := range []struct {
		hw   host.Hardware
		want string
	}{
		{sim.VMwareVM, "vsphere"},
		{host.Hardware{Manufacturer: "VMware, Inc.", Product: "VMware Virtual Platform"}, "vsphere"},
		{sim.AzureVM, "azure"},
	} {
		d, err := Detect(c.hw)
		if err != nil || d.Name() != c.want {
			t.Errorf("Detect(%+v) = %v, %v; want %s", c.hw, d, err, c.want)
		}
	}
	// Hyper-V elsewhere, which capwin does not run on, and bare metal.
	for _, hw := range []host.Hardware{
		{Manufacturer: "Microsoft Corporation", Product: "Virtual Machine", ChassisAssetTag: "1234-5678-9012-3456-7890-1234-56"},
		{Manufacturer: "Dell Inc.", Product: "PowerEdge R650"},
		{},
	} {
		d, err := Detect(hw)
		if err == nil || !strings.Contains(err.Error(), "neither a vSphere nor an Azure VM") || !strings.Contains(err.Error(), hw.Product) {
			t.Errorf("Detect(%+v) = %v, %v; want an error naming what the machine is", hw, d, err)
		}
	}
}
