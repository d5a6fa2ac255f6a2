package nodeplatform

import (
	"fmt"
	"strings"

	"github.com/capwin/capwin/node-components/host"
)

// Driver is a platform's part of a Windows node.
type Driver interface {
	// Name is the platform as HybridCluster names it: vsphere or azure.
	Name() string
	// Matches reports whether the machine's firmware is this platform's.
	Matches(hw host.Hardware) bool
	// UserData says where the node's user data (the bootstrap stub) comes
	// from on this platform, and what reads it.
	UserData() string
}

// drivers are the platforms capwin-node runs on, in the order Detect asks
// them.
var drivers = []Driver{vsphere{}, azure{}}

// Detect returns the driver of the platform whose machine hw describes.
func Detect(hw host.Hardware) (Driver, error) {
	for _, d := range drivers {
		if d.Matches(hw) {
			return d, nil
		}
	}
	return nil, fmt.Errorf("the machine (manufacturer %q, product %q, chassis asset tag %q) is neither a vSphere nor an Azure VM", hw.Manufacturer, hw.Product, hw.ChassisAssetTag)
}

// vsphere is a VM on vSphere.
type vsphere struct{}

func (vsphere) Name() string { return "vsphere" }

// Matches: a VMware virtual machine's SMBIOS names VMware as its
// manufacturer and in its product ("VMware7,1" with EFI firmware, "VMware
// Virtual Platform" with BIOS), which is how cloud-init recognises one
// (DataSourceOVF: "vmware" in the system product name).
func (vsphere) Matches(hw host.Hardware) bool {
	return strings.Contains(strings.ToLower(hw.Product), "vmware") || strings.HasPrefix(hw.Manufacturer, "VMware")
}

func (vsphere) UserData() string {
	return "guestinfo.userdata, read through VMware Tools by cloudbase-init's VMwareGuestInfoService"
}

// azure is a VM on Azure.
type azure struct{}

// azureChassisAssetTag is the chassis asset tag of every Azure VM, which
// tells one from a Hyper-V VM elsewhere (cloud-init's ds-identify and
// DataSourceAzure check the same value).
const azureChassisAssetTag = "7783-7084-3265-9085-8269-3286-77"

func (azure) Name() string { return "azure" }

func (azure) Matches(hw host.Hardware) bool { return hw.ChassisAssetTag == azureChassisAssetTag }

func (azure) UserData() string {
	return "the VM's custom data (CustomData.bin beside ovf-env.xml on the provisioning drive), read by cloudbase-init's AzureService"
}
